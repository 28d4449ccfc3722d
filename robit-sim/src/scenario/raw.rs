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
    /// Read as tables first, then each as a `RawFault` (its kind's fields) when the
    /// fault is validated.
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
