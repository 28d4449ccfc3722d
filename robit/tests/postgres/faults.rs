//! Faults, with every belief interval recorded and checked for overlap: the server
//! killed and restarted, the server frozen past the TTL, the holder's link frozen.

use std::time::Duration;

use robit::postgres::PostgresDriver;
use robit_test_support::postgres::PostgresServer;
use robit_test_support::redis::{FaultClients, FreezingProxy, LONG};
use tokio::time::Instant;

/// A driver on `url` whose statements time out after 500 ms, so that a fault is seen
/// quickly.
fn quick(url: &str) -> PostgresDriver {
    PostgresDriver::builder(url)
        .request_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

fn clients(server: &PostgresServer) -> FaultClients<PostgresDriver> {
    let url = server.url();
    FaultClients::new(move || quick(&url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_and_restart_of_the_server_never_gives_two_holders() {
    let mut server = PostgresServer::start();
    let clients = clients(&server);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let before = a.fence();
    let fault = Instant::now();
    server.kill();
    server.start_again();
    clients.contend(Duration::from_secs(3)).await;
    clients.beliefs.end("a");
    let _ = a.unlock().await;
    clients.contend_until_granted(Instant::now(), LONG).await;
    clients.assert_safe_and_live("server killed and restarted", fault);
    let after = clients.beliefs.first_begun_after(fault);
    assert!(after.is_some());
    let mutex = robit::Mutex::builder("failover", quick(&server.url()))
        .build()
        .unwrap();
    let later = mutex.lock().await.unwrap();
    assert!(later.fence() > before, "{} after {before}", later.fence());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_frozen_past_the_ttl_tells_the_holder_before_anyone_else_holds() {
    let server = PostgresServer::start();
    let clients = clients(&server);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    server.pause();
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(3)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    assert!(lost.is_ok(), "a never learned of its loss");
    server.resume();
    contend.await.unwrap();
    clients.contend_until_granted(fault, LONG).await;
    clients.assert_safe_and_live("server frozen (SIGSTOP)", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_link_freezes_after_a_renewal_is_told_before_anyone_else_holds() {
    let server = PostgresServer::start();
    let proxy = FreezingProxy::start(server.port()).await;
    let cut = quick(&format!(
        "postgres://robit@127.0.0.1:{}/postgres",
        proxy.port()
    ));
    let clients = clients(&server);
    clients.warm_up().await;
    let a = clients.holder_on("a", cut).await;
    // Its lease now runs from a renewal, not from the grant.
    let granted_until = a.deadline();
    while a.deadline() == granted_until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let fault = Instant::now();
    proxy.freeze();
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(4)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    assert!(lost.is_ok(), "a never learned of its loss");
    contend.await.unwrap();
    clients.contend_until_granted(fault, LONG).await;
    assert!(clients.loss_of("a").is_some());
    clients.assert_safe_and_live("holder's link frozen", fault);
}
