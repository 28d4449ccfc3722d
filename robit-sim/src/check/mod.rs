//! The promises of robit's design (P1–P6), checked on a recorded [`History`].
//!
//! Safety promises (P1, P2, P4, P6) are checked separately from liveness (P3, P5): a
//! run can keep every safety promise and still fail liveness, and a scenario says which
//! it checks. Every violation names the promise, the clients and the instants.

mod backend_grants;
mod beliefs;
mod liveness;
mod safety;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::History;

pub(crate) use self::beliefs::{Beliefs, End};

/// One of the promises of the design brief.
///
/// # Example
///
/// ```
/// use robit_sim::Promise;
///
/// let promise: Promise = "P4".parse()?;
/// assert_eq!(promise, Promise::Fencing);
/// assert!(promise.is_safety());
/// # Ok::<(), robit_sim::UnknownPromise>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Promise {
    /// P1: the intervals in which clients believe they hold the lock never overlap.
    MutualExclusion,
    /// P2: loss is signalled once, before the backend could grant the lock again, and
    /// never after an unlock.
    EarlyLoss,
    /// P3: on a healthy network a renewing holder never loses its lease.
    NoSpuriousLoss,
    /// P4: fencing tokens increase across grants, and a fencing resource never accepts
    /// a stale write.
    Fencing,
    /// P5: once faults heal, waiters acquire within a bound.
    Liveness,
    /// P6: release and renew touch only the caller's own grant.
    SafeRelease,
}

impl Promise {
    /// All six, in order.
    pub const ALL: [Promise; 6] = [
        Self::MutualExclusion,
        Self::EarlyLoss,
        Self::NoSpuriousLoss,
        Self::Fencing,
        Self::Liveness,
        Self::SafeRelease,
    ];

    /// Whether this is a safety promise (something bad never happens), as opposed to a
    /// liveness one (something good eventually happens).
    pub fn is_safety(self) -> bool {
        !matches!(self, Self::NoSpuriousLoss | Self::Liveness)
    }

    /// The promise's short name, `P1` to `P6`.
    pub fn code(self) -> &'static str {
        match self {
            Self::MutualExclusion => "P1",
            Self::EarlyLoss => "P2",
            Self::NoSpuriousLoss => "P3",
            Self::Fencing => "P4",
            Self::Liveness => "P5",
            Self::SafeRelease => "P6",
        }
    }

    /// What the promise says, in a few words.
    pub fn title(self) -> &'static str {
        match self {
            Self::MutualExclusion => "mutual exclusion",
            Self::EarlyLoss => "early loss notification",
            Self::NoSpuriousLoss => "no spurious loss",
            Self::Fencing => "fencing",
            Self::Liveness => "liveness",
            Self::SafeRelease => "safe release",
        }
    }
}

impl fmt::Display for Promise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code(), self.title())
    }
}

/// A promise name that is not `P1` to `P6`.
///
/// # Example
///
/// ```
/// use robit_sim::Promise;
///
/// let error = "P9".parse::<Promise>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown promise \"P9\": expected one of P1, P2, P3, P4, P5, P6");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown promise {0:?}: expected one of P1, P2, P3, P4, P5, P6")]
pub struct UnknownPromise(pub String);

impl FromStr for Promise {
    type Err = UnknownPromise;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|promise| promise.code().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPromise(s.to_owned()))
    }
}

/// A broken promise: which, who, when, and what happened.
///
/// # Example
///
/// ```
/// use robit_sim::{Promise, Violation};
/// use std::time::Duration;
///
/// let violation = Violation {
///     promise: Promise::MutualExclusion,
///     clients: vec!["c1".into(), "c2".into()],
///     instants: vec![Duration::from_secs(3)],
///     message: "both believed they held the lock".into(),
/// };
/// assert!(violation.to_string().starts_with("P1 (mutual exclusion) at 3.000s [c1, c2]"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The promise broken.
    pub promise: Promise,
    /// The clients involved.
    pub clients: Vec<String>,
    /// The true instants that matter, earliest first.
    pub instants: Vec<Duration>,
    /// What happened, in a sentence.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self
            .instants
            .first()
            .map_or_else(String::new, |at| format!(" at {:.3}s", at.as_secs_f64()));
        write!(
            f,
            "{}{at} [{}]: {}",
            self.promise,
            self.clients.join(", "),
            self.message
        )
    }
}

/// What the checkers need to know about the run besides its history.
///
/// # Example
///
/// ```
/// use robit_sim::CheckConfig;
/// use std::time::Duration;
///
/// let config = CheckConfig::new(Duration::from_secs(2), Duration::from_secs(60));
/// assert_eq!(config.liveness_bound, Duration::from_millis(2500));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckConfig {
    /// The lease TTL.
    pub ttl: Duration,
    /// The length of the run (intervals still open at the end close here).
    pub end: Duration,
    /// The longest a waiter may wait while nobody holds the lock, once faults heal.
    pub liveness_bound: Duration,
    /// How long after the last fault heals before the liveness bound applies (time
    /// for the backend and connections to recover).
    pub settle: Duration,
    /// How many backend servers granted: one, or a quorum's N, of which a majority must
    /// be free before another client can hold the lock.
    pub servers: usize,
}

impl CheckConfig {
    /// Defaults derived from the TTL: a liveness bound of TTL + 500 ms, and a settling
    /// time of two TTLs.
    pub fn new(ttl: Duration, end: Duration) -> Self {
        Self {
            ttl,
            end,
            liveness_bound: ttl + Duration::from_millis(500),
            settle: ttl * 2,
            servers: 1,
        }
    }

    /// Sets the number of backend servers: a quorum's N (the default is one).
    pub fn with_servers(mut self, servers: usize) -> Self {
        self.servers = servers.max(1);
        self
    }

    /// Sets the liveness bound.
    pub fn with_liveness_bound(mut self, bound: Duration) -> Self {
        self.liveness_bound = bound;
        self
    }

    /// Sets the settling time after the last fault.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }
}

/// Runs the checkers for `promises` on `history`, returning every violation found,
/// ordered by promise and then time.
///
/// # Example
///
/// ```
/// use robit_sim::{CheckConfig, EventKind, History, Promise, check};
/// use std::time::Duration;
///
/// let history = History::new();
/// let s = Duration::from_secs;
/// history.record_at(s(1), "a", EventKind::Acquired { lease: 1, token: 1 });
/// history.record_at(s(2), "b", EventKind::Acquired { lease: 1, token: 2 });
/// let violations = check(&history, &CheckConfig::new(s(5), s(10)), &Promise::ALL);
/// assert_eq!(violations[0].promise, Promise::MutualExclusion);
/// ```
pub fn check(history: &History, config: &CheckConfig, promises: &[Promise]) -> Vec<Violation> {
    let events = history.events();
    let beliefs = Beliefs::from_events(&events, config.end);
    let mut violations = Vec::new();
    for promise in Promise::ALL {
        if !promises.contains(&promise) {
            continue;
        }
        let found = match promise {
            Promise::MutualExclusion => safety::mutual_exclusion(&beliefs),
            Promise::EarlyLoss => safety::early_loss(&events, &beliefs, config.servers),
            Promise::NoSpuriousLoss => liveness::no_spurious_loss(&events, config),
            Promise::Fencing => safety::fencing(&events, &beliefs),
            Promise::Liveness => liveness::liveness(&events, &beliefs, config),
            Promise::SafeRelease => safety::safe_release(&events),
        };
        violations.extend(found);
    }
    violations
}
