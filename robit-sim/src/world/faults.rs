//! Applying a scenario's fault schedule to the running simulation.

use std::time::Duration;

use turmoil::Sim;

use super::storage;
use crate::check::{Beliefs, End};
use crate::history::host_of;
use crate::scenario::{Action, Fault, Target};
use crate::{EventKind, History, SimClock};

/// What the schedule needs from the world to apply a fault.
pub(crate) trait Hosts {
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

/// A fault that started, with the hosts it resolved to, so its end undoes exactly it.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    action: Action,
    a: Vec<String>,
    b: Vec<String>,
    what: String,
    /// Whether it counts as a fault (and so is recorded, start and end).
    recorded: bool,
}

/// The holder `fault`, aimed at the holder, lands on at `now`: a client with a lease it
/// still believes in (the checkers' own account of beliefs decides) and in the middle
/// of its hold — between taking the lock and its next write — so that the fault bites.
/// A paused holder wakes to send a write it decided on before; a holder cut off from
/// the backend must also go on holding for a TTL at least (`cut_for`), so that it
/// certainly loses its lease. Of several, the one whose hold ends last.
pub(crate) fn holder(
    history: &History,
    hosts: &dyn Hosts,
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
struct Context<'a> {
    hosts: &'a dyn Hosts,
    history: &'a History,
    fault: &'a Fault,
    now: Duration,
}

fn resolve(target: &Target, on: &Context<'_>) -> Vec<String> {
    let Context {
        hosts,
        history,
        fault,
        now,
    } = *on;
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
        Target::Storage => vec![storage::HOST.to_owned()],
    }
}

fn all_hosts(hosts: &dyn Hosts) -> Vec<String> {
    let mut all = hosts.client_names();
    all.extend(hosts.backend_names());
    all.push(storage::HOST.to_owned());
    all
}

fn pairs(a: &[String], b: &[String]) -> Vec<(String, String)> {
    a.iter()
        .flat_map(|x| {
            b.iter()
                .filter(move |y| *y != x)
                .map(move |y| (x.clone(), y.clone()))
        })
        .collect()
}

/// Starts `fault` now (true time `now`), recording it in the history.
pub(crate) fn start(
    sim: &mut Sim<'_>,
    fault: &Fault,
    hosts: &mut dyn Hosts,
    history: &History,
    now: Duration,
) -> Applied {
    let on = Context {
        hosts: &*hosts,
        history,
        fault,
        now,
    };
    let (a, b) = match &fault.action {
        Action::Partition(x, y) | Action::Clog(x, y) => (resolve(x, &on), resolve(y, &on)),
        Action::PartitionOneway { from, to } => (resolve(from, &on), resolve(to, &on)),
        Action::Drift(x, _) | Action::Pause(x) | Action::Crash(x) => (resolve(x, &on), Vec::new()),
        Action::Latency(.., Some((x, y))) | Action::Loss(_, Some((x, y))) => {
            (resolve(x, &on), resolve(y, &on))
        }
        Action::Latency(..) | Action::Loss(..) => (all_hosts(hosts), all_hosts(hosts)),
        Action::BackendCrash { on: x, .. } | Action::BackendRestart { on: x, .. } => {
            (resolve(x, &on), Vec::new())
        }
        Action::BackendSnapshot | Action::BackendRestore | Action::BackendFailover { .. } => {
            (hosts.backend_names(), Vec::new())
        }
    };
    let what = describe(&fault.action, &a, &b);
    let recorded = match &fault.action {
        // Drift inside the configured bound is not a fault; beyond it, it is.
        Action::Drift(_, drift) => drift.abs() > hosts.drift_bound(),
        // A client crash is recorded as the host's own crash, not as a network fault.
        Action::Crash(_) => false,
        // Saving changes nothing a client can see.
        Action::BackendSnapshot => false,
        _ => true,
    };
    match &fault.action {
        Action::Partition(..) => pairs(&a, &b)
            .iter()
            .for_each(|(x, y)| sim.partition(x.as_str(), y.as_str())),
        Action::PartitionOneway { .. } => {
            pairs(&a, &b)
                .iter()
                .for_each(|(x, y)| sim.partition_oneway(x.as_str(), y.as_str()));
        }
        Action::Clog(..) => pairs(&a, &b)
            .iter()
            .for_each(|(x, y)| sim.hold(x.as_str(), y.as_str())),
        Action::Latency(low, high, _) => {
            for (x, y) in pairs(&a, &b) {
                sim.set_link_latency(x.as_str(), y.as_str(), *low);
                sim.set_link_max_message_latency(x.as_str(), y.as_str(), *high);
            }
        }
        Action::Loss(rate, _) => {
            for (x, y) in pairs(&a, &b) {
                sim.set_link_fail_rate(x.as_str(), y.as_str(), *rate);
            }
        }
        Action::Drift(_, drift) => {
            for host in &a {
                if let Some(clock) = hosts.clock(host) {
                    clock.set_drift(now, *drift);
                }
            }
        }
        Action::Pause(_) => {
            let length = fault.length.unwrap_or_default();
            for host in &a {
                if let Some(clock) = hosts.clock(host) {
                    clock.pause(now, length);
                }
                for other in all_hosts(hosts).iter().filter(|other| *other != host) {
                    sim.hold(host.as_str(), other.as_str());
                }
            }
        }
        Action::Crash(_) => {
            for host in &a {
                sim.crash(host.as_str());
                history.record_at(now, host, EventKind::Crashed);
            }
        }
        Action::BackendCrash { lose_state, .. } | Action::BackendRestart { lose_state, .. } => {
            let restart = matches!(fault.action, Action::BackendRestart { .. });
            for host in &a {
                sim.crash(host.as_str());
                if *lose_state {
                    hosts.lose_backend_state(host);
                    history.record_at(now, host, EventKind::BackendStateLost);
                }
                if restart {
                    sim.bounce(host.as_str());
                }
            }
        }
        Action::BackendSnapshot => hosts.snapshot_backend(),
        Action::BackendRestore => {
            a.iter().for_each(|host| sim.crash(host.as_str()));
            hosts.restore_backend();
            for host in &a {
                history.record_at(now, host, EventKind::BackendStateLost);
                sim.bounce(host.as_str());
            }
        }
        Action::BackendFailover { lag } => {
            // The clients' connections to the old primary break; they reconnect to the
            // same address, now the promoted replica's, as Sentinel would steer them.
            a.iter().for_each(|host| sim.crash(host.as_str()));
            hosts.fail_over_backend(now, *lag);
            for host in &a {
                if !lag.is_zero() {
                    history.record_at(now, host, EventKind::BackendStateLost);
                }
                sim.bounce(host.as_str());
            }
        }
    }
    if recorded {
        history.record_at(
            now,
            "world",
            EventKind::Fault {
                what: what.clone(),
                ended: false,
            },
        );
        // A restart is over as soon as it happens: the backend is back at once.
        if matches!(
            fault.action,
            Action::BackendRestart { .. } | Action::BackendRestore | Action::BackendFailover { .. }
        ) {
            history.record_at(
                now,
                "world",
                EventKind::Fault {
                    what: what.clone(),
                    ended: true,
                },
            );
        }
    }
    Applied {
        action: fault.action.clone(),
        a,
        b,
        what,
        recorded,
    }
}

