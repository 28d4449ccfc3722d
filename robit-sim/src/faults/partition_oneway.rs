//! `partition-oneway`: messages from one set of hosts to another dropped, those the
//! other way delivered, until repaired.

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
    from: String,
    to: String,
}

/// Messages from the hosts `from` names to those `to` names are dropped.
#[derive(Debug, Clone)]
pub(crate) struct PartitionOneway {
    pub(crate) from: Target,
    pub(crate) to: Target,
}

impl Written for Raw {
    type Kind = PartitionOneway;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn parse(self, on: &Parse<'_>) -> Result<PartitionOneway, Invalid> {
        Ok(PartitionOneway {
            from: on.hosts.target(&self.from)?,
            to: on.hosts.target(&self.to)?,
        })
    }
}

impl Kind for PartitionOneway {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.two(&self.from, &self.to)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!("partition {} -> {}", sides.a_names(), sides.b_names())
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.partition_oneway(x.as_str(), y.as_str());
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.repair_oneway(x.as_str(), y.as_str());
        }
    }

    fn cuts_off_holder(&self) -> bool {
        self.from == Target::Holder || self.to == Target::Holder
    }
}
