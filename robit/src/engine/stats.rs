//! Counters a mutex keeps about itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A snapshot of a mutex's counters, from [`Mutex::stats`](crate::Mutex::stats).
///
/// Counters only grow, so exporters can publish them as monotonic counters and take
/// differences between snapshots.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mutex = Mutex::builder("jobs", LocalDriver::new()).build().unwrap();
/// mutex.lock().await.unwrap().unlock().await.unwrap();
/// let stats = mutex.stats();
/// assert_eq!((stats.acquired, stats.released, stats.lost), (1, 1, 0));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Successful `lock()`/`acquire()` calls.
    pub acquired: u64,
    /// `lock()`/`acquire()` calls that returned an error other than `AlreadyHeld` or
    /// `NoRuntime` (which are refused before any attempt), or were cancelled.
    pub failed: u64,
    /// Holds ended voluntarily: `unlock()`, or a guard or mutex dropped while holding.
    pub released: u64,
    /// Holds ended by a lost lease.
    pub lost: u64,
    /// Successful renewals.
    pub renew_success: u64,
    /// Renew attempts that failed or timed out (each retry counts).
    pub renew_failed: u64,
    /// Times a hold entered jeopardy (see
    /// [`MutexBuilder::jeopardy_within`](crate::MutexBuilder::jeopardy_within)).
    pub jeopardies: u64,
    /// Total time the lock was held, including the current hold, by this client's clock.
    pub total_hold_time: Duration,
    /// Total time spent inside `lock()`/`acquire()` calls, successful or not.
    pub total_wait_time: Duration,
    /// The smallest time left before the validity deadline when a renewal succeeded:
    /// how close the lease came to being lost. `None` before the first renewal. A value
    /// near zero means the renew period or timeout is too long for the backend's latency.
    pub min_renew_slack: Option<Duration>,
}

/// The live counters behind [`Stats`].
#[derive(Debug)]
pub(crate) struct StatsCells {
    acquired: AtomicU64,
    failed: AtomicU64,
    released: AtomicU64,
    lost: AtomicU64,
    renew_success: AtomicU64,
    renew_failed: AtomicU64,
    jeopardies: AtomicU64,
    hold_nanos: AtomicU64,
    wait_nanos: AtomicU64,
    min_slack_nanos: AtomicU64,
}

impl Default for StatsCells {
    fn default() -> Self {
        Self {
            acquired: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            released: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            renew_success: AtomicU64::new(0),
            renew_failed: AtomicU64::new(0),
            jeopardies: AtomicU64::new(0),
            hold_nanos: AtomicU64::new(0),
            wait_nanos: AtomicU64::new(0),
            min_slack_nanos: AtomicU64::new(u64::MAX),
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl StatsCells {
    pub(crate) fn acquired(&self, waited: Duration) {
        self.acquired.fetch_add(1, Ordering::Relaxed);
        self.wait_nanos.fetch_add(nanos(waited), Ordering::Relaxed);
    }

    pub(crate) fn failed(&self, waited: Duration) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.wait_nanos.fetch_add(nanos(waited), Ordering::Relaxed);
    }

    pub(crate) fn released(&self, held: Duration) {
        self.released.fetch_add(1, Ordering::Relaxed);
        self.hold_nanos.fetch_add(nanos(held), Ordering::Relaxed);
    }

    pub(crate) fn lost(&self, held: Duration) {
        self.lost.fetch_add(1, Ordering::Relaxed);
        self.hold_nanos.fetch_add(nanos(held), Ordering::Relaxed);
    }

    pub(crate) fn renewed(&self, slack: Duration) {
        self.renew_success.fetch_add(1, Ordering::Relaxed);
        self.min_slack_nanos
            .fetch_min(nanos(slack), Ordering::Relaxed);
    }

    pub(crate) fn renew_failed(&self) {
        self.renew_failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn jeopardy(&self) {
        self.jeopardies.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot; `current_hold` is the elapsed time of the hold in progress, if any.
    pub(crate) fn snapshot(&self, current_hold: Duration) -> Stats {
        let min_slack = self.min_slack_nanos.load(Ordering::Relaxed);
        Stats {
            acquired: self.acquired.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            renew_success: self.renew_success.load(Ordering::Relaxed),
            renew_failed: self.renew_failed.load(Ordering::Relaxed),
            jeopardies: self.jeopardies.load(Ordering::Relaxed),
            total_hold_time: Duration::from_nanos(self.hold_nanos.load(Ordering::Relaxed))
                + current_hold,
            total_wait_time: Duration::from_nanos(self.wait_nanos.load(Ordering::Relaxed)),
            min_renew_slack: (min_slack != u64::MAX).then(|| Duration::from_nanos(min_slack)),
        }
    }
}
