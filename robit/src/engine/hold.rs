//! The phases of a mutex, what it keeps about a hold, and how a hold is named.

use std::num::NonZeroU64;
use std::sync::Arc;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::signals::Signals;
use super::timing::Timing;
use super::watchdog::{Lane, Slot};
use super::{Config, Core};
use crate::driver::{FenceToken, Lease};
use crate::loss::LossReason;

/// One hold of one mutex: its holds are numbered from 1, in the order they are granted.
///
/// A guard keeps the id of its hold, so that it acts on that hold only, never on a later
/// one of the same mutex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HoldId(NonZeroU64);

impl HoldId {
    /// The id of the mutex's `number`th hold (counted from 1).
    pub(super) fn nth(number: u64) -> Self {
        Self(NonZeroU64::new(number).unwrap_or(NonZeroU64::MIN))
    }
}

/// Which hold a call means: the guard's own, or whichever is current (a call on the
/// mutex itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// The current hold, whichever it is.
    Current,
    /// This hold only.
    Hold(HoldId),
}

impl Which {
    /// Whether the call means hold `id`.
    pub(super) fn is(self, id: HoldId) -> bool {
        match self {
            Self::Current => true,
            Self::Hold(own) => own == id,
        }
    }
}

/// Where a mutex is in its cycle.
pub(super) enum Phase {
    Idle,
    Acquiring,
    Held(Hold),
}

/// How a hold ended: whether a loss is still to be reported by `unlock()`.
pub(super) struct Ended {
    pub(super) id: HoldId,
    /// Why the hold's lease was lost, if it was.
    pub(super) loss: Option<LossReason>,
    pub(super) unreported_loss: Option<LossReason>,
}

/// The current hold.
pub(super) struct Hold {
    pub(super) id: HoldId,
    pub(super) lease: Arc<dyn Lease>,
    pub(super) fence: FenceToken,
    pub(super) acquired_at: Instant,
    pub(super) deadline: Instant,
    /// When the watchdog renews next: a renew period after the send of the acquire or
    /// renewal that last succeeded, sooner after a failure.
    pub(super) next_renew: Instant,
    pub(super) signals: Arc<Signals>,
    /// The watchdog's lane that watches the hold.
    pub(super) lane: Arc<Lane>,
    /// The hold's entry in its lane's schedule; none while a renewal is out.
    pub(super) slot: Option<Slot>,
    /// Where its next renewal stands on its lane's grid, if it was placed there.
    pub(super) placed: Option<Instant>,
    /// The task that listens for the lease's own loss signal, if it has one.
    pub(super) listener: Option<AbortHandle>,
}

impl Hold {
    /// The instants that decide the hold's fate, as they stand.
    pub(super) fn timing(&self, config: &Config) -> Timing {
        Timing::of(config, self.acquired_at, self.deadline, self.next_renew)
    }

    /// Puts the hold into its lane's schedule at `at`, in place of its entry if it has
    /// one.
    pub(super) fn schedule_at(&mut self, core: &Arc<Core>, at: Instant) {
        if let Some(slot) = self.slot.take() {
            self.lane.remove(slot);
        }
        self.slot = Some(self.lane.insert(core, self.id, at));
    }

    /// The hold has ended: nothing watches it any more.
    pub(super) fn unwatch(&mut self) {
        self.signals.end();
        self.lane.forget(self.slot.take(), self.placed.take());
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }
}

/// What `lock()` hands to the guard of a new hold.
pub(crate) struct Installed {
    pub(crate) id: HoldId,
    pub(crate) acquired_at: Instant,
    pub(crate) fence: FenceToken,
    pub(crate) signals: Arc<Signals>,
}
