//! The two libraries behind one interface.

use std::future::Future;
use std::time::Duration;

use robit::redis::RedisDriver;
use robit::{Guard, LockError, Mutex, Wait};
use rslock::LockManager;

use crate::{TTL, WAIT_BUDGET};

/// One lock, as a contender in a loop sees it.
pub(crate) trait Locker: Send + 'static {
    type Held: Send;

    /// Acquires, waiting up to the library's budget; `None` if it gave up.
    fn lock(&mut self) -> impl Future<Output = Option<Self::Held>> + Send;

    fn unlock(&mut self, held: Self::Held) -> impl Future<Output = ()> + Send;
}

pub(crate) struct Robit(Mutex);

impl Robit {
    pub(crate) fn new(driver: &RedisDriver, name: &str) -> Self {
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

/// rslock's retry delays for the contention phase, in ms.
pub(crate) fn rslock_delays() -> Vec<u64> {
    let delays: Vec<u64> = std::env::var("ROBIT_BENCH_RSLOCK_DELAYS")
        .unwrap_or_else(|_| "10,200".to_owned())
        .split(',')
        .map(|d| {
            d.trim()
                .parse()
                .expect("ROBIT_BENCH_RSLOCK_DELAYS: milliseconds")
        })
        .collect();
    // rslock sleeps a random whole number of ms in [0, delay): 1 ms would never sleep,
    // 0 ms panics.
    assert!(
        delays.iter().all(|&d| d >= 2),
        "rslock retry delays must be at least 2 ms"
    );
    delays
}

/// rslock's mean sleep between attempts for a retry delay: uniform over the whole
/// milliseconds `0..delay`.
pub(crate) fn rslock_mean_sleep(delay_ms: u64) -> Duration {
    Duration::from_secs_f64((delay_ms - 1) as f64 / 2.0 / 1e3)
}

/// rslock's attempt count (its "retry count" counts every attempt, the first included)
/// for the sleeps between them to add up to the wait budget on average.
pub(crate) fn rslock_attempts(delay_ms: u64) -> u32 {
    (WAIT_BUDGET.as_secs_f64() / rslock_mean_sleep(delay_ms).as_secs_f64()).round() as u32 + 1
}
