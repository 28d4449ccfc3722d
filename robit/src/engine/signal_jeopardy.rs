//! Jeopardy: the warning a holder gets while its lease can still be saved.
//!
//! A hold is in jeopardy from the instant its validity deadline is no more than
//! `jeopardy_within` away — which, with a healthy backend, never happens, since every
//! renewal pushes the deadline a whole validity past its send time. The watchdog puts a
//! hold into jeopardy when that instant passes; a renewal (the watchdog's or a manual
//! refresh) that moves the deadline far enough off takes it out again.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tokio::time::Instant;

use super::Core;
use super::hold::{HoldId, Phase};
use super::signals::Signals;
use crate::driver::FenceToken;
use crate::jeopardy::{Jeopardy, JeopardyEvent};

impl Core {
    /// The instant a hold with `deadline` enters jeopardy.
    pub(crate) fn jeopardy_at(&self, deadline: Instant) -> Instant {
        super::timing::jeopardy_at(&self.config, deadline)
    }

    /// Puts hold `id` into jeopardy at `now`, if it is current, due for it by its
    /// deadline as it stands (a refresh may have just moved it), and not in jeopardy yet.
    /// The flag is set under the mutex's lock, so that a refresh's [`extend`](Core::extend)
    /// sees it or comes after.
    pub(crate) fn endanger(&self, id: HoldId, now: Instant) {
        let (fence, deadline) = match &self.state().phase {
            Phase::Held(hold) if hold.id == id && now >= self.jeopardy_at(hold.deadline) => {
                if !hold.signals.set_jeopardy(true) {
                    return;
                }
                (hold.fence, hold.deadline)
            }
            _ => return,
        };
        self.stats.jeopardy();
        let valid_for = deadline.saturating_duration_since(now);
        tracing::warn!(target: "robit", lock = %self.config.name, fence = fence.get(), ?valid_for, "lease in jeopardy: no renewal has succeeded, and the validity deadline is near");
        self.tell_jeopardy(fence, Jeopardy::Entered, valid_for);
    }

    /// Whether a renewal that moved a hold's deadline to `deadline` at `now` takes it out
    /// of jeopardy: it was in jeopardy, and the deadline is far enough off now. Clears the
    /// flag; called under the mutex's lock.
    pub(super) fn clears_jeopardy(
        &self,
        signals: &Signals,
        deadline: Instant,
        now: Instant,
    ) -> bool {
        signals.in_jeopardy() && now < self.jeopardy_at(deadline) && signals.set_jeopardy(false)
    }

    /// Says that a renewal took a hold out of jeopardy.
    pub(super) fn left_jeopardy(&self, fence: FenceToken, deadline: Instant, now: Instant) {
        let valid_for = deadline.saturating_duration_since(now);
        tracing::info!(target: "robit", lock = %self.config.name, fence = fence.get(), ?valid_for, "lease out of jeopardy: a renewal succeeded");
        self.tell_jeopardy(fence, Jeopardy::Cleared, valid_for);
    }

    fn tell_jeopardy(&self, fence: FenceToken, change: Jeopardy, valid_for: std::time::Duration) {
        if self.config.on_jeopardy.is_empty() {
            return;
        }
        let event = JeopardyEvent {
            name: self.config.name.clone(),
            fence,
            change,
            valid_for,
        };
        for callback in self.config.on_jeopardy.iter() {
            if catch_unwind(AssertUnwindSafe(|| callback(&event))).is_err() {
                tracing::error!(target: "robit", lock = %self.config.name, "an on_jeopardy callback panicked");
            }
        }
    }
}
