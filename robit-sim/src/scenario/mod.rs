//! Declarative fault scenarios: the TOML files under `scenarios/`.
//!
//! A scenario names its clients and their workload, the backend, the lock's timings, the
//! fault schedule, and which promises to check (and which it expects to see broken).
//! docs/scenarios.md describes every field; [`Scenario::parse`] turns text into a
//! validated scenario or a [`ScenarioError`] with the file, line and column.

mod clients;
mod ctx;
mod error;
mod fault;
mod hosts;
mod load;
mod raw;
mod toml_table;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Promise;
use crate::faults::Action;

pub(crate) use self::ctx::{Ctx, ms, pair};
pub use self::error::ScenarioError;
pub(crate) use self::fault::needs;
pub(crate) use self::hosts::Hosts as ScenarioHosts;
pub(crate) use self::load::is_server_name;
pub(crate) use self::raw::Dur;

/// A validated scenario.
///
/// # Example
///
/// ```
/// use robit_sim::Scenario;
///
/// let scenario = Scenario::parse("inline.toml", r#"
///     name = "two clients"
///     duration = "10s"
///     [lock]
///     ttl = "1s"
///     [[clients]]
///     name = "c"
///     count = 2
///     hold = ["10ms", "50ms"]
///     [[faults]]
///     at = "3s"
///     kind = "partition"
///     between = ["holder", "backend"]
///     for = "2s"
/// "#)?;
/// assert_eq!(scenario.name(), "two clients");
/// assert_eq!(scenario.client_names(), ["c1", "c2"]);
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Scenario {
    pub(crate) file: PathBuf,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) duration: Duration,
    pub(crate) tick: Duration,
    pub(crate) backend: Backend,
    /// How many backend servers: 1, or the quorum's N for [`Backend::Redlock`].
    pub(crate) servers: usize,
    pub(crate) check: Vec<Promise>,
    pub(crate) expect: Vec<Promise>,
    /// Event labels (`lost`, `write-rejected`, …) that must occur at least once.
    pub(crate) require: Vec<String>,
    /// Events the run must never record (labels, as `require`).
    pub(crate) forbid: Vec<String>,
    pub(crate) lock: LockSettings,
    pub(crate) latency: (Duration, Duration),
    pub(crate) fencing: bool,
    pub(crate) quarantine: Option<Duration>,
    pub(crate) command_timeout: Option<Duration>,
    /// The Redis driver's failover detection (`[redis] detect_failover`, default on).
    pub(crate) detect_failover: bool,
    pub(crate) liveness_bound: Option<Duration>,
    pub(crate) settle: Option<Duration>,
    pub(crate) clients: Vec<Client>,
    pub(crate) faults: Vec<Fault>,
    /// Changes planted in every script the simulated Redis loads (`find`, `replace`),
    /// for the conformance tests.
    #[cfg(robit_mutants)]
    pub(crate) script_edits: Vec<(String, String)>,
}

impl Scenario {
    /// Reads and validates the scenario file at `path`.
    ///
    /// # Errors
    ///
    /// [`ScenarioError`] if the file cannot be read, is not valid TOML, or does not
    /// describe a valid scenario; the error gives the line and column.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Validates scenario `text`; `file` names it in errors.
    ///
    /// # Errors
    ///
    /// [`ScenarioError`] if the text is not valid TOML or does not describe a valid
    /// scenario; the error gives the line and column.
    pub fn parse(file: impl AsRef<Path>, text: &str) -> Result<Self, ScenarioError> {
        load::parse(file.as_ref(), text)
    }

    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the scenario shows, in a sentence or two.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The file it came from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// How long a run lasts, in simulated time.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The promises the run is checked against.
    pub fn checked(&self) -> &[Promise] {
        &self.check
    }

    /// The promises the scenario expects to see broken: a run passes only if each of
    /// them is reported broken (and nothing else is).
    pub fn expected_violations(&self) -> &[Promise] {
        &self.expect
    }

