//! The guard of one hold.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::Handle;
use crate::driver::FenceToken;
use crate::engine::{self, Installed};
use crate::error::UnlockError;

/// Proof of one hold of a [`Mutex`](crate::Mutex), returned by `lock()`.
///
/// It carries the grant's fencing token and its lost signal. Unlock it with
/// [`unlock`](Guard::unlock) to learn whether the release went through and whether the
/// lease survived until then.
///
/// **Dropping a guard** without unlocking stops renewal at once and releases the lock in
/// the background (the mutex's watchdog starts one release, bounded by the renew
/// timeout), so a forgotten guard never keeps a lease alive. Call `unlock` when you can:
/// it reports errors, and drop cannot.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mutex = Mutex::builder("ledger", LocalDriver::new()).build().unwrap();
/// let guard = mutex.lock().await.unwrap();
/// assert!(guard.is_held());
/// assert!(guard.valid_for() > std::time::Duration::ZERO); // without any renewal
/// let lost = guard.lost_token(); // hand this to work that must stop on loss
/// guard.unlock().await.unwrap();
/// assert!(!lost.is_cancelled()); // an unlock is not a loss
/// # }
/// ```
#[must_use = "dropping the guard ends the hold and releases the lock in the background"]
pub struct Guard {
    handle: Arc<Handle>,
    id: u64,
    fence: FenceToken,
    lost: CancellationToken,
    armed: bool,
}

impl Guard {
    pub(crate) fn new(handle: Arc<Handle>, installed: Installed) -> Self {
        Self {
            handle,
            id: installed.id,
            fence: installed.fence,
            lost: installed.lost,
            armed: true,
        }
    }

    /// The grant's fencing token: send it with every write to the protected resource.
    pub fn fence(&self) -> FenceToken {
        self.fence
    }

    /// Completes when the lease is lost. Never completes after an unlock.
    pub fn lost(&self) -> WaitForCancellationFuture<'_> {
        self.lost.cancelled()
    }

    /// A token cancelled when the lease is lost, to hand to work that must stop. It is
    /// a child token: cancelling it yourself does not affect the mutex.
    pub fn lost_token(&self) -> CancellationToken {
        self.lost.child_token()
    }

    /// Whether this hold is current and inside its validity deadline.
    pub fn is_held(&self) -> bool {
        self.handle.core.is_held(Some(self.id))
    }

    /// When this hold's validity ends unless a renewal succeeds first, as the mutex
    /// believes it: the send time of the acquire (or of the last renewal that succeeded)
    /// plus the TTL, less the drift allowance and the safety margin — the instant the
    /// loss is signalled if renewals keep failing. `None` once the hold has ended
    /// (unlocked, or lost and reported). An instant of the mutex's clock: tokio's, unless
    /// the mutex was built with a clock of its own.
    pub fn deadline(&self) -> Option<tokio::time::Instant> {
        self.handle.core.deadline(self.id)
    }

    /// How long this hold stays valid from now if no renewal succeeds meanwhile — the
    /// time there is to finish or checkpoint work without relying on the watchdog. Zero
    /// once the deadline has passed or the hold has ended.
    pub fn valid_for(&self) -> Duration {
        let core = &self.handle.core;
        core.deadline(self.id).map_or(Duration::ZERO, |deadline| {
            deadline.saturating_duration_since(core.now())
        })
    }

    /// Releases the lock and waits for the backend to confirm.
    ///
    /// # Errors
    ///
    /// [`UnlockError::Lost`] if the lease was lost first (loss was signalled when it
    /// happened); [`UnlockError::AlreadyReleased`] if the mutex was unlocked through
    /// [`Mutex::unlock`](crate::Mutex::unlock) meanwhile; [`UnlockError::Backend`] if the
    /// backend did not confirm (the lock is released locally either way).
    pub async fn unlock(mut self) -> Result<(), UnlockError> {
        self.armed = false;
        engine::unlock(&self.handle.core, Some(self.id)).await
    }

    /// Gives the hold to the mutex: it stays held until
    /// [`Mutex::unlock`](crate::Mutex::unlock). Returns the fencing token.
    pub fn detach(mut self) -> FenceToken {
        self.armed = false;
        self.fence
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.armed {
            self.handle.core.release_in_background(Some(self.id));
        }
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("lock", &self.handle.core.config.name)
            .field("fence", &self.fence)
            .field("held", &self.is_held())
            .finish()
    }
}
