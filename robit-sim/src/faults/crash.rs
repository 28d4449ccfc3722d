//! `crash`: a client's host killed, and with `for` restarted after that long, its
//! software started afresh.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Testbed, Written, timing};
use crate::EventKind;
use crate::scenario::{Dur, Target};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    host: String,
}

/// The clients the target names, crashed.
#[derive(Debug, Clone)]
pub(crate) struct Crash(pub(crate) Target);

impl Written for Raw {
    type Kind = Crash;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn parse(self, on: &Parse<'_>) -> Result<Crash, Invalid> {
        Ok(Crash(on.hosts.client(&self.host, false)?))
    }
}

impl Kind for Crash {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.one(&self.0)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!("crash {}", sides.a_names())
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            world.sim.crash(host.as_str());
            world.record(host, EventKind::Crashed);
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            world.sim.bounce(host.as_str());
            world.record(host, EventKind::Restarted);
        }
    }

    /// A client crash is recorded as the host's own crash, not as a network fault.
    fn recorded(&self, _hosts: &dyn Testbed) -> bool {
        false
    }

    fn targets_holder(&self) -> bool {
        self.0 == Target::Holder
    }
}
