//! The fault schedule of a run: each fault started when it is due (one aimed at the
//! holder put off until there is one to land on), and undone when its length is up.

use std::time::Duration;

use super::SimWorld;
use crate::Scenario;
use crate::faults::Applied;
use crate::scenario::Fault;

/// The faults still to start, or to undo.
pub(super) struct Schedule {
    /// (instant, order, fault index, started fault to undo).
    entries: Vec<(Duration, usize, usize, Option<Applied>)>,
    /// The order of the latest entry: entries at the same instant go in the order they
    /// came in.
    order: usize,
}

impl Schedule {
    /// Every fault, at its time, to start.
    pub(super) fn new(faults: &[Fault]) -> Self {
        let entries: Vec<_> = faults
            .iter()
            .enumerate()
            .map(|(index, fault)| (fault.at, index, index, None))
            .collect();
        Self {
            order: entries.len(),
            entries,
        }
    }

    fn push(&mut self, at: Duration, index: usize, applied: Option<Applied>) {
        self.order += 1;
        self.entries.push((at, self.order, index, applied));
    }

    /// Starts or undoes, in `world`, every fault due by its current time.
    pub(super) fn run_due(&mut self, world: &mut SimWorld<'_>, scenario: &Scenario) {
        let now = world.now();
        self.entries.sort_by_key(|(at, order, ..)| (*at, *order));
        while self.entries.first().is_some_and(|(at, ..)| *at <= now) {
            let (_, _, index, applied) = self.entries.remove(0);
            let fault = &scenario.faults[index];
            match applied {
                // A fault aimed at the holder waits until someone holds the lock, in
                // the middle of its hold.
                None if fault.targets_holder() && !world.holder_for(fault) => {
                    self.push(now + scenario.tick, index, None);
                }
                None => {
                    let applied = world.start(fault);
                    if let Some(length) = fault.length {
                        self.push(now + length, index, Some(applied));
                    }
                }
                Some(applied) => world.end(&applied),
            }
        }
    }

    /// What to say of each fault still waiting for a holder to land on when the run
    /// ended: it never bit, so the run proves nothing about it.
    pub(super) fn never_started(&self, faults: &[Fault]) -> impl Iterator<Item = String> {
        self.entries
            .iter()
            // Put off at least once for want of a holder (a fault merely due in the run's
            // last tick is not).
            .filter(|(at, _, index, applied)| applied.is_none() && *at > faults[*index].at)
            .map(|(_, _, index, _)| {
                format!(
                    "fault {} never started: no holder to land on (one in the middle of \
                     a hold, and for a fault that cuts it off, holding a TTL longer) before \
                     the run ended",
                    index + 1
                )
            })
    }
}
