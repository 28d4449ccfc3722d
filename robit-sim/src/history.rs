//! What happened in a run, in true simulated time.
//!
//! Clients, the backend and the storage host append [`Event`]s to one shared
//! [`History`] as they happen. The checkers read it afterwards; its text form (one line
//! per event, [`History::render`]) is what the determinism test hashes and what
//! `robit-sim replay` prints.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::true_now;

/// One thing that happened, at a true instant, to a client (or `backend`, `storage`,
/// `world`).
///
/// # Example
///
/// ```
/// use robit_sim::{Event, EventKind};
/// use std::time::Duration;
///
/// let event = Event {
///     at: Duration::from_millis(1500),
///     who: "c1".into(),
///     kind: EventKind::Acquired { lease: 3, token: 41 },
/// };
/// assert_eq!(event.to_string(), "1.500000000 c1 acquired lease=3 token=41");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// True simulated time since the start of the run.
    pub at: Duration,
    /// The host the event belongs to, or, on a host that runs several mutexes, the
    /// mutex: `<host>#<n>`.
    pub who: String,
    /// What happened.
    pub kind: EventKind,
}

/// The host part of an event's `who`: a host that runs several mutexes records each
/// one's events as `<host>#<n>`, and its host-wide events (a crash) under the host.
pub(crate) fn host_of(who: &str) -> &str {
    who.split_once('#').map_or(who, |(host, _)| host)
}

/// The kinds of [`Event`]. Leases are numbered per client: a client's `n`th successful
/// `lock()` holds lease `n`.
///
/// # Example
///
/// ```
/// use robit_sim::EventKind;
///
/// let kind = EventKind::Lost { lease: 2, reason: "deadline".into() };
/// assert_eq!(kind.label(), "lost");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// `lock()` was called (the client starts waiting).
    LockCalled,
    /// `lock()` returned a guard: the client believes it holds the lock from here.
    Acquired {
        /// The client's lease number.
        lease: u64,
        /// The grant's fencing token.
        token: u64,
    },
    /// `lock()` returned an error.
    LockFailed {
        /// The error, as displayed.
        error: String,
    },
    /// `unlock()` was called: the client stops believing it holds the lock.
    UnlockCalled {
        /// The lease being unlocked.
        lease: u64,
    },
    /// The client found its guard no longer held (its validity deadline passed) and
    /// dropped it: it stops believing it holds the lock, though no loss was signalled
    /// yet.
    Dropped {
        /// The lease dropped.
        lease: u64,
    },
    /// `unlock()` returned.
    Unlocked {
        /// The lease.
        lease: u64,
        /// `ok`, or the error as displayed.
        outcome: String,
    },
    /// Loss was signalled to the client: it stops believing it holds the lock.
    Lost {
        /// The lease lost.
        lease: u64,
        /// Why, as the library reported it.
        reason: String,
    },
    /// The client's hold entered jeopardy (no renewal through, the deadline near), or,
    /// with `cleared`, a renewal took it out again.
    Jeopardy {
        /// The lease.
        lease: u64,
        /// Whether this marks its end.
        cleared: bool,
    },
    /// The client sent a write, fenced with its token, to the storage host.
    WriteSent {
        /// The lease the client believed it held.
        lease: u64,
        /// The token sent with the write.
        token: u64,
    },
    /// The storage host accepted a write.
    WriteAccepted {
        /// The writing client.
        from: String,
        /// Its token.
        token: u64,
    },
    /// The storage host rejected a write as stale.
    WriteRejected {
        /// The writing client.
        from: String,
        /// Its token.
        token: u64,
        /// The highest token the storage had seen.
        highest: u64,
    },
    /// The backend granted the lock.
    BackendGranted {
        /// The client it was granted to.
        to: String,
        /// The grant's fencing token.
        token: u64,
        /// The true instant until which the backend keeps the grant.
        until: Duration,
    },
    /// The backend extended a grant.
    BackendRenewed {
        /// The client that renewed.
        by: String,
        /// The grant's fencing token.
        token: u64,
        /// The new true instant until which the backend keeps the grant.
        until: Duration,
    },
    /// The backend removed a grant on a release.
    BackendReleased {
        /// The client whose release removed it.
        by: String,
        /// The grant's fencing token.
        token: u64,
    },
    /// The backend lost all its state (it crashed or restarted without persistence):
    /// every grant with it.
    BackendStateLost,
    /// The backend suspended grants after a loss of state (robit's quarantine): none
    /// until `until`.
    BackendQuarantined {
        /// The client whose request found the state lost.
        by: String,
        /// The true instant until which no grant is made.
        until: Duration,
    },
    /// A fault began (or, with `ended`, was repaired).
    Fault {
        /// The fault, as the scenario describes it.
        what: String,
        /// Whether this marks its end.
        ended: bool,
    },
    /// The host crashed: its tasks are gone, its beliefs with them.
    Crashed,
    /// The host's software started again.
    Restarted,
}

/// Every [`EventKind::label`], for validating scenario files.
pub(crate) const LABELS: [&str; 21] = [
    "lock-called",
    "acquired",
    "lock-failed",
    "unlock-called",
    "unlocked",
    "dropped",
    "lost",
    "jeopardy",
    "jeopardy-cleared",
    "write-sent",
    "write-accepted",
    "write-rejected",
    "granted",
    "renewed",
    "released",
    "state-lost",
    "quarantined",
    "fault",
    "repaired",
    "crashed",
    "restarted",
];

