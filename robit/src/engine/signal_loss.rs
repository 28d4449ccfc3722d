//! Ending a hold as lost: the signal through every channel, and freeing a grant that
//! may still be live on the backend.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::Core;
use super::hold::{Ended, HoldId, Which};
use super::release::{in_background, release};
use crate::driver::Lease;
use crate::loss::{LossEvent, LossReason};

impl Core {
    /// Ends hold `id` as lost and signals it through every channel, unless the hold
    /// already ended. When its grant may still be live on the backend (a deadline
    /// passed, a cap reached), frees it early for the next waiter — owner-checked, so
    /// harmless if it is gone — unless a lock-delay is to keep others out after the grant
    /// expires, since the holder may still be writing, unaware of the loss. Returns
    /// whether this call signalled.
    pub(crate) fn lose_and_free(self: &Arc<Self>, id: HoldId, reason: LossReason) -> bool {
        let Some(lease) = self.lose_hold(id, reason) else {
            return false;
        };
        let grant_may_live = matches!(
            reason,
            LossReason::DeadlinePassed | LossReason::HoldCapReached
        );
        if grant_may_live && self.config.lock_delay.is_zero() {
            in_background(release(Arc::clone(self), lease));
        }
        true
    }

    /// Ends hold `id` as lost and signals it, answering the lease of the hold it ended.
    fn lose_hold(&self, id: HoldId, reason: LossReason) -> Option<Arc<dyn Lease>> {
        #[cfg(robit_mutants)]
        if self.config.planted(super::mutant::Mutant::NoLossSignal) {
            return None;
        }
        let hold = {
            let mut state = self.state();
            let hold = state.take_hold(Which::Hold(id))?;
            state.last = Some(Ended {
                id,
                loss: Some(reason),
                unreported_loss: Some(reason),
            });
            hold
        };
        let held_for = self.now().saturating_duration_since(hold.acquired_at);
        self.stats.lost(held_for);
        tracing::warn!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), ?held_for, %reason, "lease lost");
        hold.signals.lose(reason);
        let event = LossEvent {
            name: self.config.name.clone(),
            fence: hold.fence,
            reason,
            held_for,
        };
        for callback in self.config.on_lost.iter() {
            if catch_unwind(AssertUnwindSafe(|| callback(&event))).is_err() {
                tracing::error!(target: "robit", lock = %self.config.name, "an on_lost callback panicked");
            }
        }
        Some(hold.lease)
    }
}
