//! A primary dies while its streaming replica lags, and the replica is promoted: the
//! grants only the old primary had are lost. With failover detection the namespace is
//! quarantined on the new primary and nobody holds the lock twice; without it, the
//! overlap the detection prevents is shown.

use std::time::Duration;

use robit::postgres::PostgresDriver;
use robit_test_support::postgres::{PostgresServer, Switch};
use robit_test_support::redis::{FAULT_TTL, FaultClients, FreezingProxy, LONG};
use tokio::time::Instant;

/// The quarantine after a failover: the longest TTL in use, the clients' own.
const QUARANTINE: Duration = FAULT_TTL;

/// With detection off, a TTL long enough that the holder's first renewal (a third of it
/// after its grant) comes well after the others are granted the lock on the new primary.
const UNDETECTED_TTL: Duration = Duration::from_secs(90);

/// The URL through `address`.
fn url_of(address: &Switch) -> String {
    format!("postgres://robit@127.0.0.1:{}/postgres", address.port())
}

/// A driver on `url` whose statements time out after 500 ms.
fn quick(url: &str) -> PostgresDriver {
    PostgresDriver::builder(url)
        .request_timeout(Duration::from_millis(500))
        .quarantine(QUARANTINE)
        .build()
        .unwrap()
}

/// `a` locks while the replica receives nothing (its replication link frozen), so that
/// its grant never reaches the replica (or, not `lagging`, once the replica has its
/// grant); the primary is then killed, the replica promoted, and the clients' address
/// moved to it.
async fn failover(detect: bool, lagging: bool) -> (FaultClients<PostgresDriver>, Instant) {
    let mut primary = PostgresServer::start();
    let replication = FreezingProxy::start(primary.port()).await;
    let replica = PostgresServer::start_replica(&primary, replication.port());
    let address = Switch::start(primary.port()).await;
    let url = url_of(&address);
    let ttl = if detect { FAULT_TTL } else { UNDETECTED_TTL };
    let clients = FaultClients::new(move || {
        PostgresDriver::builder(&url)
            .request_timeout(Duration::from_millis(500))
            .detect_failover(detect)
            .quarantine(QUARANTINE)
            .build()
            .unwrap()
    })
    .with_ttl(ttl);
    // The schema and the namespace exist on both.
    clients.warm_up().await;
    primary.wait_replicas_caught_up();
    if lagging {
        replication.freeze();
    }
    let a = clients.holder("a").await;
    if !lagging {
        primary.wait_replicas_caught_up();
    }
    let fault = Instant::now();
    primary.kill();
    replica.promote();
    address.switch_to(replica.port());
    if detect {
        // A single try meanwhile is told why it cannot have the lock.
        let tried = robit::Mutex::builder("failover", quick(&url_of(&address)))
            .ttl(FAULT_TTL)
            .build()
            .unwrap()
            .try_lock()
            .await;
        assert!(
            matches!(tried, Err(robit::LockError::Quarantined { .. })),
            "{tried:?}"
        );
        clients
            .contend(FAULT_TTL + QUARANTINE + Duration::from_secs(2))
            .await;
    } else {
        clients.contend_until_granted(fault, LONG).await;
    }
    if !lagging {
        // a kept its grant: it lets go, and the others take turns.
        clients.beliefs.end("a");
        a.unlock().await.unwrap();
        clients.contend_until_granted(Instant::now(), LONG).await;
    }
    drop((replica, replication, address));
    (clients, fault)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_dying_while_its_replica_lags_never_gives_two_holders() {
    let (clients, fault) = failover(true, true).await;
    clients.assert_safe_and_live("primary killed, lagging replica promoted", fault);
    assert!(
        clients.loss_of("a").is_some(),
        "a was never told of its loss"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_failover_detection_a_primary_dying_while_its_replica_lags_gives_two_holders() {
    let (clients, _) = failover(false, true).await;
    clients.assert_two_holders("primary killed, lagging replica promoted, detection off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_to_a_replica_in_sync_keeps_the_holder_s_lease_and_nobody_holds_twice() {
    let (clients, fault) = failover(true, false).await;
    assert_eq!(clients.loss_of("a"), None, "a lost a grant the replica had");
    clients.assert_safe_and_live("primary killed, replica in sync promoted", fault);
}
