//! The kinds of fault a scenario schedules, each in a file of its own: how the kind is
//! written in a `[[faults]]` entry (its fields, read by serde, then checked against the
//! scenario), which hosts it lands on, what it does to the world when it starts and when
//! it ends, and how the history words it.
//!
//! Adding a kind is a file here, holding its `Raw` fields (implementing [`Written`]) and
//! the kind itself (implementing [`Kind`]), and one line in the list given to
//! `kinds!` below; then a scenario under `scenarios/` that uses it, and its row in
//! `docs/scenarios.md`. Nothing else matches on the kinds: the scenario's validation,
//! the schedule and the checks ask [`Action::kind`].
//!
//! What every kind shares — choosing the holder, resolving hosts, recording the fault in
//! the history — is in `apply`.

mod apply;
mod backend_crash;
mod backend_failover;
mod backend_restart;
mod backend_snapshot;
mod clog;
mod crash;
mod drift;
mod latency;
mod loss;
mod partition;
mod partition_oneway;
mod pause;

use std::fmt::Debug;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;

pub(crate) use self::apply::{Applied, Resolve, Scene, Sides, Testbed, end, holder, start};
pub(crate) use self::backend_restart::BackendRestart;
pub(crate) use self::crash::Crash;
pub(crate) use self::drift::Drift;
pub(crate) use self::partition::Partition;
pub(crate) use self::partition_oneway::PartitionOneway;
pub(crate) use self::pause::Pause;
use crate::scenario::{Backend, Ctx, Dur, Fault, ScenarioError, ScenarioHosts};

/// How a kind is written in a scenario: the fields of its `[[faults]]` entry besides
/// `kind`, as serde reads them (each kind's `Raw`, which refuses a field it does not
/// take), and how they become the kind.
pub(crate) trait Written {
    /// The kind the fields describe.
    type Kind;

    /// When the fault starts, and how long until it is undone (if it is).
    fn timing(&self) -> (Duration, Option<Duration>);

    /// Whether the fault waits for a holder (`when = "held"`).
    fn when_held(&self) -> bool {
        false
    }

    /// The kind, its hosts and values checked against the scenario.
    fn parse(self, on: &Parse<'_>) -> Result<Self::Kind, Invalid>;

    /// What to say of `field`, which this kind does not take, if more than that.
    fn misplaced(_field: &str) -> Option<&'static str>
    where
        Self: Sized,
    {
        None
    }
}

/// One kind of fault, as the world applies it and the scenario asks about it.
pub(crate) trait Kind: Debug {
    /// The hosts the fault lands on: both sides of a link fault, or the hosts of a fault
    /// on hosts (and none on the other side).
    fn sides(&self, on: &Resolve<'_>) -> Sides;

    /// The fault in words, as the history records it.
    fn describe(&self, sides: &Sides) -> String;

    /// Starts the fault on `sides`.
    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides);

    /// Undoes the fault on `sides` (nothing, for one that is over once it starts).
    fn end(&self, _world: &mut Scene<'_, '_>, _sides: &Sides) {}

    /// Whether it counts as a fault (and so is recorded, start and end).
    fn recorded(&self, _hosts: &dyn Testbed) -> bool {
        true
    }

    /// Whether it is over as soon as it starts (recorded as ended at once).
    fn instant(&self) -> bool {
        false
    }

    /// Whether it cuts the holder off from the backend.
    fn cuts_off_holder(&self) -> bool {
        false
    }

    /// Whether it is aimed at whoever holds the lock when it starts.
    fn targets_holder(&self) -> bool {
        self.cuts_off_holder()
    }

    /// Whether the backend loses data in it: all of it, or what it wrote lately.
    fn loses_backend_state(&self) -> bool {
        false
    }

    /// How far behind its primary the replica it promotes is, if it promotes one.
    fn replica_lag(&self) -> Option<Duration> {
        None
    }

    /// Whether only the simulated Redis can take it (a snapshot, a replica).
    fn redis_only(&self) -> bool {
        false
    }

