//! `drift`: a host's clock runs at another rate from now on (a client's, the backend's,
//! a quorum server's or the storage's), until put back. Drift within the lock's bound is
//! not a fault; beyond it, it is.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Testbed, Written, timing};
use crate::scenario::{Dur, Target, needs};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    host: String,
    drift: f64,
}

/// The hosts `.0` names drift by `.1` (0.01 is 1% fast).
#[derive(Debug, Clone)]
pub(crate) struct Drift(pub(crate) Target, pub(crate) f64);

impl Written for Raw {
    type Kind = Drift;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn parse(self, on: &Parse<'_>) -> Result<Drift, Invalid> {
        if !(self.drift.is_finite() && self.drift > -1.0) {
            return Err(needs("drift").into());
        }
        Ok(Drift(on.hosts.client(&self.host, true)?, self.drift))
    }
}

impl Kind for Drift {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.one(&self.0)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!("drift {} {:+}", sides.a_names(), self.1)
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            if let Some(clock) = world.hosts.clock(host) {
                clock.set_drift(world.now, self.1);
            }
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            if let Some(clock) = world.hosts.clock(host) {
                clock.set_drift(world.now, 0.0);
            }
        }
    }

    /// Drift inside the configured bound is not a fault; beyond it, it is.
    fn recorded(&self, hosts: &dyn Testbed) -> bool {
        self.1.abs() > hosts.drift_bound()
    }

    fn targets_holder(&self) -> bool {
        self.0 == Target::Holder
    }
}
