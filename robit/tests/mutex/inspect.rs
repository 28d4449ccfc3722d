//! An operator's view of a lock — who holds it, its token, its time left — and release by
//! force, owner-checked. The local driver under paused time.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{TTL, within};
use robit::driver::{
    Acquire, AcquireRequest, DriverError, Inspection, LockName, LockState, OwnerToken,
    ReleaseWatch, async_trait,
};
use robit::{Driver, LocalDriver, LossReason, Mutex};

fn name() -> LockName {
    LockName::from("inspected")
}

#[tokio::test(start_paused = true)]
async fn inspection_shows_the_holder_its_token_and_its_time_left() {
    let driver = LocalDriver::new();
    assert_eq!(driver.inspect(&name()).await.unwrap(), Inspection::free());
    let mutex = Mutex::builder("inspected", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = driver.inspect(&name()).await.unwrap();
    assert_eq!(seen.state, LockState::Held);
    assert!(seen.holder.is_some());
    assert_eq!(seen.fence, Some(guard.fence()));
    assert_eq!(seen.expires_in, Some(TTL - Duration::from_millis(500)));
    let holder = seen.holder.unwrap().to_string();
    assert_eq!(
        seen.to_string(),
        format!(
            "held by {} (fencing token {}), 2.500s left",
            &holder[..8],
            guard.fence()
        )
    );
    guard.unlock().await.unwrap();
    assert_eq!(
        driver.inspect(&name()).await.unwrap().state,
        LockState::Free
    );
}

#[tokio::test(start_paused = true)]
async fn a_grant_in_its_lock_delay_shows_as_such() {
    let driver = LocalDriver::new();
    let request = AcquireRequest::new(name(), OwnerToken::from_u128(7), TTL)
        .with_lock_delay(Duration::from_secs(5));
    let Acquire::Granted(_lease) = driver.acquire(&request).await.unwrap() else {
        panic!("a free lock is granted");
    };
    tokio::time::sleep(TTL + Duration::from_secs(1)).await;
    let seen = driver.inspect(&name()).await.unwrap();
    assert_eq!(
        (seen.state, seen.holder, seen.expires_in),
        (
            LockState::LockDelay,
            Some(OwnerToken::from_u128(7)),
            Some(Duration::from_secs(4))
        )
    );
    assert!(
        seen.to_string()
            .starts_with("in its lock-delay by 00000000")
    );
}

#[tokio::test(start_paused = true)]
async fn a_release_by_force_frees_only_the_named_holders_grant_and_tells_it() {
    let driver = LocalDriver::new();
    let mutex = Mutex::builder("inspected", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let holder = driver.inspect(&name()).await.unwrap().holder.unwrap();
    let stranger = OwnerToken::from_u128(holder.as_u128() ^ 1);
    assert!(!driver.force_release(&name(), stranger).await.unwrap());
    assert!(guard.is_held());
    assert!(driver.force_release(&name(), holder).await.unwrap());
    within(TTL, "the holder told of its loss", guard.lost()).await;
    assert_eq!(guard.loss(), Some(LossReason::DriverSignalled));
    assert!(
        !driver.force_release(&name(), holder).await.unwrap(),
        "once"
    );
    let rival = Mutex::builder("inspected", driver.clone()).build().unwrap();
    rival.try_lock().await.unwrap().unlock().await.unwrap();
}

/// A driver with neither inspection nor release by force.
#[derive(Debug)]
struct Opaque(LocalDriver);

#[async_trait]
impl Driver for Opaque {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.0.acquire(request).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        self.0.watch_release(request)
    }
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_cannot_inspect_says_so() {
    let driver = Opaque(LocalDriver::new());
    let refused = driver.inspect(&name()).await.unwrap_err();
    assert!(
        matches!(refused, DriverError::Rejected { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("cannot inspect"), "{refused}");
    let refused = driver
        .force_release(&name(), OwnerToken::from_u128(1))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("by force"), "{refused}");
}
