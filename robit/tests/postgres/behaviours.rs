//! Every documented behaviour, checked on Postgres with the shared set of checks the
//! other drivers run (`robit_test_support::behaviours`): no spurious loss over many
//! renewals (P3), fencing across holds, an expiry and a force release (P4), a late
//! release leaving a later grant alone (P6), the hold cap, a refresh by hand, a
//! lock-delay after an expiry and not after an unlock, force release, waiters served in
//! arrival order, and jeopardy before a loss when the holder's link freezes, every belief
//! interval checked for overlap. Real time throughout.

use std::sync::Arc;
use std::time::Duration;

use robit::postgres::PostgresDriver;
use robit_test_support::behaviours::{self, FrozenLink, Topology};
use robit_test_support::postgres::PostgresServer;
use robit_test_support::redis::FreezingProxy;

/// A driver on `url` whose statements time out after 500 ms.
fn driver(url: &str) -> PostgresDriver {
    PostgresDriver::builder(url)
        .request_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_behaviour_holds_on_postgres() {
    let server = PostgresServer::start();
    let url = server.url();
    let topology = Topology::new("postgres", move || driver(&url));
    behaviours::healthy(&topology).await;

    let proxy = FreezingProxy::start(server.port()).await;
    let holder = driver(&format!(
        "postgres://robit@127.0.0.1:{}/postgres",
        proxy.port()
    ));
    let fault = FrozenLink(&proxy);
    behaviours::jeopardy_before_loss(&topology, Arc::new(holder), &fault).await;
}
