//! Key names. Part of the on-server format: every client of a namespace must agree.
//!
//! ```text
//! {<namespace>}:lock:<name>    the lock: <owner token>:<until> or W<waiter id>:<until>,
//!                              ":q" appended once waiters queued (scripts/common.lua)
//! {<namespace>}:queue:<name>   list of waiter entries, oldest first
//! {<namespace>}:fence          the last fencing token, one per namespace, no TTL;
//!                              "<token>q" while a quarantine may be running
//! {<namespace>}:quarantine     present while grants are suspended after state loss
//! <namespace>:handoff          pub/sub channel: the id of the waiter a lock went to
//! ```
//!
//! All keys of a namespace share the hash tag `{<namespace>}`, so every script touches a
//! single Redis Cluster slot. Lock names are arbitrary bytes; they come after the tag, so
//! braces in a name do not change the slot.

use crate::driver::LockName;

use super::config::Settings;
use super::scripts::Key;

impl Settings {
    /// `{<namespace>}:lock:<name>`.
    pub(super) fn lock_key<'a>(&'a self, name: &'a LockName) -> Key<'a> {
        Key {
            prefix: self.lock_prefix.as_bytes(),
            name: name.as_bytes(),
        }
    }

    /// `{<namespace>}:queue:<name>`.
    pub(super) fn queue_key<'a>(&'a self, name: &'a LockName) -> Key<'a> {
        Key {
            prefix: self.queue_prefix.as_bytes(),
            name: name.as_bytes(),
        }
    }

    /// Room enough, in bytes, for the keys and arguments of any script call on `name`:
    /// its two keys, the namespace's own keys and channel, and tokens and numbers.
    pub(super) fn call_bytes(&self, name: &LockName) -> usize {
        2 * (self.queue_prefix.len() + name.as_bytes().len())
            + self.fence_key.len()
            + self.quarantine_key.len()
            + self.channel.len()
            + 160
    }
}
