//! The liveness checkers: P3 and P5.

use std::collections::BTreeMap;
use std::time::Duration;

use super::beliefs::Beliefs;
use super::{CheckConfig, Promise, Violation};
use crate::{Event, EventKind};

fn secs(at: Duration) -> String {
    format!("{:.3}s", at.as_secs_f64())
}

/// The windows during which a fault was active; a fault never repaired lasts until
/// the end of the run.
pub(super) fn fault_windows(
    events: &[Event],
    end: Duration,
    crashes: bool,
) -> Vec<(Duration, Duration)> {
    let mut open: BTreeMap<(&str, &str), Vec<Duration>> = BTreeMap::new();
    let mut windows = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::Fault { what, ended: false } => {
                open.entry((&event.who, what)).or_default().push(event.at);
            }
            EventKind::Fault { what, ended: true } => {
                if let Some(start) = open
                    .get_mut(&(event.who.as_str(), what.as_str()))
                    .and_then(Vec::pop)
                {
                    windows.push((start, event.at));
                }
            }
            EventKind::Crashed if crashes => windows.push((event.at, event.at)),
            _ => {}
        }
    }
    for starts in open.into_values() {
        windows.extend(starts.into_iter().map(|start| (start, end)));
    }
    windows.sort();
    windows
}

/// P3: a loss with no fault in the two TTLs before it is spurious. A lease the client
/// found no longer held (a `dropped` event) counts as lost too, unless its loss was
/// signalled first.
pub(super) fn no_spurious_loss(events: &[Event], config: &CheckConfig) -> Vec<Violation> {
    let windows = fault_windows(events, config.end, true);
    let lookback = config.ttl * 2;
    let mut found = Vec::new();
    let mut signalled: BTreeMap<(&str, u64), ()> = BTreeMap::new();
    for event in events {
        let what = match &event.kind {
            EventKind::Lost { lease, reason } => {
                signalled.insert((&event.who, *lease), ());
                format!("lost lease {lease} ({reason})")
            }
            EventKind::Dropped { lease }
                if !signalled.contains_key(&(event.who.as_str(), *lease)) =>
            {
                format!("found lease {lease} no longer held")
            }
            _ => continue,
        };
        let from = event.at.saturating_sub(lookback);
        let excused = windows
            .iter()
            .any(|&(start, end)| start <= event.at && end >= from);
        if !excused {
            found.push(Violation {
                promise: Promise::NoSpuriousLoss,
                clients: vec![event.who.clone()],
                instants: vec![event.at],
                message: format!(
                    "{} {what} at {} with no fault in the {} before",
                    event.who,
                    secs(event.at),
                    secs(lookback)
                ),
            });
        }
    }
    found
}

/// The stretches in which P5 applies: outside every fault, and a settling time after
/// each one heals. Client crashes are not faults here: a crashed holder's grant blocking
/// the others longer than the bound is exactly what P5 must catch.
fn healthy_periods(events: &[Event], config: &CheckConfig) -> Vec<(Duration, Duration)> {
    let mut blocked: Vec<(Duration, Duration)> = fault_windows(events, config.end, false)
        .into_iter()
        .map(|(start, end)| (start, end.saturating_add(config.settle).min(config.end)))
        .collect();
    blocked.sort();
    let mut periods = Vec::new();
    let mut from = Duration::ZERO;
    for (start, end) in blocked {
        if start > from {
            periods.push((from, start));
        }
        from = from.max(end);
    }
    if from < config.end {
        periods.push((from, config.end));
    }
    periods
}

/// P5: in every healthy stretch (see [`healthy_periods`]), nobody waits longer than the
/// liveness bound while nobody holds the lock. A waiter waits from its first `lock()`
/// until it acquires, whatever failed attempts lie between.
pub(super) fn liveness(
    events: &[Event],
    beliefs: &Beliefs,
    config: &CheckConfig,
) -> Vec<Violation> {
    let periods = healthy_periods(events, config);
    // +1 / -1 changes in holders and waiters, by instant.
    let mut changes: BTreeMap<Duration, (i64, i64)> = BTreeMap::new();
    for belief in &beliefs.beliefs {
        changes.entry(belief.start).or_default().0 += 1;
        changes.entry(belief.end).or_default().0 -= 1;
    }
    for wait in &beliefs.waits {
        changes.entry(wait.start).or_default().1 += 1;
        changes.entry(wait.end).or_default().1 -= 1;
    }
    let mut gaps = Vec::new();
    let (mut holders, mut waiters) = (0_i64, 0_i64);
    let mut gap: Option<Duration> = None;
    for (&at, &(held, waiting)) in &changes {
        holders += held;
        waiters += waiting;
        let stalled = holders == 0 && waiters > 0;
        match (gap, stalled) {
            (None, true) => gap = Some(at),
            (Some(start), false) => {
                gaps.push((start, at));
                gap = None;
            }
            _ => {}
        }
    }
    if let Some(start) = gap {
        gaps.push((start, config.end));
    }
    let mut found = Vec::new();
    for (gap_start, gap_end) in gaps {
        for &(from, to) in &periods {
            let (start, stop) = (gap_start.max(from), gap_end.min(to));
            if stop > start && stop - start > config.liveness_bound {
                found.push(Violation {
                    promise: Promise::Liveness,
                    clients: Vec::new(),
                    instants: vec![start, stop],
                    message: format!(
                        "from {} to {} someone waited and nobody held the lock: {} against a bound of {}",
                        secs(start),
                        secs(stop),
                        secs(stop - start),
                        secs(config.liveness_bound)
                    ),
                });
            }
        }
    }
    found
}
