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
pub(super) fn fault_windows(events: &[Event], end: Duration) -> Vec<(Duration, Duration)> {
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
            EventKind::Crashed => windows.push((event.at, event.at)),
            _ => {}
        }
    }
    for starts in open.into_values() {
        windows.extend(starts.into_iter().map(|start| (start, end)));
    }
    windows.sort();
    windows
}

/// P3: a loss with no fault in the two TTLs before it is spurious.
pub(super) fn no_spurious_loss(
    events: &[Event],
    _beliefs: &Beliefs,
    config: &CheckConfig,
) -> Vec<Violation> {
    let windows = fault_windows(events, config.end);
    let lookback = config.ttl * 2;
    let mut found = Vec::new();
    for event in events {
        let EventKind::Lost { lease, reason } = &event.kind else {
            continue;
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
                    "{} lost lease {lease} at {} ({reason}) with no fault in the {} before",
                    event.who,
                    secs(event.at),
                    secs(lookback)
                ),
            });
        }
    }
    found
}

/// P5: once every fault has healed (and the settling time passed), nobody waits longer
/// than the liveness bound while nobody holds the lock.
pub(super) fn liveness(
    events: &[Event],
    beliefs: &Beliefs,
    config: &CheckConfig,
) -> Vec<Violation> {
    let windows = fault_windows(events, config.end);
    let healed = windows
        .iter()
        .map(|&(_, end)| end)
        .max()
        .unwrap_or_default();
    if healed >= config.end {
        return Vec::new();
    }
    // Recovery from a fault takes time (reconnecting, a quarantine); with no fault at
    // all, the bound applies from the start.
    let from = if windows.is_empty() {
        Duration::ZERO
    } else {
        healed + config.settle
    };
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
    let (mut holders, mut waiters) = (0_i64, 0_i64);
    let mut gap: Option<Duration> = None;
    let mut found = Vec::new();
    let report = |start: Duration, stop: Duration, found: &mut Vec<Violation>| {
        let start = start.max(from);
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
    };
    for (&at, &(held, waiting)) in &changes {
        holders += held;
        waiters += waiting;
        let stalled = holders == 0 && waiters > 0;
        match (gap, stalled) {
            (None, true) => gap = Some(at),
            (Some(start), false) => {
                report(start, at, &mut found);
                gap = None;
            }
            _ => {}
        }
    }
    if let Some(start) = gap {
        report(start, config.end, &mut found);
    }
    found
}