    /// The clients' host names, in order.
    pub fn client_names(&self) -> Vec<String> {
        self.clients
            .iter()
            .map(|client| client.name.clone())
            .collect()
    }

    /// The clients as the history names them: a host that runs several mutexes is one
    /// client per mutex, `<host>#<n>`.
    pub(crate) fn lanes(&self) -> Vec<String> {
        self.clients
            .iter()
            .flat_map(|client| (0..client.mutexes as usize).map(|n| client.mutex_name(n)))
            .collect()
    }

    /// Whether the scenario's mutexes ask for a lock-delay, which a driver must keep.
    pub fn needs_lock_delay(&self) -> bool {
        self.lock.lock_delay.is_some_and(|delay| !delay.is_zero())
    }

    /// Whether the scenario restarts the backend from a snapshot, which only the
    /// simulated Redis can take.
    pub fn restores_snapshots(&self) -> bool {
        self.faults
            .iter()
            .any(|fault| fault.action.kind().redis_only())
    }

    /// The longest lag of a replica the scenario promotes, if it promotes one: how far
    /// back the simulated Redis must keep its replica's view.
    pub(crate) fn replica_window(&self) -> Option<Duration> {
        self.faults
            .iter()
            .filter_map(|fault| fault.action.kind().replica_lag())
            .max()
    }

    /// Whether the scenario restarts or crashes the backend so that it loses its data,
    /// all of it or what it wrote since a snapshot.
    pub fn loses_backend_state(&self) -> bool {
        self.faults
            .iter()
            .any(|fault| fault.action.kind().loses_backend_state())
    }

    /// The scenario with `mutant` planted in every client's mutex: how the conformance
    /// tests show that a library with that bug would be caught.
    #[doc(hidden)]
    #[cfg(robit_mutants)]
    pub fn with_mutant(mut self, mutant: robit::Mutant) -> Self {
        self.lock.mutant = Some(mutant);
        self
    }

    /// The scenario with a change planted in robit's scripts: the simulated Redis runs
    /// every script it loads with `find` replaced by `replace` (the clients still send,
    /// and hash, the real text). How the conformance tests show that the simulation
    /// runs the scripts' real text, and catches a wrong one.
    #[doc(hidden)]
    #[cfg(robit_mutants)]
    pub fn with_script_edit(mut self, find: &str, replace: &str) -> Self {
        self.script_edits
            .push((find.to_owned(), replace.to_owned()));
        self
    }

    /// The scenario stepped at `tick` instead of its own (see the `tick` key of a
    /// scenario file): how a tick sweep shows which ticks keep every verdict.
    ///
    /// # Errors
    ///
    /// [`ScenarioError::Tick`] if `tick` is outside the range a scenario file accepts.
    ///
    /// # Example
    ///
    /// ```
    /// use robit_sim::Scenario;
    /// use std::time::Duration;
    ///
    /// let text = r#"
    /// name = "x"
    /// duration = "1s"
    /// [lock]
    /// ttl = "1s"
    /// [[clients]]
    /// name = "c"
    /// hold = ["10ms", "20ms"]
    /// "#;
    /// let scenario = Scenario::parse("x.toml", text)?;
    /// let coarse = scenario.clone().with_tick(Duration::from_millis(20))?;
    /// assert_eq!(coarse.tick(), Duration::from_millis(20));
    /// assert!(scenario.with_tick(Duration::from_secs(1)).is_err());
    /// # Ok::<(), robit_sim::ScenarioError>(())
    /// ```
    pub fn with_tick(mut self, tick: Duration) -> Result<Self, ScenarioError> {
        if !(load::MIN_TICK..=load::MAX_TICK).contains(&tick) {
            return Err(ScenarioError::Tick {
                tick,
                min: load::MIN_TICK,
                max: load::MAX_TICK,
            });
        }
        self.tick = tick;
        Ok(self)
    }

