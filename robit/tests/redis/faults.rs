//! The Redis driver under server faults: restarts without persistence, SIGSTOP, killed
//! connections, SCRIPT FLUSH, FLUSHALL, evicted or overwritten keys. The quarantine
//! itself, and the first use of a namespace, are in `redis/quarantine.rs`.
//!
//! Real time throughout. The assertions are about order — who was told what, before
//! whom — and about never having two holders, recorded as belief intervals.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{Beliefs, within};
use redis::AsyncCommands;
use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken, Renewal, Waiter};
use robit::redis::{RedisDriver, script_sources};
use robit::{Driver, LossReason, Mutex, UnlockError};
use support::{RedisServer, quarantined_driver as driver};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(1);
const QUARANTINE: Duration = Duration::from_secs(2);
const LONG: Duration = Duration::from_secs(30);

/// Creates the namespace's counter, so the first lock of a test is not quarantined.
async fn warm_up(server: &RedisServer) {
    let mutex = Mutex::builder("warm-up", driver(server, Duration::ZERO))
        .build()
        .unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
}

/// A client with its own driver (its own connections), recording beliefs and losses.
fn client(
    server: &RedisServer,
    who: &'static str,
    beliefs: &Beliefs,
    losses: &Arc<StdMutex<Vec<(Instant, LossReason)>>>,
) -> Mutex {
    let (beliefs, losses) = (beliefs.clone(), Arc::clone(losses));
    Mutex::builder("faulty", driver(server, QUARANTINE))
        .ttl(TTL)
        .on_lost(move |event| {
            let at = beliefs.end(who);
            losses.lock().unwrap().push((at, event.reason));
        })
        .build()
        .unwrap()
}

struct Scene {
    beliefs: Beliefs,
    losses: Arc<StdMutex<Vec<(Instant, LossReason)>>>,
    holder: Mutex,
    waiter: tokio::task::JoinHandle<(Instant, robit::FenceToken, Mutex)>,
    holder_fence: robit::FenceToken,
}

/// `a` holds the lock; `b` waits for it in the background.
async fn holder_and_waiter(server: &RedisServer) -> Scene {
    warm_up(server).await;
    let beliefs = Beliefs::default();
    let losses = Arc::default();
    let holder = client(server, "a", &beliefs, &losses);
    let holder_fence = holder.acquire().await.unwrap();
    beliefs.begin("a");
    let waiter = {
        let mutex = client(server, "b", &beliefs, &losses);
        let beliefs = beliefs.clone();
        tokio::spawn(async move {
            let fence = mutex.acquire().await.unwrap();
            beliefs.begin("b");
            (Instant::now(), fence, mutex)
        })
    };
    // Let the waiter queue up.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    Scene {
        beliefs,
        losses,
        holder,
        waiter,
        holder_fence,
    }
}

