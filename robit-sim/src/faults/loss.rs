//! `loss`: messages on some links, or on every link, dropped at `rate`, until the links
//! are whole again.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, When, Written, timing};
use crate::scenario::{Dur, Target, needs};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    rate: f64,
    #[serde(default)]
    when: Option<When>,
    #[serde(default)]
    between: Option<Vec<String>>,
}

/// Message loss at `rate` on the links between the two sets, or on every link.
#[derive(Debug, Clone)]
pub(crate) struct Loss {
    pub(crate) rate: f64,
    pub(crate) between: Option<(Target, Target)>,
}

impl Written for Raw {
    type Kind = Loss;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn when_held(&self) -> bool {
        self.when == Some(When::Held)
    }

    fn parse(self, on: &Parse<'_>) -> Result<Loss, Invalid> {
        if !(0.0..=1.0).contains(&self.rate) {
            return Err(needs("rate").into());
        }
        Ok(Loss {
            rate: self.rate,
            between: on.hosts.links(self.between.as_deref())?,
        })
    }
}

impl Kind for Loss {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.links(self.between.as_ref())
    }

    fn describe(&self, sides: &Sides) -> String {
        let links = match self.between {
            Some(_) => format!(" {} | {}", sides.a_names(), sides.b_names()),
            None => String::new(),
        };
        format!("loss {}{links}", self.rate)
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world
                .sim
                .set_link_fail_rate(x.as_str(), y.as_str(), self.rate);
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for (x, y) in sides.pairs() {
            world.sim.set_link_fail_rate(x.as_str(), y.as_str(), 0.0);
        }
    }
}
