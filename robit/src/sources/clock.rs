//! The clock abstraction every timing decision goes through.

use std::fmt::Debug;

use async_trait::async_trait;
use tokio::time::Instant;

/// The source of time for a [`Mutex`](crate::Mutex) and the [`LocalDriver`](crate::LocalDriver).
///
/// Every deadline robit computes — the lease validity deadline, renew times, per-attempt
/// timeouts, retry backoff — is read from and slept on through one `Clock`. The default,
/// [`TokioClock`], is tokio's time, so tokio's paused test time works unchanged. The
/// simulator supplies clocks that run fast or slow and that stop the world, which is how
/// it shows that the drift bound in the lease arithmetic is what keeps promise P1.
///
/// Readings are `tokio::time::Instant`s *in this clock's own frame*: two clocks' readings
/// must never be compared with each other.
///
/// # Contract
///
/// - `now` never goes backwards.
/// - `sleep_until(t)` returns no earlier than the moment `now()` would return `t` or later.
///   It may return later (a paused process, a coarse timer); robit's safety margin absorbs
///   small lateness, and the renew deadline logic re-reads `now` after every wake-up.
///
/// robit never reads a clock while it holds a mutex's internal lock, so a clock may itself
/// look at the mutex (its [`fence`](crate::Mutex::fence), say) without deadlocking.
///
/// # Example
///
/// A clock that runs at half speed relative to tokio's time (the simulator's drifting
/// clocks are built the same way):
///
/// ```
/// use robit::sources::Clock;
/// use tokio::time::Instant;
///
/// #[derive(Debug)]
/// struct HalfSpeed { origin: Instant }
///
/// #[async_trait::async_trait]
/// impl Clock for HalfSpeed {
///     fn now(&self) -> Instant {
///         self.origin + Instant::now().duration_since(self.origin) / 2
///     }
///     async fn sleep_until(&self, deadline: Instant) {
///         let local_wait = deadline.saturating_duration_since(self.now());
///         tokio::time::sleep(local_wait * 2).await;
///     }
/// }
/// ```
#[async_trait]
pub trait Clock: Send + Sync + Debug + 'static {
    /// The current reading of this clock.
    fn now(&self) -> Instant;

    /// Completes once this clock reads `deadline` or later.
    async fn sleep_until(&self, deadline: Instant);
}

/// tokio's time: the default clock. Under `#[tokio::test(start_paused = true)]` it is
/// tokio's paused, auto-advancing test clock.
///
/// # Example
///
/// ```
/// use robit::sources::{Clock, TokioClock};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let clock = TokioClock;
/// let start = clock.now();
/// clock.sleep_until(start + std::time::Duration::from_millis(1)).await;
/// assert!(clock.now() >= start + std::time::Duration::from_millis(1));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

#[async_trait]
impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    async fn sleep_until(&self, deadline: Instant) {
        tokio::time::sleep_until(deadline).await;
    }
}
