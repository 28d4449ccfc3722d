//! `backend-failover`: the simulated Redis's primary fails and its replica, replicated
//! asynchronously `lag` behind, is promoted at once; the clients follow it, as Sentinel
//! would steer them. Whatever the primary wrote in its last `lag` is gone, and the new
//! primary is another server.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Written, timing};
use crate::EventKind;
use crate::scenario::{Backend, Dur, Fault};

/// Instant: no `for`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default)]
    lag: Option<Dur>,
}

/// The primary fails over to its replica.
#[derive(Debug, Clone)]
pub(crate) struct BackendFailover {
    /// How far behind the primary the replica was.
    pub(crate) lag: Duration,
}

impl Written for Raw {
    type Kind = BackendFailover;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, None)
    }

    fn parse(self, _on: &Parse<'_>) -> Result<BackendFailover, Invalid> {
        Ok(BackendFailover {
            lag: self.lag.map_or(Duration::ZERO, |lag| lag.0),
        })
    }
}

impl Kind for BackendFailover {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.backend()
    }

    fn describe(&self, _sides: &Sides) -> String {
        format!("backend failover to a replica {:?} behind", self.lag)
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        // The clients' connections to the old primary break; they reconnect to the
        // same address, now the promoted replica's, as Sentinel would steer them.
        for host in &sides.a {
            world.sim.crash(host.as_str());
        }
        world.hosts.fail_over_backend(world.now, self.lag);
        for host in &sides.a {
            if !self.lag.is_zero() {
                world.record(host, EventKind::BackendStateLost);
            }
            world.sim.bounce(host.as_str());
        }
    }

    fn instant(&self) -> bool {
        true
    }

    fn loses_backend_state(&self) -> bool {
        true
    }

    fn replica_lag(&self) -> Option<Duration> {
        Some(self.lag)
    }

    fn redis_only(&self) -> bool {
        true
    }

    fn unfit(&self, backend: Backend, _at: Duration, _faults: &[Fault]) -> Option<&'static str> {
        (backend != Backend::Redis).then_some(
            "a failover promotes the simulated Redis's replica: set `backend = \"redis\"`",
        )
    }
}
