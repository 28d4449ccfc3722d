//! The phases of a mutex, what it keeps about a hold, and how a hold is named.

use std::num::NonZeroU64;
use std::sync::Arc;

use tokio::time::Instant;

use super::signals::Signals;
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
    /// When the acquire that granted the lease was sent: the first renew is timed from it.
    pub(super) sent: Instant,
    pub(super) acquired_at: Instant,
    pub(super) deadline: Instant,
    pub(super) signals: Arc<Signals>,
}

/// What `lock()` hands to the guard of a new hold.
pub(crate) struct Installed {
    pub(crate) id: HoldId,
    pub(crate) acquired_at: Instant,
    pub(crate) fence: FenceToken,
    pub(crate) signals: Arc<Signals>,
}
