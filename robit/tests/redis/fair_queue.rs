//! The Redis driver's fair queue against a real redis-server: a release grants the lock
//! to the longest-waiting waiter and wakes it, newcomers cannot barge in, a withdrawal
//! passes the turn on and never touches a live holder's grant, a grant nobody takes up
//! lapses to the next waiter after its TTL, a reservation (after a holder's expiry) is
//! sized by the waiter's poll interval, and a killed hand-off subscription is
//! re-established.
//!
//! These run in real time (the server's clock is real). They wait for events, never
//! assert durations.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::sync::Arc;
use std::time::Duration;

use common::{granted, handed, held, within};
use redis::AsyncCommands;
use robit::driver::{Acquire, AcquireRequest, Renewal, Waiter};
use robit::redis::RedisDriver;
use robit::{Driver, Mutex};
use support::{LONG, RedisServer, TTL, driver, request};

use crate::driver::{identity_reads, reset_stats};

/// Waits until the driver's hand-off subscription is live on the server: a release
/// published before it would be lost (the driver then relies on polling, which these
/// tests do not do).
pub(super) async fn subscribed(server: &RedisServer) {
    within(LONG, "the hand-off subscription", async {
        while server.subscribers("robit:handoff").await == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

fn queued(name: &str, id: u128, poll: Duration) -> AcquireRequest {
    request(name, 100 + id).with_waiter(Waiter::new(id, poll))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_that_queues_reads_no_server_identity_and_a_grant_reads_it_once() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("identity", 1)).await;
    let mut admin = server.admin().await;
    reset_stats(&mut admin).await;
    // Failover detection compares the server's identity with the counter's only to
    // grant: attempts that find the lock held queue without reading it.
    for id in [7, 8] {
        assert!(matches!(
            driver.acquire(&queued("identity", id, LONG)).await.unwrap(),
            Acquire::Held { .. }
        ));
    }
    assert_eq!(identity_reads(&mut admin).await, 0);
    // The release grants the lock to waiter 7, fenced as an acquire's grant is.
    reset_stats(&mut admin).await;
    holder.release().await.unwrap();
    assert_eq!(identity_reads(&mut admin).await, 1);
    let lease = handed(&driver, &queued("identity", 7, LONG)).await;
    // That grant runs out: its key lives on for waiter 8, whose own attempt then takes
    // the ended grant over (acquire_rest.lua's `take`), reading the identity then, and
    // only then.
    assert_eq!(
        lease.renew(Duration::from_millis(50)).await.unwrap(),
        Renewal::Renewed
    );
    within(LONG, "the ended grant taken over", async {
        loop {
            reset_stats(&mut admin).await;
            match driver.acquire(&queued("identity", 8, LONG)).await.unwrap() {
                Acquire::Held { .. } => assert_eq!(identity_reads(&mut admin).await, 0),
                Acquire::Granted(_) => {
                    assert_eq!(identity_reads(&mut admin).await, 1);
                    return;
                }
                other => panic!("expected held, then granted; got {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_the_lock_to_the_longest_waiting_waiter_and_wakes_it() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("queue", 1)).await;
    let waiter = |id| request("queue", 100 + id).with_waiter(Waiter::new(id, LONG));
    // Two waiters queue, in order.
    for id in [7, 8] {
        assert!(matches!(
            driver.acquire(&waiter(id)).await.unwrap(),
            Acquire::Held { .. }
        ));
    }
    let first_in_line = driver.watch_release(&waiter(7));
    let second_in_line = driver.watch_release(&waiter(8));
    subscribed(&server).await;
    // A newcomer (a single try) cannot barge in after the release.
    holder.release().await.unwrap();
    within(LONG, "the hand-off notification", first_in_line).await;
    assert!(matches!(
        driver.acquire(&request("queue", 2)).await.unwrap(),
        Acquire::Held { .. }
    ));
    assert!(matches!(
        driver.acquire(&waiter(8)).await.unwrap(),
        Acquire::Held { .. }
    ));
    let lease = handed(&driver, &waiter(7)).await;
    assert!(lease.fence() > holder.fence());
    lease.release().await.unwrap();
    within(LONG, "the second hand-off", second_in_line).await;
    handed(&driver, &waiter(8)).await.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_withdraws_passes_its_turn_on() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("withdraw", 1)).await;
    let waiter = |id| request("withdraw", 100 + id).with_waiter(Waiter::new(id, LONG));
    for id in [7, 8] {
        assert!(matches!(
            driver.acquire(&waiter(id)).await.unwrap(),
            Acquire::Held { .. }
        ));
    }
    let next = driver.watch_release(&waiter(8));
    subscribed(&server).await;
    holder.release().await.unwrap(); // granted to 7
    driver.withdraw(&waiter(7)).await.unwrap(); // 7 gives up: reserved for 8
    within(LONG, "the passed-on hand-off", next).await;
    granted(&driver, &waiter(8)).await.release().await.unwrap();
    let keys: Vec<String> = server.admin().await.keys("*").await.unwrap();
    assert_eq!(keys, vec!["{robit}:fence".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contending_mutexes_take_turns_instead_of_the_releaser_barging_back() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..4)
        .map(|task| {
            let (driver, order) = (driver.clone(), Arc::clone(&order));
            tokio::spawn(async move {
                let mutex = Mutex::builder("turns", driver).ttl(TTL).build().unwrap();
                for _ in 0..15 {
                    let guard = mutex.lock().await.unwrap();
                    order.lock().unwrap().push(task);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        within(LONG, "a contender", task).await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(order.len(), 60);
    // Once all four are queued, the lock rotates: nobody holds it twice in a row.
    let repeats = order.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(
        repeats <= 3,
        "the releaser barged back {repeats} times: {order:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_never_touches_a_live_holders_grant() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("withdraw-safe", 1)).await;
    let waiter = queued("withdraw-safe", 7, LONG);
    held(&driver, &waiter).await;
    driver.withdraw(&waiter).await.unwrap();
    assert_eq!(holder.renew(TTL).await.unwrap(), Renewal::Renewed);
    let mut admin = server.admin().await;
    let queue_len: i64 = admin.llen("{robit}:queue:withdraw-safe").await.unwrap();
    assert_eq!(queue_len, 0, "the withdrawn waiter is still queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_to_a_waiter_that_never_takes_it_up_ends_with_its_ttl_then_goes_to_the_next() {
    let server = RedisServer::start();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(Duration::ZERO)
        .handoff_window(Duration::from_millis(100))
        .build()
        .unwrap();
    let holder = granted(&driver, &request("dead-waiter", 1)).await;
    let poll = Duration::from_millis(50);
    let ttl = Duration::from_millis(300);
    let mut dead = queued("dead-waiter", 7, poll);
    dead.ttl = ttl;
    let alive = queued("dead-waiter", 8, poll);
    for waiter in [&dead, &alive] {
        held(&driver, waiter).await;
    }
    holder.release().await.unwrap(); // granted to 7, which is gone
    let value: String = server
        .admin()
        .await
        .get("{robit}:lock:dead-waiter")
        .await
        .unwrap();
    assert!(value.starts_with(&format!("{:032x}", 7)), "{value}");
    assert!(
        value.contains(":300@"),
        "not for the dead waiter's own TTL: {value}"
    );
    // Its grant ends with its TTL; the next poll of the waiter behind it is reserved the
    // lock, and claims it.
    let lease = within(LONG, "the next waiter's grant", async {
        loop {
            if let Acquire::Granted(lease) = driver.acquire(&alive).await.unwrap() {
                return lease;
            }
            tokio::time::sleep(poll).await;
        }
    })
    .await;
    assert!(lease.fence() > holder.fence());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_lasts_twice_the_waiters_poll_interval_when_that_is_longer() {
    let server = RedisServer::start();
    let driver = driver(&server); // 500 ms hand-off window
    let mut expiring = request("slow-poller", 1);
    expiring.ttl = Duration::from_millis(100);
    let _expiring = granted(&driver, &expiring).await;
    let slow = queued("slow-poller", 7, Duration::from_secs(3));
    let behind = queued("slow-poller", 8, Duration::from_millis(50));
    for waiter in [&slow, &behind] {
        held(&driver, waiter).await;
    }
    // Once the holder has expired, the next attempt reserves the lock for the waiter
    // first in line.
    within(LONG, "the holder's expiry", async {
        loop {
            let value: String = server
                .admin()
                .await
                .get("{robit}:lock:slow-poller")
                .await
                .unwrap();
            if value.starts_with('W') {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            driver.acquire(&behind).await.unwrap();
        }
    })
    .await;
    let pttl: i64 = server
        .admin()
        .await
        .pttl("{robit}:lock:slow-poller")
        .await
        .unwrap();
    assert!(pttl > 5_000 && pttl <= 6_000, "PTTL {pttl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_a_holder_expires_the_longest_waiting_waiter_goes_first() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let _expired = granted(&driver, &request("expired", 1)).await;
    let waiter = queued("expired", 7, LONG);
    held(&driver, &waiter).await;
    // As if expired: the grant's end is long past, and the key lives on for the queue.
    let mut admin = server.admin().await;
    let value: String = admin.get("{robit}:lock:expired").await.unwrap();
    // `<owner>:<s>:<us>:<ms>:q`: made in 1970's first second instead.
    let owner = value.split(':').next().unwrap();
    assert!(value.ends_with(":q"), "{value}");
    let _: () = redis::cmd("SET")
        .arg("{robit}:lock:expired")
        .arg(format!("{owner}:1:0:1:q"))
        .arg("KEEPTTL")
        .query_async(&mut admin)
        .await
        .unwrap();
    // A newcomer (a single try, or another waiter) finds the lock free but must not
    // barge in ahead of the queue.
    assert!(matches!(
        driver.acquire(&request("expired", 2)).await.unwrap(),
        Acquire::Held { .. }
    ));
    assert!(matches!(
        driver.acquire(&queued("expired", 8, LONG)).await.unwrap(),
        Acquire::Held { .. }
    ));
    granted(&driver, &waiter).await.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_subscription_is_reestablished_and_delivers_again() {
    // The waiter's poll interval and the holder's TTL are a minute: within the test's
    // limits only a notification can wake the waiter.
    let server = RedisServer::start();
    let driver = driver(&server);
    let slow = robit::Backoff::new(Duration::from_secs(60), Duration::from_secs(60));
    let holder = Mutex::builder("resubscribe", driver.clone())
        .ttl(Duration::from_secs(60))
        .build()
        .unwrap();
    let waiter = Mutex::builder("resubscribe", driver.clone())
        .ttl(Duration::from_secs(60))
        .backoff(slow)
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    let waiting = common::spawn_waiter(waiter);
    subscribed(&server).await;
    server.kill_clients("pubsub").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    subscribed(&server).await;
    guard.unlock().await.unwrap();
    let (fence, _waiter) = within(Duration::from_secs(20), "the notified hand-off", waiting)
        .await
        .unwrap();
    fence.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_release_of_a_waiter_s_earlier_grant_never_frees_its_later_one() {
    let server = RedisServer::start();
    let driver = driver(&server);
    // Each attempt of one `lock()`: one waiter id, a fresh owner.
    let waiter = |owner| {
        let mut request = queued("twice", 7, LONG);
        request.owner = robit::driver::OwnerToken::from_u128(owner);
        request
    };
    // The waiter is handed the lock, lets it go, and is handed it again in the same
    // wait: two grants to one waiter id.
    let mut earlier = None;
    for round in 0..2u128 {
        let holder = granted(&driver, &request("twice", 1 + round)).await;
        held(&driver, &waiter(10 + round)).await;
        holder.release().await.unwrap();
        let lease = handed(&driver, &waiter(20 + round)).await;
        if let Some(earlier) = earlier.replace(Arc::clone(&lease)) {
            // The earlier grant's release, arriving late, leaves the later one alone.
            earlier.release().await.unwrap();
            assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
            held(&driver, &request("twice", 99)).await;
        } else {
            lease.release().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_frees_a_grant_a_release_made_a_waiter_by_the_holder_inspect_names() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let holder = granted(&driver, &request("stuck", 1)).await;
    let waiter = queued("stuck", 7, LONG);
    held(&driver, &waiter).await;
    holder.release().await.unwrap();
    let lease = handed(&driver, &waiter).await;
    let seen = driver.inspect(&"stuck".into()).await.unwrap();
    assert_eq!(seen.fence, Some(lease.fence()));
    let named = seen.holder.unwrap();
    assert_eq!(named, robit::driver::OwnerToken::from_u128(7));
    let stranger = robit::driver::OwnerToken::from_u128(8);
    assert!(
        !driver
            .force_release(&"stuck".into(), stranger)
            .await
            .unwrap()
    );
    assert!(driver.force_release(&"stuck".into(), named).await.unwrap());
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_handed_to_a_waiter_takes_a_token_above_a_counter_far_ahead_of_the_clock() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let first = granted(&driver, &request("ahead", 1)).await;
    first.release().await.unwrap();
    // The counter is pushed far past the clock's microseconds (as after a clock that ran
    // ahead), keeping the identity of the server that wrote it.
    let mut admin = server.admin().await;
    let counter: String = admin.get("{robit}:fence").await.unwrap();
    let identity = &counter[counter.find('/').unwrap_or(counter.len())..];
    let far = first.fence().get() * 2;
    admin
        .set::<_, _, ()>("{robit}:fence", format!("{far}{identity}"))
        .await
        .unwrap();
    let holder = granted(&driver, &request("ahead", 2)).await;
    assert_eq!(holder.fence().get(), far + 1);
    let waiter = queued("ahead", 7, LONG);
    held(&driver, &waiter).await;
    holder.release().await.unwrap();
    let lease = handed(&driver, &waiter).await;
    assert_eq!(lease.fence().get(), far + 2);
}
