//! Telling the operator when `lock()` keeps failing for a backend reason: the mutex
//! retries transient failures quietly (DEBUG), but a wait that goes on failing is a wait
//! the caller did not ask for, so it is logged at WARN with its cause — once, when the
//! failures start to look persistent, then at a low rate while they go on.

use std::time::Duration;

use tokio::time::Instant;

use crate::driver::DriverError;
use crate::engine::Core;
use crate::millis::Millis;

/// Failed attempts of one `lock()` call after which it warns.
pub(super) const WARN_AFTER_FAILURES: u32 = 5;

/// While the failures go on, at most one more warning per this interval.
pub(super) const WARN_EVERY: Duration = Duration::from_secs(60);

/// The attempts of one `lock()` call that failed for a backend reason, and when it last
/// warned. A backend that fails only now and then counts too: its failures add up.
#[derive(Debug, Default)]
pub(super) struct Failures {
    count: u32,
    warned_at: Option<Instant>,
}

impl Failures {
    /// An attempt failed with `error`; warns if enough have failed and the last warning
    /// is old enough.
    pub(super) fn failed(&mut self, core: &Core, error: &DriverError, started: Instant) {
        self.count = self.count.saturating_add(1);
        if self.count < WARN_AFTER_FAILURES {
            return;
        }
        let now = core.now();
        if self
            .warned_at
            .is_some_and(|at| now.saturating_duration_since(at) < WARN_EVERY)
        {
            return;
        }
        self.warned_at = Some(now);
        tracing::warn!(
            target: "robit",
            lock = %core.config.name,
            failures = self.count,
            waiting = ?now.saturating_duration_since(started),
            %error,
            "lock() keeps failing for a backend reason and retries; it warns again in {} if the failures go on", Millis(WARN_EVERY),
        );
    }
}
