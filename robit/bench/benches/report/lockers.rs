//! The two libraries behind one interface, as a task in a loop sees a lock.

use std::future::Future;
use std::time::Duration;

use robit::{Driver, Guard, LockError, Mutex, Wait};
use robit_test_support::bench::TTL;
use rslock::LockManager;

/// How long a contended lock call may wait before giving up, for both libraries.
pub(crate) const WAIT_BUDGET: Duration = Duration::from_secs(2);

/// One lock, as a contender in a loop sees it.
pub(crate) trait Locker: Send + 'static {
    type Held: Send;

    /// Acquires, waiting up to [`WAIT_BUDGET`]; `None` if it gave up.
    fn lock(&mut self) -> impl Future<Output = Option<Self::Held>> + Send;

    fn unlock(&mut self, held: Self::Held) -> impl Future<Output = ()> + Send;
}

/// robit's mutex on one of the bench's drivers (one server, or the quorum): default
/// settings but the TTL and the wait.
pub(crate) struct Robit(Mutex);

impl Robit {
    pub(crate) fn new(driver: &(impl Driver + Clone), name: &str) -> Self {
        Self(
            Mutex::builder(name, driver.clone())
                .ttl(TTL)
                .wait(Wait::Timeout(WAIT_BUDGET))
                .build()
                .unwrap(),
        )
    }
}

impl Locker for Robit {
    type Held = Guard;

    async fn lock(&mut self) -> Option<Guard> {
        match self.0.lock().await {
            Ok(guard) => Some(guard),
            Err(LockError::Timeout { .. }) => None,
            Err(err) => panic!("robit lock failed: {err}"),
        }
    }

    async fn unlock(&mut self, guard: Guard) {
        guard.unlock().await.unwrap();
    }
}

/// robit's [`Locker`](robit::Locker), locking one name: each lock builds a fresh mutex
/// for it, as locking by name does. Clones of one `Locker` share its settings and stats.
pub(crate) struct ByName {
    locker: robit::Locker,
    name: String,
}

impl ByName {
    pub(crate) fn new(locker: &robit::Locker, name: &str) -> Self {
        Self {
            locker: locker.clone(),
            name: name.to_owned(),
        }
    }
}

/// A `Locker` over one of the bench's drivers, with the settings [`Robit`]'s mutexes have.
pub(crate) fn robit_locker(driver: &(impl Driver + Clone)) -> robit::Locker {
    robit::Locker::builder(driver.clone())
        .ttl(TTL)
        .wait(Wait::Timeout(WAIT_BUDGET))
        .build()
        .unwrap()
}

impl Locker for ByName {
    type Held = Guard;

    async fn lock(&mut self) -> Option<Guard> {
        match self.locker.lock(self.name.as_str()).await {
            Ok(guard) => Some(guard),
            Err(LockError::Timeout { .. }) => None,
            Err(err) => panic!("robit Locker lock failed: {err}"),
        }
    }

    async fn unlock(&mut self, guard: Guard) {
        guard.unlock().await.unwrap();
    }
}

/// rslock's manager, on the bench's one server (quorum 1) or its three (quorum 2), for
/// one key.
pub(crate) struct Rslock {
    manager: LockManager,
    key: String,
}

impl Rslock {
    pub(crate) fn new(manager: &LockManager, key: &str) -> Self {
        Self {
            manager: manager.clone(),
            key: format!("rslock:{key}"),
        }
    }
}

impl Locker for Rslock {
    type Held = rslock::Lock;

    async fn lock(&mut self) -> Option<rslock::Lock> {
        match self.manager.lock(self.key.as_str(), TTL).await {
            Ok(lock) => Some(lock),
            Err(rslock::LockError::Unavailable) => None,
            Err(err) => panic!("rslock lock failed: {err}"),
        }
    }

    async fn unlock(&mut self, lock: rslock::Lock) {
        // Best effort, like rslock's own release: it reports nothing.
        self.manager.unlock(&lock).await;
    }
}

/// One lock + unlock.
pub(crate) async fn cycle(locker: &mut impl Locker) {
    let held = locker.lock().await.expect("uncontended lock gave up");
    locker.unlock(held).await;
}

/// rslock's retry delays in the contention scenario, in ms: short polling, and rslock's
/// default. It sleeps a random whole number of ms in `0..delay` between attempts.
pub(crate) const RSLOCK_DELAYS: [u64; 2] = [10, 200];

/// rslock's mean sleep between attempts for a retry delay: uniform over the whole
/// milliseconds `0..delay`.
pub(crate) fn rslock_mean_sleep(delay_ms: u64) -> Duration {
    Duration::from_secs_f64((delay_ms - 1) as f64 / 2.0 / 1e3)
}

/// rslock's attempt count (its "retry count" counts every attempt, the first included)
/// for the sleeps between them to add up to [`WAIT_BUDGET`] on average.
pub(crate) fn rslock_attempts(delay_ms: u64) -> u32 {
    (WAIT_BUDGET.as_secs_f64() / rslock_mean_sleep(delay_ms).as_secs_f64()).round() as u32 + 1
}

/// A manager for `urls` that retries with `delay` as often as makes [`WAIT_BUDGET`].
pub(crate) fn rslock_manager(urls: Vec<String>, delay_ms: u64) -> LockManager {
    let mut manager = LockManager::new(urls);
    manager.set_retry(rslock_attempts(delay_ms), Duration::from_millis(delay_ms));
    manager
}
