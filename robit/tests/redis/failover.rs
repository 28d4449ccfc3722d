//! Failovers and restarts that bring back older data, against real redis-server
//! processes: a primary whose replica lags (the replication link frozen by a proxy the
//! test owns) is killed and the replica promoted, the clients following it; the same with
//! a replica in sync; a server restarted from a snapshot older than its last grant; and a
//! failover followed by a failback to the old primary, demoted and promoted again in the
//! same process (the same run id), each way to a server that missed the other's writes.
//!
//! One client holds the lock when the fault strikes; two others contend for it from then
//! on. Every belief interval is recorded and checked for overlap. With the driver's
//! default settings there is none; with failover detection off, the lagging failover and
//! the older snapshot each give two holders, which is what the detection is for.
//!
//! Real time throughout; the figures each run prints are in docs/redis.md.

use robit_test_support::redis as support;

use std::time::Duration;

use robit::redis::{DEFAULT_QUARANTINE, RedisDriver};
use robit::{LockError, LossReason, Mutex};
use robit_test_support::kit::Beliefs;
use support::{FAULT_TTL as TTL, FaultClients, FollowingConnector, RedisServer, ReplicatedPair};
use tokio::time::Instant;

/// How long the contenders go on after the fault: past the quarantine, when detection is
/// on, so that the lock is seen to be granted again.
fn contention(detect: bool) -> Duration {
    if detect {
        DEFAULT_QUARANTINE + Duration::from_secs(3)
    } else {
        Duration::from_secs(3)
    }
}

/// Clients whose drivers (default settings but for the detection) reach the server
/// `connector` points at.
fn clients(
    connector: &FollowingConnector,
    detect: bool,
) -> FaultClients<RedisDriver<FollowingConnector>> {
    let connector = connector.clone();
    FaultClients::new(move || {
        RedisDriver::with_connector(connector.clone())
            .detect_failover(detect)
            .build()
            .unwrap()
    })
}

