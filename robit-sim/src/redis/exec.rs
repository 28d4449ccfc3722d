//! What every command runs with: [`Exec`], its view of the server at one instant, and
//! the argument checks and error replies the command families share.

use std::time::Duration;

use super::events::{LockEvent, Peer};
use super::lock_keys::Waiters;
use super::pubsub::Channels;
use super::resp::Frame;
use super::script_cache::ScriptCache;
use super::store::{Dataset, NOT_AN_INTEGER, parse_integer};

/// Where the simulated Redis's clock starts: TIME answers `EPOCH` plus the backend's
/// local elapsed time. 2026-01-01T00:00:00Z, in seconds since the Unix epoch.
pub const EPOCH: Duration = Duration::from_secs(1_767_225_600);

pub(crate) const SYNTAX: &str = "ERR syntax error";

/// One command's view of the server: the shared data, its time, and who sent it.
pub(crate) struct Exec<'a> {
    pub(crate) data: &'a mut Dataset,
    /// The loaded scripts; `None` for a command a script called (scripts cannot load
    /// or call scripts).
    pub(crate) scripts: Option<&'a mut ScriptCache>,
    pub(crate) channels: &'a mut Channels,
    pub(crate) events: &'a mut Vec<LockEvent>,
    /// Who queued each waiter (see `lock_keys`); `None` for a command a script called,
    /// whose effects are looked at with the script's, as a whole.
    pub(crate) waiters: Option<&'a mut Waiters>,
    /// The backend's local time, elapsed since the simulation started.
    pub(crate) now: Duration,
    pub(crate) peer: &'a Peer,
    /// The server's life (the first is 1): INFO names a new server in every one.
    pub(crate) life: u64,
}

impl Exec<'_> {
    /// The time the dataset works in: Unix milliseconds of the simulated wall clock.
    pub(crate) fn ms(&self) -> i64 {
        i64::try_from((EPOCH + self.now).as_millis()).unwrap_or(i64::MAX)
    }
}

/// `ERR wrong number of arguments for '<command>' command`.
pub(crate) fn wrong_arity(command: &str) -> Frame {
    Frame::error(format!(
        "ERR wrong number of arguments for '{command}' command"
    ))
}

/// An integer argument, or Redis's error reply for one that is not.
pub(crate) fn integer(arg: &[u8]) -> Result<i64, Frame> {
    parse_integer(arg).ok_or_else(|| Frame::error(NOT_AN_INTEGER))
}
