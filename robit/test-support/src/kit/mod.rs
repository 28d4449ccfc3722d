//! Testing the mutex itself, in paused time: a fault-injecting driver over the local
//! driver, a loss log, a clock that jumps, entropy that always draws the highest value,
//! captured tracing output, and small helpers; and the belief intervals that fault tests
//! against a real backend record and check for overlap.

mod beliefs;
mod capture;
mod clock;
mod faulty;
mod loss;

use std::sync::Arc;
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, Lease};
use robit::{Driver, FenceToken};

pub use beliefs::{Beliefs, Interval, Overlap};
pub use capture::Captured;
pub use clock::JumpClock;
pub use faulty::{AcquireFault, Faults, FaultyDriver, FaultyLease, Notifications, RenewFault};
pub use loss::LossLog;

/// Fails the test, rather than hanging it, if `future` does not finish within `limit`
/// (paused time: this costs no real time).
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {limit:?}"),
    }
}

/// Entropy whose every draw is the highest: each jittered wait is as long as it may be,
/// so a test can say when every retry goes out. Every owner token it makes is the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct Highest;

impl robit::sources::Entropy for Highest {
    fn next_u64(&self) -> u64 {
        u64::MAX
    }
}

/// The TTL of the paused-time watchdog tests.
pub const TTL: Duration = Duration::from_secs(3);
/// TTL × (1 − 0.01) − 2 ms: the validity with the default drift factor and margin.
pub const VALIDITY: Duration = Duration::from_millis(2968);

/// A mutex named `name` over `driver`, with [`TTL`], whose losses `log` records.
pub fn logged_mutex(name: &str, driver: &FaultyDriver, log: &LossLog) -> robit::Mutex {
    log.attach(robit::Mutex::builder(name, driver.clone()).ttl(TTL))
        .build()
        .unwrap()
}

/// Waits for `mutex` in the background, explicit style; the task hands the mutex back
/// so that its hold outlives the task.
pub fn spawn_waiter(
    mutex: robit::Mutex,
) -> tokio::task::JoinHandle<(Result<FenceToken, robit::LockError>, robit::Mutex)> {
    tokio::spawn(async move {
        let fence = mutex.acquire().await;
        (fence, mutex)
    })
}

/// How many tasks the current runtime has alive: a background task that outlives its
/// owner shows here.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Lets spawned tasks (watchdogs, background releases) run without moving time.
pub async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

/// The lease of a grant `driver` must make for `request`.
pub async fn granted(driver: &impl Driver, request: &AcquireRequest) -> Arc<dyn Lease> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("{:?} expected a grant, got {other:?}", request.owner),
    }
}

/// The lease of the grant a release made `request`'s waiter, which `driver` must hand
/// it ([`Acquire::Handed`]).
pub async fn handed(driver: &impl Driver, request: &AcquireRequest) -> Arc<dyn Lease> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Handed(lease) => lease,
        other => panic!(
            "{:?} expected a grant handed to it, got {other:?}",
            request.owner
        ),
    }
}

/// The expiry `driver` reports when it must refuse `request` because the lock is held.
pub async fn held(driver: &impl Driver, request: &AcquireRequest) -> Option<Duration> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Held { expires_in } => expires_in,
        other => panic!("{:?} expected Held, got {other:?}", request.owner),
    }
}
