//! `clog`: messages between two sets of hosts held, none delivered, then released all at
//! once when the fault ends ("swizzle-clog").

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Written, timing};
use crate::scenario::{Dur, Target};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    between: Vec<String>,
}

/// The links between the hosts one target names and those the other names, clogged.
#[derive(Debug, Clone)]
pub(crate) struct Clog(pub(crate) Target, pub(crate) Target);

impl Written for Raw {
    type Kind = Clog;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn parse(self, on: &Parse<'_>) -> Result<Clog, Invalid> {
        let (a, b) = on.hosts.two(&self.between)?;
        Ok(Clog(a, b))
    }
}

impl Kind for Clog {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.two(&self.0, &self.1)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!("clog {} | {}", sides.a_names(), sides.b_names())
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.hold(x.as_str(), y.as_str());
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.release(x.as_str(), y.as_str());
        }
    }

    fn cuts_off_holder(&self) -> bool {
        self.0 == Target::Holder || self.1 == Target::Holder
    }
}
