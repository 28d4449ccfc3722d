//! Failovers and restarts that bring back older data, against real redis-server
//! processes: a primary whose replica lags (the replication link frozen by a proxy the
//! test owns) is killed and the replica promoted, the clients following it; the same with
//! a replica in sync; a server restarted from a snapshot older than its last grant.
//!
//! One client holds the lock when the fault strikes; two others contend for it from then
//! on. Every belief interval is recorded and checked for overlap. With the driver's
//! default settings there is none; with failover detection off, the lagging failover and
//! the older snapshot each give two holders, which is what the detection is for.
//!
//! Real time throughout; the figures each run prints are in docs/redis.md.

use robit_test_support::redis as support;

use std::time::Duration;

use robit::LossReason;
use robit::redis::{DEFAULT_QUARANTINE, RedisDriver};
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
