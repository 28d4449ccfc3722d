//! The Driver/Lease contract, checked on the local driver. Each check is a rule from the
//! `Driver` documentation; they are generic over the driver so that they describe the
//! contract, not the local driver's internals.

use robit_test_support::kit as common;

use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, Lease, LockName, OwnerToken, Renewal};
use robit::{Driver, LocalDriver};

const TTL: Duration = Duration::from_secs(3);

fn name() -> LockName {
    LockName::from("contract")
}

fn owner(n: u128) -> OwnerToken {
    OwnerToken::from_u128(0x00C0_FFEE_0000 + n)
}

fn request(who: u128) -> AcquireRequest {
    AcquireRequest::new(name(), owner(who), TTL)
}

async fn granted(driver: &impl Driver, who: u128) -> std::sync::Arc<dyn Lease> {
    common::granted(driver, &request(who)).await
}

async fn held(driver: &impl Driver, who: u128) -> Option<Duration> {
    common::held(driver, &request(who)).await
}

#[tokio::test(start_paused = true)]
async fn a_free_name_is_granted_and_a_held_one_is_refused_with_its_expiry() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    assert!(lease.fence().get() >= 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(held(&driver, 2).await, Some(TTL - Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn a_grant_lives_for_its_ttl_and_not_longer() {
    let driver = LocalDriver::new();
    let first = granted(&driver, 1).await;
    tokio::time::advance(TTL - Duration::from_millis(1)).await;
    held(&driver, 2).await;
    tokio::time::advance(Duration::from_millis(1)).await;
    let second = granted(&driver, 2).await;
    assert!(second.fence() > first.fence());
}

#[tokio::test(start_paused = true)]
async fn a_renew_extends_the_grant_by_the_ttl_from_the_renew() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    tokio::time::advance(TTL / 2).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
    tokio::time::advance(TTL - Duration::from_millis(1)).await;
    held(&driver, 2).await;
    tokio::time::advance(Duration::from_millis(1)).await;
    granted(&driver, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_renew_after_expiry_answers_lost_even_if_nobody_took_the_lock() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    tokio::time::advance(TTL).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Lost);
    // And the lost renew did not resurrect the grant.
    granted(&driver, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_renew_after_a_takeover_answers_lost_and_leaves_the_new_grant_alone() {
    let driver = LocalDriver::new();
    let stale = granted(&driver, 1).await;
    tokio::time::advance(TTL).await;
    let _fresh = granted(&driver, 2).await;
    assert_eq!(stale.renew(TTL).await.unwrap(), Renewal::Lost);
    assert_eq!(held(&driver, 3).await, Some(TTL));
}

#[tokio::test(start_paused = true)]
async fn a_release_frees_the_name_at_once_and_is_idempotent() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    lease.release().await.unwrap();
    lease.release().await.unwrap();
    granted(&driver, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_late_release_never_deletes_a_newer_holders_grant() {
    let driver = LocalDriver::new();
    let stale = granted(&driver, 1).await;
    tokio::time::advance(TTL).await;
    let fresh = granted(&driver, 2).await;
    stale.release().await.unwrap();
    assert_eq!(held(&driver, 3).await, Some(TTL));
    assert_eq!(fresh.renew(TTL).await.unwrap(), Renewal::Renewed);
}

#[tokio::test(start_paused = true)]
async fn a_release_of_a_regranted_name_by_the_same_owner_token_does_not_touch_the_new_grant() {
    // Owner tokens are unique per attempt in the Mutex, but the contract keys on
    // (owner, fence): even a reused owner cannot release a grant it was not given.
    let driver = LocalDriver::new();
    let stale = granted(&driver, 1).await;
    tokio::time::advance(TTL).await;
    let _fresh = granted(&driver, 1).await;
    stale.release().await.unwrap();
    held(&driver, 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_renew_of_a_regranted_name_by_the_same_owner_token_answers_lost() {
    // As for release: the contract keys on (owner, fence), and the new grant is left alone.
    let driver = LocalDriver::new();
    let stale = granted(&driver, 1).await;
    tokio::time::advance(TTL).await;
    let _fresh = granted(&driver, 1).await;
    tokio::time::advance(TTL / 2).await;
    assert_eq!(stale.renew(TTL).await.unwrap(), Renewal::Lost);
    assert_eq!(held(&driver, 2).await, Some(TTL / 2));
}

#[tokio::test(start_paused = true)]
async fn fencing_tokens_strictly_increase_across_releases_expiries_and_owners() {
    let driver = LocalDriver::new();
    let mut last = None;
    for round in 0..20_u128 {
        let lease = granted(&driver, round % 3).await;
        assert!(
            last < Some(lease.fence()),
            "token went from {last:?} to {:?}",
            lease.fence()
        );
        last = Some(lease.fence());
        if round % 2 == 0 {
            lease.release().await.unwrap();
        } else {
            tokio::time::advance(TTL).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_acquires_of_one_name_grant_exactly_one() {
    let driver = LocalDriver::new();
    let attempts = (0..64_u128).map(|who| {
        let driver = driver.clone();
        tokio::spawn(async move { driver.acquire(&request(who)).await.unwrap() })
    });
    let mut grants = 0;
    for attempt in attempts.collect::<Vec<_>>() {
        if let Acquire::Granted(_) = attempt.await.unwrap() {
            grants += 1;
        }
    }
    assert_eq!(grants, 1);
}

#[tokio::test(start_paused = true)]
async fn a_release_watch_completes_on_a_release_after_it_was_created() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    let watch = driver.watch_release(&request(9));
    lease.release().await.unwrap();
    tokio::time::timeout(Duration::from_millis(1), watch)
        .await
        .expect("the watch missed a release that happened before it was polled");
}

#[tokio::test(start_paused = true)]
async fn a_release_watch_stays_pending_while_the_lock_is_held() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    let watch = driver.watch_release(&request(9));
    assert!(tokio::time::timeout(TTL / 2, watch).await.is_err());
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
}

#[tokio::test(start_paused = true)]
async fn an_eviction_is_reported_through_the_lease_lost_signal() {
    let driver = LocalDriver::new();
    let lease = granted(&driver, 1).await;
    assert!(driver.evict(&name()));
    tokio::time::timeout(Duration::from_millis(1), lease.lost())
        .await
        .expect("the lease did not report its eviction");
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Lost);
    assert!(!driver.evict(&name()));
}
