//! Quorum operations that fail on some servers only: what a release answers when some
//! members' releases fail (fewer than a majority freed: an error naming the shortfall; a
//! majority freed: done, the rest expire at their TTL), and a renewal that errors on a
//! minority while a majority renews (the lease goes on); a ping that some servers miss.
//! On three servers and on four, with members stopped (their calls fail at once, before
//! the others answer) or cut off behind a frozen proxy (their calls time out, after the
//! others answered).

use std::time::Duration;

use robit::{Mutex, UnlockError};
use robit_test_support::redis::{FAULT_TTL, FaultClients, FreezingProxy, LONG, RedisServer};
use tokio::time::Instant;

use super::redlock::{NAMESPACE, lock_key_on, quorum, start, urls, wait_for_keys};

/// The owner part of a lock key's value.
fn owner_of(value: &str) -> &str {
    value.split(':').next().unwrap_or(value)
}

/// Proxies in front of the first `cut` of `servers`, and the URLs that reach the servers
/// through them (the rest directly).
async fn cut_off(servers: &[RedisServer], cut: usize) -> (Vec<FreezingProxy>, Vec<String>) {
    let mut proxies = Vec::new();
    for server in &servers[..cut] {
        proxies.push(FreezingProxy::start(server.port()).await);
    }
    let urls = proxies
        .iter()
        .map(FreezingProxy::url)
        .chain(servers[cut..].iter().map(RedisServer::url))
        .collect();
    (proxies, urls)
}

