//! The driver through Redis Sentinel (`RedisDriver::sentinel`), against a real primary,
//! replica and three sentinels started by the test: it follows a sentinel-driven
//! failover (`SENTINEL FAILOVER`, and the primary killed), and — the replica lagging, the
//! holder's grant lost with the old primary — never gives the lock to two holders.

use robit_test_support::redis as support;

use std::time::Duration;

use robit::LossReason;
use robit::redis::{DEFAULT_QUARANTINE, RedisDriver, SentinelConnector};
use support::{FaultClients, MASTER_NAME, Sentinels};
use tokio::time::Instant;

fn clients(sentinels: &Sentinels) -> FaultClients<RedisDriver<SentinelConnector>> {
    let urls = sentinels.urls();
    FaultClients::new(move || {
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        RedisDriver::sentinel(MASTER_NAME, &urls).build().unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_to_a_lagging_replica_is_followed_without_two_holders() {
    let sentinels = Sentinels::start().await;
    let clients = clients(&sentinels);
    clients.warm_up().await;
    sentinels.pair.wait_in_sync().await;
    sentinels.pair.freeze_replication();
    let _a = clients.holder("a").await;
    sentinels.fail_over().await;
    let fault = Instant::now();
    // The old primary stays a primary until the sentinels turn it into a replica, some
    // seconds on; the quarantine starts on the new one only after that (until then the
    // old one answers, with `a`'s grant), so the contention goes on past both.
    clients
        .contend(DEFAULT_QUARANTINE + Duration::from_secs(15))
        .await;
    clients.assert_safe_and_live("sentinel failover, lagging replica", fault);
    let (_, reason) = clients
        .loss_of("a")
        .expect("a's grant was lost with the primary");
    assert_eq!(reason, LossReason::NotOwner);
    // The lock was granted again on the new primary, found through the sentinels: its
    // counter names it.
    assert_eq!(
        sentinels.master_port().await,
        Some(sentinels.pair.replica.port())
    );
    let mut new_primary = sentinels.pair.replica.admin().await;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .arg("replication")
        .query_async(&mut new_primary)
        .await
        .unwrap();
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .unwrap()
            .trim()[..16]
            .to_owned()
    };
    let counter: String = redis::cmd("GET")
        .arg("{robit}:fence")
        .query_async(&mut new_primary)
        .await
        .unwrap();
    let identity = format!("/{}{}", field("run_id"), field("master_replid"));
    assert!(counter.ends_with(&identity), "{counter} {identity}");
}

/// The TTL of the lock the primary dies under: its holder's validity outlasts the
/// sentinels' failover (down after 1 s, then the election), so that only the detection
/// can keep the lock from two holders.
const LONG_TTL: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_whose_replica_lagged_is_followed_without_two_holders() {
    let mut sentinels = Sentinels::start().await;
    let urls = sentinels.urls();
    // A quarantine of the TTL and some, rather than the default 30 s, to keep the run short.
    let clients = FaultClients::new(move || {
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        RedisDriver::sentinel(MASTER_NAME, &urls)
            .quarantine(LONG_TTL + Duration::from_secs(2))
            .build()
            .unwrap()
    })
    .with_ttl(LONG_TTL);
    clients.warm_up().await;
    sentinels.pair.wait_in_sync().await;
    sentinels.pair.freeze_replication();
    let _a = clients.holder("a").await;
    let fault = Instant::now();
    tokio::task::block_in_place(|| sentinels.pair.primary.stop());
    clients.contend(LONG_TTL + Duration::from_secs(10)).await;
    clients.assert_safe_and_live("sentinel, killed primary, lagging replica", fault);
    let (_, reason) = clients
        .loss_of("a")
        .expect("a's grant was lost with the primary");
    assert_eq!(reason, LossReason::NotOwner);
    assert_eq!(
        sentinels.master_port().await,
        Some(sentinels.pair.replica.port())
    );
}

#[test]
fn a_sentinel_driver_needs_a_sentinel_and_never_shows_a_password() {
    let err = RedisDriver::sentinel(MASTER_NAME, &[]).build().unwrap_err();
    assert!(err.to_string().contains("no sentinel given"), "{err}");
    let driver = RedisDriver::sentinel(MASTER_NAME, &["redis://:hunter2@127.0.0.1:26379"])
        .build()
        .unwrap();
    let shown = format!("{driver:?}");
    assert!(
        !shown.contains("hunter2") && shown.contains(":***@"),
        "{shown}"
    );
}
