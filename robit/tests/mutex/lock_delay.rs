//! Lock-delay: after a holder's lease ends by expiry, nobody gets the lock for the delay;
//! after an unlock, at once. The local driver under paused time.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{FaultyDriver, LossLog, RenewFault, TTL, VALIDITY, granted, settle, within};
use robit::driver::{
    Acquire, AcquireRequest, DriverError, LockName, OwnerToken, ReleaseWatch, Renewal, async_trait,
};
use robit::{ConfigError, Driver, LocalDriver, LockError, Mutex};
use tokio::time::Instant;

const DELAY: Duration = Duration::from_secs(5);

fn delayed(driver: &FaultyDriver, log: &LossLog) -> Mutex {
    log.attach(
        Mutex::builder("delayed", driver.clone())
            .ttl(TTL)
            .lock_delay(DELAY),
    )
    .build()
    .unwrap()
}

/// A request by `owner` for the lock, with the lock-delay.
fn request(owner: u128) -> AcquireRequest {
    AcquireRequest::new(LockName::from("delayed"), OwnerToken::from_u128(owner), TTL)
        .with_lock_delay(DELAY)
}

fn rival(driver: &FaultyDriver) -> Mutex {
    Mutex::builder("delayed", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn after_a_lease_expires_nobody_gets_the_lock_until_the_delay_is_over() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = delayed(&driver, &log);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), started + VALIDITY);

    // The lease ran out on the backend at the TTL; the delay keeps the lock another 5 s.
    tokio::time::sleep_until(started + TTL + Duration::from_millis(500)).await;
    let rival = rival(&driver);
    match rival.try_lock().await {
        Err(LockError::Contended { expires_in }) => {
            assert_eq!(expires_in, Some(DELAY - Duration::from_millis(500)));
        }
        other => panic!("expected the lock-delay to refuse, got {other:?}"),
    }
    let waited = within(DELAY * 2, "the rival's grant", rival.lock())
        .await
        .unwrap();
    assert!(Instant::now() >= started + TTL + DELAY);
    assert!(waited.fence() > guard.fence());
    assert_eq!(log.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unlock_owes_no_delay() {
    let driver = FaultyDriver::new();
    let holder = delayed(&driver, &LossLog::default());
    holder.lock().await.unwrap().unlock().await.unwrap();
    rival(&driver)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_grant_in_its_lock_delay_is_not_renewed_for_its_owner() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, &request(1)).await;
    tokio::time::sleep(TTL).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Lost);
    settle().await;
    // Its holder was told (the local driver signals an expiry), and others still wait.
    within(Duration::ZERO, "the loss signal", lease.lost()).await;
    assert!(matches!(
        driver.acquire(&request(2)).await.unwrap(),
        Acquire::Held { expires_in: Some(left) } if left == DELAY
    ));
    tokio::time::sleep(DELAY).await;
    assert!(matches!(
        driver.acquire(&request(2)).await.unwrap(),
        Acquire::Granted(_)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_release_in_the_lock_delay_ends_it() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, &request(1)).await;
    tokio::time::sleep(TTL + Duration::from_secs(1)).await;
    lease.release().await.unwrap();
    assert!(matches!(
        driver.acquire(&request(2)).await.unwrap(),
        Acquire::Granted(_)
    ));
}

/// A driver that keeps no lock-delay.
#[derive(Debug)]
struct Forgetful(LocalDriver);

#[async_trait]
impl Driver for Forgetful {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.0.acquire(request).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        self.0.watch_release(request)
    }
}

#[test]
fn a_lock_delay_is_refused_over_a_driver_that_does_not_keep_one() {
    let build = |delay| {
        Mutex::builder("delayed", Arc::new(Forgetful(LocalDriver::new())))
            .lock_delay(delay)
            .build()
    };
    assert_eq!(build(DELAY).unwrap_err(), ConfigError::LockDelayUnsupported);
    build(Duration::ZERO).unwrap();
    let too_long = Mutex::builder("delayed", LocalDriver::new())
        .lock_delay(Duration::from_secs(366 * 24 * 3600))
        .build()
        .unwrap_err();
    assert!(matches!(too_long, ConfigError::LockDelayTooLong { .. }));
}

#[test]
fn a_lock_delay_of_exactly_the_longest_ttl_is_accepted_and_one_millisecond_more_is_not() {
    let build = |delay| {
        Mutex::builder("delayed", LocalDriver::new())
            .lock_delay(delay)
            .build()
    };
    build(robit::defaults::MAX_TTL).unwrap();
    assert!(matches!(
        build(robit::defaults::MAX_TTL + Duration::from_millis(1)).unwrap_err(),
        ConfigError::LockDelayTooLong { .. }
    ));
}
