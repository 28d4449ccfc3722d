//! The Redis driver against a real redis-server: the driver contract, fencing tokens,
//! key hygiene, any byte string as a name, every script in one cluster slot, timeouts
//! too long to represent, the renewed TTL, and many mutexes over one driver — one
//! connection, one subscription.
//!
//! The fair queue — hand-off, waiters, reservations, the subscription that wakes them —
//! is in `redis/fair_queue.rs`.
//!
//! These run in real time (the server's clock is real). They wait for events, never
//! assert durations.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{granted, held, within};
use redis::AsyncCommands;
use robit::driver::{Acquire, Renewal};
use robit::redis::RedisDriver;
use robit::{Driver, FenceGate, LockError, Mutex};
use support::{LONG, RedisServer, TTL, driver, request};

use crate::slow_replies::SlowReplies;

async fn pttl(server: &RedisServer, key: &[u8]) -> i64 {
    server.admin().await.pttl(key).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_contract_holds_on_a_real_server() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let key = b"{robit}:lock:contract";

    // A free name is granted, for the TTL.
    let first = granted(&driver, &request("contract", 1)).await;
    let left = pttl(&server, key).await;
    assert!(left > 0 && left <= 2000, "PTTL {left}");
    // A held one is refused, with its expiry.
    let left = held(&driver, &request("contract", 2)).await;
    assert!(left.is_some_and(|left| left <= TTL), "{left:?}");
    // A renew extends the grant by the TTL.
    server
        .admin()
        .await
        .pexpire::<_, ()>(key, 500)
        .await
        .unwrap();
    assert_eq!(first.renew(TTL).await.unwrap(), Renewal::Renewed);
    assert!(pttl(&server, key).await > 1000);

    // Once the grant has expired, renew answers lost, even though nobody took it.
    server.admin().await.del::<_, ()>(key).await.unwrap();
    assert_eq!(first.renew(TTL).await.unwrap(), Renewal::Lost);
    assert_eq!(
        pttl(&server, key).await,
        -2,
        "a lost renew recreated the key"
    );

    // A takeover: the stale lease can neither renew nor release the new grant.
    let second = granted(&driver, &request("contract", 2)).await;
    assert!(second.fence() > first.fence());
    assert_eq!(first.renew(TTL).await.unwrap(), Renewal::Lost);
    first.release().await.unwrap();
    assert!(
        pttl(&server, key).await > 0,
        "a stale release deleted the new grant"
    );

    // Release frees the name at once, and is idempotent.
    second.release().await.unwrap();
    second.release().await.unwrap();
    let third = granted(&driver, &request("contract", 3)).await;
    assert!(third.fence() > second.fence());
    third.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_increase_across_names_expiries_and_releases() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let mut last = BTreeMap::new();
    for round in 0..40_u128 {
        let name = format!("fenced-{}", round % 3);
        let lease = granted(&driver, &request(&name, round)).await;
        if let Some(previous) = last.insert(name.clone(), lease.fence()) {
            assert!(
                previous < lease.fence(),
                "{name}: {previous:?} then {:?}",
                lease.fence()
            );
        }
        if round % 2 == 0 {
            lease.release().await.unwrap();
        } else {
            let key = format!("{{robit}}:lock:{name}");
            server.admin().await.del::<_, ()>(key).await.unwrap(); // as if expired
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquires_of_one_name_grant_exactly_one() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let attempts: Vec<_> = (0..64_u128)
        .map(|who| {
            let driver = driver.clone();
            tokio::spawn(async move { driver.acquire(&request("race", who)).await.unwrap() })
        })
        .collect();
    let mut grants = 0;
    for attempt in attempts {
        if let Acquire::Granted(_) = attempt.await.unwrap() {
            grants += 1;
        }
    }
    assert_eq!(grants, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_names_locked_and_released_leave_only_the_fencing_counter() {
    let server = RedisServer::start();
    let driver = driver(&server);
    for i in 0..10_000 {
        let mutex = Mutex::builder(format!("job/{i}"), driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    let mut admin = server.admin().await;
    let keys: Vec<String> = admin.keys("*").await.unwrap();
    assert_eq!(keys, vec!["{robit}:fence".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_mutexes_over_one_driver_never_overlap() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let names = 10;
    let inside: Arc<Vec<AtomicUsize>> = Arc::new((0..names).map(|_| AtomicUsize::new(0)).collect());
    let gates: Arc<Vec<FenceGate>> = Arc::new((0..names).map(|_| FenceGate::new()).collect());
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let (driver, inside, gates) = (driver.clone(), Arc::clone(&inside), Arc::clone(&gates));
            tokio::spawn(async move {
                let n = i % names;
                let mutex = Mutex::builder(format!("crowd-{n}"), driver)
                    .ttl(TTL)
                    .build()
                    .unwrap();
                let guard = mutex.lock().await.unwrap();
                assert_eq!(
                    inside[n].fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders of crowd-{n}"
                );
                gates[n].check(guard.fence()).unwrap();
                tokio::task::yield_now().await;
                inside[n].fetch_sub(1, Ordering::SeqCst);
                guard.unlock().await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        within(Duration::from_secs(120), "a crowd member", task)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_byte_string_is_a_lock_name() {
    let server = RedisServer::start();
    let driver = driver(&server);
    for name in [
        &b"\x00\xff{braces}\r\n"[..],
        "ünïcødé".as_bytes(),
        &[b'x'; 4096][..],
    ] {
        let mutex = Mutex::builder(name, driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        let other = Mutex::builder(name, driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        let guard = mutex.lock().await.unwrap();
        assert!(matches!(
            other.try_lock().await,
            Err(LockError::Contended { .. })
        ));
        guard.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_too_long_to_represent_never_panic_and_commands_still_run() {
    let server = RedisServer::start();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(Duration::ZERO)
        .command_timeout(Duration::MAX)
        .connect_timeout(Duration::MAX)
        .build()
        .unwrap();
    driver.ping().await.unwrap();
    let mutex = Mutex::builder("endless", driver).ttl(TTL).build().unwrap();
    let guard = mutex.lock().await.unwrap();
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_stays_in_one_cluster_slot() {
    // A one-node cluster owning all slots refuses, with CROSSSLOT, any script whose keys
    // hash to different slots: running the driver against it checks the hash tags.
    let server = RedisServer::start_cluster_node();
    let mut admin = server.admin().await;
    let _: () = redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query_async(&mut admin)
        .await
        .unwrap();
    let driver = driver(&server);
    for name in ["plain", "{braces}", "a{b}c"] {
        let holder = Mutex::builder(name, driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        let waiter = Mutex::builder(name, driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        let guard = holder.lock().await.unwrap();
        // Queueing and the hand-off touch the queue key too.
        let waiting = common::spawn_waiter(waiter);
        tokio::time::sleep(Duration::from_millis(50)).await;
        guard.unlock().await.unwrap();
        let (fence, waiter) = within(LONG, "the hand-off", waiting).await.unwrap();
        fence.unwrap();
        waiter.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renew_sets_exactly_the_requested_ttl() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let lease = granted(&driver, &request("exact", 1)).await;
    assert_eq!(
        lease.renew(Duration::from_millis(7_500)).await.unwrap(),
        Renewal::Renewed
    );
    let left = pttl(&server, b"{robit}:lock:exact").await;
    assert!(left > 7_000 && left <= 7_500, "PTTL {left}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_follow_the_server_clock_even_if_the_counter_goes_back() {
    // A restart from an older snapshot brings back an old counter; tokens must still
    // increase.
    let server = RedisServer::start();
    let driver = driver(&server);
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut server.admin().await)
        .await
        .unwrap();
    let first = granted(&driver, &request("snapshot", 1)).await;
    assert!(
        first.fence().get() >= seconds * 1_000_000 + micros,
        "token {:?} is below the server clock",
        first.fence()
    );
    first.release().await.unwrap();
    let _: () = server.admin().await.set("{robit}:fence", 5).await.unwrap();
    let second = granted(&driver, &request("snapshot", 2)).await;
    assert!(
        second.fence() > first.fence(),
        "{:?} then {:?}",
        first.fence(),
        second.fence()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_mutexes_share_one_connection_and_one_subscription_which_ends_with_the_driver() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let driver = driver.clone();
            tokio::spawn(async move {
                let mutex = Mutex::builder(format!("shared-{}", i % 3), driver)
                    .ttl(TTL)
                    .build()
                    .unwrap();
                mutex.lock().await.unwrap().unlock().await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        within(LONG, "a contender", task).await.unwrap();
    }
    let mut admin = server.admin().await;
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut admin)
        .await
        .unwrap();
    // The admin connection, the driver's command connection, its subscription.
    assert_eq!(clients.lines().count(), 3, "{clients}");
    assert_eq!(
        clients
            .lines()
            .filter(|line| line.contains("sub=1"))
            .count(),
        1,
        "{clients}"
    );
    drop(driver);
    within(LONG, "the subscription to end with the driver", async {
        while server.subscribers("robit:handoff").await > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Zeroes the server's command counts (`CONFIG RESETSTAT`).
pub(crate) async fn reset_stats(admin: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(admin)
        .await
        .unwrap();
}

/// Every command the server ran since `CONFIG RESETSTAT`, by name, the scripts' own calls
/// included, less that `CONFIG RESETSTAT` and the `INFO` that reads them.
pub(crate) async fn commands_run(
    admin: &mut redis::aio::MultiplexedConnection,
) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await
        .unwrap();
    let mut counts = BTreeMap::new();
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|line| line.split_once(':'))
        else {
            continue;
        };
        let calls = stats
            .split(',')
            .find_map(|stat| stat.strip_prefix("calls="))
            .and_then(|calls| calls.parse::<u64>().ok())
            .unwrap();
        if name != "info" && name != "config|resetstat" {
            counts.insert(name.to_owned(), calls);
        }
    }
    counts
}

/// How many `INFO` calls the scripts made since `CONFIG RESETSTAT`: the server's identity
/// read for failover detection. (The `INFO` that reads this is not counted in its own
/// answer.)
pub(crate) async fn identity_reads(admin: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_info:"))
        .and_then(|stats| {
            stats
                .split(',')
                .find_map(|stat| stat.strip_prefix("calls="))
        })
        .map_or(0, |calls| calls.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_lock_and_unlock_run_six_commands_on_the_server() {
    let server = RedisServer::start();
    let mutex = Mutex::builder("counted", driver(&server))
        .ttl(TTL)
        .build()
        .unwrap();
    // The first cycle loads the scripts, creates the namespace and starts the hand-off
    // subscription, whose SUBSCRIBE a busy machine can send after the first unlock.
    mutex.lock().await.unwrap().unlock().await.unwrap();
    crate::fair_queue::subscribed(&server).await;
    let mut admin = server.admin().await;
    reset_stats(&mut admin).await;
    for _ in 0..10 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    let expected: BTreeMap<String, u64> =
        [("evalsha", 20), ("time", 10), ("set", 20), ("getdel", 10)]
            .into_iter()
            .map(|(name, calls)| (name.to_owned(), calls))
            .collect();
    assert_eq!(commands_run(&mut admin).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_after_its_ttl_leaves_someone_else_s_value_and_its_expiry_alone() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let short = robit::driver::AcquireRequest::new(
        robit::driver::LockName::from("expired"),
        robit::driver::OwnerToken::from_u128(1),
        Duration::from_millis(200),
    );
    let lease = granted(&driver, &short).await;
    let key = b"{robit}:lock:expired";
    let mut admin = server.admin().await;
    let _: () = admin.set_ex(key, "someone-else", 60).await.unwrap();
    // Past the grant's TTL (real time: the server's clock is real), the key can hold
    // someone else's value, so the release reads it instead of taking it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    lease.release().await.unwrap();
    let value: String = admin.get(key).await.unwrap();
    assert_eq!(value, "someone-else");
    let left = pttl(&server, key).await;
    assert!(left > 50_000, "the value's expiry changed: PTTL {left}");
}

/// A driver reaching `server` through a proxy that can hold its replies back, warmed up
/// (connected, scripts loaded) while the replies still come at once.
async fn behind_a_slow_proxy(server: &RedisServer) -> (SlowReplies, RedisDriver) {
    let proxy = SlowReplies::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .build()
        .unwrap();
    granted(&driver, &request("warm", 1))
        .await
        .release()
        .await
        .unwrap();
    (proxy, driver)
}

/// Releases `lease` at `at`, after the key of lock `name` was overwritten with someone
/// else's value (that expires in a minute), and says whether the release left that value
/// and its expiry alone.
async fn release_leaves_a_foreign_value(
    server: &RedisServer,
    lease: Arc<dyn robit::driver::Lease>,
    name: &str,
    at: tokio::time::Instant,
) {
    let key = format!("{{robit}}:lock:{name}");
    let mut admin = server.admin().await;
    let _: () = admin.set_ex(&key, "someone-else", 60).await.unwrap();
    tokio::time::sleep_until(at).await;
    lease.release().await.unwrap();
    let value: String = admin.get(&key).await.unwrap();
    assert_eq!(value, "someone-else");
    let left = pttl(server, key.as_bytes()).await;
    assert!(
        left > 50_000,
        "the release took the value as its own grant's and put it back without its \
         expiry (PTTL {left}): it counted its grant's TTL from the answer, not the send"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_answered_late_is_the_lease_s_own_only_for_the_ttl_from_its_send() {
    // The acquire's answer comes 800 ms after the server granted. The server keeps the
    // grant for the TTL from when it got the acquire, so past the TTL from the send
    // the key may hold someone else's value: the release must read before it deletes.
    // Counted from the answer, the lease would take the key as its own 800 ms too long.
    let server = RedisServer::start();
    let (proxy, driver) = behind_a_slow_proxy(&server).await;
    let late = Duration::from_millis(800);
    proxy.set_reply_delay(late);
    let lease = granted(&driver, &request("late", 2)).await;
    // The acquire went out at least `late` before its answer came.
    let answered = tokio::time::Instant::now();
    let at = answered + TTL - late + Duration::from_millis(100);
    release_leaves_a_foreign_value(&server, lease, "late", at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_answered_late_makes_the_grant_the_lease_s_own_only_for_the_ttl_from_its_send() {
    let server = RedisServer::start();
    let (proxy, driver) = behind_a_slow_proxy(&server).await;
    let lease = granted(&driver, &request("late", 2)).await;
    let late = Duration::from_millis(800);
    proxy.set_reply_delay(late);
    assert!(matches!(lease.renew(TTL).await.unwrap(), Renewal::Renewed));
    // The renewal went out at least `late` before its answer came (and the acquire
    // before that).
    let answered = tokio::time::Instant::now();
    let at = answered + TTL - late + Duration::from_millis(100);
    release_leaves_a_foreign_value(&server, lease, "late", at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_or_lock_delay_of_a_year_is_granted_and_a_millisecond_more_refused() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let year = robit::defaults::MAX_TTL;
    let more = year + Duration::from_millis(1);
    for (who, (ttl, lock_delay)) in [(year, Duration::ZERO), (TTL, year)]
        .into_iter()
        .enumerate()
    {
        let name = format!("year/{who}");
        let mut request = request(&name, 1).with_lock_delay(lock_delay);
        request.ttl = ttl;
        granted(&driver, &request).await.release().await.unwrap();
    }
    for (ttl, lock_delay) in [(more, Duration::ZERO), (TTL, more), (more, more)] {
        let mut request = request("longer", 1).with_lock_delay(lock_delay);
        request.ttl = ttl;
        match driver.acquire(&request).await {
            Err(err) => {
                assert!(!err.is_transient(), "{err}");
                assert!(err.to_string().contains("longer than a year"), "{err}");
            }
            Ok(answer) => panic!("TTL {ttl:?}, lock-delay {lock_delay:?}: {answer:?}"),
        }
    }
    // Nothing of the refused requests reached the server.
    let keys: Vec<String> = server.admin().await.keys("{robit}:lock:*").await.unwrap();
    assert_eq!(keys, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grant_that_creates_a_namespace_on_one_server_creates_no_cluster_buckets() {
    let server = RedisServer::start();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(Duration::from_secs(1))
        .build()
        .unwrap();
    let lease = granted(&driver, &request("first", 1)).await;
    lease.release().await.unwrap();
    // No counter per cluster bucket: on one server, one counter serves every name.
    let mut admin = server.admin().await;
    let keys: Vec<String> = admin.keys("*").await.unwrap();
    assert_eq!(keys, vec!["{robit}:fence".to_owned()]);
    // Nor a call to create one: the grant and the release are the only scripts run.
    let commands = commands_run(&mut admin).await;
    let scripts: u64 = ["eval", "evalsha"]
        .iter()
        .filter_map(|name| commands.get(*name))
        .sum();
    assert_eq!(scripts, 2, "{commands:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_outlasts_the_ttl_and_lock_delay_of_the_grants_it_protects() {
    let server = RedisServer::start();
    let quarantine = Duration::from_secs(1);
    let driver = RedisDriver::builder(&server.url())
        .quarantine(quarantine)
        .first_use(robit::redis::FirstUse::Quarantine)
        .build()
        .unwrap();
    // The quarantine begins with this acquire, which finds the namespace missing: it
    // must outlast any grant from before the loss, which had this TTL and lock-delay.
    let (ttl, lock_delay) = (Duration::from_secs(6), Duration::from_secs(4));
    let mut request = request("protected", 1).with_lock_delay(lock_delay);
    request.ttl = ttl;
    match driver.acquire(&request).await.unwrap() {
        Acquire::Quarantined { left } => {
            assert!(left > ttl + lock_delay - Duration::from_secs(1), "{left:?}");
            assert!(left <= ttl + lock_delay, "{left:?}");
        }
        other => panic!("expected a quarantine, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_soon_after_a_renewal_deletes_at_once_though_its_lock_delay_outlasts_its_ttl() {
    let server = RedisServer::start();
    let driver = driver(&server);
    // The key lives for the TTL and the lock-delay after each renewal's send: until
    // then, nobody else's grant can be there, and the release need not read first.
    let request = request("renewed", 1).with_lock_delay(Duration::from_secs(5));
    let lease = granted(&driver, &request).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
    let mut admin = server.admin().await;
    reset_stats(&mut admin).await;
    lease.release().await.unwrap();
    let commands = commands_run(&mut admin).await;
    assert_eq!(commands.get("getdel"), Some(&1), "{commands:?}");
    assert_eq!(commands.get("get"), None, "{commands:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_call_that_fails_is_sent_once_and_loads_nothing() {
    let server = RedisServer::start();
    let driver = driver(&server);
    // Loads the scripts.
    granted(&driver, &request("loaded", 1))
        .await
        .release()
        .await
        .unwrap();
    let mut admin = server.admin().await;
    // A lock key of another type: the acquire script fails on the server.
    let _: () = admin.rpush("{robit}:lock:listed", "x").await.unwrap();
    reset_stats(&mut admin).await;
    let err = driver.acquire(&request("listed", 2)).await.unwrap_err();
    assert!(!err.is_transient(), "{err}");
    // Only a missing script (NOSCRIPT) is loaded and sent again.
    let commands = commands_run(&mut admin).await;
    assert_eq!(commands.get("evalsha"), Some(&1), "{commands:?}");
    assert_eq!(commands.get("script|load"), None, "{commands:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_connection_loads_every_script_at_once_and_meets_no_noscript() {
    let server = RedisServer::start();
    let driver = driver(&server);
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    let commands = commands_run(&mut server.admin().await).await;
    // Acquire, renew, release, withdraw and inspect, and the batch scripts of the first
    // three, in the connection's first round trip; then each call runs at its first
    // sending.
    assert_eq!(commands.get("script|load"), Some(&8), "{commands:?}");
    assert_eq!(commands.get("evalsha"), Some(&2), "{commands:?}");
}
