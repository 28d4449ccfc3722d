//! `pause`: a client stopped for `for` — its clock stands still and nothing it sends
//! leaves — then woken, its messages delivered at once.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Written, timing};
use crate::scenario::{Dur, Target};

/// `for` is required: how long the host stays paused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(rename = "for")]
    length: Dur,
    host: String,
}

/// The clients the target names, paused for the fault's length.
#[derive(Debug, Clone)]
pub(crate) struct Pause(pub(crate) Target);

impl Written for Raw {
    type Kind = Pause;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, Some(self.length))
    }

    fn parse(self, on: &Parse<'_>) -> Result<Pause, Invalid> {
        Ok(Pause(on.hosts.client(&self.host, false)?))
    }
}

impl Kind for Pause {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.one(&self.0)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!("pause {}", sides.a_names())
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        let length = world.length.unwrap_or_default();
        for host in &sides.a {
            if let Some(clock) = world.hosts.clock(host) {
                clock.pause(world.now, length);
            }
            for other in world.others(host) {
                world.sim.hold(host.as_str(), other.as_str());
            }
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            for other in world.others(host) {
                world.sim.release(host.as_str(), other.as_str());
            }
        }
    }

    fn targets_holder(&self) -> bool {
        self.0 == Target::Holder
    }
}
