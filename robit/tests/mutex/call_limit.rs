//! A driver that bounds its own calls says so (`Driver::call_limit`), and the mutex then
//! leaves the bounding to it instead of arming a second timer per call — but only when
//! the driver's limit is no longer than the mutex's own, and both are in tokio's time.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::time::Duration;

use common::within;
use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, Renewal, async_trait};
use robit::sources::TokioClock;
use robit::{Driver, FenceToken, LocalDriver, LockError, Mutex, MutexBuilder, UnlockError, Wait};
use tokio::time::Instant;

/// The mutexes' TTL, and their renew timeout, which bounds unlock.
const TTL: Duration = Duration::from_secs(3);
const RENEW_TIMEOUT: Duration = Duration::from_secs(1);
/// Far longer than any call here may take.
const LONG: Duration = Duration::from_secs(600);

/// A local driver whose calls take as long as the test says, and which promises a limit.
#[derive(Clone)]
struct Slow {
    local: LocalDriver,
    promises: Option<Duration>,
    /// How long an acquire takes before it is answered (`None`: it never is).
    acquire_takes: Option<Duration>,
    /// How long a release takes before it reaches the backend (`None`: it never does).
    release_takes: Option<Duration>,
}

impl Slow {
    fn new(promises: Option<Duration>) -> Self {
        Self {
            local: LocalDriver::new(),
            promises,
            acquire_takes: Some(Duration::ZERO),
            release_takes: Some(Duration::ZERO),
        }
    }
}

async fn take(time: Option<Duration>) {
    match time {
        Some(time) => tokio::time::sleep(time).await,
        None => std::future::pending().await,
    }
}

#[async_trait]
impl Driver for Slow {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        take(self.acquire_takes).await;
        Ok(match self.local.acquire(request).await? {
            Acquire::Granted(inner) => Acquire::Granted(Arc::new(SlowLease {
                inner,
                release_takes: self.release_takes,
            })),
            held => held,
        })
    }

    fn call_limit(&self) -> Option<Duration> {
        self.promises
    }
}

struct SlowLease {
    inner: Arc<dyn Lease>,
    release_takes: Option<Duration>,
}

#[async_trait]
impl Lease for SlowLease {
    fn fence(&self) -> FenceToken {
        self.inner.fence()
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        self.inner.renew(ttl).await
    }

    async fn release(&self) -> Result<(), DriverError> {
        take(self.release_takes).await;
        self.inner.release().await
    }
}

fn builder(driver: Slow) -> MutexBuilder {
    Mutex::builder("limited", driver)
        .ttl(TTL)
        .renew_timeout(RENEW_TIMEOUT)
}

