//! `backend-crash`: the backend's servers (all, or some of a quorum's) killed, and with
//! `for` restarted after that long, keeping their data unless `lose_state`.

use std::time::Duration;

use serde::Deserialize;

use super::{Invalid, Kind, Parse, Resolve, Scene, Sides, Written, timing};
use crate::EventKind;
use crate::scenario::{Dur, Target};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Raw {
    at: Dur,
    #[serde(default, rename = "for")]
    length: Option<Dur>,
    #[serde(default)]
    lose_state: bool,
    #[serde(default)]
    host: Option<String>,
}

/// The servers named (all of them: [`Target::Backend`]) crash.
#[derive(Debug, Clone)]
pub(crate) struct BackendCrash {
    pub(crate) lose_state: bool,
    pub(crate) on: Target,
}

impl Written for Raw {
    type Kind = BackendCrash;

    fn timing(&self) -> (Duration, Option<Duration>) {
        timing(self.at, self.length)
    }

    fn parse(self, on: &Parse<'_>) -> Result<BackendCrash, Invalid> {
        Ok(BackendCrash {
            lose_state: self.lose_state,
            on: on.hosts.servers(self.host.as_deref())?,
        })
    }
}

impl Kind for BackendCrash {
    fn sides(&self, on: &Resolve<'_>) -> Sides {
        on.one(&self.on)
    }

    fn describe(&self, sides: &Sides) -> String {
        format!(
            "backend crash{}{}",
            sides.servers(),
            losing(self.lose_state)
        )
    }

    fn start(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            world.sim.crash(host.as_str());
            if self.lose_state {
                world.hosts.lose_backend_state(host);
                world.record(host, EventKind::BackendStateLost);
            }
        }
    }

    fn end(&self, world: &mut Scene<'_, '_>, sides: &Sides) {
        for host in &sides.a {
            world.sim.bounce(host.as_str());
        }
    }

    fn loses_backend_state(&self) -> bool {
        self.lose_state
    }
}

/// How a crash or restart that loses the servers' state says so.
pub(super) fn losing(lose_state: bool) -> &'static str {
    if lose_state { " losing state" } else { "" }
}
