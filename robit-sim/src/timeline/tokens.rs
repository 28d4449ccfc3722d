//! Every grant of a run: its tokens' places in the run, for short labels, and the highest
//! token granted at each instant, for telling a stale write from a current one.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::{Event, EventKind};

/// The grants of a run (as clients acquired them, and as the backend made them).
#[derive(Debug, Clone, Default)]
pub(super) struct Grants {
    /// Each token, numbered from 1 in increasing order.
    ordinals: BTreeMap<u64, usize>,
    /// The highest token granted up to each grant, in time order.
    steps: Vec<(Duration, u64)>,
}

impl Grants {
    /// The grants among `events` (all of a run's, in time order).
    pub(super) fn of(events: &[Event]) -> Self {
        let mut highest = 0;
        let mut tokens = BTreeSet::new();
        let mut steps = Vec::new();
        for event in events {
            if let EventKind::Acquired { token, .. } | EventKind::BackendGranted { token, .. } =
                event.kind
            {
                tokens.insert(token);
                highest = highest.max(token);
                steps.push((event.at, highest));
            }
        }
        Self {
            ordinals: tokens.into_iter().zip(1..).collect(),
            steps,
        }
    }

    /// `token`'s place among the run's tokens, from 1 (0: not a granted token).
    pub(super) fn ordinal(&self, token: u64) -> usize {
        self.ordinals.get(&token).copied().unwrap_or_default()
    }

    /// Whether a write with `token`, accepted at `at`, was stale: a grant with a higher
    /// token had been made by then, so the writer no longer held the lock, and the
    /// resource took the write anyway (it does not fence, or not this write).
    pub(super) fn stale(&self, token: u64, at: Duration) -> bool {
        let made = self.steps.partition_point(|(granted, _)| *granted <= at);
        made.checked_sub(1)
            .and_then(|last| self.steps.get(last))
            .is_some_and(|(_, highest)| *highest > token)
    }
}
