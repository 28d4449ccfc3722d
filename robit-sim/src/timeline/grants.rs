//! The grants made so far at each instant, for telling a stale write from a current one.

use std::time::Duration;

/// The highest token granted up to each grant, in time order.
pub(super) struct GrantSteps(pub(super) Vec<(Duration, u64)>);

impl GrantSteps {
    /// Whether a write with `token`, accepted at `at`, was stale: a grant with a higher
    /// token had been made by then, so the writer no longer held the lock, and the
    /// resource took the write anyway (it does not fence, or not this write).
    pub(super) fn stale(&self, token: u64, at: Duration) -> bool {
        let made = self.0.partition_point(|(granted, _)| *granted <= at);
        made.checked_sub(1)
            .and_then(|last| self.0.get(last))
            .is_some_and(|(_, highest)| *highest > token)
    }
}
