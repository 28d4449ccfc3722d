//! The handle on one simulated Redis server's state, which outlives its host.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::commands::{Command, VERSION, check, dispatch};
use super::events::{LockEvent, Peer};
use super::exec::Exec;
use super::lock_keys::Waiters;
use super::pubsub::Channels;
use super::resp::Frame;
use super::script_cache::ScriptCache;
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
    /// The dataset as [`RedisState::save`] last saved it.
    saved: Option<Dataset>,
    /// How many times a server has started serving this state: each start is a new
    /// life, with a new run id, as a restarted Redis has.
    lives: u64,
    /// A replica's view of the dataset, when [`RedisState::replicate`] asked for one.
    replication: Option<Replication>,
    /// Who queued each waiter: a grant a release writes for one is its client's.
    waiters: Waiters,
}

/// Asynchronous replication, as a replica sees it: it applies the primary's writes in
/// order, some time after they were made, so its dataset is always the primary's as it
/// was at some earlier moment. Kept as the datasets after each command, newest last,
/// for as far back as any promotion may reach.
struct Replication {
    window: Duration,
    stream: VecDeque<(Duration, Dataset)>,
}

impl Replication {
    /// The primary's dataset after a command at `now`; forgets what no replica `window`
    /// behind could still be at (all but the newest entry at or before `now - window`).
    fn record(&mut self, now: Duration, data: &Dataset) {
        self.stream.push_back((now, data.clone()));
        let reach = now.saturating_sub(self.window);
        while self.stream.get(1).is_some_and(|(at, _)| *at <= reach) {
            self.stream.pop_front();
        }
    }

    /// The dataset of a replica `lag` behind at `now`: the primary's after its last
    /// command at or before `now - lag`; the oldest kept, for a lag that reaches back
    /// further (the replica synced when the stream began); empty before any command.
    fn behind(&self, now: Duration, lag: Duration) -> Dataset {
        let cutoff = now.saturating_sub(lag);
        self.stream
            .iter()
            .rev()
            .find(|(at, _)| *at <= cutoff)
            .or_else(|| self.stream.front())
            .map(|(_, data)| data.clone())
            .unwrap_or_default()
    }

    /// The primary's dataset changed all at once (a restart, a promotion): its replica
    /// synced again, in full, and has nothing older.
    fn resync(&mut self, data: &Dataset) {
        let at = self.stream.back().map_or(Duration::ZERO, |(at, _)| *at);
        self.stream.clear();
        self.stream.push_back((at, data.clone()));
    }
}

impl Inner {
    /// Runs a command that passed [`check`] as `command`, then reports its lock events.
    pub(crate) fn run(
        &mut self,
        peer: &Peer,
        now: Duration,
        command: Command,
        args: &[Vec<u8>],
    ) -> Frame {
        let mut events = Vec::new();
        let mut exec = Exec {
            data: &mut self.data,
            scripts: Some(&mut self.scripts),
            channels: &mut self.channels,
            events: &mut events,
            waiters: Some(&mut self.waiters),
            now,
            peer,
            life: self.lives,
        };
        let reply = dispatch(&mut exec, command, args);
        if let Some(replication) = &mut self.replication {
            replication.record(now, &self.data);
        }
        if let Some(observer) = &self.observer {
            for event in &events {
                observer(event);
            }
        }
        reply
    }

    /// The replica, if any, synced again with the dataset as it is now.
    fn resync(&mut self) {
        if let Some(replication) = &mut self.replication {
            replication.resync(&self.data);
        }
    }

    /// A server starts serving this state: a new life, as a restart is.
    pub(crate) fn begin_life(&mut self) {
        self.lives += 1;
    }

    /// `INFO [section …]`, for a connection: see [`info`].
    pub(crate) fn info(&self, sections: &[Vec<u8>]) -> Frame {
        info(self.lives, sections)
    }

    /// A number for a new connection, unique in this state's lifetime.
    pub(crate) fn connection_id(&mut self) -> u64 {
        self.connections += 1;
        self.connections
    }
}

