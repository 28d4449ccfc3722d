//! Grants, renewals, releases, fencing tokens, lock-delay, inspection and force release,
//! each checked against the rows the server holds.

use std::time::Duration;

use robit::Driver;
use robit::driver::{Acquire, AcquireRequest, Lease, LockName, LockState, OwnerToken, Renewal};
use robit::postgres::PostgresDriver;
use robit_test_support::postgres::PostgresServer;

/// A driver on `server` whose statements time out after a second.
pub(super) fn driver(server: &PostgresServer) -> PostgresDriver {
    PostgresDriver::builder(server.url())
        .request_timeout(Duration::from_secs(1))
        .build()
        .unwrap()
}

/// A single try for `name` by a fresh owner, for `ttl`.
/// A superuser session of the test's own, beside the drivers: one that holds a row or
/// advisory lock open in a transaction, say.
pub(super) async fn admin(server: &PostgresServer) -> sqlx::PgConnection {
    use sqlx::Connection as _;
    sqlx::PgConnection::connect(&server.url()).await.unwrap()
}

pub(super) fn request(name: &str, owner: u128, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(owner), ttl)
}

/// The lease of a grant; panics on any other answer.
pub(super) async fn granted(
    driver: &PostgresDriver,
    request: &AcquireRequest,
) -> std::sync::Arc<dyn Lease> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// How long the grant of a held lock has left, as the acquire answered; panics on a
/// grant.
pub(super) async fn held(driver: &PostgresDriver, request: &AcquireRequest) -> Option<Duration> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Held { expires_in } => expires_in,
        other => panic!("expected the lock held, got {other:?}"),
    }
}

/// Ends every lease of `name` on the server now, as if its holder had stopped renewing
/// long ago: what a paused or cut-off holder leaves, without waiting for it.
pub(super) fn expire(server: &PostgresServer, name: &str) {
    server.psql(&format!(
        "UPDATE robit.locks SET expires_at = clock_timestamp() - interval '1 millisecond' \
         WHERE name = convert_to('{name}', 'UTF8')"
    ));
}

#[tokio::test]
async fn a_lock_is_one_row_while_held_and_none_once_released() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    let lease = granted(&driver, &request("job", 1, ttl)).await;
    assert_eq!(server.psql("SELECT count(*) FROM robit.locks"), "1");
    let left = held(&driver, &request("job", 2, ttl)).await.unwrap();
    assert!(
        left > ttl - Duration::from_secs(5) && left <= ttl,
        "{left:?}"
    );
    assert_eq!(lease.renew(ttl).await.unwrap(), Renewal::Renewed);
    lease.release().await.unwrap();
    assert_eq!(server.psql("SELECT count(*) FROM robit.locks"), "0");
    assert_eq!(lease.renew(ttl).await.unwrap(), Renewal::Lost);
    // Idempotent, and never another's: the next holder keeps its grant.
    let next = granted(&driver, &request("job", 3, ttl)).await;
    lease.release().await.unwrap();
    assert_eq!(next.renew(ttl).await.unwrap(), Renewal::Renewed);
}

#[tokio::test]
async fn a_renewal_after_the_lease_ended_is_lost_even_with_nobody_else_holding_it() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    let lease = granted(&driver, &request("job", 1, ttl)).await;
    expire(&server, "job");
    assert_eq!(lease.renew(ttl).await.unwrap(), Renewal::Lost);
    // The row of an expired grant is taken over by the next acquire.
    let next = granted(&driver, &request("job", 2, ttl)).await;
    assert!(next.fence() > lease.fence());
    assert_eq!(server.psql("SELECT count(*) FROM robit.locks"), "1");
}

#[tokio::test]
async fn tokens_rise_across_releases_expiries_and_a_crash_of_the_server() {
    let mut server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    let first = granted(&driver, &request("job", 1, ttl)).await;
    let mut last = first.fence();
    first.release().await.unwrap();
    for owner in 2..6 {
        let lease = granted(&driver, &request("job", owner, ttl)).await;
        assert!(lease.fence() > last, "{:?} after {last:?}", lease.fence());
        last = lease.fence();
        if owner % 2 == 0 {
            lease.release().await.unwrap();
        } else {
            expire(&server, "job");
        }
    }
    expire(&server, "job");
    server.kill();
    server.start_again();
    // The pool's connections died with the server: the first call may fail on one.
    let mut after = None;
    for owner in 10..20 {
        if let Ok(Acquire::Granted(lease)) = driver.acquire(&request("job", owner, ttl)).await {
            after = Some(lease.fence());
            break;
        }
    }
    let after = after.expect("a grant after the restart");
    assert!(after > last, "{after:?} after {last:?}");
}

