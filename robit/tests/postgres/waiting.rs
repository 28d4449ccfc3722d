//! Waiters: served first come, first served, woken by the release's notification, and
//! a waiter that gave up or went silent takes nobody's turn.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::driver::{AcquireRequest, LockName, Waiter};
use robit::postgres::PostgresDriver;
use robit::{Backoff, Driver, Mutex, Wait};
use robit_test_support::postgres::PostgresServer;
use tokio::time::Instant;

use super::driver::{driver, granted, held, request};

/// A waiting attempt of waiter `id` for "job", polling every 100 ms.
fn waiting(owner: u128, id: u128) -> AcquireRequest {
    request("job", owner, Duration::from_secs(30))
        .with_waiter(Waiter::new(id, Duration::from_millis(100)))
}

/// Spawns `mutex`'s `lock()` on "job", waiting at most `wait`, and returns once the
/// driver's queue for it holds `queued` waiters (this one counted).
pub(super) async fn queue(
    driver: &PostgresDriver,
    mutex: Mutex,
    wait: Duration,
    queued: usize,
) -> tokio::task::JoinHandle<Result<robit::Guard, robit::LockError>> {
    let waiting = tokio::spawn(async move { mutex.lock_with(Wait::Timeout(wait)).await });
    let name = LockName::from("job");
    while driver.inspect(&name).await.unwrap().waiters < queued {
        tokio::task::yield_now().await;
    }
    waiting
}

#[tokio::test]
async fn a_freed_lock_goes_to_the_first_waiter_still_asking_not_to_a_newcomer() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("job", 1, Duration::from_secs(30))).await;
    held(&driver, &waiting(2, 0xa)).await;
    held(&driver, &waiting(3, 0xb)).await;
    holder.release().await.unwrap();
    // Free, but promised: neither a single try nor the second waiter takes it.
    assert_eq!(
        held(&driver, &request("job", 4, Duration::from_secs(30))).await,
        None
    );
    assert_eq!(held(&driver, &waiting(5, 0xb)).await, None);
    let first = granted(&driver, &waiting(6, 0xa)).await;
    first.release().await.unwrap();
    // A waiter that gave up is out of the queue.
    driver.withdraw(&waiting(7, 0xb)).await.unwrap();
    granted(&driver, &request("job", 8, Duration::from_secs(30))).await;
}

#[tokio::test]
async fn a_waiter_that_stopped_asking_is_passed_over() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("job", 1, Duration::from_secs(30))).await;
    held(&driver, &waiting(2, 0xa)).await;
    // The waiter went silent long ago (it asks every 100 ms; its entry lives a second).
    server.psql("UPDATE robit.waiters SET live_until = clock_timestamp() - interval '1 ms'");
    holder.release().await.unwrap();
    granted(&driver, &request("job", 3, Duration::from_secs(30))).await;
    // The grant swept the silent entry away.
    assert_eq!(server.psql("SELECT count(*) FROM robit.waiters"), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_granted_in_the_order_they_came_each_woken_by_the_release() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    // Polls a minute apart: only a notification wakes a waiter within the test.
    let backoff = Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
    let mutex = || {
        Mutex::builder("job", driver.clone())
            .backoff(backoff)
            .build()
            .unwrap()
    };
    let holder = mutex().lock().await.unwrap();
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..3 {
        let order = Arc::clone(&order);
        // Each queued before the next starts.
        let waiting = queue(&driver, mutex(), Duration::from_secs(30), who + 1).await;
        tasks.push(tokio::spawn(async move {
            let guard = waiting.await.unwrap().unwrap();
            order.lock().unwrap().push(who);
            guard.unlock().await.unwrap();
        }));
    }
    let released = Instant::now();
    holder.unlock().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    assert!(
        released.elapsed() < Duration::from_secs(30),
        "the waiters were not woken: {:?}",
        released.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_on_the_application_s_pool_of_one_connection_listens_beside_it() {
    let server = PostgresServer::start();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy(&server.url())
        .unwrap();
    let driver = PostgresDriver::builder_with_pool(pool)
        .request_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let mutex = || Mutex::builder("job", driver.clone()).build().unwrap();
    let holder = mutex().lock().await.unwrap();
    let waiting = queue(&driver, mutex(), Duration::from_secs(20), 1).await;
    // The listening connection is the waiter's now: the pool's one connection is not.
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        holder.unlock().await.unwrap();
        waiting.await.unwrap().unwrap().unlock().await.unwrap();
    })
    .await;
    assert!(
        served.is_ok(),
        "the pool's one connection was taken for good"
    );
}
