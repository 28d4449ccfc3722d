//! Tests of the local driver itself: its own API, and what needs to see inside its table.

use std::time::Duration;

use super::LocalDriver;
use crate::driver::{Acquire, AcquireRequest, Driver, Lease, LockName, OwnerToken};

const TTL: Duration = Duration::from_secs(10);

fn footprint(driver: &LocalDriver) -> (usize, usize, usize) {
    driver.shared.table().footprint()
}

async fn grant(driver: &LocalDriver, name: &LockName, owner: u128) -> std::sync::Arc<dyn Lease> {
    let request = AcquireRequest::new(name.clone(), OwnerToken::from_u128(owner), TTL);
    match driver.acquire(&request).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("expected a grant of {name}, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_million_released_names_leave_nothing_behind() {
    let driver = LocalDriver::new();
    for i in 0..1_000_000_u32 {
        let name = LockName::from(format!("job/{i}"));
        let lease = grant(&driver, &name, u128::from(i)).await;
        lease.release().await.unwrap();
    }
    assert_eq!(footprint(&driver), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_million_expired_names_are_swept_by_the_next_operation() {
    let driver = LocalDriver::new();
    let mut last_fence = 0;
    for i in 0..1_000_000_u32 {
        let name = LockName::from(format!("job/{i}"));
        let lease = grant(&driver, &name, u128::from(i)).await;
        last_fence = lease.fence().get();
        // Dropped without release: the grant lives until its TTL.
    }
    assert_eq!(footprint(&driver), (1_000_000, 1_000_000, 0));
    tokio::time::advance(TTL).await;
    assert_eq!(driver.len(), 0);
    assert_eq!(footprint(&driver), (0, 0, 0));
    // The counter survives the sweep: a re-used name gets a higher token.
    let lease = grant(&driver, &LockName::from("job/0"), 7).await;
    assert_eq!(lease.fence().get(), last_fence + 1);
}

#[tokio::test(start_paused = true)]
async fn watchers_are_dropped_with_their_watches() {
    let driver = LocalDriver::new();
    let name = LockName::from("watched");
    let request = AcquireRequest::new(name, OwnerToken::from_u128(1), TTL);
    let first = driver.watch_release(&request);
    let second = driver.watch_release(&request);
    assert_eq!(footprint(&driver).2, 1);
    drop(first);
    assert_eq!(footprint(&driver).2, 1);
    drop(second);
    assert_eq!(footprint(&driver), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_renew_moves_the_grant_in_the_expiry_order() {
    let driver = LocalDriver::new();
    let name = LockName::from("renewed");
    let lease = grant(&driver, &name, 1).await;
    tokio::time::advance(TTL / 2).await;
    assert_eq!(
        lease.renew(TTL).await.unwrap(),
        crate::driver::Renewal::Renewed
    );
    assert_eq!(footprint(&driver), (1, 1, 0));
    // Past the first expiry, inside the renewed one.
    tokio::time::advance(TTL * 3 / 4).await;
    assert_eq!(driver.len(), 1);
    tokio::time::advance(TTL / 4).await;
    assert_eq!(driver.len(), 0);
    assert_eq!(footprint(&driver), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn the_driver_counts_its_live_grants_and_names_itself_in_debug_output() {
    let driver = LocalDriver::new();
    assert!(driver.is_empty());
    let lease = grant(&driver, &LockName::from("counted"), 1).await;
    assert_eq!(driver.len(), 1);
    assert!(!driver.is_empty());
    lease.release().await.unwrap();
    assert!(driver.is_empty());
    assert!(
        format!("{driver:?}").starts_with("LocalDriver { clock: "),
        "{driver:?}"
    );
}
