//! A new namespace in cluster mode, against a real Redis Cluster of three masters: the
//! grant that creates the namespace creates every bucket's fencing counter before it
//! returns (robit/src/redis/state_loss/buckets.rs), so that a missing counter means lost
//! state from then on; and a bucket whose master does not answer then is logged, since
//! every process that has seen the namespace will quarantine it on its first lock there.
//!
//! Real time throughout.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::{Captured, granted};
use robit::Driver;
use robit::driver::Acquire;
use robit::redis::RedisDriver;
use support::{RedisCluster, request};

use super::cluster::cluster_driver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_grant_that_created_a_namespace_no_bucket_looks_lost() {
    // The grant that creates the namespace creates every bucket's counter before it
    // returns: the locks that follow, in any bucket, find theirs, and none is taken for
    // lost state (the process has seen the namespace now, so a missing one would be).
    let cluster = RedisCluster::start(3, 0).await;
    let driver = cluster_driver(&cluster, true);
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .expect("a release");
    let answers: Vec<_> = (0..200)
        .map(|i| {
            let driver = driver.clone();
            tokio::spawn(async move { driver.acquire(&request(&format!("next-{i}"), 1)).await })
        })
        .collect();
    for answer in answers {
        let answer = answer.await.expect("the task");
        assert!(matches!(answer, Ok(Acquire::Granted(_))), "{answer:?}");
    }
    let mut counters = 0;
    for port in cluster.master_ports().await {
        counters += cluster.keys_on(port, "{robit:*}:fence").await.len();
    }
    assert_eq!(counters, 1024);
}

#[tokio::test]
async fn a_new_namespace_s_buckets_on_a_master_that_refuses_writes_are_logged_with_their_number() {
    let cluster = RedisCluster::start(3, 0).await;
    // The sweep, 1,024 calls, is bounded by one command timeout: long enough here that
    // a busy machine answers them all, so that the count is of the refused ones.
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let driver = RedisDriver::cluster(&urls)
        .command_timeout(Duration::from_secs(10))
        .build()
        .expect("the driver builds");
    // One master refuses every write (it has no replica to confirm one to), and answers
    // each at once with an error.
    let refusing = cluster.master_ports().await[0];
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("min-replicas-to-write")
        .arg(1)
        .query_async::<()>(&mut cluster.node(refusing).admin().await)
        .await
        .expect("CONFIG SET");
    let captured = Captured::default();
    let logs = captured.install();
    // A name in one of its buckets is refused; the first granted elsewhere creates the
    // namespace, and its sweep writes every other master's counters but none of its.
    let mut granted = false;
    for i in 0..20 {
        if let Ok(Acquire::Granted(lease)) = driver.acquire(&request(&format!("born-{i}"), 1)).await
        {
            granted = true;
            lease.release().await.expect("a release");
            break;
        }
    }
    drop(logs);
    assert!(
        granted,
        "no name was granted on the masters that take writes"
    );
    let mut created = 0;
    for port in cluster.master_ports().await {
        let counters = cluster.keys_on(port, "{robit:*}:fence").await.len();
        assert_eq!(
            counters == 0,
            port == refusing,
            "{counters} counters on {port}"
        );
        created += counters;
    }
    let lines = captured.lines();
    let warning = lines
        .iter()
        .find(|line| line.contains("could not create the fencing counters"))
        .unwrap_or_else(|| {
            panic!("the buckets left without a counter were not logged: {lines:#?}")
        });
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains("namespace=robit"), "{warning}");
    assert!(
        warning.contains(&format!("buckets={}", 1024 - created)),
        "{} buckets have no counter: {warning}",
        1024 - created
    );
    assert!(warning.contains("NOREPLICAS"), "{warning}");
}

#[tokio::test]
async fn once_its_namespace_is_created_a_bucket_whose_counter_vanished_is_quarantined() {
    // The sweep that creates the buckets ends before the creating grant returns; from
    // then on a missing counter is lost state (a failover to a replica that never had
    // it), not a bucket the sweep has yet to reach.
    let cluster = RedisCluster::start(3, 0).await;
    let driver = cluster_driver(&cluster, true);
    let lease = granted(&driver, &request("ledger", 1)).await;
    let mut found = None;
    for port in cluster.master_ports().await {
        if let Some(key) = cluster.keys_on(port, "*:lock:ledger").await.pop() {
            found = Some((port, key));
        }
    }
    lease.release().await.expect("a release");
    let (port, lock) = found.expect("a master holds the lock");
    let tag_end = lock.iter().position(|&b| b == b'}').expect("a hash tag") + 1;
    let fence = [&lock[..tag_end], b":fence"].concat();
    let deleted: u64 = redis::cmd("DEL")
        .arg(&fence)
        .query_async(&mut cluster.node(port).admin().await)
        .await
        .expect("DEL");
    assert_eq!(
        deleted,
        1,
        "{} had no counter",
        String::from_utf8_lossy(&fence)
    );
    let answer = driver.acquire(&request("ledger", 2)).await;
    assert!(
        matches!(answer, Ok(Acquire::Quarantined { .. })),
        "a bucket whose counter vanished was not quarantined: {answer:?}"
    );
}