#[tokio::test]
async fn a_thousand_names_keep_no_row_once_released_and_one_counter_per_bucket_at_most() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    for i in 0..2000 {
        let lease = granted(&driver, &request(&format!("job-{i}"), i, ttl)).await;
        lease.release().await.unwrap();
    }
    assert_eq!(server.psql("SELECT count(*) FROM robit.locks"), "0");
    let counters: u32 = server
        .psql("SELECT count(*) FROM robit.fences")
        .parse()
        .unwrap();
    assert!(
        // 2,000 names thrown into 1,024 buckets fill about 880 of them.
        (800..=1024).contains(&counters),
        "{counters} counters for 2,000 names"
    );
}

#[tokio::test]
async fn a_lock_delay_refuses_everyone_after_an_expiry_but_not_after_a_release() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    assert!(driver.supports_lock_delay());
    let (ttl, delay) = (Duration::from_secs(30), Duration::from_secs(60));
    let with_delay = |owner| request("job", owner, ttl).with_lock_delay(delay);
    let lease = granted(&driver, &with_delay(1)).await;
    expire(&server, "job");
    let left = held(&driver, &request("job", 2, ttl)).await.unwrap();
    assert!(
        left > delay - Duration::from_secs(5) && left <= delay,
        "{left:?}"
    );
    assert_eq!(lease.renew(ttl).await.unwrap(), Renewal::Lost);
    let inspection = driver.inspect(&LockName::from("job")).await.unwrap();
    assert_eq!(inspection.state, LockState::LockDelay);
    // Its holder's release ends the delay.
    lease.release().await.unwrap();
    let second = granted(&driver, &with_delay(3)).await;
    second.release().await.unwrap();
    granted(&driver, &request("job", 4, ttl)).await;
}

#[tokio::test]
async fn inspect_shows_the_holder_and_a_force_release_frees_only_the_holder_named() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    let name = LockName::from("job");
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Free);
    let lease = granted(&driver, &request("job", 0xabc, ttl)).await;
    let inspection = driver.inspect(&name).await.unwrap();
    assert_eq!(inspection.state, LockState::Held);
    assert_eq!(inspection.holder, Some(OwnerToken::from_u128(0xabc)));
    assert_eq!(inspection.fence, Some(lease.fence()));
    let left = inspection.expires_in.unwrap();
    assert!(
        left > ttl - Duration::from_secs(5) && left <= ttl,
        "{left:?}"
    );
    let other = OwnerToken::from_u128(0xdef);
    assert!(!driver.force_release(&name, other).await.unwrap());
    assert!(
        driver
            .force_release(&name, OwnerToken::from_u128(0xabc))
            .await
            .unwrap()
    );
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Free);
    assert_eq!(lease.renew(ttl).await.unwrap(), Renewal::Lost);
}

#[tokio::test]
async fn names_of_any_bytes_and_namespaces_of_their_own_do_not_meet() {
    let server = PostgresServer::start();
    let ttl = Duration::from_secs(30);
    let billing = PostgresDriver::builder(server.url())
        .namespace("billing")
        .build()
        .unwrap();
    let reports = PostgresDriver::builder(server.url())
        .namespace("reports")
        .build()
        .unwrap();
    let odd = AcquireRequest::new(
        LockName::from(&b"\xff\x00job"[..]),
        OwnerToken::from_u128(1),
        ttl,
    );
    granted(&billing, &odd).await;
    granted(&reports, &odd).await;
    let mut again = odd.clone();
    again.owner = OwnerToken::from_u128(2);
    assert!(matches!(
        billing.acquire(&again).await.unwrap(),
        Acquire::Held { .. }
    ));
}

/// An acquire held up by a row lock (a guarded commit's, here a transaction of the
/// test's own) gives up on the server before its caller stops waiting: it never grants
/// after the caller gave up, which would leave a grant nobody holds until its TTL ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_held_up_by_a_row_lock_fails_rather_than_grant_after_its_caller_gave_up() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let ttl = Duration::from_secs(30);
    granted(&driver, &request("job", 1, ttl)).await;
    expire(&server, "job");
    let mut admin = admin(&server).await;
    let mut blocker = sqlx::Connection::begin(&mut admin).await.unwrap();
    sqlx::query("SELECT 1 FROM robit.locks FOR SHARE")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let tried = driver.acquire(&request("job", 2, ttl)).await;
    let err = tried.expect_err("the acquire waited out the row lock");
    assert!(
        !matches!(err, robit::driver::DriverError::Timeout(_)),
        "the server still waited when the caller gave up: {err}"
    );
    blocker.commit().await.unwrap();
    // Had the server gone on waiting, it would grant now, to nobody.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.psql(&format!(
            "SELECT count(*) FROM robit.locks WHERE owner = '{:032x}'::uuid",
            2
        )),
        "0"
    );
}
