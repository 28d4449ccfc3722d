//! The lock-delay on real redis-servers: a release by force naming anyone but the holder
//! leaves a grant in its delay exactly as it was, on one server and on a quorum; and
//! waiters queued behind a hold longer than the delay get the lock no sooner than the
//! delay after the lease's expiry, and with no delay after an unlock.
//!
//! Real time: what the server holds is read from the server (its keys' values and
//! absolute expiry times, and its own inspection); instants a client sees are bounded by
//! causality (a grant made after the delay is answered after it) and by generous limits.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::sync::Arc;
use std::time::Duration;

use common::{granted, held, within};
use robit::driver::{AcquireRequest, Inspection, Lease, LockName, LockState, OwnerToken, Renewal};
use robit::redis::{RedisDriver, RedlockDriver};
use robit::{Driver, Guard, Mutex};
use support::{LONG, RedisServer, driver};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// An owner token as an operator would copy it from `inspect`.
const HOLDER: u128 = 0x5f0c_1d2e_9a8b_7c6d_5e4f_3a2b_1c0d_9e8f;
const EARLIER: u128 = 0x1111_2222_3333_4444_5555_6666_7777_8888;
const RIVAL: u128 = 0x9999_aaaa_bbbb_cccc_dddd_eeee_ffff_0000;

/// Owners that are not [`HOLDER`]: the holder of an earlier grant, one differing in the
/// last hex digit only, one sharing the first 8 digits an operator sees, one in the
/// top bit only, and a stranger.
fn not_the_holder() -> [u128; 5] {
    [
        EARLIER,
        HOLDER ^ 1,
        (HOLDER & !0xffff_ffff) | 0x1234_5678,
        HOLDER ^ (1 << 127),
        RIVAL,
    ]
}

fn owner(who: u128) -> OwnerToken {
    OwnerToken::from_u128(who)
}

fn request(name: &str, who: u128, ttl: Duration, delay: Duration) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), owner(who), ttl).with_lock_delay(delay)
}

/// A key's value and its absolute expiry (Unix ms), as the server holds them.
async fn key_on(server: &RedisServer, key: &str) -> (Option<String>, i64) {
    let mut admin = server.admin().await;
    let value: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(&mut admin)
        .await
        .unwrap();
    let expires_at: i64 = redis::cmd("PEXPIRETIME")
        .arg(key)
        .query_async(&mut admin)
        .await
        .unwrap();
    (value, expires_at)
}

