//! A release or withdrawal that hands the lock to a waiter of the same driver wakes that
//! waiter directly, without the published notification, from the script's answer; a
//! grant the release made the waiter is taken up with no round trip.
//!
//! The drivers here cannot subscribe, and their waiters poll once a minute: within the
//! tests' limits, only the direct wake can move a waiter. Real time, real server; the
//! tests wait for events, never assert durations.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::{granted, handed, held, within};
use redis::aio::{ConnectionLike, PubSub};
use redis::{AsyncCommands, Cmd, ErrorKind, Pipeline, RedisFuture, RedisResult, Value};
use robit::driver::{AcquireRequest, LockName, OwnerToken, Waiter};
use robit::redis::{Connector, RedisDriver, UrlConnector};
use robit::{Backoff, Driver, Mutex, Wait};
use support::RedisServer;
use tokio::sync::watch;

const TTL: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(20);

/// Commands go to the server; subscribing always fails, so no notification arrives.
struct Deaf(UrlConnector);

#[robit::driver::async_trait]
impl Connector for Deaf {
    type Connection = <UrlConnector as Connector>::Connection;

    async fn connect(&self) -> RedisResult<Self::Connection> {
        self.0.connect().await
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        Err((
            ErrorKind::Client,
            "this test's driver hears no notifications",
        )
            .into())
    }

    fn describe(&self) -> String {
        "a connector without notifications".to_owned()
    }
}

/// A command connection whose answers are held back while its gate is shut.
#[derive(Clone)]
struct Gated {
    inner: <UrlConnector as Connector>::Connection,
    open: watch::Receiver<bool>,
}

impl ConnectionLike for Gated {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let answer = self.inner.req_packed_command(cmd).await;
            let _ = self.open.wait_for(|open| *open).await;
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.inner.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

/// A deaf connector whose command connection is [`Gated`].
struct DeafGated {
    deaf: Deaf,
    open: watch::Receiver<bool>,
}

#[robit::driver::async_trait]
impl Connector for DeafGated {
    type Connection = Gated;

    async fn connect(&self) -> RedisResult<Gated> {
        Ok(Gated {
            inner: self.deaf.connect().await?,
            open: self.open.clone(),
        })
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        self.deaf.subscriber().await
    }

    fn describe(&self) -> String {
        "a gated connector without notifications".to_owned()
    }
}

fn deaf_driver(server: &RedisServer) -> RedisDriver<Deaf> {
    RedisDriver::with_connector(Deaf(UrlConnector::new(&server.url()).unwrap()))
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

fn request(owner: u128, waiter: Option<u128>) -> AcquireRequest {
    let request = AcquireRequest::new(LockName::from("local"), OwnerToken::from_u128(owner), TTL);
    match waiter {
        Some(id) => request.with_waiter(Waiter::new(id, POLL)),
        None => request,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_next_waiter_of_the_same_driver_without_a_notification() {
    let server = RedisServer::start();
    let driver = deaf_driver(&server);
    let holder = granted(&driver, &request(1, None)).await;
    let waiting = request(2, Some(0xa));
    let woken = driver.watch_release(&waiting);
    assert!(woken.is_live());
    held(&driver, &waiting).await;
    holder.release().await.unwrap();
    within(LONG, "the direct wake", woken).await;
    handed(&driver, &waiting).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_takes_up_the_grant_a_release_of_the_same_driver_made_it_without_a_round_trip() {
    let server = RedisServer::start();
    let (gate, open) = watch::channel(true);
    let driver = RedisDriver::with_connector(DeafGated {
        deaf: Deaf(UrlConnector::new(&server.url()).unwrap()),
        open,
    })
    .quarantine(Duration::ZERO)
    .build()
    .unwrap();
    let first = granted(&driver, &request(1, None)).await;
    let next = request(2, Some(0xa));
    held(&driver, &next).await;
    first.release().await.unwrap();
    // No answer comes back while the gate is shut: only the grant the release's answer
    // named can be taken up now.
    gate.send_replace(false);
    let lease = within(
        LONG,
        "the grant, without asking the server",
        handed(&driver, &next),
    )
    .await;
    assert!(lease.fence() > first.fence());
    gate.send_replace(true);
    // The grant is the waiter's own on the server: its lease renews and releases it.
    assert_eq!(
        lease.renew(TTL).await.unwrap(),
        robit::driver::Renewal::Renewed
    );
    lease.release().await.unwrap();
    let left: Option<String> = server
        .admin()
        .await
        .get(b"{robit}:lock:local")
        .await
        .unwrap();
    assert_eq!(left, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_passes_the_reservation_on_and_wakes_the_next_waiter_directly() {
    let server = RedisServer::start();
    let driver = deaf_driver(&server);
    let holder = granted(&driver, &request(1, None)).await;
    let (first, second) = (request(2, Some(0xa)), request(3, Some(0xb)));
    held(&driver, &first).await;
    held(&driver, &second).await;
    let second_woken = driver.watch_release(&second);
    // Granted to the first waiter, which gives up instead of taking it up.
    holder.release().await.unwrap();
    driver.withdraw(&first).await.unwrap();
    within(LONG, "the direct wake of the second waiter", second_woken).await;
    granted(&driver, &second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutexes_sharing_a_driver_pass_the_lock_in_turn_without_notifications() {
    let server = RedisServer::start();
    let driver = deaf_driver(&server);
    let mutex = || {
        Mutex::builder("local", driver.clone())
            .ttl(TTL)
            .backoff(Backoff::new(POLL, POLL))
            .wait(Wait::Forever)
            .build()
            .unwrap()
    };
    let holder = mutex().lock().await.unwrap();
    // Each waiter, once it has the lock, unlocks it and so hands it to the next.
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let mutex = mutex();
            tokio::spawn(async move {
                let guard = mutex.lock().await.unwrap();
                guard.unlock().await.unwrap();
            })
        })
        .collect();
    // Each waiter is queued once it has been told the lock is held.
    within(LONG, "three queued waiters", async {
        while server
            .admin()
            .await
            .llen::<_, usize>(b"{robit}:queue:local")
            .await
            .unwrap()
            < 3
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    holder.unlock().await.unwrap();
    for waiter in waiters {
        within(LONG, "the hand-off chain", waiter).await.unwrap();
    }
}
