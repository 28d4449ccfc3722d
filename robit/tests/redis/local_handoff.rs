//! A release or withdrawal that hands the lock to a waiter of the same driver wakes that
//! waiter directly, without the published notification: from the script's answer, or,
//! for the waiter a grant named as next in line, as soon as the grant's release is sent.
//!
//! The drivers here cannot subscribe, and their waiters poll once a minute: within the
//! tests' limits, only the direct wake can move a waiter. Real time, real server; the
//! tests wait for events, never assert durations.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::{granted, held, within};
use redis::aio::{ConnectionLike, PubSub};
use redis::{AsyncCommands, Cmd, ErrorKind, Pipeline, RedisFuture, RedisResult, Value};
use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken, Waiter};
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
    granted(&driver, &waiting).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiter_next_in_line_is_woken_as_soon_as_the_release_is_sent() {
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
    let (ahead, next) = (request(2, Some(0xa)), request(3, Some(0xb)));
    held(&driver, &ahead).await;
    held(&driver, &next).await;
    first.release().await.unwrap();
    // `ahead` claims its reservation; the grant names `next` as next in line.
    let second = granted(&driver, &ahead).await;
    let woken = driver.watch_release(&next);
    // No answer comes back while the gate is shut: only the early wake can wake `next`.
    gate.send_replace(false);
    let releasing = tokio::spawn(async move { second.release().await });
    within(LONG, "the early wake", woken).await;
    assert!(!releasing.is_finished(), "the release was answered");
    // The claim goes out while the release's answer is still held back: it travels
    // behind the release, and is granted.
    let claiming = {
        let driver = driver.clone();
        tokio::spawn(async move { driver.acquire(&next).await })
    };
    let owner = format!("{:032x}", 3);
    within(LONG, "the claim to be granted on the server", async {
        loop {
            let holder: Option<String> = server
                .admin()
                .await
                .get(b"{robit}:lock:local")
                .await
                .unwrap();
            // `<owner>:<until>:q`: the grant, marked as having had waiters.
            if holder.is_some_and(|value| value.starts_with(&format!("{owner}:"))) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(!claiming.is_finished(), "the claim was answered");
    gate.send_replace(true);
    within(LONG, "the release", releasing)
        .await
        .unwrap()
        .unwrap();
    match within(LONG, "the claim", claiming).await.unwrap().unwrap() {
        Acquire::Granted(_) => {}
        other => panic!("the claim behind the release was refused: {other:?}"),
    }
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
    // Reserved for the first waiter, which gives up instead of claiming it.
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
