//! The scenario file as written: what serde reads before validation.

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// A duration written as text: `"250ms"`, `"2s"`, `"1m 30s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dur(pub(crate) Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text).map(Dur).map_err(|error| {
            serde::de::Error::custom(format!(
                "invalid duration {text:?} ({error}): expected a number and a unit, like \"250ms\" or \"2s\""
            ))
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    pub(crate) duration: Dur,
    #[serde(default)]
    pub(crate) tick: Option<Spanned<Dur>>,
    #[serde(default)]
    pub(crate) backend: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) servers: Option<Spanned<u32>>,
    #[serde(default)]
    pub(crate) check: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(crate) expect: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(crate) require: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(crate) forbid: Option<Spanned<Vec<String>>>,
    pub(crate) lock: RawLock,
    #[serde(default)]
    pub(crate) network: RawNetwork,
    #[serde(default)]
    pub(crate) storage: RawStorage,
    #[serde(default)]
    pub(crate) redis: RawRedis,
    #[serde(default)]
    pub(crate) liveness: RawLiveness,
    pub(crate) clients: Vec<Spanned<RawClient>>,
    /// Read as tables first, then each as a [`RawFault`] when the fault is validated.
    #[serde(default)]
    pub(crate) faults: Vec<Spanned<RawEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLock {
    #[serde(default)]
    pub(crate) name: Option<String>,
    pub(crate) ttl: Spanned<Dur>,
    #[serde(default)]
    pub(crate) renew_period: Option<Dur>,
    #[serde(default)]
    pub(crate) renew_timeout: Option<Dur>,
    #[serde(default)]
    pub(crate) drift_factor: Option<f64>,
    #[serde(default)]
    pub(crate) safety_margin: Option<Dur>,
    #[serde(default)]
    pub(crate) wait: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) backoff: Option<[Dur; 2]>,
    #[serde(default)]
    pub(crate) lock_delay: Option<Dur>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNetwork {
    #[serde(default)]
    pub(crate) latency: Option<[Dur; 2]>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStorage {
    #[serde(default)]
    pub(crate) fencing: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRedis {
    #[serde(default)]
    pub(crate) quarantine: Option<Dur>,
    #[serde(default)]
    pub(crate) command_timeout: Option<Dur>,
    #[serde(default)]
    pub(crate) detect_failover: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLiveness {
    #[serde(default)]
    pub(crate) bound: Option<Dur>,
    #[serde(default)]
    pub(crate) settle: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClient {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) count: Option<u32>,
    #[serde(default)]
    pub(crate) start: Option<Dur>,
    pub(crate) hold: [Dur; 2],
    #[serde(default)]
    pub(crate) think: Option<[Dur; 2]>,
    #[serde(default)]
    pub(crate) writes: Option<u32>,
    #[serde(default)]
    pub(crate) drift: Option<f64>,
    #[serde(default)]
    pub(crate) mutexes: Option<u32>,
    #[serde(default)]
    pub(crate) heed_jeopardy: Option<bool>,
}

/// One `[[faults]]` entry before its kind is read: each value keeps its place in the
/// file, so that an error in a value can point at it.
pub(crate) type RawEntry = std::collections::BTreeMap<String, Spanned<toml::Value>>;

/// One `[[faults]]` entry as written: `kind` names the variant, and each kind takes
/// exactly its own fields (serde refuses a missing one, or one of another kind's).
///
/// Read from the entry's table (`table::read`), whose errors the fault's validation
/// words for the scenario's author.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub(crate) enum RawFault {
    Partition {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        between: Vec<String>,
    },
    PartitionOneway {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        from: String,
        to: String,
    },
    Clog {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        between: Vec<String>,
    },
    Latency {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        latency: [Dur; 2],
        #[serde(default)]
        when: Option<When>,
        #[serde(default)]
        between: Option<Vec<String>>,
    },
    Loss {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        rate: f64,
        #[serde(default)]
        when: Option<When>,
        #[serde(default)]
        between: Option<Vec<String>>,
    },
    Drift {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        host: String,
        drift: f64,
    },
    /// `for` is required: how long the host stays paused.
    Pause {
        at: Dur,
        #[serde(rename = "for")]
        length: Dur,
        host: String,
    },
    Crash {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        host: String,
    },
    BackendCrash {
        at: Dur,
        #[serde(default, rename = "for")]
        length: Option<Dur>,
        #[serde(default)]
        lose_state: bool,
        #[serde(default)]
        host: Option<String>,
    },
    /// Instant: no `for`.
    BackendRestart {
        at: Dur,
        #[serde(default)]
        lose_state: bool,
        #[serde(default)]
        host: Option<String>,
        #[serde(default)]
        from_snapshot: bool,
    },
    /// Instant: the backend saves its state, for a later `from_snapshot` restart.
    BackendSnapshot { at: Dur },
    /// Instant: the primary fails and its replica, `lag` behind, takes over.
    BackendFailover {
        at: Dur,
        #[serde(default)]
        lag: Option<Dur>,
    },
}

/// `when = "held"`: a network-wide fault that waits, from `at`, for a holder in the
/// middle of a hold that goes on for a TTL at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum When {
    Held,
}

impl RawFault {
    /// Whether the fault waits for a holder (`when = "held"`).
    pub(crate) fn when_held(&self) -> bool {
        matches!(
            self,
            Self::Latency {
                when: Some(When::Held),
                ..
            } | Self::Loss {
                when: Some(When::Held),
                ..
            }
        )
    }

    /// When the fault starts, and how long until it is undone (if it is).
    pub(crate) fn timing(&self) -> (Duration, Option<Duration>) {
        let (at, length) = match self {
            Self::Partition { at, length, .. }
            | Self::PartitionOneway { at, length, .. }
            | Self::Clog { at, length, .. }
            | Self::Latency { at, length, .. }
            | Self::Loss { at, length, .. }
            | Self::Drift { at, length, .. }
            | Self::Crash { at, length, .. }
            | Self::BackendCrash { at, length, .. } => (at, *length),
            Self::Pause { at, length, .. } => (at, Some(*length)),
            Self::BackendRestart { at, .. }
            | Self::BackendSnapshot { at }
            | Self::BackendFailover { at, .. } => (at, None),
        };
        (at.0, length.map(|length| length.0))
    }
}
