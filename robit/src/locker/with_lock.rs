//! `with_lock`: a critical section as a closure, unlocked after it and cancelled when the
//! lease is lost.

use super::Locker;
use crate::driver::LockName;
use crate::error::{LockError, UnlockError};
use crate::loss::LossReason;
use crate::mutex::Guard;

/// [`Locker::with_lock`] did not run its work to the end under the lock.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, LockError, Locker, WithLockError};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let locker = Locker::builder(LocalDriver::new()).build().unwrap();
/// let held = locker.lock("ledger").await.unwrap();
/// let busy = locker.try_with_lock("ledger", async |_| ()).await;
/// assert!(matches!(busy, Err(WithLockError::Lock(LockError::Contended { .. }))));
/// held.unlock().await.unwrap();
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WithLockError {
    /// The lock was not acquired; the work never ran.
    #[error("the work did not run: {0}")]
    Lock(#[from] LockError),
    /// The lease was lost while the work ran, and the work was cancelled at its next
    /// `.await`. Whatever it did before may have overlapped another holder's work from
    /// the instant of the loss: check it, or make its writes carry the fencing token.
    #[error("the lease was lost while the work ran ({0}), so the work was cancelled")]
    Lost(LossReason),
}

impl Locker {
    /// Locks `name` (waiting as configured), runs `work` while holding it, unlocks, and
    /// returns what `work` returned.
    ///
    /// If the lease is lost while `work` runs, `work` is **cancelled**: its future is
    /// dropped at the loss, so none of its code runs after the instant another client
    /// could be granted the lock. A signal the work had to check would run on by
    /// default, which is what a lock is there to prevent; work that needs to wind down
    /// instead awaits [`Guard::jeopardy`], which comes earlier, while the hold is still
    /// valid. (Code between two `.await`s is not interrupted: keep such stretches
    /// short, as in any async code.)
    ///
    /// A release the backend does not confirm after `work` finished is logged and
    /// otherwise ignored: the work ran under the lock, and the grant lapses at its TTL.
    /// So is a loss that comes after `work` finished.
    ///
    /// # Errors
    ///
    /// [`WithLockError::Lock`] if the lock was not acquired, [`WithLockError::Lost`] if
    /// the lease was lost before `work` finished.
    ///
    /// # Example
    ///
    /// ```
    /// use robit::{LocalDriver, Locker};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), robit::WithLockError> {
    /// let locker = Locker::builder(LocalDriver::new()).build().unwrap();
    /// let token = locker.with_lock("invoice:9", async |guard| {
    ///     // write to the protected resource, passing the fencing token along
    ///     guard.fence()
    /// }).await?;
    /// # let _ = token;
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<T>(
        &self,
        name: impl Into<LockName>,
        work: impl AsyncFnOnce(&Guard) -> T,
    ) -> Result<T, WithLockError> {
        let guard = self.lock(name).await?;
        run(guard, work).await
    }

    /// As [`with_lock`](Self::with_lock), but tries to lock only once.
    ///
    /// # Errors
    ///
    /// As [`with_lock`](Self::with_lock); [`LockError::Contended`] (as
    /// [`WithLockError::Lock`]) if someone else holds the lock.
    pub async fn try_with_lock<T>(
        &self,
        name: impl Into<LockName>,
        work: impl AsyncFnOnce(&Guard) -> T,
    ) -> Result<T, WithLockError> {
        let guard = self.try_lock(name).await?;
        run(guard, work).await
    }
}

/// Runs `work` under `guard`, then ends the hold.
async fn run<T>(guard: Guard, work: impl AsyncFnOnce(&Guard) -> T) -> Result<T, WithLockError> {
    let finished = {
        let work = work(&guard);
        tokio::select! {
            biased;
            () = guard.lost() => None,
            value = work => Some(value),
        }
    };
    match finished {
        // Finished while the hold was still valid: the work ran under the lock.
        Some(value) if guard.is_held() => {
            match guard.unlock().await {
                Ok(()) | Err(UnlockError::Backend(_)) => {}
                Err(error) => {
                    tracing::debug!(target: "robit", %error, "lease ended after the work finished");
                }
            }
            Ok(value)
        }
        _ => Err(WithLockError::Lost(guard.end_lost().await)),
    }
}