/// Locks, then unlocks and times the unlock.
async fn timed_unlock(mutex: MutexBuilder) -> (Result<(), UnlockError>, Duration) {
    let mutex = mutex.build().unwrap();
    let guard = mutex.lock().await.unwrap();
    let start = Instant::now();
    let result = within(LONG, "the unlock's end", guard.unlock()).await;
    (result, start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_promises_no_limit_has_its_calls_timed_by_the_mutex() {
    let mut driver = Slow::new(None);
    driver.release_takes = None;
    let (result, took) = timed_unlock(builder(driver)).await;
    assert!(
        matches!(result, Err(UnlockError::Backend(DriverError::Timeout(limit))) if limit == RENEW_TIMEOUT),
        "{result:?}"
    );
    assert_eq!(took, RENEW_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_driver_limit_longer_than_the_mutex_timeout_leaves_the_timing_to_the_mutex() {
    let mut driver = Slow::new(Some(RENEW_TIMEOUT * 60));
    driver.release_takes = None;
    let (result, took) = timed_unlock(builder(driver)).await;
    assert!(
        matches!(result, Err(UnlockError::Backend(DriverError::Timeout(_)))),
        "{result:?}"
    );
    assert_eq!(took, RENEW_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_promises_a_limit_within_the_mutex_timeout_is_trusted_to_keep_it() {
    // The driver breaks its promise: its release takes twice the mutex's timeout. The
    // mutex armed no timer of its own, so the unlock waits for the driver and succeeds.
    let mut driver = Slow::new(Some(RENEW_TIMEOUT / 2));
    driver.release_takes = Some(RENEW_TIMEOUT * 2);
    let (result, took) = timed_unlock(builder(driver)).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(took, RENEW_TIMEOUT * 2);
}

#[tokio::test(start_paused = true)]
async fn a_mutex_with_a_clock_of_its_own_times_its_calls_itself() {
    // The driver's promise is in tokio's time, which an injected clock need not follow:
    // the mutex keeps its own timer, and the overlong release times out on it.
    let mut driver = Slow::new(Some(RENEW_TIMEOUT / 2));
    driver.release_takes = Some(RENEW_TIMEOUT * 2);
    let clocked = builder(driver).clock(Arc::new(TokioClock));
    let (result, took) = timed_unlock(clocked).await;
    assert!(
        matches!(result, Err(UnlockError::Backend(DriverError::Timeout(limit))) if limit == RENEW_TIMEOUT),
        "{result:?}"
    );
    assert_eq!(took, RENEW_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_lock_wait_shorter_than_the_driver_limit_still_ends_on_time() {
    let wait = Duration::from_millis(200);
    let mut driver = Slow::new(Some(RENEW_TIMEOUT / 2));
    driver.acquire_takes = None;
    let mutex = builder(driver).wait(Wait::Timeout(wait)).build().unwrap();
    let start = Instant::now();
    let result = within(LONG, "the lock's end", mutex.lock()).await;
    assert!(
        matches!(
            &result,
            Err(LockError::Timeout {
                last_error: Some(DriverError::Timeout(_)),
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(start.elapsed(), wait);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_times_out_in_full_is_still_reported_when_a_later_one_is_cut_short() {
    // Each attempt may take the whole renew timeout (1 s); the wait (1.5 s) cuts the
    // second one short. The first one's timeout is the backend's failure to report.
    let wait = RENEW_TIMEOUT + RENEW_TIMEOUT / 2;
    let mut driver = Slow::new(None);
    driver.acquire_takes = None;
    let mutex = builder(driver).wait(Wait::Timeout(wait)).build().unwrap();
    let result = within(LONG, "the lock's end", mutex.lock()).await;
    assert!(
        matches!(
            &result,
            Err(LockError::Timeout {
                last_error: Some(DriverError::Timeout(limit)),
                ..
            }) if *limit == RENEW_TIMEOUT
        ),
        "{result:?}"
    );
}

#[cfg(feature = "redis")]
mod redis_driver {
    use std::time::Duration;

    use redis::RedisResult;
    use redis::aio::PubSub;
    use robit::Driver;
    use robit::driver::{AcquireRequest, DriverError, LockName, OwnerToken};
    use robit::redis::{Connector, RedisDriver, UrlConnector};
    use tokio::time::Instant;

    use super::{LONG, within};

    /// A server that never accepts a connection.
    struct Unreachable;

    #[robit::driver::async_trait]
    impl Connector for Unreachable {
        type Connection = <UrlConnector as Connector>::Connection;

        async fn connect(&self) -> RedisResult<Self::Connection> {
            std::future::pending().await
        }

        async fn subscriber(&self) -> RedisResult<PubSub> {
            std::future::pending().await
        }

        fn describe(&self) -> String {
            "a server that never accepts".to_owned()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_redis_driver_promises_its_connect_and_command_timeouts_together() {
        let driver = RedisDriver::with_connector(Unreachable)
            .connect_timeout(Duration::from_secs(3))
            .command_timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        assert_eq!(driver.call_limit(), Some(Duration::from_secs(4)));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_another_calls_connection_attempt_counts_towards_the_connect_timeout() {
        let connect_timeout = Duration::from_secs(5);
        let driver = RedisDriver::with_connector(Unreachable)
            .connect_timeout(connect_timeout)
            .build()
            .unwrap();
        let request = |owner| {
            let name = LockName::from("unreachable");
            AcquireRequest::new(name, OwnerToken::from_u128(owner), Duration::from_secs(10))
        };
        let first = tokio::spawn({
            let driver = driver.clone();
            async move { driver.acquire(&request(1)).await }
        });
        // The second call starts while the first one's connection attempt is under way,
        // and waits for it; its own time still runs out after the connect timeout.
        tokio::time::sleep(connect_timeout * 3 / 5).await;
        let start = Instant::now();
        let second = within(LONG, "the second call's end", driver.acquire(&request(2))).await;
        assert!(
            matches!(second, Err(DriverError::Timeout(limit)) if limit == connect_timeout),
            "{second:?}"
        );
        assert_eq!(start.elapsed(), connect_timeout);
        let first = first.await.unwrap();
        assert!(matches!(first, Err(DriverError::Timeout(_))), "{first:?}");
    }
}
