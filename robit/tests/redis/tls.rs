//! TLS to Redis: `rediss://` URLs, a private certificate authority, credentials over TLS.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use robit::redis::{RedisDriver, UrlConnector};
use robit::{LockError, Mutex};
use support::RedisServer;

fn mutex(connector: UrlConnector) -> Mutex {
    let driver = RedisDriver::with_connector(connector)
        .quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    Mutex::builder("secured", driver)
        .ttl(Duration::from_secs(2))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_work_over_tls_with_a_private_authority_and_a_password() {
    let (server, ca) = RedisServer::start_tls(&["--requirepass", "tls-pass"]);
    let url = server.tls_url(":tls-pass@");
    let connector = UrlConnector::with_root_certificate(&url, &ca).unwrap();
    assert!(!format!("{connector:?}").contains("tls-pass"));
    let holder = mutex(connector.clone());
    let waiter = mutex(connector);
    let guard = holder.lock().await.unwrap();
    // A contended hand-off: the pub/sub connection runs over TLS too.
    let waiting = common::spawn_waiter(waiter);
    tokio::time::sleep(Duration::from_millis(100)).await;
    guard.unlock().await.unwrap();
    let (fence, _waiter) = common::within(Duration::from_secs(20), "the hand-off", waiting)
        .await
        .unwrap();
    fence.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_nobody_vouches_for_is_refused_with_an_error() {
    let (server, _ca) = RedisServer::start_tls(&[]);
    // The public web PKI roots do not include the test's authority.
    let connector = UrlConnector::new(&server.tls_url("")).unwrap();
    match mutex(connector).try_lock().await {
        Err(LockError::Backend(err)) => assert!(err.to_string().contains("connection"), "{err}"),
        other => panic!("expected a connection error, got {other:?}"),
    }
}
