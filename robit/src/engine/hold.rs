//! The phases of a mutex, and what it keeps about a hold.

use std::sync::Arc;

use tokio::time::Instant;

use super::signals::Signals;
use crate::driver::{FenceToken, Lease};
use crate::loss::LossReason;

/// Where a mutex is in its cycle.
pub(super) enum Phase {
    Idle,
    Acquiring,
    Held(Hold),
}

/// How a hold ended: whether a loss is still to be reported by `unlock()`.
pub(super) struct Ended {
    pub(super) id: u64,
    /// Why the hold's lease was lost, if it was.
    pub(super) loss: Option<LossReason>,
    pub(super) unreported_loss: Option<LossReason>,
}

/// The current hold.
pub(super) struct Hold {
    pub(super) id: u64,
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
    pub(crate) id: u64,
    pub(crate) acquired_at: Instant,
    pub(crate) fence: FenceToken,
    pub(crate) signals: Arc<Signals>,
}
