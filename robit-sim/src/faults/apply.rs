//! Starting and ending any kind of fault in the running simulation: which holder it lands
//! on, which hosts its targets name, and how the history records it.

use std::time::Duration;

use turmoil::Sim;

use super::Action;
use crate::check::{Beliefs, End};
use crate::history::host_of;
use crate::scenario::{Fault, Target};
use crate::world::{BACKEND, STORAGE};
use crate::{EventKind, History, SimClock};

/// The simulated world as a fault sees it: what the schedule needs from it to apply one.
pub(crate) trait Testbed {
    fn client_names(&self) -> Vec<String>;
    /// When the latest-ending hold in progress on the host ends (true time), if one of
    /// its mutexes is in the middle of a hold.
    fn poised_until(&self, host: &str) -> Option<Duration>;
    /// The backend's servers' host names: `backend`, or a quorum's `backend1` … .
    fn backend_names(&self) -> Vec<String>;
    fn clock(&self, host: &str) -> Option<SimClock>;
    /// The backend server `host` forgets everything.
    fn lose_backend_state(&mut self, host: &str);
    /// Saves the backend's state, as a Redis snapshot does.
    fn snapshot_backend(&mut self);
    /// Puts back the backend's last saved state: the grants since are lost.
    fn restore_backend(&mut self);
    /// Promotes the backend's replica, `lag` behind, at true time `now`.
    fn fail_over_backend(&mut self, now: Duration, lag: Duration);
    /// The lock's TTL.
    fn ttl(&self) -> Duration;
    /// The drift the lock is configured to tolerate: drift beyond it is a fault.
    fn drift_bound(&self) -> f64;
}

/// Every host: the clients, the backend's servers and the storage.
fn all_hosts(hosts: &dyn Testbed) -> Vec<String> {
    let mut all = hosts.client_names();
    all.extend(hosts.backend_names());
    all.push(STORAGE.to_owned());
    all
}

/// The hosts a fault landed on: both sides of a link fault, or the hosts of a fault on
/// hosts (`b` empty).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sides {
    pub(crate) a: Vec<String>,
    pub(crate) b: Vec<String>,
}

impl Sides {
    /// The links from a host of `a` to a different host of `b`, in order.
    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        self.a
            .iter()
            .flat_map(|x| {
                self.b
                    .iter()
                    .filter(move |y| *y != x)
                    .map(move |y| (x.clone(), y.clone()))
            })
            .collect()
    }

    /// The hosts of `a`, joined with `+`.
    pub(crate) fn a_names(&self) -> String {
        self.a.join("+")
    }

    /// The hosts of `b`, joined with `+`.
    pub(crate) fn b_names(&self) -> String {
        self.b.join("+")
    }

    /// ` <servers>` for some of a quorum's servers, nothing for the one backend (which
    /// is not named).
    pub(crate) fn servers(&self) -> String {
        if self.a.len() == 1 && self.a[0] == BACKEND {
            String::new()
        } else {
            format!(" {}", self.a_names())
        }
    }
}

/// The holder `fault`, aimed at the holder, lands on at `now`: a client with a lease it
/// still believes in (the checkers' own account of beliefs decides) and in the middle
/// of its hold — between taking the lock and its next write — so that the fault bites.
/// A paused holder wakes to send a write it decided on before; a holder cut off from
/// the backend must also go on holding for a TTL at least (`cut_for`), so that it
/// certainly loses its lease. Of several, the one whose hold ends last.
pub(crate) fn holder(
    history: &History,
    hosts: &dyn Testbed,
    fault: &Fault,
    now: Duration,
) -> Option<String> {
    // A holder cut off from the backend loses its lease once its validity (under a
    // TTL) runs out: if it still holds then.
    let at_least = if fault.cuts_off_holder() {
        hosts.ttl()
    } else {
        Duration::ZERO
    };
    Beliefs::from_events(&history.events(), Duration::MAX)
        .beliefs
        .into_iter()
        .filter(|belief| belief.how == End::StillHeld)
        .filter_map(|belief| {
            let host = host_of(&belief.client);
            let ends = hosts.poised_until(host)?;
            (ends >= now + at_least).then(|| (ends, host.to_owned()))
        })
        .max()
        .map(|(_, host)| host)
}

/// Any client with a lease it still believes in, poised or not (the most recent).
fn any_holder(history: &History) -> Option<String> {
    Beliefs::from_events(&history.events(), Duration::MAX)
        .beliefs
        .into_iter()
        .filter(|belief| belief.how == End::StillHeld)
        .max_by_key(|belief| belief.start)
        .map(|belief| host_of(&belief.client).to_owned())
}

