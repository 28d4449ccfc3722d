//! How a waiting `lock()` waits: [`Wait`], [`Backoff`], and the jitter that keeps
//! waiters and retries out of step.

use std::time::Duration;

use crate::sources::Entropy;

/// Default first retry delay of a waiting `lock()`; it doubles per attempt, with full
/// jitter, up to [`DEFAULT_BACKOFF_MAX`].
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(5);
/// Default cap on a waiting `lock()`'s retry delay: the longest a waiter can sleep between
/// polls when no release notification reaches it.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_millis(250);
/// The shortest wait between two attempts (acquire or renew). A zero delay would let a
/// fast-failing backend spin the task; under paused or simulated time, where the clock
/// only moves while tasks are idle, it would never end.
pub(crate) const MIN_RETRY_DELAY: Duration = Duration::from_millis(1);
/// How long `lock()` waits for a lock held by someone else.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex, Wait};
/// use std::time::Duration;
///
/// let mutex = Mutex::builder("reports", LocalDriver::new())
///     .wait(Wait::Timeout(Duration::from_secs(5)))
///     .build()
///     .unwrap();
/// # drop(mutex);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// One attempt; if the lock is held, fail with
    /// [`LockError::Contended`](crate::LockError::Contended).
    Try,
    /// Retry until the lock is acquired or this much time has passed, then fail with
    /// [`LockError::Timeout`](crate::LockError::Timeout).
    Timeout(Duration),
    /// Retry until the lock is acquired or the `lock()` future is dropped (wrap it in
    /// `tokio::select!` or `tokio::time::timeout` to cancel). The default.
    #[default]
    Forever,
}

/// Full-jitter exponential backoff for a waiting `lock()`: attempt *n* sleeps a uniformly
/// random time in `[0, min(max, base·2ⁿ)]`.
///
/// Full jitter spreads contending waiters out, so that they do not retry in lock-step.
/// A driver's release notifications wake waiters sooner; the backoff bounds how long a
/// waiter sleeps when a notification is lost.
///
/// # Example
///
/// ```
/// use robit::Backoff;
/// use std::time::Duration;
///
/// let backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
/// assert_eq!(backoff.ceiling(0), Duration::from_millis(10));
/// assert_eq!(backoff.ceiling(3), Duration::from_millis(80));
/// assert_eq!(backoff.ceiling(30), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub(crate) base: Duration,
    pub(crate) max: Duration,
}

impl Backoff {
    /// A backoff starting at `base` and capped at `max`. Validated by
    /// [`MutexBuilder::build`](crate::MutexBuilder::build).
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The upper bound of the delay before retry number `attempt` (counting from 0).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1_u32 << attempt.min(31);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// A random delay in `[0, ceiling(attempt)]` drawn from `entropy`.
    pub fn delay(&self, attempt: u32, entropy: &dyn Entropy) -> Duration {
        let ceiling = u64::try_from(self.ceiling(attempt).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(entropy.below_or_equal(ceiling))
    }
}

/// A random duration in `[ceiling / 2, ceiling]`: a delay that keeps its order of
/// magnitude but does not fire in step with others'.
pub(crate) fn half_jitter(ceiling: Duration, entropy: &dyn Entropy) -> Duration {
    let half = ceiling / 2;
    let spread = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    half + Duration::from_nanos(entropy.below_or_equal(spread))
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX)
    }
}
