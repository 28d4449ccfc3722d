//! The Redis driver's quarantine against a real redis-server: one warning per driver
//! however many waiters run into it, and the first use of a namespace — granted at once
//! on a fresh server, quarantined after a loss by every driver that knew the namespace.
//!
//! Real time throughout; the servers' restarts are real.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::within;
use robit::redis::{FirstUse, RedisDriver};
use robit::{LockError, Mutex, Wait};
use support::{FollowingConnector, RedisServer, ReplicatedPair, quarantined_driver as driver};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(1);
const QUARANTINE: Duration = Duration::from_secs(2);
const LONG: Duration = Duration::from_secs(30);

// On one thread: the captured log is this thread's.
#[tokio::test]
async fn a_quarantine_is_one_warning_per_driver_and_its_waiters_sleep_through_it() {
    let server = RedisServer::start();
    let captured = common::Captured::default();
    let _logs = captured.install();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(QUARANTINE)
        .first_use(FirstUse::Quarantine)
        .build()
        .unwrap();
    let mutex = || {
        Mutex::builder("quarantined", driver.clone())
            .ttl(TTL)
            .build()
            .unwrap()
    };
    // A fresh server: the namespace's counter is missing, as after a loss of state, and
    // this driver takes no missing namespace for a new one.
    match mutex().try_lock().await {
        Err(LockError::Quarantined { left }) => assert!(left <= QUARANTINE, "{left:?}"),
        other => panic!("expected a quarantine, got {other:?}"),
    }
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let mutex = mutex();
            tokio::spawn(async move { mutex.lock().await.unwrap().unlock().await.unwrap() })
        })
        .collect();
    for waiter in waiters {
        within(LONG, "a waiter", waiter).await.unwrap();
    }
    let warnings: Vec<String> = captured
        .lines()
        .into_iter()
        .filter(|line| line.contains("quarantine ends at"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
    // The end, as a UTC time: `… ends at 2026-11-24T21:50:02Z; …`.
    assert!(warnings[0].contains("Z; waiters sleep"), "{}", warnings[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_lock_on_a_fresh_server_is_granted_at_once() {
    let server = RedisServer::start();
    // A namespace of its own: this process has seen no other test's here, even one that
    // ran on a server since gone at the same address.
    let driver = RedisDriver::builder(&server.url())
        .namespace("first-use")
        .quarantine(QUARANTINE)
        .build()
        .unwrap();
    let mutex = Mutex::builder("first", driver).ttl(TTL).build().unwrap();
    let started = Instant::now();
    let guard = within(LONG, "the first lock", mutex.lock()).await.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "took {took:?}");
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_without_persistence_only_a_process_that_never_saw_the_namespace_creates_it()
 {
    let mut server = RedisServer::start();
    let seen = driver(&server, QUARANTINE);
    let mutex = |driver: &RedisDriver| {
        Mutex::builder("restarted", driver.clone())
            .ttl(TTL)
            .build()
            .unwrap()
    };
    mutex(&seen).lock().await.unwrap().unlock().await.unwrap();
    tokio::task::block_in_place(|| server.restart());
    // Its connection broke with the restart: the next call reconnects.
    let _ = seen.ping().await;
    let strict = RedisDriver::builder(&server.url())
        .quarantine(QUARANTINE)
        .first_use(FirstUse::Quarantine)
        .build()
        .unwrap();
    // The driver that saw the namespace, and a strict one, find it lost.
    for driver in [&seen, &strict] {
        match within(LONG, "a try", mutex(driver).try_lock()).await {
            Err(LockError::Quarantined { left }) => assert!(left <= QUARANTINE, "{left:?}"),
            other => panic!("expected a quarantine, got {other:?}"),
        }
    }
    // So does a driver built since: the quarantine runs (and the others of its process
    // saw the namespace).
    let new = driver(&server, QUARANTINE);
    assert!(matches!(
        mutex(&new).try_lock().await,
        Err(LockError::Quarantined { .. })
    ));
    // The trade-off of FirstUse::Create: another process, which never saw the namespace,
    // takes it for a new one. (This process's drivers know the server by its URL; one
    // that names it otherwise shares nothing with them, as another process would.)
    tokio::task::block_in_place(|| server.restart());
    let elsewhere = RedisDriver::builder(&format!("{}/0", server.url()))
        .quarantine(QUARANTINE)
        .build()
        .unwrap();
    mutex(&elsewhere)
        .try_lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

/// `command` with `args` on `server`, as an operator types it.
async fn operator<T: redis::FromRedisValue>(
    server: &RedisServer,
    command: &str,
    args: &[&str],
) -> T {
    redis::cmd(command)
        .arg(args)
        .query_async(&mut server.admin().await)
        .await
        .unwrap_or_else(|err| panic!("{command} {args:?}: {err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_set_by_hand_without_expiry_outlasts_a_detected_failover_until_lifted() {
    let mut pair = ReplicatedPair::start().await;
    let connector = FollowingConnector::new(&pair.primary.url());
    let driver = RedisDriver::with_connector(connector.clone())
        .quarantine(QUARANTINE)
        .build()
        .unwrap();
    let mutex = || {
        Mutex::builder("by-hand", driver.clone())
            .ttl(TTL)
            .build()
            .unwrap()
    };
    mutex().lock().await.unwrap().unlock().await.unwrap();
    // The operator quarantines the namespace until further notice (docs/operations.md,
    // without the PX), and marks the counter so that acquires look at it.
    let _: () = operator(&pair.primary, "SET", &["{robit}:quarantine", "1"]).await;
    let _: i64 = operator(&pair.primary, "APPEND", &["{robit}:fence", "q"]).await;
    pair.wait_in_sync().await;
    assert!(matches!(
        mutex().try_lock().await,
        Err(LockError::Contended { expires_in: None })
    ));
    pair.fail_over().await;
    connector.point_at(&pair.replica.url());
    let new = &pair.replica;
    // A waiter from now on, until the operator lifts the quarantine.
    let waiter = {
        let mutex = mutex();
        tokio::spawn(async move {
            let guard = mutex.lock_with(Wait::Timeout(LONG)).await.unwrap();
            let granted = Instant::now();
            guard.unlock().await.unwrap();
            granted
        })
    };
    // The first acquire on the new primary detects the failover (its connection broke with
    // the old primary: the driver opens a new one), and would quarantine the namespace for
    // QUARANTINE; past that, and more, the lock is still refused, the quarantine key
    // still without an expiry, and the counter names the new primary.
    let detected = Instant::now();
    let mut tries = 0;
    while detected.elapsed() < QUARANTINE * 2 {
        match mutex().try_lock().await {
            Err(LockError::Contended { expires_in: None }) => tries += 1,
            Err(LockError::Backend(err)) if err.is_transient() => {}
            other => panic!("the hand-set quarantine was not kept: {other:?}"),
        }
        let left: i64 = operator(new, "PTTL", &["{robit}:quarantine"]).await;
        assert_eq!(left, -1, "the hand-set quarantine was given an expiry");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(tries > 0, "no try reached the new primary");
    let counter: String = operator(new, "GET", &["{robit}:fence"]).await;
    let info: String = operator(new, "INFO", &["server"]).await;
    let run_id = info
        .lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .unwrap();
    assert!(
        counter.contains(&format!("q/{}", &run_id[..16])),
        "the failover was not detected: the counter {counter} does not name the new primary"
    );
    assert!(!waiter.is_finished(), "the waiter was granted the lock");
    // The operator lifts it: the waiter is granted.
    let lifted = Instant::now();
    let _: i64 = operator(new, "DEL", &["{robit}:quarantine"]).await;
    let granted = within(LONG, "the waiter", waiter).await.unwrap();
    assert!(granted >= lifted);
}