impl EventKind {
    /// The event's name, as the text form of the history writes it: `acquired`,
    /// `lost`, `write-rejected`, …
    pub fn label(&self) -> &'static str {
        match self {
            Self::LockCalled => "lock-called",
            Self::Acquired { .. } => "acquired",
            Self::LockFailed { .. } => "lock-failed",
            Self::UnlockCalled { .. } => "unlock-called",
            Self::Unlocked { .. } => "unlocked",
            Self::Dropped { .. } => "dropped",
            Self::Lost { .. } => "lost",
            Self::Jeopardy { cleared: false, .. } => "jeopardy",
            Self::Jeopardy { cleared: true, .. } => "jeopardy-cleared",
            Self::WriteSent { .. } => "write-sent",
            Self::WriteAccepted { .. } => "write-accepted",
            Self::WriteRejected { .. } => "write-rejected",
            Self::BackendGranted { .. } => "granted",
            Self::BackendRenewed { .. } => "renewed",
            Self::BackendReleased { .. } => "released",
            Self::BackendStateLost => "state-lost",
            Self::BackendQuarantined { .. } => "quarantined",
            Self::Fault { ended: false, .. } => "fault",
            Self::Fault { ended: true, .. } => "repaired",
            Self::Crashed => "crashed",
            Self::Restarted => "restarted",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09} {} ",
            self.at.as_secs(),
            self.at.subsec_nanos(),
            self.who
        )?;
        kind_words(f, &self.kind)
    }
}

/// An event's kind and fields as its line in a history dump shows them, after its time
/// and host.
fn kind_words(f: &mut fmt::Formatter<'_>, kind: &EventKind) -> fmt::Result {
    match kind {
        EventKind::LockCalled => write!(f, "lock-called"),
        EventKind::Acquired { lease, token } => {
            write!(f, "acquired lease={lease} token={token}")
        }
        EventKind::LockFailed { error } => write!(f, "lock-failed error={error:?}"),
        EventKind::UnlockCalled { lease } => write!(f, "unlock-called lease={lease}"),
        EventKind::Unlocked { lease, outcome } => {
            write!(f, "unlocked lease={lease} outcome={outcome:?}")
        }
        EventKind::Dropped { lease } => write!(f, "dropped lease={lease}"),
        EventKind::Lost { lease, reason } => write!(f, "lost lease={lease} reason={reason:?}"),
        EventKind::Jeopardy { lease, cleared } => {
            let label = if *cleared {
                "jeopardy-cleared"
            } else {
                "jeopardy"
            };
            write!(f, "{label} lease={lease}")
        }
        EventKind::WriteSent { lease, token } => {
            write!(f, "write-sent lease={lease} token={token}")
        }
        EventKind::WriteAccepted { from, token } => {
            write!(f, "write-accepted from={from} token={token}")
        }
        EventKind::WriteRejected {
            from,
            token,
            highest,
        } => write!(
            f,
            "write-rejected from={from} token={token} highest={highest}"
        ),
        EventKind::BackendGranted { to, token, until } => {
            write!(f, "granted to={to} token={token} until={until:?}")
        }
        EventKind::BackendRenewed { by, token, until } => {
            write!(f, "renewed by={by} token={token} until={until:?}")
        }
        EventKind::BackendReleased { by, token } => {
            write!(f, "released by={by} token={token}")
        }
        EventKind::BackendStateLost => write!(f, "state-lost"),
        EventKind::BackendQuarantined { by, until } => {
            write!(f, "quarantined by={by} until={until:?}")
        }
        EventKind::Fault { what, ended } => {
            write!(f, "{} {what}", if *ended { "repaired" } else { "fault" })
        }
        EventKind::Crashed => write!(f, "crashed"),
        EventKind::Restarted => write!(f, "restarted"),
    }
}

/// The shared, append-only record of a run. Clones append to the same record.
///
/// # Example
///
/// ```
/// use robit_sim::{EventKind, History};
/// use std::time::Duration;
///
/// let history = History::new();
/// history.record_at(Duration::from_secs(1), "c1", EventKind::LockCalled);
/// assert_eq!(history.events().len(), 1);
/// assert_eq!(history.render(), "1.000000000 c1 lock-called\n");
/// ```
#[derive(Debug, Clone, Default)]
pub struct History {
    events: Arc<Mutex<Vec<Event>>>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event at the current true time (inside a simulated host).
    pub fn record(&self, who: &str, kind: EventKind) {
        self.record_at(true_now(), who, kind);
    }

    /// Appends an event at the given true time.
    pub fn record_at(&self, at: Duration, who: &str, kind: EventKind) {
        self.lock().push(Event {
            at,
            who: who.to_owned(),
            kind,
        });
    }

    /// A copy of the events so far, in the order they were recorded (which is also
    /// true-time order, since the simulation runs one host at a time).
    pub fn events(&self) -> Vec<Event> {
        let mut events = self.lock().clone();
        // Hosts run one after another inside a step, each catching up to the step's end:
        // order by time, keeping record order among equal instants.
        events.sort_by_key(|event| event.at);
        events
    }

    /// The history as text, one event per line: the byte-exact form the determinism
    /// test compares.
    pub fn render(&self) -> String {
        self.events()
            .iter()
            .map(|event| format!("{event}\n"))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
