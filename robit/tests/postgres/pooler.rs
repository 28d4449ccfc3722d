//! Through pgbouncer in transaction mode, where each statement may meet another server
//! connection: no session state, unnamed statements, waiters that poll (said once) or
//! listen on a direct connection.

use std::time::Duration;

use robit::postgres::PostgresDriver;
use robit::{Backoff, Mutex, Wait};
use robit_test_support::kit::Captured;

use super::waiting::queue;
use robit_test_support::postgres::{Pgbouncer, PostgresServer};
use tokio::time::Instant;

/// A driver through `bouncer`, told it is there.
fn pooled(bouncer: &Pgbouncer) -> robit::postgres::PostgresDriverBuilder {
    PostgresDriver::builder(bouncer.url())
        .transaction_pooler(true)
        .max_connections(8)
}

#[tokio::test]
async fn tasks_take_turns_through_a_transaction_mode_pooler_and_their_waiters_poll() {
    let server = PostgresServer::start();
    server.psql("CREATE TABLE counter (n bigint); INSERT INTO counter VALUES (0)");
    let bouncer = Pgbouncer::start(&server, 2);
    let captured = Captured::default();
    let _logging = captured.install();
    let driver = pooled(&bouncer).build().unwrap();
    let backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(50));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let driver = driver.clone();
            let mutex = Mutex::builder("counter", driver.clone())
                .backoff(backoff)
                .build()
                .unwrap();
            async move {
                for _ in 0..10 {
                    let guard = mutex
                        .lock_with(Wait::Timeout(Duration::from_secs(30)))
                        .await
                        .unwrap();
                    // A read, then a write: lost updates unless the turns are exclusive.
                    let mut guarded = driver
                        .begin_guarded("counter", guard.fence())
                        .await
                        .unwrap();
                    // Unnamed statements, as behind any transaction-mode pooler.
                    let n: i64 = sqlx::query_scalar("SELECT n FROM counter")
                        .persistent(false)
                        .fetch_one(&mut *guarded)
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                    sqlx::query("UPDATE counter SET n = $1")
                        .persistent(false)
                        .bind(n + 1)
                        .execute(&mut *guarded)
                        .await
                        .unwrap();
                    guarded.commit().await.unwrap();
                    guard.unlock().await.unwrap();
                }
            }
        })
        .collect();
    futures_util::future::join_all(tasks).await;
    assert_eq!(server.psql("SELECT n FROM counter"), "80");
    let said: Vec<String> = captured
        .lines()
        .into_iter()
        .filter(|line| line.contains("waiters poll for releases"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("transaction-mode pooler"), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_url_wakes_waiters_on_a_direct_connection_while_calls_go_through_the_pooler() {
    let server = PostgresServer::start();
    let bouncer = Pgbouncer::start(&server, 2);
    let driver = pooled(&bouncer).listen_url(server.url()).build().unwrap();
    // Polls a minute apart: only a notification wakes the waiter within the test.
    let backoff = Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
    let mutex = || {
        Mutex::builder("job", driver.clone())
            .backoff(backoff)
            .build()
            .unwrap()
    };
    let holder = mutex().lock().await.unwrap();
    let waiting = queue(&driver, mutex(), Duration::from_secs(50), 1).await;
    let released = Instant::now();
    holder.unlock().await.unwrap();
    let granted = waiting.await.unwrap().unwrap();
    granted.unlock().await.unwrap();
    assert!(
        released.elapsed() < Duration::from_secs(30),
        "the waiter was not woken: {:?}",
        released.elapsed()
    );
}

#[tokio::test]
async fn arguments_written_in_as_literals_name_the_same_rows_as_bound_ones() {
    let server = PostgresServer::start();
    let bouncer = Pgbouncer::start(&server, 2);
    // Quotes, a backslash and a dollar sign in the namespace; every byte in the name.
    let namespace = "it's a \\ $1 test";
    let name: Vec<u8> = (0..=255).collect();
    let pooled = pooled(&bouncer).namespace(namespace).build().unwrap();
    let direct = PostgresDriver::builder(server.url())
        .namespace(namespace)
        .build()
        .unwrap();
    // Backslashes in plain strings are escapes for every new session.
    server.psql("ALTER DATABASE postgres SET standard_conforming_strings = off");
    let request = |owner| {
        robit::driver::AcquireRequest::new(
            robit::driver::LockName::from(name.clone()),
            robit::driver::OwnerToken::from_u128(owner),
            Duration::from_secs(30),
        )
    };
    let held = robit::Driver::acquire(&pooled, &request(1)).await.unwrap();
    assert!(
        matches!(held, robit::driver::Acquire::Granted(_)),
        "{held:?}"
    );
    let other = robit::Driver::acquire(&direct, &request(2)).await.unwrap();
    assert!(
        matches!(other, robit::driver::Acquire::Held { .. }),
        "{other:?}"
    );
    let seen = robit::Driver::inspect(&direct, &robit::driver::LockName::from(name.clone()))
        .await
        .unwrap();
    assert_eq!(seen.holder, Some(robit::driver::OwnerToken::from_u128(1)));
}
