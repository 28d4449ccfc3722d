//! Every documented behaviour, checked on etcd (one member) with the shared set of checks
//! the Redis topologies run (`robit_test_support::behaviours`): no spurious loss over many
//! renewals (P3), fencing across holds, an expiry and a force release (P4), a late release
//! leaving a later grant alone (P6), the hold cap, a refresh by hand, the refusal of a
//! lock-delay (the driver keeps none), force release, the fair hand-off, and jeopardy
//! before a loss when the holder's link freezes, every belief interval checked for
//! overlap. Real time throughout.

use std::sync::Arc;
use std::time::Duration;

use robit::RefreshError;
use robit::etcd::EtcdDriver;
use robit_test_support::behaviours::{self, FrozenLink, Topology};
use robit_test_support::etcd::EtcdCluster;
use robit_test_support::redis::FreezingProxy;

/// A driver on `endpoints` whose requests time out after 500 ms and whose connections
/// are pinged every 250 ms, so that a fault is seen quickly.
fn driver(endpoints: &[String]) -> EtcdDriver {
    EtcdDriver::builder(endpoints.to_vec())
        .request_timeout(Duration::from_millis(500))
        .health_check(Duration::from_millis(250))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_on_etcd() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    // etcd rounds a lease up to whole seconds (at least 1 s) and sweeps expired leases
    // every half second: a 500 ms grant may live 1.5 s.
    let topology = Topology::new("etcd", move || driver(&endpoints))
        .expiry_slack(Duration::from_millis(1_100))
        .without_lock_delay();
    behaviours::healthy(&topology).await;

    // A lease's TTL is fixed when it is granted: a refresh for longer is refused, and
    // the hold goes on.
    let mutex = topology
        .mutex("refreshed-longer", Duration::from_secs(1))
        .watchdog(false)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let longer = guard.refresh(Duration::from_secs(3)).await;
    assert!(
        matches!(&longer, Err(RefreshError::Backend(err)) if err.to_string().contains("renew with the TTL the lock was acquired with")),
        "{longer:?}"
    );
    assert!(guard.is_held());
    guard.refresh(Duration::from_secs(1)).await.unwrap();
    guard.unlock().await.unwrap();

    let proxy = FreezingProxy::start(cluster.client_port(0)).await;
    let holder = driver(&[format!("http://127.0.0.1:{}", proxy.port())]);
    let fault = FrozenLink(&proxy);
    behaviours::jeopardy_before_loss(&topology, Arc::new(holder), &fault).await;
}
