//! `latency`: messages on some links, or on every link, take `[low, high]`, until the
//! network's own latency is put back.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, When, Written, timing};
use crate::scenario::{Dur, Target, ms, pair};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    latency: [Dur; 2],
    #[serde(default)]
    when: Option<When>,
    #[serde(default)]
    between: Option<Vec<String>>,
}

/// Latency `[low, high]` on the links between the two sets of hosts, or on every link.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    pub(crate) low: Duration,
    pub(crate) high: Duration,
    pub(crate) between: Option<(Target, Target)>,
}

impl Written for Raw {
    type Kind = Latency;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn when_held(&self) -> bool {
        self.when == Some(When::Held)
    }

    fn parse(self, on: &Parse<'_>) -> Result<Latency, Invalid> {
        let span = on.span.clone();
        let (low, high) = pair(
            on.ctx,
            Some(self.latency),
            (ms(0), ms(0)),
            "`latency`",
            span,
        )
        .map_err(Invalid::Scenario)?;
        Ok(Latency {
            low,
            high,
            between: on.hosts.links(self.between.as_deref())?,
        })
    }
}

impl Kind for Latency {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.links(self.between.as_ref())
    }

    fn describe(&self, sides: &Sides) -> String {
        let (low, high) = (self.low, self.high);
        let links = match self.between {
            Some(_) => format!(" {} | {}", sides.a_names(), sides.b_names()),
            None => String::new(),
        };
        format!("latency {low:?}..{high:?}{links}")
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.set_link_latency(x.as_str(), y.as_str(), self.low);
            world
                .sim
                .set_link_max_message_latency(x.as_str(), y.as_str(), self.high);
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        let (low, high) = world.base;
        for (x, y) in sides.pairs() {
            world.sim.set_link_latency(x.as_str(), y.as_str(), low);
            world
                .sim
                .set_link_max_message_latency(x.as_str(), y.as_str(), high);
        }
    }
}
