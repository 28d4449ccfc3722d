//! Replica-acknowledged grants and renewals (`RedisDriverBuilder::replica_acks`), against a
//! real primary and replica whose replication link the test can freeze.

use robit_test_support::redis as support;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::redis::{RedisConfigError, RedisDriver};
use robit::{LockError, LossReason, Mutex};
use support::{LONG, ReplicatedPair};

const TTL: Duration = Duration::from_secs(2);
const ACK_TIMEOUT: Duration = Duration::from_millis(200);

fn driver(url: &str) -> RedisDriver {
    RedisDriver::builder(url)
        .replica_acks(1, ACK_TIMEOUT)
        .build()
        .unwrap()
}

async fn exists(server: &support::RedisServer, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query_async::<i64>(&mut server.admin().await)
        .await
        .unwrap()
        == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_and_renewals_its_replica_acknowledges_count() {
    let pair = ReplicatedPair::start().await;
    let mutex = Mutex::builder("acked", driver(&pair.primary.url()))
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    // Renewed several times over, each acknowledged.
    tokio::time::sleep(TTL * 2).await;
    assert!(guard.is_held(), "{:?}", guard.loss());
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_no_replica_acknowledges_is_released_and_the_attempt_fails() {
    let pair = ReplicatedPair::start().await;
    pair.freeze_replication();
    let mutex = Mutex::builder("unacked", driver(&pair.primary.url()))
        .ttl(TTL)
        .build()
        .unwrap();
    let err = match mutex.try_lock().await {
        Err(LockError::Backend(err)) => err,
        other => panic!("expected a backend error, got {other:?}"),
    };
    assert!(err.is_transient(), "{err}");
    assert!(
        err.to_string()
            .contains("only 0 of the 1 replicas asked for acknowledged the write within 200ms"),
        "{err}"
    );
    // Given back at once: the lock is free on the primary.
    assert!(!exists(&pair.primary, "{robit}:lock:unacked").await);
    assert!(!mutex.is_held());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_no_replica_acknowledges_fail_and_the_holder_loses_at_its_deadline() {
    let pair = ReplicatedPair::start().await;
    let losses = Arc::new(StdMutex::new(Vec::new()));
    let seen = Arc::clone(&losses);
    let mutex = Mutex::builder("renewed", driver(&pair.primary.url()))
        .ttl(TTL)
        .on_lost(move |event| seen.lock().unwrap().push(event.reason))
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let deadline = guard.deadline().unwrap();
    pair.freeze_replication();
    tokio::time::timeout(LONG, guard.jeopardy()).await.unwrap();
    while losses.lock().unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline + LONG, "no loss");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The renewals reached the primary, which kept renewing the key: they failed only for
    // want of acknowledgements, and the deadline ended the lease.
    assert_eq!(*losses.lock().unwrap(), vec![LossReason::DeadlinePassed]);
}

#[test]
fn an_acknowledgement_timeout_must_be_shorter_than_half_the_command_timeout() {
    for timeout in [
        Duration::ZERO,
        Duration::from_secs(1),
        Duration::from_secs(3),
    ] {
        let err = RedisDriver::builder("redis://127.0.0.1:1")
            .command_timeout(Duration::from_secs(2))
            .replica_acks(1, timeout)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, RedisConfigError::ReplicaAckTimeout { .. }),
            "{err}"
        );
    }
    RedisDriver::builder("redis://127.0.0.1:1")
        .command_timeout(Duration::from_secs(2))
        .replica_acks(1, Duration::from_millis(999))
        .build()
        .unwrap();
    // No replicas asked for: nothing to wait for, whatever the timeout.
    RedisDriver::builder("redis://127.0.0.1:1")
        .replica_acks(0, Duration::ZERO)
        .build()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_whose_wait_is_refused_is_released_with_the_reason() {
    let server = support::RedisServer::start();
    // Every command robit needs but WAIT.
    let permissions = "~{robit}:* &robit:* +evalsha +eval +script|load +subscribe +ping +info \
                       +get +set +del +getdel +pexpireat +pttl +time +publish \
                       +lpos +rpush +lpop +lrem +llen +lindex";
    let url = server.acl_user("nowait", permissions).await;
    let mutex = Mutex::builder("refused", driver(&url))
        .ttl(TTL)
        .build()
        .unwrap();
    let err = match mutex.try_lock().await {
        Err(LockError::Backend(err)) => err,
        other => panic!("expected a backend error, got {other:?}"),
    };
    assert!(!err.is_transient(), "{err}");
    assert!(
        err.to_string()
            .contains("WAIT with replica acknowledgements"),
        "{err}"
    );
    // The script granted the lock before WAIT was refused: the grant was given back.
    assert!(!exists(&server, "{robit}:lock:refused").await);
}
