//! What the attempts of one `lock()` call have seen: what explains the wait if it runs
//! out, and how often the backend failed.

use std::time::Duration;

use tokio::time::Instant;

use super::failures::Failures;
use crate::driver::DriverError;
use crate::engine::Core;
use crate::millis::Millis;

/// The answers of one `lock()` call's attempts so far.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Why the wait would have run out, if it ran out now: the backend's last failure,
    /// or its quarantine; `None` when a holder explains it (or nothing went wrong).
    pub(super) last_error: Option<DriverError>,
    /// An attempt found the lock held: a wait that ends is the holder's doing.
    held: bool,
    /// `last_error` is the backend's quarantine, not a failure.
    quarantined: bool,
    failures: Failures,
}

impl Seen {
    /// The attempt ran out of time because the wait did. Its silence explains the wait
    /// only if nothing else does: a holder the backend reported, or an earlier failure.
    pub(super) fn cut_short(&mut self, error: DriverError) {
        if !self.held {
            self.last_error.get_or_insert(error);
        }
    }

    pub(super) fn held(&mut self) {
        self.held = true;
        if self.quarantined {
            // The quarantine is over; a holder explains the wait now.
            self.last_error = None;
            self.quarantined = false;
        }
    }

    pub(super) fn quarantined(&mut self, left: Duration) {
        self.quarantined = true;
        self.last_error = Some(DriverError::unavailable(format!(
            "the backend lost its state or came back with older state (a restart, a \
             flush, a failover) and grants nothing for {}, while holders from before may \
             still believe they hold the lock",
            Millis(left)
        )));
    }

    /// The attempt failed with `error`, retried after a backoff; warns if they keep
    /// failing (see [`Failures`]).
    pub(super) fn failed(&mut self, core: &Core, error: DriverError, started: Instant) {
        tracing::debug!(target: "robit", %error, "acquire attempt failed; retrying");
        self.failures.failed(core, &error, started);
        self.quarantined = false;
        self.last_error = Some(error);
    }
}