/// What resolving a fault's targets looks at.
#[derive(Clone, Copy)]
pub(crate) struct Resolve<'a> {
    hosts: &'a dyn Testbed,
    history: &'a History,
    fault: &'a Fault,
    now: Duration,
}

impl Resolve<'_> {
    /// The hosts `target` names now.
    pub(crate) fn target(&self, target: &Target) -> Vec<String> {
        let Self {
            hosts,
            history,
            fault,
            now,
        } = *self;
        match target {
            Target::Client(name) => vec![name.clone()],
            Target::Holder => {
                let clients = hosts.client_names();
                let holder = holder(history, hosts, fault, now).or_else(|| any_holder(history));
                vec![holder.unwrap_or_else(|| clients.first().cloned().unwrap_or_default())]
            }
            Target::Clients => hosts.client_names(),
            Target::Backend => hosts.backend_names(),
            Target::Servers(indices) => {
                let names = hosts.backend_names();
                indices
                    .iter()
                    .filter_map(|index| names.get(*index).cloned())
                    .collect()
            }
            Target::Storage => vec![STORAGE.to_owned()],
        }
    }

    /// Both sides: the hosts `a` names, and those `b` names.
    pub(crate) fn two(&self, a: &Target, b: &Target) -> Sides {
        Sides {
            a: self.target(a),
            b: self.target(b),
        }
    }

    /// The hosts `target` names, on one side.
    pub(crate) fn one(&self, target: &Target) -> Sides {
        Sides {
            a: self.target(target),
            b: Vec::new(),
        }
    }

    /// The links between the hosts two targets name, or every link.
    pub(crate) fn links(&self, between: Option<&(Target, Target)>) -> Sides {
        match between {
            Some((a, b)) => self.two(a, b),
            None => Sides {
                a: all_hosts(self.hosts),
                b: all_hosts(self.hosts),
            },
        }
    }

    /// Every backend server, on one side.
    pub(crate) fn backend(&self) -> Sides {
        Sides {
            a: self.hosts.backend_names(),
            b: Vec::new(),
        }
    }
}

/// What starting or ending a fault acts on.
pub(crate) struct Scene<'a, 's> {
    pub(crate) sim: &'a mut Sim<'s>,
    pub(crate) hosts: &'a mut dyn Testbed,
    pub(crate) history: &'a History,
    /// True time.
    pub(crate) now: Duration,
    /// How long the fault lasts, if it is undone.
    pub(crate) length: Option<Duration>,
    /// The network's own latency, `[low, high]`, which ending a latency fault puts back.
    pub(crate) base: (Duration, Duration),
}

impl Scene<'_, '_> {
    /// Every host other than `host`.
    pub(crate) fn others(&self, host: &str) -> Vec<String> {
        all_hosts(&*self.hosts)
            .into_iter()
            .filter(|other| other != host)
            .collect()
    }

    /// Records `kind` on `host` now.
    pub(crate) fn record(&self, host: &str, kind: EventKind) {
        self.history.record_at(self.now, host, kind);
    }
}

/// A fault that started, with the hosts it resolved to, so its end undoes exactly it.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    action: Action,
    sides: Sides,
    length: Option<Duration>,
    what: String,
    /// Whether it counts as a fault (and so is recorded, start and end).
    recorded: bool,
}

/// Starts `fault` in `world`, recording it in the history.
pub(crate) fn start(world: &mut Scene<'_, '_>, fault: &Fault) -> Applied {
    world.length = fault.length;
    let kind = fault.action.kind();
    let sides = kind.sides(&Resolve {
        hosts: &*world.hosts,
        history: world.history,
        fault,
        now: world.now,
    });
    let what = kind.describe(&sides);
    let recorded = kind.recorded(&*world.hosts);
    kind.start(world, &sides);
    if recorded {
        world.record("world", fault_event(&what, false));
        // A restart is over as soon as it happens: the backend is back at once.
        if kind.instant() {
            world.record("world", fault_event(&what, true));
        }
    }
    Applied {
        action: fault.action.clone(),
        sides,
        length: fault.length,
        what,
        recorded,
    }
}

/// Undoes a fault started by [`start`].
pub(crate) fn end(world: &mut Scene<'_, '_>, applied: &Applied) {
    world.length = applied.length;
    applied.action.kind().end(world, &applied.sides);
    if applied.recorded {
        world.record("world", fault_event(&applied.what, true));
    }
}

fn fault_event(what: &str, ended: bool) -> EventKind {
    EventKind::Fault {
        what: what.to_owned(),
        ended,
    }
}
