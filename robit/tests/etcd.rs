//! The etcd driver against a real three-member etcd cluster of the test's own
//! (`--features etcd`): grants, queueing and waking, fencing across compaction and a
//! restart of the whole cluster, and faults — the leader killed, a member frozen, the
//! holder's link frozen — with every belief interval checked for overlap.

#![cfg(feature = "etcd")]
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::time::Duration;

use robit::etcd::EtcdDriver;
use robit::{Driver, LockName, LockState, Mutex, OwnerToken, Wait};
use robit_test_support::etcd::EtcdCluster;
use robit_test_support::redis::{FaultClients, FreezingProxy, LONG};
use tokio::time::Instant;

/// A driver on `endpoints` whose requests time out after 500 ms and whose connections
/// are pinged every 250 ms, so that a fault is seen quickly.
fn driver(endpoints: &[String]) -> EtcdDriver {
    EtcdDriver::builder(endpoints.to_vec())
        .request_timeout(Duration::from_millis(500))
        .health_check(Duration::from_millis(250))
        .build()
        .unwrap()
}

fn clients(cluster: &EtcdCluster) -> FaultClients<EtcdDriver> {
    let endpoints = cluster.endpoints();
    FaultClients::new(move || driver(&endpoints))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_is_the_oldest_key_of_its_queue_and_a_release_wakes_the_next() {
    let cluster = EtcdCluster::start(3);
    let driver = driver(&cluster.endpoints());
    let mutex = Mutex::builder("job", driver.clone()).build().unwrap();
    let first = mutex.lock().await.unwrap();
    let other = Mutex::builder("job", driver.clone()).build().unwrap();
    let waiting = tokio::spawn(async move { other.lock_with(Wait::Timeout(LONG)).await });
    let name = LockName::from("job");
    let deadline = Instant::now() + LONG;
    while driver.inspect(&name).await.unwrap().waiters == 0 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(
        (seen.state, seen.fence, seen.waiters),
        (LockState::Held, Some(first.fence()), 1)
    );
    assert!(
        seen.expires_in
            .is_some_and(|left| left <= Duration::from_secs(31))
    );
    assert!(
        !driver
            .force_release(&name, OwnerToken::from_u128(9))
            .await
            .unwrap()
    );
    let before = first.fence();
    first.unlock().await.unwrap();
    let second = waiting.await.unwrap().unwrap();
    assert!(second.fence() > before);
    second.unlock().await.unwrap();
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Free);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_keeps_its_lease_when_the_leader_is_killed() {
    let mut cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    let leader = cluster.leader();
    cluster.kill(leader);
    clients.contend(Duration::from_secs(4)).await;
    assert!(
        clients.loss_of("a").is_none(),
        "a lost its lease to the leader's death"
    );
    clients.beliefs.end("a");
    a.unlock().await.unwrap();
    // A waiter that gave up during the fault may have left its entry behind (its
    // withdraw failed): its own driver sweeps it within about 1.5 s.
    clients.contend(Duration::from_secs(3)).await;
    clients.assert_safe_and_live("leader killed", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_leader_is_replaced_and_nobody_holds_twice() {
    let cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    let leader = cluster.leader();
    cluster.pause(leader);
    clients.contend(Duration::from_secs(4)).await;
    cluster.resume(leader);
    clients.beliefs.end("a");
    let _ = a.unlock().await;
    // As when the leader is killed: a waiter's entry may be left to sweep.
    clients.contend(Duration::from_secs(3)).await;
    clients.assert_safe_and_live("leader frozen (SIGSTOP)", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_link_freezes_is_told_before_anyone_else_holds() {
    let cluster = EtcdCluster::start(3);
    let proxy = FreezingProxy::start(cluster.client_port(0)).await;
    let cut = driver(&[format!("http://127.0.0.1:{}", proxy.port())]);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder_on("a", cut).await;
    let fault = Instant::now();
    proxy.freeze();
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(5)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    assert!(lost.is_ok(), "a never learned of its loss");
    contend.await.unwrap();
    assert!(clients.loss_of("a").is_some());
    clients.assert_safe_and_live("holder's link frozen", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_and_tokens_survive_a_restart_of_the_whole_cluster() {
    let mut cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let before = a.fence();
    let fault = Instant::now();
    cluster.restart_all();
    clients.contend(Duration::from_secs(4)).await;
    clients.beliefs.end("a");
    let _ = a.unlock().await;
    clients.contend(Duration::from_secs(3)).await;
    let mutex = Mutex::builder("failover", driver(&cluster.endpoints()))
        .build()
        .unwrap();
    let after = mutex.lock().await.unwrap();
    assert!(after.fence() > before, "{} after {before}", after.fence());
    after.unlock().await.unwrap();
    clients.assert_safe_and_live("whole cluster restarted", fault);
}
