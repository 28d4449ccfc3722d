//! The guard of one hold.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Handle;
use crate::driver::FenceToken;
use crate::engine::{self, HoldId, Installed, Signals, Which};
use crate::error::{RefreshError, UnlockError};
use crate::loss::LossReason;

/// Proof of one hold of a [`Mutex`](crate::Mutex), returned by `lock()`.
///
/// It carries the grant's fencing token and its lost signal. Unlock it with
/// [`unlock`](Guard::unlock) to learn whether the release went through and whether the
/// lease survived until then.
///
/// **Dropping a guard** without unlocking stops renewal at once and releases the lock in
/// the background (one release, in a task of its own, bounded by the renew timeout),
/// so a forgotten guard never keeps a lease alive. Call `unlock` when you can:
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
    id: HoldId,
    fence: FenceToken,
    signals: Arc<Signals>,
    armed: bool,
}

impl Guard {
    pub(crate) fn new(handle: Arc<Handle>, installed: Installed) -> Self {
        Self {
            handle,
            id: installed.id,
            fence: installed.fence,
            signals: installed.signals,
            armed: true,
        }
    }

    /// The grant's fencing token: send it with every write to the protected resource.
    pub fn fence(&self) -> FenceToken {
        self.fence
    }

    /// Completes when the lease is lost. Never completes after an unlock.
    ///
    /// The future borrows the guard, so it suits a `select!` beside the work; to hand the
    /// signal to another task, take a [`lost_token`](Self::lost_token).
    pub fn lost(&self) -> impl Future<Output = ()> + Send + '_ {
        self.signals.lost.cancelled()
    }

    /// A token cancelled when the lease is lost, to hand to work that must stop. It is
    /// a child token: cancelling it yourself does not affect the mutex.
    ///
    /// It is tokio-util's `CancellationToken`, so it composes with other cancellation
    /// (`child_token`, `run_until_cancelled`) in code that already uses tokio-util.
    pub fn lost_token(&self) -> CancellationToken {
        self.signals.lost.child_token()
    }

    /// Why the lease was lost, once it was (`None` while it is not).
    pub fn loss(&self) -> Option<LossReason> {
        self.signals.loss()
    }

    /// Completes when the hold is in jeopardy — no renewal has succeeded and the
    /// deadline is near (see
    /// [`MutexBuilder::jeopardy_within`](crate::MutexBuilder::jeopardy_within)) — or
    /// has been lost, whichever comes first: the moment to checkpoint. Completes at
    /// once while the hold is in jeopardy; after a renewal clears it, a new call waits
    /// for the next one. Never completes after an unlock.
    pub async fn jeopardy(&self) {
        self.signals.endangered().await;
    }

    /// Whether the hold is in jeopardy now.
    pub fn in_jeopardy(&self) -> bool {
        self.signals.in_jeopardy()
    }

    /// Whether this hold is current and inside its validity deadline.
    pub fn is_held(&self) -> bool {
        self.handle.core.is_held(Which::Hold(self.id))
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

    /// Extends the lease by `ttl` from now, for a mutex built with
    /// [`watchdog(false)`](crate::MutexBuilder::watchdog), and returns how long the hold
    /// is valid from now (`ttl` less drift and margin, counted from the refresh's send).
    ///
    /// The obtain-and-refresh style: take the lock, work in steps, refresh between them.
    /// A refresh whose answer comes after the current deadline does not count: the lease
    /// was lost at the deadline, and that was signalled. Refreshes of one mutex run one
    /// at a time.
    ///
    /// # Errors
    ///
    /// [`RefreshError::WatchdogRenews`] if the watchdog renews this mutex's leases;
    /// [`RefreshError::InvalidTtl`] for a TTL with no validity; [`RefreshError::NotHeld`]
    /// after an unlock; [`RefreshError::Lost`] if the lease is lost (now signalled, if it
    /// was not already); [`RefreshError::Backend`] if the backend did not confirm (the
    /// hold stays valid until its deadline: retry).
    pub async fn refresh(&self, ttl: Duration) -> Result<Duration, RefreshError> {
        engine::refresh(&self.handle.core, Which::Hold(self.id), ttl).await
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
        engine::unlock(&self.handle.core, Which::Hold(self.id)).await
    }

    /// Ends a hold whose work could not finish in time: signals the loss if the
    /// watchdog has not yet (the deadline passed while the work ran), reports it, and
    /// says why it was lost.
    pub(crate) async fn end_lost(self) -> LossReason {
        let core = &self.handle.core;
        if self.loss().is_none() {
            core.lose_and_free(self.id, LossReason::DeadlinePassed);
        }
        let reason = self.loss().unwrap_or(LossReason::DeadlinePassed);
        // Takes the loss as reported: it is the caller's to report.
        let _reported = self.unlock().await;
        reason
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
            self.handle.core.release_in_background(Which::Hold(self.id));
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
