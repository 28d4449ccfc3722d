//! The handle on one simulated Redis server's state, which outlives its host.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::commands::{check, dispatch};
use super::events::{LockEvent, Peer};
use super::exec::Exec;
use super::pubsub::Channels;
use super::resp::Frame;
use super::scripts::ScriptCache;
use super::store::Dataset;

type Observer = Arc<dyn Fn(&LockEvent) + Send + Sync>;

/// The dataset, script cache and subscriptions of one simulated Redis server.
///
/// A cheap handle (clones share one state), kept by the simulation outside the backend
/// host: when the host crashes, its connections die with it but this survives, like a
/// Redis with persistence; [`wipe`](Self::wipe) it before restarting the host to model
/// a restart that loses everything. [`SimRedis`](super::SimRedis) serves it over the
/// simulated network; [`execute`](Self::execute) runs a command directly, as tests do.
///
/// Time is never read here: every command runs at the backend-local `now` it is given.
///
/// # Example
///
/// ```
/// use robit_sim::redis::{Peer, RedisState, resp::Frame};
/// use std::time::Duration;
///
/// let state = RedisState::new();
/// let me = Peer::new("10.0.0.1:40000".parse().unwrap(), None);
/// let command = |words: &[&str]| words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
/// let at = Duration::from_millis;
///
/// assert_eq!(state.execute(&me, at(0), &command(&["SET", "k", "v", "PX", "100"])), Frame::ok());
/// assert_eq!(state.execute(&me, at(60), &command(&["PTTL", "k"])), Frame::Integer(40));
/// assert_eq!(state.execute(&me, at(101), &command(&["GET", "k"])), Frame::NullBulk);
/// ```
#[derive(Clone, Default)]
pub struct RedisState {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
pub(crate) struct Inner {
    data: Dataset,
    scripts: ScriptCache,
    pub(crate) channels: Channels,
    observer: Option<Observer>,
    connections: u64,
}

impl Inner {
    /// Runs a command that passed [`check`] as `name`, then reports its lock events.
    pub(crate) fn run(
        &mut self,
        peer: &Peer,
        now: Duration,
        name: &str,
        args: &[Vec<u8>],
    ) -> Frame {
        let mut events = Vec::new();
        let mut exec = Exec {
            data: &mut self.data,
            scripts: Some(&mut self.scripts),
            channels: &mut self.channels,
            events: &mut events,
            now,
            peer,
        };
        let reply = dispatch(&mut exec, name, args);
        if let Some(observer) = &self.observer {
            for event in &events {
                observer(event);
            }
        }
        reply
    }

    /// A number for a new connection, unique in this state's lifetime.
    pub(crate) fn connection_id(&mut self) -> u64 {
        self.connections += 1;
        self.connections
    }
}

impl RedisState {
    /// An empty server state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs one command — its name and arguments — at the backend's local time `now`,
    /// on behalf of `peer`, and returns the reply.
    ///
    /// Connection commands (SUBSCRIBE, HELLO, AUTH, SELECT, CLIENT, QUIT, …) need a
    /// connection, and answer an error here; everything else behaves as it does when
    /// served by [`SimRedis`](super::SimRedis).
    pub fn execute(&self, peer: &Peer, now: Duration, command: &[Vec<u8>]) -> Frame {
        match check(command) {
            Ok(name) => self.lock().run(peer, now, &name, command),
            Err(error) => error,
        }
    }

    /// Loses every key and every loaded script, as a restart without persistence does.
    /// (Connections are the host's: crash the host too.)
    pub fn wipe(&self) {
        let mut inner = self.lock();
        inner.data.clear();
        inner.scripts.clear();
    }

    /// Plants a change in every script this server loads from now on: it compiles the
    /// script with `find` replaced by `replace`, under the SHA1 of the text it was sent.
    /// For the conformance tests: a planted change to robit's scripts must be caught.
    #[doc(hidden)]
    #[cfg(feature = "mutants")]
    pub fn plant_script_edit(&self, find: &str, replace: &str) {
        self.lock().scripts.plant_edit(find, replace);
    }

    /// Calls `observer` with every [`LockEvent`], in the order the commands ran.
    ///
    /// It is called while the state is locked: it must not call back into this
    /// `RedisState` (record the event and return). A second call replaces the first
    /// observer.
    pub fn on_event(&self, observer: impl Fn(&LockEvent) + Send + Sync + 'static) {
        self.lock().observer = Some(Arc::new(observer));
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for RedisState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // try_lock: an observer may format the state while it is locked.
        let mut debug = f.debug_struct("RedisState");
        if let Ok(inner) = self.inner.try_lock() {
            debug
                .field("data", &inner.data)
                .field("scripts", &inner.scripts)
                .field("observed", &inner.observer.is_some());
        }
        debug.finish_non_exhaustive()
    }
}