/// `INFO [section …]` in a server's `life`-th life: the server and replication sections
/// (the others are empty here), with a run id and a replication id that are new in every
/// life. A connection asks it, and so does robit's acquire script.
pub(crate) fn info(life: u64, sections: &[Vec<u8>]) -> Frame {
    let wants = |section: &str| {
        sections.is_empty()
            || sections.iter().any(|asked| {
                let asked = asked.to_ascii_lowercase();
                asked == section.as_bytes()
                    || [&b"default"[..], b"all", b"everything"].contains(&asked.as_slice())
            })
    };
    let mut text = String::new();
    if wants("server") {
        text.push_str(&format!(
            "# Server\r\nredis_version:{VERSION}\r\nredis_mode:standalone\r\nrun_id:{}\r\n\r\n",
            id(life, 0)
        ));
    }
    if wants("replication") {
        text.push_str(&format!(
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:{}\r\n\r\n",
            id(life, 1)
        ));
    }
    Frame::bulk(text.trim_end())
}

/// The 40 hex digits of the run id (`salt` 0) or the replication id (`salt` 1) of a
/// server's `life`-th life.
fn id(life: u64, salt: u64) -> String {
    let mix = |x: u64| {
        let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    };
    let first = mix(life.wrapping_mul(2).wrapping_add(salt));
    format!(
        "{first:016x}{:016x}{:08x}",
        mix(first),
        mix(first ^ salt) >> 32
    )
}

impl RedisState {
    /// The server identity robit's driver learns from `INFO` in the server's `life`-th
    /// life (the first is 1), as its acquire script records it in a namespace's counter:
    /// `/`, then 16 hex digits of the run id and 16 of the replication id. For a world
    /// that starts with a namespace a server has already granted in.
    pub fn robit_identity(life: u64) -> String {
        format!("/{}{}", &id(life, 0)[..16], &id(life, 1)[..16])
    }

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
            Ok(known) => self.lock().run(peer, now, known, command),
            Err(error) => error,
        }
    }

    /// Saves the dataset, as `SAVE` writes a snapshot: [`restore`](Self::restore) puts it
    /// back.
    pub fn save(&self) {
        let mut inner = self.lock();
        inner.saved = Some(inner.data.clone());
    }

    /// Puts back the last saved dataset (an empty one if none was saved) and forgets the
    /// loaded scripts, as a restart from a snapshot does: whatever was written since is
    /// gone. (Connections are the host's: crash the host too.)
    pub fn restore(&self) {
        let mut inner = self.lock();
        inner.data = inner.saved.clone().unwrap_or_default();
        inner.scripts.clear();
        inner.resync();
    }

    /// Keeps a replica of this server, asynchronously replicated: from now on the
    /// dataset after every command is kept for `window` (the longest lag a promotion
    /// will ask for), so that [`fail_over`](Self::fail_over) can promote the replica.
    pub fn replicate(&self, window: Duration) {
        self.lock().replication = Some(Replication {
            window,
            stream: VecDeque::new(),
        });
    }

    /// The primary fails, and its replica, `lag` behind at the backend's local time
    /// `now`, takes over: the dataset becomes the primary's as it was `lag` ago, so
    /// whatever was written since is gone, and no script is loaded. It is another server
    /// (crash and restart the host: its next life has a new run id and replication id).
    /// Without [`replicate`](Self::replicate), nothing changes.
    pub fn fail_over(&self, now: Duration, lag: Duration) {
        let mut inner = self.lock();
        let Some(replication) = inner.replication.as_mut() else {
            return;
        };
        let data = replication.behind(now, lag);
        replication.stream.clear();
        replication.stream.push_back((now, data.clone()));
        inner.data = data;
        inner.scripts.clear();
    }

    /// Loses every key and every loaded script, as a restart without persistence does.
    /// (Connections are the host's: crash the host too.)
    pub fn wipe(&self) {
        let mut inner = self.lock();
        inner.data.clear();
        inner.scripts.clear();
        inner.resync();
    }

    /// Plants a change in every script this server loads from now on: it compiles the
    /// script with `find` replaced by `replace`, under the SHA1 of the text it was sent.
    /// For the conformance tests: a planted change to robit's scripts must be caught.
    #[doc(hidden)]
    #[cfg(robit_mutants)]
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