/// Undoes a fault started by [`start`].
pub(crate) fn end(
    sim: &mut Sim<'_>,
    applied: &Applied,
    hosts: &mut dyn Hosts,
    history: &History,
    now: Duration,
    base: (Duration, Duration),
) {
    let (a, b) = (&applied.a, &applied.b);
    match &applied.action {
        Action::Partition(..) => pairs(a, b)
            .iter()
            .for_each(|(x, y)| sim.repair(x.as_str(), y.as_str())),
        Action::PartitionOneway { .. } => {
            pairs(a, b)
                .iter()
                .for_each(|(x, y)| sim.repair_oneway(x.as_str(), y.as_str()));
        }
        Action::Clog(..) => pairs(a, b)
            .iter()
            .for_each(|(x, y)| sim.release(x.as_str(), y.as_str())),
        Action::Latency(..) => {
            for (x, y) in pairs(a, b) {
                sim.set_link_latency(x.as_str(), y.as_str(), base.0);
                sim.set_link_max_message_latency(x.as_str(), y.as_str(), base.1);
            }
        }
        Action::Loss(..) => {
            for (x, y) in pairs(a, b) {
                sim.set_link_fail_rate(x.as_str(), y.as_str(), 0.0);
            }
        }
        Action::Drift(..) => {
            for host in a {
                if let Some(clock) = hosts.clock(host) {
                    clock.set_drift(now, 0.0);
                }
            }
        }
        Action::Pause(_) => {
            for host in a {
                for other in all_hosts(hosts).iter().filter(|other| *other != host) {
                    sim.release(host.as_str(), other.as_str());
                }
            }
        }
        Action::Crash(_) => {
            for host in a {
                sim.bounce(host.as_str());
                history.record_at(now, host, EventKind::Restarted);
            }
        }
        Action::BackendCrash { .. } => a.iter().for_each(|host| sim.bounce(host.as_str())),
        Action::BackendRestart { .. }
        | Action::BackendSnapshot
        | Action::BackendRestore
        | Action::BackendFailover { .. } => {}
    }
    if applied.recorded {
        history.record_at(
            now,
            "world",
            EventKind::Fault {
                what: applied.what.clone(),
                ended: true,
            },
        );
    }
}

fn describe(action: &Action, a: &[String], b: &[String]) -> String {
    let a_names = a.join("+");
    let b_names = b.join("+");
    let links = |between: &Option<(crate::scenario::Target, crate::scenario::Target)>| {
        between
            .as_ref()
            .map_or_else(String::new, |_| format!(" {a_names} | {b_names}"))
    };
    // A quorum's servers are named; the one backend is not.
    let servers = if a.len() == 1 && a[0] == super::BACKEND {
        String::new()
    } else {
        format!(" {a_names}")
    };
    let losing = |lose: bool| if lose { " losing state" } else { "" };
    match action {
        Action::Partition(..) => format!("partition {a_names} | {b_names}"),
        Action::PartitionOneway { .. } => format!("partition {a_names} -> {b_names}"),
        Action::Clog(..) => format!("clog {a_names} | {b_names}"),
        Action::Latency(low, high, between) => {
            format!("latency {low:?}..{high:?}{}", links(between))
        }
        Action::Loss(rate, between) => format!("loss {rate}{}", links(between)),
        Action::Drift(_, drift) => format!("drift {a_names} {drift:+}"),
        Action::Pause(_) => format!("pause {a_names}"),
        Action::Crash(_) => format!("crash {a_names}"),
        Action::BackendCrash { lose_state, .. } => {
            format!("backend crash{servers}{}", losing(*lose_state))
        }
        Action::BackendRestart { lose_state, .. } => {
            format!("backend restart{servers}{}", losing(*lose_state))
        }
        Action::BackendSnapshot => "backend snapshot".to_owned(),
        Action::BackendRestore => "backend restart from its snapshot".to_owned(),
        Action::BackendFailover { lag } => format!("backend failover to a replica {lag:?} behind"),
    }
}