    /// How far the simulation advances per step.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// The backend the clients lock through.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// How many backend servers the run has: the quorum's size for
    /// [`Backend::Redlock`], one otherwise.
    pub fn servers(&self) -> usize {
        self.servers
    }
}

/// Which backend a scenario runs against.
///
/// # Example
///
/// ```
/// use robit_sim::Backend;
///
/// assert_eq!(Backend::Redis.to_string(), "redis");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// robit's local driver, served to the clients over the simulated network.
    Local,
    /// A simulated Redis, driven by robit's real Redis driver.
    Redis,
    /// N simulated Redis servers, each its own host with its own clock, driven by
    /// robit's `RedlockDriver` (a quorum of one `RedisDriver` per server).
    Redlock,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Local => "local",
            Self::Redis => "redis",
            Self::Redlock => "redlock",
        })
    }
}

/// The lock's settings; unset ones take robit's defaults.
#[derive(Debug, Clone)]
pub(crate) struct LockSettings {
    pub(crate) name: String,
    pub(crate) ttl: Duration,
    pub(crate) renew_period: Option<Duration>,
    pub(crate) renew_timeout: Option<Duration>,
    pub(crate) drift_factor: f64,
    pub(crate) safety_margin: Option<Duration>,
    pub(crate) wait: Wait,
    pub(crate) backoff: Option<(Duration, Duration)>,
    pub(crate) lock_delay: Option<Duration>,
    /// A bug planted in every client's mutex, for the conformance tests.
    #[cfg(robit_mutants)]
    pub(crate) mutant: Option<robit::Mutant>,
}

/// How clients wait for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    Forever,
    Try,
    Timeout(Duration),
}

/// One client host and its workload: think, lock, hold (writing to the storage), unlock.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) name: String,
    pub(crate) start: Duration,
    pub(crate) hold: (Duration, Duration),
    pub(crate) think: (Duration, Duration),
    pub(crate) writes: u32,
    pub(crate) drift: f64,
    /// How many mutexes the host runs the workload on, each in its own task, all over
    /// one shared driver (so a release can hand the lock to a waiter of the same
    /// process). With more than one, each mutex is its own client in the history,
    /// named `<host>#<n>`.
    pub(crate) mutexes: u32,
    /// Whether the client stops its hold — no more writes, unlock — when the hold is in
    /// jeopardy, as work that checkpoints on the warning would.
    pub(crate) heed_jeopardy: bool,
}

impl Client {
    /// The history's name for the host's mutex `n` (from 0): the host's own name when
    /// it runs one, `<host>#<n + 1>` when it runs several.
    pub(crate) fn mutex_name(&self, n: usize) -> String {
        if self.mutexes == 1 {
            self.name.clone()
        } else {
            format!("{}#{}", self.name, n + 1)
        }
    }
}

/// A host named in a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A client, by name.
    Client(String),
    /// Whichever client believes it holds the lock when the fault starts.
    Holder,
    /// Every client.
    Clients,
    /// Every backend server.
    Backend,
    /// Some of a quorum's servers, by index from 0 (`backend1` is 0), in order.
    Servers(Vec<usize>),
    Storage,
}

/// A scheduled fault.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) at: Duration,
    /// When set, the fault is undone this long after it starts.
    pub(crate) length: Option<Duration>,
    pub(crate) action: Action,
    /// Waits for a holder (`when = "held"`), as a fault aimed at the holder does.
    pub(crate) when_held: bool,
}

impl Fault {
    /// Whether the fault cuts the holder off from the backend (a partition, one-way or
    /// not, or a clog, aimed at the holder), or slows or drops its messages while it
    /// holds (`when = "held"`).
    pub(crate) fn cuts_off_holder(&self) -> bool {
        self.when_held || self.action.kind().cuts_off_holder()
    }

    /// Whether the fault is aimed at whoever holds the lock when it starts (and so waits
    /// for a holder), or waits for one all the same (`when = "held"`).
    pub(crate) fn targets_holder(&self) -> bool {
        self.when_held || self.action.kind().targets_holder()
    }
}
