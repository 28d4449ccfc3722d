//! The ways people lock, against a real redis-server: by name through a `Locker`, around
//! a closure, with a jeopardy warning before a loss, and with a lease renewed by hand.
//!
//! Real time throughout (the server's clock is real): the tests wait for events and
//! assert their order, never durations, except where the server itself reports one.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{granted, within};
use redis::AsyncCommands;
use robit::driver::{
    Acquire, AcquireRequest, Inspection, LockName, LockState, OwnerToken, Renewal,
};
use robit::{Driver, Jeopardy, Locker, LossReason, Mutex, RefreshError, WithLockError};
use support::{LONG, RedisServer, driver};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(1);

async fn pttl(server: &RedisServer, key: &str) -> i64 {
    server.admin().await.pttl(key).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_locking_one_name_through_a_locker_take_turns_on_a_real_server() {
    let server = RedisServer::start();
    let locker = Locker::builder(driver(&server)).ttl(TTL).build().unwrap();
    // Each task records when it believed it held the lock.
    let beliefs = Arc::new(StdMutex::new(Vec::new()));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (locker, beliefs) = (locker.clone(), Arc::clone(&beliefs));
            tokio::spawn(async move {
                for _ in 0..3 {
                    let guard = locker.lock("job:1").await.unwrap();
                    let start = Instant::now();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    assert!(guard.is_held());
                    beliefs.lock().unwrap().push((start, Instant::now()));
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        within(LONG, "a task's three holds", task).await.unwrap();
    }
    let mut beliefs = beliefs.lock().unwrap().clone();
    beliefs.sort();
    assert_eq!(beliefs.len(), 12);
    for pair in beliefs.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two holders at once: {pair:?}");
    }
    let stats = locker.stats();
    assert_eq!((stats.acquired, stats.released, stats.lost), (12, 12, 0));
    // A name of its own is free all along.
    locker
        .try_lock("job:2")
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_puts_the_hold_in_jeopardy_then_with_lock_cancels_the_work() {
    let server = RedisServer::start();
    let changes = Arc::new(StdMutex::new(Vec::new()));
    let locker = Locker::builder(driver(&server))
        .ttl(TTL)
        .on_jeopardy({
            let changes = Arc::clone(&changes);
            move |event| changes.lock().unwrap().push((Instant::now(), event.change))
        })
        .build()
        .unwrap();
    let outcome = within(
        LONG,
        "with_lock to end",
        locker.with_lock("job:3", async |guard| {
            server.pause();
            guard.jeopardy().await;
            let warned = Instant::now();
            assert!(guard.is_held(), "jeopardy came after the loss");
            // Work on past the warning: the loss must cut it short.
            std::future::pending::<()>().await;
            warned
        }),
    )
    .await;
    let lost_at = Instant::now();
    server.resume();
    assert!(
        matches!(
            outcome,
            Err(WithLockError::Lost(LossReason::DeadlinePassed))
        ),
        "{outcome:?}"
    );
    let changes = changes.lock().unwrap().clone();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].1, Jeopardy::Entered);
    assert!(changes[0].0 < lost_at);
    let stats = locker.stats();
    assert_eq!((stats.jeopardies, stats.lost), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_by_hand_sets_the_keys_expiry_on_the_server() {
    let server = RedisServer::start();
    let mutex = Mutex::builder("by-hand", driver(&server))
        .ttl(TTL)
        .watchdog(false)
        .build()
        .unwrap();
    let key = "{robit}:lock:by-hand";
    let guard = mutex.lock().await.unwrap();
    let left = pttl(&server, key).await;
    assert!(left > 0 && left <= 1_000, "PTTL {left}");
    // The mutex believes less than the server keeps: validity from the send, less drift
    // and margin.
    let believed = guard.valid_for();
    assert!(believed > Duration::ZERO && believed < TTL, "{believed:?}");
    assert!(guard.deadline().is_some());

    let valid_for = guard.refresh(Duration::from_secs(30)).await.unwrap();
    assert!(valid_for > Duration::from_secs(29), "{valid_for:?}");
    let left = pttl(&server, key).await;
    assert!(left > 29_000 && left <= 30_000, "PTTL {left}");
    // Past the first TTL, the hold and the key are still there; no watchdog renewed.
    tokio::time::sleep(TTL + TTL / 2).await;
    assert!(guard.is_held());
    assert!(pttl(&server, key).await > 27_000);

    // Someone deletes the key: the next refresh finds the grant gone.
    let _: () = server.admin().await.del(key).await.unwrap();
    let refused = guard.refresh(TTL).await;
    assert!(
        matches!(refused, Err(RefreshError::Lost(LossReason::NotOwner))),
        "{refused:?}"
    );
    assert!(guard.lost_token().is_cancelled());
    assert_eq!(mutex.stats().renew_success, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_hold_ends_at_its_cap_and_frees_the_key_on_a_real_server() {
    let server = RedisServer::start();
    let max = Duration::from_millis(1_500);
    let mutex = Mutex::builder("capped", driver(&server))
        .ttl(TTL)
        .max_hold(max)
        .build()
        .unwrap();
    let rival = Mutex::builder("capped", driver(&server))
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    within(LONG, "the loss at the cap", guard.lost()).await;
    assert_eq!(guard.loss(), Some(LossReason::HoldCapReached));
    assert!(mutex.stats().renew_success >= 1, "renewed before the cap");
    let next = within(LONG, "the next holder", rival.lock()).await.unwrap();
    assert!(next.fence() > guard.fence());
    next.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_grant_in_its_lock_delay_refuses_everyone_its_owner_included() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let delay = Duration::from_secs(2);
    let request = |owner| {
        AcquireRequest::new(LockName::from("delayed"), OwnerToken::from_u128(owner), TTL)
            .with_lock_delay(delay)
    };
    let lease = granted(&driver, &request(1)).await;
    let left = pttl(&server, "{robit}:lock:delayed").await;
    assert!(
        left > 2_000 && left <= 3_000,
        "the key lives for TTL + delay: {left}"
    );
    // A renewal keeps the delay.
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
    let left = pttl(&server, "{robit}:lock:delayed").await;
    assert!(left > 2_000 && left <= 3_000, "PTTL {left}");

    tokio::time::sleep(TTL + TTL / 10).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Lost);
    match driver.acquire(&request(2)).await.unwrap() {
        Acquire::Held {
            expires_in: Some(left),
        } => assert!(left > Duration::ZERO && left <= delay, "{left:?}"),
        other => panic!("expected the lock-delay to refuse, got {other:?}"),
    }
    // A release by the owner ends the delay.
    lease.release().await.unwrap();
    granted(&driver, &request(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_lost_its_lease_keeps_the_lock_from_others_for_its_lock_delay() {
    let server = RedisServer::start();
    let delay = Duration::from_secs(2);
    let holder = Mutex::builder("delayed", driver(&server))
        .ttl(TTL)
        .lock_delay(delay)
        .build()
        .unwrap();
    let rival = Mutex::builder("delayed", driver(&server))
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    // The server stops answering (its clock runs on): the holder's renewals hang, and it
    // loses its lease at its deadline, before the server's grant ends.
    server.pause();
    within(LONG, "the loss", guard.lost()).await;
    server.resume();
    // Without the delay the grant would end within moments (and the mutex would
    // release it early): with it, the server refuses the lock for the delay more.
    match rival.try_lock().await {
        Err(robit::LockError::Contended {
            expires_in: Some(left),
        }) => assert!(left > TTL, "{left:?}"),
        other => panic!("expected the lock-delay to refuse, got {other:?}"),
    }
    let next = within(LONG, "the rival's grant", rival.lock())
        .await
        .unwrap();
    assert!(next.fence() > guard.fence());
    next.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspection_on_a_real_server_shows_holder_token_time_left_and_waiters() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let name = LockName::from("inspected");
    assert_eq!(driver.inspect(&name).await.unwrap(), Inspection::free());

    let holder = Mutex::builder("inspected", driver.clone())
        .ttl(Duration::from_secs(30))
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    let waiter = Mutex::builder("inspected", driver.clone()).build().unwrap();
    let waiting = tokio::spawn(async move { waiter.lock().await.map(|g| (g, waiter)) });
    let seen = within(LONG, "the waiter queued", async {
        loop {
            let seen = driver.inspect(&name).await.unwrap();
            if seen.waiters == 1 {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(seen.state, LockState::Held);
    assert_eq!(seen.fence, Some(guard.fence()));
    let left = seen.expires_in.unwrap();
    assert!(
        left > Duration::from_secs(25) && left <= Duration::from_secs(30),
        "{left:?}"
    );

    // Released by force, owner-checked: a stranger's id frees nothing.
    let owner = seen.holder.unwrap();
    let stranger = OwnerToken::from_u128(owner.as_u128() ^ 1);
    assert!(!driver.force_release(&name, stranger).await.unwrap());
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Held);
    assert!(driver.force_release(&name, owner).await.unwrap());
    // It went to the waiter, as a release would have handed it on.
    let (next, _waiter) = within(LONG, "the hand-off", waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(next.fence() > guard.fence());
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(
        (seen.state, seen.fence),
        (LockState::Held, Some(next.fence()))
    );
    // The old holder finds out at its next renewal.
    assert_eq!(
        guard.unlock().await.map_err(|error| error.to_string()),
        Ok(()),
        "an unlock of a grant already gone is not an error"
    );
    next.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspection_shows_the_token_a_grant_got_from_a_counter_ahead_of_the_clock() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let name = LockName::from("inspected");
    let _: () = server
        .admin()
        .await
        .set("{robit}:fence", "9000000000000000")
        .await
        .unwrap();
    let lease = granted(
        &driver,
        &AcquireRequest::new(name.clone(), OwnerToken::from_u128(5), TTL),
    )
    .await;
    assert_eq!(lease.fence().get(), 9_000_000_000_000_001);
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(seen.fence, Some(lease.fence()));
    assert_eq!(seen.holder, Some(OwnerToken::from_u128(5)));
    // A renewal keeps it.
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
    assert_eq!(
        driver.inspect(&name).await.unwrap().fence,
        Some(lease.fence())
    );
    // A value robit did not write shows as such.
    let _: () = server
        .admin()
        .await
        .set("{robit}:lock:other", "x")
        .await
        .unwrap();
    let foreign = driver.inspect(&LockName::from("other")).await.unwrap();
    assert_eq!(
        (foreign.state, foreign.expires_in),
        (LockState::Foreign, None)
    );
}
