//! What the on-lost callbacks are told.

use std::fmt;
use std::time::Duration;

use crate::driver::{FenceToken, LockName};

/// Why a lease was lost.
///
/// # Example
///
/// ```
/// use robit::LossReason;
///
/// assert_eq!(LossReason::DeadlinePassed.to_string(), "the validity deadline passed without a successful renew");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// The validity deadline passed without a successful renew: renewals failed, timed
    /// out, or the process was paused.
    DeadlinePassed,
    /// A renew answered that the grant is no longer this owner's: it is gone from the
    /// backend (expired, evicted, deleted) or someone else holds it now.
    NotOwner,
    /// The driver reported the loss by itself, through [`Lease::lost`](crate::driver::Lease::lost).
    DriverSignalled,
    /// The hold lasted as long as
    /// [`MutexBuilder::max_hold`](crate::MutexBuilder::max_hold) allows: renewal stopped
    /// and the grant was released (or, with a lock-delay, left to expire).
    HoldCapReached,
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DeadlinePassed => "the validity deadline passed without a successful renew",
            Self::NotOwner => {
                "a renew found the grant gone from the backend or held by someone else"
            }
            Self::DriverSignalled => "the driver reported the grant gone",
            Self::HoldCapReached => {
                "the hold reached its maximum length (max_hold), so renewal stopped"
            }
        })
    }
}

/// A lost lease, as handed to the on-lost callbacks.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, LossEvent, Mutex};
///
/// let mutex = Mutex::builder("reports", LocalDriver::new())
///     .on_lost(|event: &LossEvent| {
///         eprintln!("lost {} (fence {}) after {:?}: {}", event.name, event.fence, event.held_for, event.reason);
///     })
///     .build()
///     .unwrap();
/// # drop(mutex);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct LossEvent {
    /// The lock's name.
    pub name: LockName,
    /// The fencing token of the lost grant.
    pub fence: FenceToken,
    /// Why it was lost.
    pub reason: LossReason,
    /// How long the lease was held, by this client's clock.
    pub held_for: Duration,
}
