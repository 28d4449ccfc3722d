//! `backend-snapshot`: the backend saves its state, as Redis's `SAVE` does, for a later
//! restart `from_snapshot`. Changes nothing a client sees: not counted as a fault.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Testbed, Written, timing};
use crate::scenario::{Backend, Dur, Fault};

/// Why a snapshot, or a restart from one, needs the simulated Redis.
pub(super) const REDIS_ONLY: &str =
    "snapshots are the simulated Redis's: set `backend = \"redis\"`";

/// Instant: no `for`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
}

/// The backend saves its state (a Redis snapshot).
#[derive(Debug, Clone)]
pub(crate) struct BackendSnapshot;

impl Written for Raw {
    type Kind = BackendSnapshot;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, None)
    }

    fn parse(self, _on: &Parse<'_>) -> Result<BackendSnapshot, Invalid> {
        Ok(BackendSnapshot)
    }
}

impl Kind for BackendSnapshot {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.backend()
    }

    fn describe(&self, _sides: &Sides) -> String {
        "backend snapshot".to_owned()
    }

    fn start(&self, world: &mut Scene<'_, '_>, _sides: &Sides) {
        world.hosts.snapshot_backend();
    }

    /// Saving changes nothing a client can see.
    fn recorded(&self, _hosts: &dyn Testbed) -> bool {
        false
    }

    fn redis_only(&self) -> bool {
        true
    }

    fn unfit(&self, backend: Backend, _at: Duration, _faults: &[Fault]) -> Option<&'static str> {
        (backend != Backend::Redis).then_some(REDIS_ONLY)
    }
}
