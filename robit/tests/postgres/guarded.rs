//! Guarded transactions: a holder's writes commit while its grant holds the lock, and
//! never after its lease ran out and another holder was granted the lock.

use std::time::Duration;

use robit::postgres::{GuardedError, PostgresDriver};
use robit::{LossReason, Mutex};
use robit_test_support::postgres::PostgresServer;

use super::driver::{driver, expire};

/// The application's own table, which the lock protects.
fn ledger(server: &PostgresServer) {
    server.psql("CREATE TABLE ledger (entry text PRIMARY KEY)");
}

async fn write(
    driver: &PostgresDriver,
    name: &str,
    fence: robit::FenceToken,
    entry: &str,
) -> Result<(), GuardedError> {
    let mut guarded = driver.begin_guarded(name, fence).await?;
    sqlx::query("INSERT INTO ledger VALUES ($1)")
        .bind(entry)
        .execute(&mut *guarded)
        .await
        .unwrap();
    guarded.commit().await
}

#[tokio::test]
async fn a_holder_s_guarded_writes_commit_while_its_grant_holds_the_lock() {
    let server = PostgresServer::start();
    ledger(&server);
    let driver = driver(&server);
    let mutex = Mutex::builder("ledger", driver.clone()).build().unwrap();
    let guard = mutex.lock().await.unwrap();
    write(&driver, "ledger", guard.fence(), "a").await.unwrap();
    assert_eq!(
        server.psql("SELECT string_agg(entry, ',') FROM ledger"),
        "a"
    );
    // A transaction rolled back, or dropped, keeps nothing.
    let mut guarded = driver.begin_guarded("ledger", guard.fence()).await.unwrap();
    sqlx::query("INSERT INTO ledger VALUES ('b')")
        .execute(&mut *guarded)
        .await
        .unwrap();
    guarded.rollback().await.unwrap();
    assert_eq!(server.psql("SELECT count(*) FROM ledger"), "1");
    guard.unlock().await.unwrap();
}

#[tokio::test]
async fn a_holder_paused_past_its_lease_cannot_commit_after_another_holder_was_granted() {
    let server = PostgresServer::start();
    ledger(&server);
    let driver = driver(&server);
    let a = Mutex::builder("ledger", driver.clone())
        .ttl(Duration::from_secs(30))
        .watchdog(false)
        .build()
        .unwrap();
    let guard_a = a.lock().await.unwrap();
    let mut guarded = driver
        .begin_guarded("ledger", guard_a.fence())
        .await
        .unwrap();
    sqlx::query("INSERT INTO ledger VALUES ('from a')")
        .execute(&mut *guarded)
        .await
        .unwrap();
    // a pauses here past its lease; b is granted the lock and writes.
    expire(&server, "ledger");
    let b = Mutex::builder("ledger", driver.clone()).build().unwrap();
    let guard_b = b.try_lock().await.unwrap();
    assert!(guard_b.fence() > guard_a.fence());
    write(&driver, "ledger", guard_b.fence(), "from b")
        .await
        .unwrap();
    // a wakes up and commits: refused, and nothing of it is kept.
    let refused = guarded.commit().await.unwrap_err();
    assert!(
        matches!(&refused, GuardedError::LockLost { fence, .. } if *fence == guard_a.fence()),
        "{refused}"
    );
    assert_eq!(
        server.psql("SELECT string_agg(entry, ',') FROM ledger"),
        "from b"
    );
    // Its grant is gone too: a's mutex learns it at its next renewal.
    let refreshed = guard_a.refresh(Duration::from_secs(30)).await;
    assert!(refreshed.is_err(), "{refreshed:?}");
    assert_eq!(guard_a.loss(), Some(LossReason::NotOwner));
    guard_b.unlock().await.unwrap();
}

#[tokio::test]
async fn a_guarded_commit_after_the_lease_ran_out_is_refused_even_with_nobody_else_holding() {
    let server = PostgresServer::start();
    ledger(&server);
    let driver = driver(&server);
    let mutex = Mutex::builder("ledger", driver.clone())
        .watchdog(false)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    expire(&server, "ledger");
    let refused = write(&driver, "ledger", guard.fence(), "late")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, GuardedError::LockLost { .. }),
        "{refused}"
    );
    assert_eq!(server.psql("SELECT count(*) FROM ledger"), "0");
}
