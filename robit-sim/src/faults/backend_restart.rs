//! `backend-restart`: the backend's servers (all, or some of a quorum's) restarted at
//! once, keeping their data unless `lose_state`; or, `from_snapshot`, the whole backend
//! restarted from its last snapshot, the grants since gone.

use std::time::Duration;

use serde::Deserialize;

use super::backend_crash::losing;
use super::{Action, Invalid, Kind, Parse, Resolve, Scene, Sides, Written, timing};
use crate::EventKind;
use crate::scenario::{Backend, Dur, Fault, Target};

/// Instant: no `for`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default)]
    lose_state: bool,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    from_snapshot: bool,
}

/// The servers named restart at once; or, `from_snapshot`, the whole backend restarts
/// from its last snapshot, another life of the server.
#[derive(Debug, Clone)]
pub(crate) struct BackendRestart {
    pub(crate) lose_state: bool,
    pub(crate) on: Target,
    pub(crate) from_snapshot: bool,
}

impl Written for Raw {
    type Kind = BackendRestart;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, None)
    }

    fn parse(self, on: &Parse<'_>) -> Result<BackendRestart, Invalid> {
        if self.lose_state && self.from_snapshot {
            return Err(Invalid::Fault(
                "a restart loses its state or restores a snapshot, not both: drop `lose_state` \
                 or `from_snapshot`"
                    .to_owned(),
            ));
        }
        if self.from_snapshot {
            on.hosts
                .whole_backend(self.host.as_deref(), "a restart from a snapshot")?;
        }
        Ok(BackendRestart {
            lose_state: self.lose_state,
            on: on.hosts.servers(self.host.as_deref())?,
            from_snapshot: self.from_snapshot,
        })
    }

    fn misplaced(field: &str) -> Option<&'static str> {
        (field == "for")
            .then_some("a restart is instant: use backend-crash with `for` for downtime")
    }
}

impl Kind for BackendRestart {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        if self.from_snapshot {
            on.backend()
        } else {
            on.one(&self.on)
        }
    }

    fn describe(&self, sides: &Sides) -> String {
        if self.from_snapshot {
            "backend restart from its snapshot".to_owned()
        } else {
            format!(
                "backend restart{}{}",
                sides.servers(),
                losing(self.lose_state)
            )
        }
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        if self.from_snapshot {
            for host in &sides.a {
                world.sim.crash(host.as_str());
            }
            world.hosts.restore_backend();
            for host in &sides.a {
                world.record(host, EventKind::BackendStateLost);
                world.sim.bounce(host.as_str());
            }
            return;
        }
        for host in &sides.a {
            world.sim.crash(host.as_str());
            if self.lose_state {
                world.hosts.lose_backend_state(host);
                world.record(host, EventKind::BackendStateLost);
            }
            world.sim.bounce(host.as_str());
        }
    }

    fn instant(&self) -> bool {
        true
    }

    fn loses_backend_state(&self) -> bool {
        self.lose_state || self.from_snapshot
    }

    fn redis_only(&self) -> bool {
        self.from_snapshot
    }

    fn unfit(&self, backend: Backend, at: Duration, faults: &[Fault]) -> Option<&'static str> {
        let snapshot_before = faults
            .iter()
            .any(|earlier| matches!(earlier.action, Action::BackendSnapshot(_)) && earlier.at < at);
        if !self.from_snapshot {
            None
        } else if backend != Backend::Redis {
            Some(super::backend_snapshot::REDIS_ONLY)
        } else if !snapshot_before {
            Some("a restart `from_snapshot` needs a `backend-snapshot` fault before it")
        } else {
            None
        }
    }
}