/// Waits until `driver` reports the lock in its lock-delay.
async fn until_in_lock_delay(driver: &impl Driver, name: &str) -> Inspection {
    within(LONG, "the lease's end", async {
        loop {
            let seen = driver.inspect(&LockName::from(name)).await.unwrap();
            if seen.state == LockState::LockDelay {
                return seen;
            }
            assert_eq!(seen.state, LockState::Held, "{seen}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// The TTL of the grants that go into their lock-delay, and the delay: long enough that
/// no stall of a loaded machine sees it end.
const SHORT_TTL: Duration = Duration::from_millis(300);
const LONG_DELAY: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_by_force_naming_anyone_but_the_holder_leaves_a_redis_grant_in_its_lock_delay_as_it_was()
 {
    let server = RedisServer::start();
    let driver = driver(&server);
    let key = "{robit}:lock:delayed";
    let name = LockName::from("delayed");
    let earlier = granted(&driver, &request("delayed", EARLIER, SHORT_TTL, LONG_DELAY)).await;
    earlier.release().await.unwrap();
    let lease = granted(&driver, &request("delayed", HOLDER, SHORT_TTL, LONG_DELAY)).await;
    let seen = until_in_lock_delay(&driver, "delayed").await;
    assert_eq!(
        (seen.holder, seen.fence),
        (Some(owner(HOLDER)), Some(lease.fence()))
    );
    let rival = request("delayed", RIVAL, SHORT_TTL, Duration::ZERO);

    // Named wrongly, with nobody waiting (the script's fast path), then with a waiter
    // queued (the key marked for the queue).
    let mut waiting: Option<JoinHandle<Guard>> = None;
    for round in ["nobody waiting", "a waiter queued"] {
        let before = key_on(&server, key).await;
        assert!(before.0.is_some(), "{round}: the key is gone");
        for wrong in not_the_holder() {
            assert!(
                !driver.force_release(&name, owner(wrong)).await.unwrap(),
                "{round}: naming {wrong:032x} freed the lock"
            );
            assert_eq!(
                key_on(&server, key).await,
                before,
                "{round}: naming {wrong:032x} changed the key or its expiry"
            );
            let seen = driver.inspect(&name).await.unwrap();
            assert_eq!(
                (seen.state, seen.holder, seen.fence),
                (
                    LockState::LockDelay,
                    Some(owner(HOLDER)),
                    Some(lease.fence())
                ),
                "{round}: naming {wrong:032x}: {seen}"
            );
            let left = held(&driver, &rival).await.unwrap();
            assert!(
                left > Duration::ZERO && left <= LONG_DELAY,
                "{round}: {left:?}"
            );
        }
        // The grant stays its holder's in the delay, but its holder cannot renew it.
        assert_eq!(lease.renew(SHORT_TTL).await.unwrap(), Renewal::Lost);
        assert_eq!(
            key_on(&server, key).await,
            before,
            "{round}: after a renewal"
        );
        if let Some(waiter) = &waiting {
            assert!(!waiter.is_finished(), "the waiter was granted in the delay");
        } else {
            let mutex = Mutex::builder("delayed", driver.clone()).build().unwrap();
            waiting = Some(tokio::spawn(async move { mutex.lock().await.unwrap() }));
            within(LONG, "the waiter queued", async {
                while driver.inspect(&name).await.unwrap().waiters == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await;
        }
    }

    // Named rightly: the delay ends, and the lock goes to the waiter at once.
    assert!(driver.force_release(&name, owner(HOLDER)).await.unwrap());
    let seen = driver.inspect(&name).await.unwrap();
    assert!(
        matches!(seen.state, LockState::Reserved | LockState::Held),
        "after the release by force: {seen}"
    );
    let next = within(LONG, "the waiter's grant", waiting.unwrap())
        .await
        .unwrap();
    assert!(next.fence() > lease.fence());
    next.unlock().await.unwrap();
    assert!(!driver.force_release(&name, owner(HOLDER)).await.unwrap());
}

fn quorum_member(url: &str) -> RedisDriver {
    RedisDriver::builder(url)
        .namespace("quorum")
        .command_timeout(Duration::from_millis(250))
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_by_force_naming_anyone_but_the_holder_leaves_a_quorums_grant_in_its_lock_delay_as_it_was()
 {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let driver = RedlockDriver::new(
        servers
            .iter()
            .map(|server| quorum_member(&server.url()))
            .collect(),
    )
    .unwrap();
    let key = "{quorum}:lock:delayed";
    let name = LockName::from("delayed");
    let lease = granted(&driver, &request("delayed", HOLDER, SHORT_TTL, LONG_DELAY)).await;
    let seen = until_in_lock_delay(&driver, "delayed").await;
    assert_eq!(seen.holder, Some(owner(HOLDER)));
    let mut before = Vec::new();
    for server in &servers {
        before.push(key_on(server, key).await);
    }
    assert!(
        before.iter().filter(|(value, _)| value.is_some()).count() >= 2,
        "a majority holds the grant: {before:?}"
    );
    for wrong in not_the_holder() {
        assert!(
            !driver.force_release(&name, owner(wrong)).await.unwrap(),
            "naming {wrong:032x} freed the lock"
        );
        for (server, before) in servers.iter().zip(&before) {
            assert_eq!(
                &key_on(server, key).await,
                before,
                "naming {wrong:032x} changed a server's key"
            );
        }
        let seen = driver.inspect(&name).await.unwrap();
        assert_eq!(
            (seen.state, seen.holder),
            (LockState::LockDelay, Some(owner(HOLDER))),
            "naming {wrong:032x}: {seen}"
        );
        let left = held(
            &driver,
            &request("delayed", RIVAL, SHORT_TTL, Duration::ZERO),
        )
        .await
        .unwrap();
        // A server that ran the grant's script later than the others keeps its key for
        // the TTL and the delay from then: it can still be in the TTL when a majority is
        // in the delay. No key outlives the TTL and the delay from now.
        assert!(
            left > Duration::ZERO && left <= SHORT_TTL + LONG_DELAY,
            "{left:?}"
        );
    }
    assert!(driver.force_release(&name, owner(HOLDER)).await.unwrap());
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Free);
    granted(
        &driver,
        &request("delayed", RIVAL, SHORT_TTL, Duration::ZERO),
    )
    .await
    .release()
    .await
    .unwrap();
    drop(lease);
}

/// The raw holder's TTL, and the lock-delay of every grant in the next test.
const HOLD_TTL: Duration = Duration::from_millis(600);
const DELAY: Duration = Duration::from_millis(800);
/// How long the raw holder renews: longer than the delay, more than twice.
const HOLD: Duration = Duration::from_millis(2_000);
/// The Unix-millisecond rounding of the server's grant stamps.
const ROUNDING: Duration = Duration::from_millis(2);
/// A generous bound on a queued waiter's wake-up after its turn came: its poll interval
/// is 250 ms, a claim one round trip.
const SLACK: Duration = Duration::from_secs(3);

fn spawn_waiter(driver: &RedisDriver) -> JoinHandle<(Instant, Guard)> {
    let mutex = Mutex::builder("long-hold", driver.clone())
        .ttl(Duration::from_secs(1))
        .lock_delay(DELAY)
        .build()
        .unwrap();
    tokio::spawn(async move {
        let guard = mutex.lock().await.unwrap();
        (Instant::now(), guard)
    })
}

async fn first_of(
    mut a: JoinHandle<(Instant, Guard)>,
    mut b: JoinHandle<(Instant, Guard)>,
) -> ((Instant, Guard), JoinHandle<(Instant, Guard)>) {
    tokio::select! {
        granted = &mut a => (granted.unwrap(), b),
        granted = &mut b => (granted.unwrap(), a),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_waiters_get_a_redis_lock_no_sooner_than_the_delay_after_a_long_holds_expiry_and_without_delay_after_an_unlock()
 {
    let server = RedisServer::start();
    let driver = driver(&server);
    let name = LockName::from("long-hold");
    let lease: Arc<dyn Lease> =
        granted(&driver, &request("long-hold", HOLDER, HOLD_TTL, DELAY)).await;
    let (a, b) = (spawn_waiter(&driver), spawn_waiter(&driver));
    within(LONG, "two waiters queued", async {
        while driver.inspect(&name).await.unwrap().waiters < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;

    // Held for more than twice the delay, renewed every 150 ms; then renewals stop. The
    // server's grant ends at the TTL after the last successful renewal's arrival, which
    // came between its send and its answer.
    let started = Instant::now();
    let mut last = (started, started);
    while Instant::now() < started + HOLD {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let sent = Instant::now();
        if lease.renew(HOLD_TTL).await.unwrap() == Renewal::Renewed {
            last = (sent, Instant::now());
        } else {
            // A stall past the TTL: the grant ended after the previous renewal.
            break;
        }
    }
    assert!(last.0 > started, "no renewal succeeded");
    let (ended_earliest, ended_latest) = (last.0 + HOLD_TTL, last.1 + HOLD_TTL);

    // The server's own view inside the delay, when this task gets to look in time.
    tokio::time::sleep_until(ended_latest + DELAY / 4).await;
    let seen = driver.inspect(&name).await.unwrap();
    if Instant::now() + ROUNDING < ended_earliest + DELAY {
        assert_eq!(
            (seen.state, seen.holder, seen.waiters),
            (LockState::LockDelay, Some(owner(HOLDER)), 2),
            "inside the delay: {seen}"
        );
    }

    let ((granted_at, guard), other) = within(LONG, "a waiter's grant", first_of(a, b)).await;
    assert!(
        granted_at + ROUNDING >= ended_earliest + DELAY,
        "a waiter was granted {:?} after the expiry, before the delay of {DELAY:?} had run",
        granted_at.saturating_duration_since(ended_earliest)
    );
    assert!(
        granted_at <= ended_latest + DELAY + SLACK,
        "a waiter was granted {:?} after the expiry",
        granted_at - ended_latest
    );
    assert!(!other.is_finished(), "two waiters granted at once");

    // The new holder, with a lock-delay of its own, holds for longer than it, then
    // unlocks: no delay is owed, so the lock goes straight to the other waiter.
    tokio::time::sleep(DELAY + DELAY / 2).await;
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
    let seen = driver.inspect(&name).await.unwrap();
    assert!(
        matches!(seen.state, LockState::Reserved | LockState::Held),
        "after an unlock: {seen}"
    );
    let (_, next) = within(LONG, "the other waiter's grant", other)
        .await
        .unwrap();
    next.unlock().await.unwrap();
}
