//! Bad input and a hostile server get clear, typed errors — never a panic — and the
//! password never shows up in Debug output, errors or logs.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::Captured;
use redis::AsyncCommands;
use robit::driver::DriverError;
use robit::redis::{FirstUse, RedisConfigError, RedisDriver, UrlConnector};
use robit::{LockError, Mutex, Wait};
use support::RedisServer;

fn mutex(url: &str, name: &str) -> Mutex {
    let driver = RedisDriver::builder(url)
        .quarantine(Duration::ZERO)
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    Mutex::builder(name, driver)
        .ttl(Duration::from_secs(2))
        .build()
        .unwrap()
}

fn backend_error(result: Result<robit::Guard, LockError>) -> DriverError {
    match result {
        Err(LockError::Backend(err)) => err,
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_lock_key_of_another_type_is_a_permanent_typed_error() {
    let server = RedisServer::start();
    let _: () = server
        .admin()
        .await
        .rpush("{robit}:lock:typed", "x")
        .await
        .unwrap();
    let err = backend_error(mutex(&server.url(), "typed").lock().await);
    assert!(!err.is_transient());
    assert!(err.to_string().contains("another type"), "{err}");
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
}

#[tokio::test]
async fn a_wrong_password_is_a_permanent_typed_error_that_never_shows_the_password() {
    let server = RedisServer::start_with(&["--requirepass", "right-horse"]);
    let captured = Captured::default();
    let _logs = captured.install();
    let wrong = format!("redis://:battery-staple@127.0.0.1:{}", server.port());
    let refused = mutex(&wrong, "guarded");
    let err = backend_error(refused.lock().await);
    assert!(!err.is_transient(), "{err}");
    assert!(
        err.to_string().contains("check the username and password"),
        "{err}"
    );

    let debug = format!("{refused:?} {err:?} {err}");
    let logs = captured.lines().join("\n");
    for text in [&debug, &logs] {
        assert!(
            !text.contains("battery-staple"),
            "the password leaked: {text}"
        );
    }
    // No password at all: Redis refuses a script call from an unauthenticated client
    // with a protocol error, and the driver says what is missing.
    for attempt in [refused_try(&server).await, refused_lock(&server).await] {
        let err = backend_error(attempt);
        assert!(!err.is_transient(), "{err}");
        assert!(err.to_string().contains("requires authentication"), "{err}");
    }
    // The right one works.
    let right = format!("redis://:right-horse@127.0.0.1:{}", server.port());
    mutex(&right, "guarded")
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

async fn refused_try(server: &RedisServer) -> Result<robit::Guard, LockError> {
    mutex(&server.url(), "guarded").try_lock().await
}

async fn refused_lock(server: &RedisServer) -> Result<robit::Guard, LockError> {
    mutex(&server.url(), "guarded").lock().await
}

#[tokio::test]
async fn an_acl_user_from_the_url_works_and_a_wrong_one_is_refused() {
    let server = RedisServer::start();
    // Exactly the permissions docs/redis.md lists: keys, channel, and commands (those the
    // scripts call are checked too).
    let permissions = "~{robit}:* &robit:* +evalsha +eval +script|load +subscribe +ping +info \
                       +get +set +del +getdel +pexpireat +pttl +time +publish \
                       +lpos +rpush +lpop +lrem +llen +lindex";
    let url = server.acl_user("locker", permissions).await;
    // A contended round too, so that queueing, hand-off and withdrawal all run.
    let holder = mutex(&url, "acl");
    let guard = holder.lock().await.unwrap();
    let waiter = mutex(&url, "acl");
    let waiting = common::spawn_waiter(waiter);
    tokio::time::sleep(Duration::from_millis(50)).await;
    guard.unlock().await.unwrap();
    let (fence, _still_holding) = waiting.await.unwrap();
    fence.unwrap();
    let quitter = mutex(&url, "acl");
    // Connected first, so that the wait below is spent queued, not connecting.
    assert!(matches!(
        quitter.try_lock().await,
        Err(LockError::Contended { .. })
    ));
    // A permission error is not retried: it would end the wait at once, as a backend
    // error. Waiting out the timeout means every command was allowed (a slow machine
    // may still time an attempt out, which is retried like any transient error).
    match quitter
        .lock_with(Wait::Timeout(Duration::from_millis(100)))
        .await
    {
        Err(LockError::Timeout { last_error, .. }) => {
            assert!(
                last_error.as_ref().is_none_or(DriverError::is_transient),
                "{last_error:?}"
            );
        }
        other => panic!("expected the wait to time out, got {other:?}"),
    }
    let wrong = format!("redis://locker:nope@127.0.0.1:{}", server.port());
    assert!(!backend_error(mutex(&wrong, "acl").lock().await).is_transient());
}

#[tokio::test]
async fn a_user_without_info_is_told_to_grant_it_or_to_turn_failover_detection_off() {
    let server = RedisServer::start();
    let permissions = "~{robit}:* &robit:* +evalsha +eval +script|load +subscribe +ping \
                       +get +set +del +getdel +pexpireat +pttl +time +publish";
    let url = server.acl_user("noinfo", permissions).await;
    let err = backend_error(mutex(&url, "no-info").try_lock().await);
    assert!(!err.is_transient(), "{err}");
    assert!(
        err.to_string()
            .contains("INFO unless failover detection is off"),
        "{err}"
    );
    // Without the detection, INFO is never sent.
    let driver = RedisDriver::builder(&url)
        .detect_failover(false)
        .build()
        .unwrap();
    let mutex = Mutex::builder("no-info", driver).build().unwrap();
    mutex.try_lock().await.unwrap().unlock().await.unwrap();
}

#[tokio::test]
async fn a_refused_connection_is_transient_and_a_wait_reports_it_when_it_gives_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let captured = Captured::default();
    let _logs = captured.install();
    let mutex = mutex(&format!("redis://127.0.0.1:{port}"), "nowhere");
    let err = backend_error(mutex.try_lock().await);
    assert!(err.is_transient(), "{err}");
    let address = format!("Redis at redis://127.0.0.1:{port} is unreachable");
    assert!(err.to_string().contains(&address), "{err}");
    // Long enough for the failures to look persistent: the mutex warns with the cause.
    let err = mutex
        .lock_with(Wait::Timeout(Duration::from_secs(2)))
        .await
        .unwrap_err();
    match &err {
        LockError::Timeout {
            last_error: Some(last),
            ..
        } => assert!(last.is_transient(), "{last}"),
        other => panic!("expected a timeout with the connection error, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&address), "{message}");
    assert!(!message.contains("holder"), "there is no holder: {message}");
    let lines = captured.lines();
    assert!(
        lines.iter().any(|line| line.contains("WARN")
            && line.contains("keeps failing")
            && line.contains(&address)),
        "no warning with the cause in:\n{}",
        lines.join("\n")
    );
}

#[tokio::test]
async fn ping_refuses_a_cluster_node_that_does_not_serve_the_namespace() {
    // Two nodes: the namespace's slot on `other`, every other slot on `wrong`.
    let wrong = RedisServer::start_cluster_node();
    let other = RedisServer::start_cluster_node();
    let mut admin = wrong.admin().await;
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("{robit}:fence")
        .query_async(&mut admin)
        .await
        .unwrap();
    let mut slots = redis::cmd("CLUSTER");
    slots.arg("ADDSLOTS");
    for other_slot in (0..16384).filter(|s| *s != slot) {
        slots.arg(other_slot);
    }
    let _: () = slots.query_async(&mut admin).await.unwrap();
    let _: () = redis::cmd("CLUSTER")
        .arg("ADDSLOTS")
        .arg(slot)
        .query_async(&mut other.admin().await)
        .await
        .unwrap();
    let _: () = redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(other.port())
        .arg(other.cluster_bus_port().unwrap())
        .query_async(&mut admin)
        .await
        .unwrap();
    wait_for_cluster(&mut admin, &mut other.admin().await).await;

    let driver = |server: &RedisServer| RedisDriver::builder(&server.url()).build().unwrap();
    let err = driver(&wrong).ping().await.unwrap_err();
    assert!(!err.is_transient(), "{err}");
    assert!(err.to_string().contains("served by another node"), "{err}");
    driver(&other).ping().await.unwrap();
}

/// Readiness polling, not a timing assertion: until the nodes have met, `wrong` does not
/// know who serves the slot, and `other` thinks the cluster is down.
async fn wait_for_cluster(
    wrong: &mut redis::aio::MultiplexedConnection,
    other: &mut redis::aio::MultiplexedConnection,
) {
    let get = || redis::cmd("GET").arg("{robit}:fence").clone();
    for _ in 0..1_000 {
        let at_wrong: redis::RedisResult<redis::Value> = get().query_async(wrong).await;
        let at_other: redis::RedisResult<redis::Value> = get().query_async(other).await;
        if at_wrong.is_err_and(|err| err.code() == Some("MOVED")) && at_other.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the cluster nodes never met");
}

#[tokio::test]
async fn a_server_out_of_memory_is_a_transient_typed_error() {
    let server = RedisServer::start();
    let mut admin = server.admin().await;
    for (key, value) in [("maxmemory-policy", "noeviction"), ("maxmemory", "1")] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut admin)
            .await
            .unwrap();
    }
    let err = backend_error(mutex(&server.url(), "oom").try_lock().await);
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().contains("out of memory"), "{err}");
}

#[tokio::test]
async fn a_failing_script_is_a_permanent_typed_error() {
    let server = RedisServer::start();
    let _: () = server
        .admin()
        .await
        .set("{robit}:fence", "not-a-number")
        .await
        .unwrap();
    let err = backend_error(mutex(&server.url(), "scripted").lock().await);
    assert!(!err.is_transient(), "{err}");
    assert!(err.to_string().contains("script failed"), "{err}");
}

#[test]
fn bad_configuration_is_refused_with_typed_errors_that_hide_the_password() {
    let err = RedisDriver::builder("redis://user:topsecret@[::1")
        .build()
        .unwrap_err();
    assert!(
        matches!(err, RedisConfigError::InvalidUrl { .. }),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains("topsecret"), "{err:?}");
    assert!(matches!(
        RedisDriver::builder("ftp://host").build().unwrap_err(),
        RedisConfigError::InvalidUrl { .. }
    ));
    for namespace in ["", "a{b", "c}"] {
        assert!(matches!(
            RedisDriver::builder("redis://localhost")
                .namespace(namespace)
                .build()
                .unwrap_err(),
            RedisConfigError::InvalidNamespace { .. }
        ));
    }
    assert!(matches!(
        RedisDriver::builder("redis://localhost")
            .command_timeout(Duration::ZERO)
            .build()
            .unwrap_err(),
        RedisConfigError::Zero { .. }
    ));
    let driver = RedisDriver::builder("redis://user:topsecret@localhost:6379/2")
        .build()
        .unwrap();
    let debug = format!("{driver:?}");
    assert!(
        !debug.contains("topsecret") && debug.contains("user:***@localhost:6379/2"),
        "{debug}"
    );
}

#[test]
fn a_quarantine_of_a_year_is_accepted_and_a_millisecond_more_refused() {
    let year = robit::defaults::MAX_TTL;
    RedisDriver::builder("redis://localhost")
        .quarantine(year)
        .build()
        .unwrap();
    let more = year + Duration::from_millis(1);
    match RedisDriver::builder("redis://localhost")
        .quarantine(more)
        .build()
        .unwrap_err()
    {
        RedisConfigError::QuarantineTooLong { quarantine } => assert_eq!(quarantine, more),
        other => panic!("expected QuarantineTooLong, got {other:?}"),
    }
}

#[test]
fn the_driver_its_builder_and_its_connector_show_their_settings_but_never_the_password() {
    let url = "redis://user:topsecret@localhost:6379/2";
    let builder = || {
        RedisDriver::builder(url)
            .namespace("shown")
            .quarantine(Duration::from_secs(42))
            .first_use(FirstUse::Quarantine)
    };
    let connector = format!("{:?}", UrlConnector::new(url).unwrap());
    let shown = [
        format!("{:?}", builder()),
        format!("{:?}", builder().build().unwrap()),
    ];
    for debug in shown.iter().chain([&connector]) {
        assert!(!debug.contains("topsecret"), "{debug}");
        assert!(debug.contains("user:***@localhost:6379/2"), "{debug}");
    }
    for debug in &shown {
        for setting in [
            "namespace: \"shown\"",
            "quarantine: 42s",
            "first_use: Quarantine",
        ] {
            assert!(debug.contains(setting), "{setting} in {debug}");
        }
    }
}
