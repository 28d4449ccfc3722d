//! Belief intervals: who believed they held a lock, from when until when, and whether
//! two of them ever overlapped — what a fault test against a real backend checks.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::time::Instant;

/// Who believed they held the lock, from when, until when (open while still held).
pub type Interval = (&'static str, Instant, Option<Instant>);

/// Every client's belief intervals: from `lock()` returning Ok to the unlock or the loss.
/// Cheap to clone; clones share the record.
///
/// # Example
///
/// ```
/// use robit_test_support::kit::Beliefs;
///
/// let beliefs = Beliefs::default();
/// beliefs.begin("a");
/// beliefs.end("a");
/// beliefs.begin("b");
/// beliefs.assert_never_two_holders();
/// ```
#[derive(Debug, Clone, Default)]
pub struct Beliefs(Arc<StdMutex<Vec<Interval>>>);

/// Two clients believed they held the lock at once, for `overlap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// The one whose interval was recorded first.
    pub first: &'static str,
    /// The other.
    pub second: &'static str,
    /// How long both believed.
    pub overlap: Duration,
}

impl Beliefs {
    /// `who` believes it holds the lock from now.
    pub fn begin(&self, who: &'static str) {
        self.0.lock().unwrap().push((who, Instant::now(), None));
    }

    /// `who` stops believing now (its unlock, or its loss); returns the instant.
    pub fn end(&self, who: &'static str) -> Instant {
        let now = Instant::now();
        let mut all = self.0.lock().unwrap();
        if let Some(open) = all
            .iter_mut()
            .rev()
            .find(|(w, _, end)| *w == who && end.is_none())
        {
            open.2 = Some(now);
        }
        now
    }

    /// Every interval so far.
    pub fn intervals(&self) -> Vec<Interval> {
        self.0.lock().unwrap().clone()
    }

    /// Every pair of intervals that overlapped (an open one counts until now).
    pub fn overlaps(&self) -> Vec<Overlap> {
        let all = self.intervals();
        let now = Instant::now();
        let mut found = Vec::new();
        for (i, (a, a_start, a_end)) in all.iter().enumerate() {
            for (b, b_start, b_end) in &all[i + 1..] {
                let (a_end, b_end) = (a_end.unwrap_or(now), b_end.unwrap_or(now));
                let (start, end) = ((*a_start).max(*b_start), a_end.min(b_end));
                if start < end {
                    found.push(Overlap {
                        first: a,
                        second: b,
                        overlap: end - start,
                    });
                }
            }
        }
        found
    }

    /// Fails the test if two intervals ever overlapped.
    pub fn assert_never_two_holders(&self) {
        let overlaps = self.overlaps();
        assert!(
            overlaps.is_empty(),
            "two clients believed they held the lock at once: {overlaps:?}; all intervals: {:?}",
            self.intervals()
        );
    }

    /// When the first interval that began after `after` began, if any did.
    pub fn first_begun_after(&self, after: Instant) -> Option<Instant> {
        self.intervals()
            .iter()
            .map(|(_, start, _)| *start)
            .filter(|start| *start > after)
            .min()
    }
}