/// A holder on `count` servers is cut off from one of them and unlocks: a majority is
/// freed, so the unlock is done; the cut-off server keeps the holder's grant until its
/// TTL, and the others can be granted the lock at once.
async fn an_unlock_that_frees_all_but_one(count: usize) {
    let servers = start(count);
    let (proxies, cut_urls) = cut_off(&servers, 1).await;
    let direct = urls(&servers);
    let clients = FaultClients::new(move || quorum(&direct));
    clients.warm_up().await;
    let a = clients.holder_on("a", quorum(&cut_urls)).await;
    wait_for_keys(&servers, "failover", |held| held == count).await;
    let key = lock_key_on(&servers[0], "failover").await.unwrap();
    let fault = Instant::now();
    proxies[0].freeze();
    clients.beliefs.end("a");
    a.unlock()
        .await
        .unwrap_or_else(|err| panic!("{count} servers, one cut off: the unlock failed: {err}"));
    // Left behind on the cut-off server, to expire at the TTL.
    let left = lock_key_on(&servers[0], "failover").await;
    assert_eq!(
        left.as_deref().map(owner_of),
        Some(owner_of(&key)),
        "{left:?}"
    );
    let mut admin = servers[0].admin().await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("{{{NAMESPACE}}}:lock:failover"))
        .query_async(&mut admin)
        .await
        .unwrap();
    let ttl = u64::try_from(ttl).unwrap_or(0);
    assert!(
        ttl > 0 && Duration::from_millis(ttl) <= FAULT_TTL,
        "the grant left behind expires in {ttl} ms"
    );
    // The others are a majority free of it: the lock is granted again meanwhile, before
    // the grant left behind expires.
    let expires = Instant::now() + Duration::from_millis(ttl);
    clients
        .contend_until_granted(fault, Duration::from_millis(ttl))
        .await;
    let regranted = clients.beliefs.first_begun_after(fault);
    assert!(
        regranted.is_some_and(|at| at < expires),
        "not granted again while the cut-off server kept the old grant: {regranted:?}"
    );
    clients.assert_safe_and_live(
        &format!("unlock with one of {count} servers cut off"),
        fault,
    );
    // And the grant left behind ends at its TTL.
    let deadline = Instant::now() + FAULT_TTL * 2;
    while let Some(value) = lock_key_on(&servers[0], "failover").await {
        if owner_of(&value) != owner_of(&key) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a's grant outlived its TTL: {value}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_that_frees_two_of_three_servers_is_done_and_the_third_grant_expires() {
    an_unlock_that_frees_all_but_one(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_that_frees_three_of_four_servers_is_done_and_the_fourth_grant_expires() {
    an_unlock_that_frees_all_but_one(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_that_frees_one_of_three_servers_is_an_error_naming_the_shortfall() {
    let servers = start(3);
    let (proxies, cut_urls) = cut_off(&servers, 2).await;
    let mutex = Mutex::builder("job", quorum(&cut_urls)).build().unwrap();
    let guard = mutex.lock().await.unwrap();
    wait_for_keys(&servers, "job", |held| held == 3).await;
    for proxy in &proxies {
        proxy.freeze();
    }
    let unlocked = guard.unlock().await;
    let Err(UnlockError::Backend(err)) = unlocked else {
        panic!("an unlock that freed one of three servers answered {unlocked:?}");
    };
    let text = err.to_string();
    assert!(
        text.contains("reached only 1 of 3 servers, short of the majority of 2"),
        "{text}"
    );
    assert!(lock_key_on(&servers[2], "job").await.is_none());
}

/// A holder on `count` servers unlocks after `stopped` of them stopped: their releases
/// fail at once, before the others answer.
async fn unlock_with_stopped(count: usize, stopped: usize) -> Result<(), UnlockError> {
    let mut servers = start(count);
    let mutex = Mutex::builder("job", quorum(&urls(&servers)))
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    wait_for_keys(&servers, "job", |held| held == count).await;
    for server in &mut servers[..stopped] {
        server.stop();
    }
    let unlocked = guard.unlock().await;
    if unlocked.is_ok() {
        assert!(
            lock_key_on(&servers[stopped], "job").await.is_none(),
            "done, and a running server still holds the grant"
        );
    }
    unlocked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_is_done_when_a_majority_is_free_although_a_stopped_server_failed_first() {
    for (count, stopped) in [(3, 1), (4, 1)] {
        if let Err(err) = unlock_with_stopped(count, stopped).await {
            panic!("{stopped} of {count} servers stopped: {err}");
        }
    }
    let err = unlock_with_stopped(4, 2).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("reached only 2 of 4 servers, short of the majority of 3"),
        "{text}"
    );
}

/// A holder on `count` servers keeps renewing after one of them stopped: each renewal
/// fails there at once and reaches every other server, a majority.
async fn a_holder_keeps_its_lease_with_one_stopped(count: usize) {
    let mut servers = start(count);
    let direct = urls(&servers);
    let clients = FaultClients::new(move || quorum(&direct));
    clients.warm_up().await;
    let a = clients.holder("a").await;
    wait_for_keys(&servers, "failover", |held| held == count).await;
    let fault = Instant::now();
    servers[0].stop();
    // Longer than the TTL: several renewals, each with one member failing.
    clients.contend(FAULT_TTL * 2).await;
    assert!(
        clients.loss_of("a").is_none(),
        "a lost its lease with {} of {count} servers renewing it: {:?}",
        count - 1,
        clients.loss_of("a")
    );
    assert!(a.is_held());
    let let_go = clients.beliefs.end("a");
    a.unlock().await.unwrap();
    // Until one of the others is granted it (on a busy machine, a second of contention
    // can pass without a grant).
    clients.contend_until_granted(let_go, LONG).await;
    clients.assert_safe_and_live(&format!("one of {count} servers stopped"), fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_keeps_its_lease_while_one_of_three_servers_is_stopped() {
    a_holder_keeps_its_lease_with_one_stopped(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_keeps_its_lease_while_one_of_four_servers_is_stopped() {
    a_holder_keeps_its_lease_with_one_stopped(4).await;
}

/// A ping, like every quorum operation, is answered once a majority answers: a stopped
/// server of three leaves it answered; two leave it failed, with their error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_is_answered_while_a_majority_answers_and_fails_with_the_error_otherwise() {
    let mut servers = start(3);
    let driver = quorum(&urls(&servers));
    driver.ping().await.expect("all three answer");
    servers[0].stop();
    driver.ping().await.expect("two of three answer");
    servers[1].stop();
    let err = driver.ping().await.unwrap_err();
    assert!(err.is_transient(), "{err}");
}