impl Scene {
    fn losses(&self) -> Vec<(Instant, LossReason)> {
        self.losses.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_without_persistence_tells_the_holder_before_anyone_else_can_hold() {
    let mut server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    tokio::task::block_in_place(|| server.restart());

    let (acquired_at, fence, _b) = within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    let losses = scene.losses.lock().unwrap().clone();
    assert_eq!(losses.len(), 1, "{losses:?}");
    assert!(
        losses[0].0 < acquired_at,
        "the holder was told after the waiter acquired"
    );
    assert!(!scene.holder.is_held());
    assert!(
        fence > scene.holder_fence,
        "the fencing token went backwards across the restart"
    );
    scene.beliefs.assert_never_two_holders();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_frozen_for_longer_than_the_ttl_costs_the_holder_its_lease_first() {
    let server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    server.pause();
    tokio::time::sleep(TTL * 2 + TTL / 2).await;
    server.resume();

    let (acquired_at, fence, _b) = within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    let losses = scene.losses.lock().unwrap().clone();
    assert_eq!(losses.len(), 1, "{losses:?}");
    assert_eq!(losses[0].1, LossReason::DeadlinePassed);
    assert!(losses[0].0 < acquired_at);
    assert!(fence > scene.holder_fence);
    scene.beliefs.assert_never_two_holders();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_reconnect_and_a_valid_lease_is_kept() {
    let server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    for _ in 0..3 {
        server.kill_clients("normal").await;
        server.kill_clients("pubsub").await;
        tokio::time::sleep(TTL / 2).await;
    }
    assert!(
        scene.holder.is_held(),
        "the holder lost its lease to killed connections"
    );
    assert!(scene.losses().is_empty());
    // The waiter, whose subscription was killed too, still gets the lock on release.
    // A holder stops believing when it lets go, not when the release is confirmed: the
    // waiter can hold the lock before the holder's unlock() has returned.
    scene.beliefs.end("a");
    scene.holder.unlock().await.unwrap();
    let (_, fence, _b) = within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    assert!(fence > scene.holder_fence);
    scene.beliefs.assert_never_two_holders();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_flush_is_handled_transparently() {
    let server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    let mut admin = server.admin().await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut admin)
        .await
        .unwrap();
    tokio::time::sleep(TTL).await;
    assert!(scene.holder.is_held());
    assert!(scene.losses().is_empty());
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut admin)
        .await
        .unwrap();
    // A holder stops believing when it lets go, not when the release is confirmed: the
    // waiter can hold the lock before the holder's unlock() has returned.
    scene.beliefs.end("a");
    scene.holder.unlock().await.unwrap();
    within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    scene.beliefs.assert_never_two_holders();
}

/// Which of the driver's scripts the server has (SCRIPT EXISTS), in the order acquire,
/// renew, release, withdraw.
async fn scripts_loaded(admin: &mut redis::aio::MultiplexedConnection) -> [bool; 4] {
    let sources = [
        script_sources::ACQUIRE,
        script_sources::RENEW,
        script_sources::RELEASE,
        script_sources::WITHDRAW,
    ];
    let mut exists = redis::cmd("SCRIPT");
    exists.arg("EXISTS");
    for source in sources {
        exists.arg(redis::Script::new(source).get_hash());
    }
    let loaded: Vec<bool> = exists.query_async(admin).await.unwrap();
    loaded.try_into().unwrap()
}

async fn queue_length(admin: &mut redis::aio::MultiplexedConnection) -> u64 {
    admin.llen("{robit}:queue:flushed").await.unwrap()
}

async fn script_flush(admin: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(admin)
        .await
        .unwrap();
    assert_eq!(scripts_loaded(admin).await, [false; 4]);
}

/// Each kind of script call, made right after a SCRIPT FLUSH, meets NOSCRIPT, loads its
/// script and runs it again, all within the one call: nothing surfaces to the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_call_reloads_its_script_after_a_script_flush() {
    let server = RedisServer::start();
    let driver = driver(&server, Duration::ZERO);
    let mut admin = server.admin().await;
    let request = |owner: u128| {
        AcquireRequest::new(LockName::from("flushed"), OwnerToken::from_u128(owner), TTL)
    };
    // Connected first: a new connection loads every script.
    driver.ping().await.unwrap();
    assert_eq!(scripts_loaded(&mut admin).await, [true; 4]);

    script_flush(&mut admin).await;
    let Acquire::Granted(lease) = driver.acquire(&request(1)).await.unwrap() else {
        panic!("a free lock was not granted");
    };
    assert_eq!(
        scripts_loaded(&mut admin).await,
        [true, false, false, false]
    );

    script_flush(&mut admin).await;
    let waiting = request(2).with_waiter(Waiter::new(2, Duration::from_millis(100)));
    let queued = driver.acquire(&waiting).await.unwrap();
    assert!(matches!(queued, Acquire::Held { .. }), "{queued:?}");
    assert_eq!(
        scripts_loaded(&mut admin).await,
        [true, false, false, false]
    );
    assert_eq!(queue_length(&mut admin).await, 1);

    script_flush(&mut admin).await;
    driver.withdraw(&waiting).await.unwrap();
    assert_eq!(
        scripts_loaded(&mut admin).await,
        [false, false, false, true]
    );
    assert_eq!(queue_length(&mut admin).await, 0);

    script_flush(&mut admin).await;
    assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
    assert_eq!(
        scripts_loaded(&mut admin).await,
        [false, true, false, false]
    );

    script_flush(&mut admin).await;
    lease.release().await.unwrap();
    assert_eq!(
        scripts_loaded(&mut admin).await,
        [false, false, true, false]
    );
    let Acquire::Granted(next) = driver.acquire(&request(3)).await.unwrap() else {
        panic!("the released lock was not granted");
    };
    assert!(next.fence() > lease.fence());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flushall_tells_the_holder_before_anyone_else_can_hold() {
    let server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut server.admin().await)
        .await
        .unwrap();

    let (acquired_at, fence, _b) = within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    let losses = scene.losses.lock().unwrap().clone();
    assert_eq!(losses.len(), 1, "{losses:?}");
    assert_eq!(losses[0].1, LossReason::NotOwner);
    assert!(losses[0].0 < acquired_at);
    assert!(fence > scene.holder_fence);
    scene.beliefs.assert_never_two_holders();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_lock_key_is_a_loss_and_fencing_orders_the_next_holder() {
    // Eviction breaks the backend's TTL promise, so nothing can guarantee the holder
    // hears first; what must hold is that it hears at its next renew, and that the next
    // holder's token is higher, so a fenced resource rejects the old holder.
    let server = RedisServer::start();
    let scene = holder_and_waiter(&server).await;
    let _: () = server
        .admin()
        .await
        .del("{robit}:lock:faulty")
        .await
        .unwrap();

    let losses = Arc::clone(&scene.losses);
    let (_, fence, _b) = within(LONG, "the waiter's acquire", scene.waiter)
        .await
        .unwrap();
    let deadline = Instant::now() + TTL;
    while losses.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reasons: Vec<_> = losses.lock().unwrap().iter().map(|l| l.1).collect();
    assert_eq!(reasons, vec![LossReason::NotOwner]);
    assert!(fence > scene.holder_fence);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_key_overwritten_by_someone_else_is_a_loss_and_is_left_alone() {
    let server = RedisServer::start();
    warm_up(&server).await;
    let beliefs = Beliefs::default();
    let losses = Arc::default();
    let holder = client(&server, "a", &beliefs, &losses);
    let guard = holder.lock().await.unwrap();
    let mut admin = server.admin().await;
    let _: () = admin
        .set("{robit}:lock:faulty", "someone-else")
        .await
        .unwrap();
    within(LONG, "the loss", guard.lost()).await;
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::NotOwner))
    ));
    let value: String = admin.get("{robit}:lock:faulty").await.unwrap();
    assert_eq!(
        value, "someone-else",
        "the owner-checked release touched another's key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_replaced_even_when_the_mutex_gives_up_before_the_driver() {
    // The driver's command timeout is far longer than the mutex's per-attempt timeout,
    // so every attempt on the frozen connection is abandoned by the mutex first; the
    // driver must take that as its cue to open another connection.
    let server = RedisServer::start();
    warm_up(&server).await;
    let proxy = support::FreezingProxy::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .command_timeout(LONG)
        .build()
        .unwrap();
    let mutex = Mutex::builder("half-open-abandoned", driver)
        .ttl(Duration::from_secs(3))
        .renew_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
    proxy.freeze_existing();
    let guard = within(
        Duration::from_secs(10),
        "a lock through a fresh connection",
        mutex.lock_with(robit::Wait::Timeout(Duration::from_secs(10))),
    )
    .await
    .unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_silently_stops_answering_is_replaced() {
    // A half-open connection never errors: every command on it just times out. The
    // driver must give up on it and open another, not wait on it forever.
    let server = RedisServer::start();
    warm_up(&server).await;
    let proxy = support::FreezingProxy::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .command_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let mutex = Mutex::builder("half-open", driver)
        .ttl(TTL)
        .build()
        .unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
    proxy.freeze_existing();
    let guard = within(
        LONG,
        "a lock through a fresh connection",
        mutex.lock_with(robit::Wait::Timeout(LONG)),
    )
    .await
    .unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_server_a_single_unanswered_command_moves_the_next_to_a_new_connection() {
    let server = RedisServer::start();
    warm_up(&server).await;
    let proxy = support::FreezingProxy::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .command_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let request =
        |who| AcquireRequest::new(LockName::from("silence"), OwnerToken::from_u128(who), TTL);
    let lease = match driver.acquire(&request(1)).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("expected a grant, got {other:?}"),
    };
    lease.release().await.unwrap();
    proxy.freeze_existing();
    // The command on the frozen connection times out; the very next one is answered
    // (cluster mode, whose connection serves every node, waits for a few).
    let err = driver.acquire(&request(2)).await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    match driver.acquire(&request(3)).await.unwrap() {
        Acquire::Granted(lease) => lease.release().await.unwrap(),
        other => panic!("expected a grant, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_answers_keep_the_connection() {
    let server = RedisServer::start();
    warm_up(&server).await;
    let proxy = crate::slow_replies::SlowReplies::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .build()
        .unwrap();
    let mutex = Mutex::builder("slow", driver).ttl(TTL).build().unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
    let connections = || async {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut server.admin().await)
            .await
            .unwrap();
        info.lines()
            .find_map(|line| line.strip_prefix("total_connections_received:"))
            .and_then(|count| count.trim().parse::<u64>().ok())
            .unwrap()
    };
    let before = connections().await;
    // Each answer arrives 50 ms after the server sent it: later than the 10 ms after
    // which an abandoned command marks its connection suspect, but every one arrives.
    proxy.set_reply_delay(Duration::from_millis(50));
    for _ in 0..5 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    // Only the admin connections that counted.
    assert_eq!(connections().await - before, 1);
}