/// The primary fails while its replica lags: `a`'s grant never reached the replica.
async fn lagging_failover(
    detect: bool,
) -> (FaultClients<RedisDriver<FollowingConnector>>, Instant) {
    let mut pair = ReplicatedPair::start().await;
    let connector = FollowingConnector::new(&pair.primary.url());
    let clients = clients(&connector, detect);
    clients.warm_up().await;
    pair.wait_in_sync().await;
    pair.freeze_replication();
    let _a = clients.holder("a").await;
    pair.fail_over().await;
    connector.point_at(&pair.replica.url());
    let fault = Instant::now();
    clients.contend(contention(detect)).await;
    (clients, fault)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_lagging_replica_never_gives_the_lock_to_two_holders() {
    let (clients, fault) = lagging_failover(true).await;
    clients.assert_safe_and_live("lagging replica", fault);
    let (_, reason) = clients
        .loss_of("a")
        .expect("a's grant was lost with the primary");
    assert_eq!(reason, LossReason::NotOwner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_detection_a_failover_to_a_lagging_replica_gives_the_lock_to_two_holders() {
    let (clients, _) = lagging_failover(false).await;
    clients.assert_two_holders("lagging replica, detection off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_replica_in_sync_keeps_the_holders_lease() {
    let mut pair = ReplicatedPair::start().await;
    let connector = FollowingConnector::new(&pair.primary.url());
    let clients = clients(&connector, true);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    pair.wait_in_sync().await;
    pair.fail_over().await;
    connector.point_at(&pair.replica.url());
    let fault = Instant::now();
    // The namespace is quarantined at the first acquire that finds the lock free: after
    // `a` lets go.
    let contenders = {
        let clients = clients.clone();
        tokio::spawn(async move { clients.contend(TTL * 3 + contention(true)).await })
    };
    // `a` renews on the new primary, which had its grant, for a few TTLs, then lets go.
    tokio::time::sleep(TTL * 3).await;
    assert!(a.is_held(), "a lost its lease: {:?}", a.loss());
    clients.beliefs.end("a");
    a.unlock().await.unwrap();
    contenders.await.unwrap();
    clients.assert_safe_and_live("replica in sync", fault);
    assert_eq!(clients.loss_of("a"), None);
}

/// The server restarts from a snapshot taken before `a`'s grant.
async fn restart_from_an_older_snapshot(
    detect: bool,
) -> (FaultClients<RedisDriver<FollowingConnector>>, Instant) {
    let mut server = RedisServer::start();
    let clients = clients(&FollowingConnector::new(&server.url()), detect);
    clients.warm_up().await;
    let _: () = redis::cmd("SAVE")
        .query_async(&mut server.admin().await)
        .await
        .unwrap();
    let _a = clients.holder("a").await;
    tokio::task::block_in_place(|| {
        server.stop();
        server.start_again();
    });
    let fault = Instant::now();
    clients.contend(contention(detect)).await;
    drop(server);
    (clients, fault)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_an_older_snapshot_never_gives_the_lock_to_two_holders() {
    let (clients, fault) = restart_from_an_older_snapshot(true).await;
    clients.assert_safe_and_live("older snapshot", fault);
    let (_, reason) = clients
        .loss_of("a")
        .expect("a's grant was lost with the restart");
    assert_eq!(reason, LossReason::NotOwner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_detection_a_restart_from_an_older_snapshot_gives_the_lock_to_two_holders() {
    let (clients, _) = restart_from_an_older_snapshot(false).await;
    clients.assert_two_holders("older snapshot, detection off");
}

// Failover, then failback: the old primary, demoted but never restarted (the same
// process, the same run id, the same address), promoted again. Its data is the same
// process's, but not the same life of the namespace: the new primary's grants and the
// holders' renewals there never reached it. The driver must take it for another server
// on the way back as on the way out.

/// The failback tests' TTL and quarantine: short, to keep the run to a few seconds.
const BACK_TTL: Duration = Duration::from_secs(1);
const BACK_QUARANTINE: Duration = Duration::from_secs(2);

/// A driver (default settings but a short quarantine) for the server `connector` points at.
fn back_driver(connector: &FollowingConnector) -> RedisDriver<FollowingConnector> {
    RedisDriver::with_connector(connector.clone())
        .quarantine(BACK_QUARANTINE)
        .build()
        .unwrap()
}

fn back_clients(connector: &FollowingConnector) -> FaultClients<RedisDriver<FollowingConnector>> {
    let connector = connector.clone();
    FaultClients::new(move || back_driver(&connector)).with_ttl(BACK_TTL)
}

/// `REPLICAOF` on `server`: with `Some(port)`, it becomes a replica of the server on
/// `port`, and refuses writes from then on (its clients' connections stay open, as when
/// an operator or a failover script demotes a primary); with `None`, it is promoted.
async fn replicaof(server: &RedisServer, port: Option<u16>) {
    let mut command = redis::cmd("REPLICAOF");
    match port {
        Some(port) => command.arg("127.0.0.1").arg(port),
        None => command.arg("NO").arg("ONE"),
    };
    let _: () = command
        .query_async(&mut server.admin().await)
        .await
        .expect("REPLICAOF");
}

/// `server`'s identity as the driver records it: 16 hex digits each of its run id and
/// replication id, after a `/`.
async fn identity(server: &RedisServer) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .arg("replication")
        .query_async(&mut server.admin().await)
        .await
        .unwrap();
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .unwrap()
            .trim()[..16]
            .to_owned()
    };
    format!("/{}{}", field("run_id"), field("master_replid"))
}

/// `key` on `server`: its value, and its `PTTL` (-1: no expiry; -2: missing).
async fn key_on(server: &RedisServer, key: &str) -> (Option<String>, i64) {
    let mut admin = server.admin().await;
    let value: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(&mut admin)
        .await
        .unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut admin)
        .await
        .unwrap();
    (value, ttl)
}

/// `driver`'s try of the lock on `server` is refused by the failover detection: a
/// quarantine the try itself started, because the counter names another server (or
/// another life of this one); the counter now names `server` as it is. Tries again while
/// the answer is a transient error: the driver's connection reached a server turned into
/// a replica (`READONLY`), which retires it, and the next try opens a new one.
async fn assert_detected<D: robit::Driver + Clone>(
    driver: &D,
    server: &RedisServer,
    transition: &str,
    beliefs: &Beliefs,
) {
    let mutex = Mutex::builder("failover", driver.clone())
        .ttl(BACK_TTL)
        .build()
        .unwrap();
    let give_up = Instant::now() + support::LONG;
    loop {
        match mutex.try_lock().await {
            Err(LockError::Quarantined { left }) => {
                assert!(left <= BACK_QUARANTINE, "{transition}: {left:?}");
                break;
            }
            Ok(_) => {
                let believing: Vec<_> = beliefs
                    .intervals()
                    .into_iter()
                    .filter(|(_, _, end)| end.is_none())
                    .map(|(who, ..)| who)
                    .collect();
                panic!(
                    "{transition}: granted at once, not taken for another server, while \
                     {believing:?} believed they held the lock"
                );
            }
            Err(LockError::Backend(err)) if err.is_transient() && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(other) => panic!("{transition}: expected a quarantine, got {other:?}"),
        }
    }
    let (cause, left) = key_on(server, "{robit}:quarantine").await;
    assert_eq!(cause.as_deref(), Some("moved"), "{transition}");
    assert!(left > 0, "{transition}: the quarantine's PTTL is {left}");
    let (counter, _) = key_on(server, "{robit}:fence").await;
    let counter = counter.unwrap();
    let now = identity(server).await;
    assert!(
        counter.ends_with(&format!("q{now}")),
        "{transition}: the counter {counter} does not name {now}, marked"
    );
}

/// The old primary's and the replica's roles swapped and swapped back, each time to a
/// server that missed the other's last writes: `a` holds the lock on the old primary
/// (the replica lagging) when it is demoted; `d` holds it on the replica, promoted, (the
/// demoted primary receiving nothing) when the old primary is promoted again. A driver
/// that locked on the old primary before the failover tries the lock first after each
/// transition (its connection meets the demoted server and is retired); with `idle`,
/// after the failback another one does, whose connection to the old primary was opened
/// before the failover and sat idle since.
async fn fail_over_and_back(idle: bool) {
    let pair = ReplicatedPair::start().await;
    let (old, new) = (&pair.primary, &pair.replica);
    // The old primary's link to the new one once demoted, frozen from the start: it
    // receives none of the new primary's writes.
    let back = support::FreezingProxy::start(new.port()).await;
    back.freeze();
    let connector = FollowingConnector::new(&old.url());
    let clients = back_clients(&connector);
    clients.warm_up().await;
    let probe = back_driver(&connector);
    let idle = idle.then(|| back_driver(&connector));
    for driver in [Some(&probe), idle.as_ref()].into_iter().flatten() {
        let mutex = Mutex::builder("warm-up", driver.clone()).build().unwrap();
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    pair.wait_in_sync().await;
    pair.freeze_replication();
    let _a = clients.holder("a").await;
    // The failover: the old primary demoted first (no longer granting), then the replica
    // promoted, then the clients follow.
    replicaof(old, Some(back.port())).await;
    replicaof(new, None).await;
    connector.point_at(&new.url());
    assert_detected(&probe, new, "the failover", &clients.beliefs).await;
    // Granted on the new primary once the quarantine is over.
    let _d = clients.holder("d").await;
    // The failback: the new primary demoted (it resyncs from the old one), the old one
    // promoted again, the clients follow.
    replicaof(new, Some(old.port())).await;
    replicaof(old, None).await;
    connector.point_at(&old.url());
    let failback = Instant::now();
    let (driver, transition) = match &idle {
        Some(idle) => (idle, "the failback, an idle connection"),
        None => (&probe, "the failback"),
    };
    assert_detected(driver, old, transition, &clients.beliefs).await;
    clients
        .contend(BACK_QUARANTINE + Duration::from_millis(1500))
        .await;
    clients.beliefs.assert_never_two_holders();
    assert!(
        clients.beliefs.first_begun_after(failback).is_some(),
        "nobody was granted the lock after the failback: {:?}",
        clients.beliefs.intervals()
    );
    for who in ["a", "d"] {
        let (_, reason) = clients
            .loss_of(who)
            .unwrap_or_else(|| panic!("{who}'s grant was lost with its primary"));
        assert_eq!(reason, LossReason::NotOwner, "{who}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failback_to_the_old_primary_is_a_failover_too_though_its_run_id_is_the_same() {
    fail_over_and_back(false).await;
}

/// A connection opened before the failover and idle through it and the failback: a
/// server's replication id changes under its open connections (REPLICAOF neither closes
/// nor refuses them until a write comes), so an identity learned when the connection
/// opened would name the first life, which the old primary's counter — missing the new
/// primary's writes — names too, and the lock would be granted at once while `d` still
/// believes in its grant. The acquire script reads the identity itself, on every call
/// that grants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_idle_through_a_failover_and_back_takes_its_server_for_another_life() {
    fail_over_and_back(true).await;
}
