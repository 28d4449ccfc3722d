//! What the etcd driver recovers from by itself, against a real etcd member of the
//! test's own (`--features etcd`): its lease revoked behind its back, an endpoint that
//! stops answering in the middle of a release, and entries nobody owns any more whose
//! deletion fails for a while.

use robit::Driver;
use robit::driver::{Acquire, AcquireRequest, LockName, LockState, OwnerToken, Renewal};
use robit_test_support::etcd::EtcdCluster;
use robit_test_support::kit::Captured;
use robit_test_support::redis::{FAULT_TTL, FreezingProxy, LONG};
use tokio::time::Instant;

use super::driver::{admin, driver, lease_ids};

/// A request for `name` by one owner, with the fault tests' TTL.
fn request(name: &str) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(1), FAULT_TTL)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_write_finds_the_driver_s_lease_revoked_is_granted_on_a_new_one() {
    let cluster = EtcdCluster::start(1);
    let driver = driver(&cluster.endpoints());
    let mut admin = admin(&cluster).await;
    // The driver's lease, granted with a first lock, then revoked behind its back: the
    // next acquire's write, on a name nobody holds, names a lease etcd no longer has.
    let Acquire::Granted(first) = driver.acquire(&request("first")).await.unwrap() else {
        panic!("the first lock was not granted");
    };
    first.release().await.unwrap();
    let old: Vec<i64> = lease_ids(&mut admin).await;
    assert_eq!(old.len(), 1, "{old:?}");
    admin.lease_revoke(old[0]).await.unwrap();
    let answer = driver.acquire(&request("second")).await;
    let Ok(Acquire::Granted(second)) = answer else {
        panic!("an acquire on a revoked lease was not granted on a new one: {answer:?}");
    };
    assert_eq!(second.renew(FAULT_TTL).await.unwrap(), Renewal::Renewed);
    let now: Vec<i64> = lease_ids(&mut admin).await;
    assert!(!now.is_empty() && !now.contains(&old[0]), "{now:?}");
    second.release().await.unwrap();
}

/// A request etcd refuses for itself, not for its lease, is the caller's error, with
/// etcd's reason, and costs the driver nothing: no lease replaced, the next lock granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_that_etcd_refuses_fails_with_its_reason_and_keeps_the_driver_s_lease() {
    let cluster = EtcdCluster::start(1);
    let driver = driver(&cluster.endpoints());
    let mut admin = admin(&cluster).await;
    let Acquire::Granted(first) = driver.acquire(&request("first")).await.unwrap() else {
        panic!("the first lock was not granted");
    };
    let before = lease_ids(&mut admin).await;
    // Its entry's request is larger than the 1.5 MiB etcd accepts by default, though
    // not than the 2 MiB its gRPC server reads.
    let huge = "n".repeat(560_000);
    let err = driver.acquire(&request(&huge)).await.unwrap_err();
    assert!(
        !err.is_transient()
            && err.to_string().contains("too large")
            && err
                .to_string()
                .contains("too long for etcd's request limit"),
        "{err}"
    );
    assert_eq!(lease_ids(&mut admin).await, before);
    let Acquire::Granted(second) = driver.acquire(&request("second")).await.unwrap() else {
        panic!("the next lock was not granted");
    };
    second.release().await.unwrap();
    first.release().await.unwrap();
}

/// A release is safe to send twice, and nobody sends it again for the caller: when its
/// endpoint stops answering, it goes once more, to the next endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_whose_endpoint_stops_answering_is_sent_again_to_the_next() {
    let cluster = EtcdCluster::start(1);
    let proxy = FreezingProxy::start(cluster.client_port(0)).await;
    let direct = cluster.endpoints()[0].clone();
    let driver = driver(&[format!("http://127.0.0.1:{}", proxy.port()), direct]);
    let name = LockName::from("job");
    let request = AcquireRequest::new(name.clone(), OwnerToken::from_u128(1), FAULT_TTL * 5);
    let Acquire::Granted(lease) = driver.acquire(&request).await.unwrap() else {
        panic!("not granted through the first endpoint");
    };
    proxy.freeze();
    lease
        .release()
        .await
        .expect("the release, sent again to the next endpoint");
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(seen.state, LockState::Free, "{seen:?}");
}

/// An entry nobody owns any more (its release failed) is deleted by the driver's next
/// calls; while those deletes fail, that is logged once, and once more when they work
/// again: not at every call.
#[tokio::test]
async fn failing_to_sweep_a_forgotten_entry_is_logged_once_until_it_works_again() {
    let cluster = EtcdCluster::start(1);
    let proxy = FreezingProxy::start(cluster.client_port(0)).await;
    let driver = driver(&[format!("http://127.0.0.1:{}", proxy.port())]);
    let request = |name: &str| {
        AcquireRequest::new(
            LockName::from(name),
            OwnerToken::from_u128(1),
            FAULT_TTL * 5,
        )
    };
    let Acquire::Granted(lease) = driver.acquire(&request("forgotten")).await.unwrap() else {
        panic!("not granted");
    };
    let captured = Captured::default();
    let logs = captured.install();
    let warnings = || {
        let lines = captured.lines();
        let count = |text: &str| lines.iter().filter(|line| line.contains(text)).count();
        (count("could not delete lock entries"), count("swept again"))
    };
    proxy.freeze();
    assert!(
        lease.release().await.is_err(),
        "a release through a frozen link"
    );
    for attempt in 1..=3 {
        assert!(
            driver.acquire(&request("other")).await.is_err(),
            "attempt {attempt}"
        );
        assert_eq!(warnings(), (1, 0), "after {attempt} failed sweeps");
    }
    proxy.thaw();
    // The connection the freeze broke is replaced by the next call.
    let deadline = Instant::now() + LONG;
    while !matches!(
        driver.acquire(&request("other")).await,
        Ok(Acquire::Granted(_))
    ) {
        assert!(Instant::now() < deadline, "never granted after the thaw");
    }
    drop(logs);
    assert_eq!(warnings(), (1, 1), "{:#?}", captured.lines());
    let seen = driver.inspect(&LockName::from("forgotten")).await.unwrap();
    assert_eq!(
        seen.state,
        LockState::Free,
        "the forgotten entry was not swept: {seen:?}"
    );
}