    /// Why the fault, at `at`, cannot be in a scenario with `backend` and `faults`.
    fn unfit(&self, _backend: Backend, _at: Duration, _faults: &[Fault]) -> Option<&'static str> {
        None
    }
}

/// What checking a kind's fields against the scenario looks at.
pub(crate) struct Parse<'a> {
    pub(crate) hosts: &'a ScenarioHosts<'a>,
    pub(crate) ctx: &'a Ctx<'a>,
    /// Where the fault's entry is in the scenario's text.
    pub(crate) span: Option<Range<usize>>,
}

/// Why a fault's fields are invalid: a message about the fault, or an error of its own.
pub(crate) enum Invalid {
    Fault(String),
    Scenario(ScenarioError),
}

impl From<String> for Invalid {
    fn from(message: String) -> Self {
        Self::Fault(message)
    }
}

/// `when = "held"`: a network-wide fault that waits, from `at`, for a holder in the
/// middle of a hold that goes on for a TTL at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum When {
    Held,
}

/// The kinds, in the documented order: each as a scenario names it, its variant and its
/// module (holding `Raw` and the kind, named as the variant).
macro_rules! kinds {
    ($($name:literal => $variant:ident in $module:ident,)*) => {
        /// One `[[faults]]` entry as written: `kind` names the variant, and each kind
        /// takes exactly its own fields (serde refuses a missing one, or one of another
        /// kind's).
        ///
        /// Read from the entry's table (`toml_table::read`), whose errors the fault's
        /// validation words for the scenario's author.
        #[derive(Debug, Deserialize)]
        #[serde(tag = "kind")]
        pub(crate) enum RawFault {
            $(#[serde(rename = $name)] $variant($module::Raw),)*
        }

        /// A scheduled fault's kind, its hosts and values checked.
        #[derive(Debug, Clone)]
        pub(crate) enum Action {
            $($variant($module::$variant),)*
        }

        impl RawFault {
            /// When the fault starts, and how long until it is undone (if it is).
            pub(crate) fn timing(&self) -> (Duration, Option<Duration>) {
                match self {
                    $(Self::$variant(raw) => raw.timing(),)*
                }
            }

            /// Whether the fault waits for a holder (`when = "held"`).
            pub(crate) fn when_held(&self) -> bool {
                match self {
                    $(Self::$variant(raw) => raw.when_held(),)*
                }
            }

            /// The fault's kind, checked against the scenario.
            pub(crate) fn parse(self, on: &Parse<'_>) -> Result<Action, Invalid> {
                Ok(match self {
                    $(Self::$variant(raw) => Action::$variant(raw.parse(on)?),)*
                })
            }

            /// What to say of `field` in a fault of kind `kind`, which does not take it,
            /// if more than that.
            pub(crate) fn misplaced(kind: &str, field: &str) -> Option<&'static str> {
                match kind {
                    $($name => <$module::Raw as Written>::misplaced(field),)*
                    _ => None,
                }
            }
        }

        impl Action {
            /// The kind, to ask what it does.
            pub(crate) fn kind(&self) -> &dyn Kind {
                match self {
                    $(Self::$variant(kind) => kind,)*
                }
            }
        }
    };
}

kinds! {
    "partition" => Partition in partition,
    "partition-oneway" => PartitionOneway in partition_oneway,
    "clog" => Clog in clog,
    "latency" => Latency in latency,
    "loss" => Loss in loss,
    "drift" => Drift in drift,
    "pause" => Pause in pause,
    "crash" => Crash in crash,
    "backend-crash" => BackendCrash in backend_crash,
    "backend-restart" => BackendRestart in backend_restart,
    "backend-snapshot" => BackendSnapshot in backend_snapshot,
    "backend-failover" => BackendFailover in backend_failover,
}

/// A fault's `at` and `for`, as [`Written::timing`] answers them.
fn timing(at: Dur, length: Option<Dur>) -> (Duration, Option<Duration>) {
    (at.0, length.map(|length| length.0))
}
