//! The quorum driver on an even number of servers, where half is not a majority: four
//! servers need three, six need four. On three or five servers "more than half" and "at
//! least half" are the same number, so a call site that counted half as a majority would
//! pass every other test; here, each path that counts a majority — acquire, the check
//! that an attempt can no longer win, renew, release, the fencing token's write-back,
//! inspect, ping and force-release — meets exactly half and must not take it for one.

use std::time::Duration;

use robit::UnlockError;
use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken};
use robit::redis::{RedisDriver, RedlockDriver};
use robit::{Driver, LossReason};
use robit_test_support::redis::{FaultClients, FreezingProxy, LONG, RedisServer, request};
use tokio::time::Instant;

use super::redlock::{
    NAMESPACE, lock_key_on, member, quorum, set_counter, start, urls, wait_for_keys,
};

/// A quorum whose commands (and connections) wait half a minute: one that waited for a
/// frozen server would take far longer than any test here allows. Connected to every
/// server before the caller freezes one.
async fn patient(servers: &[RedisServer]) -> RedlockDriver {
    let members = servers
        .iter()
        .map(|server| {
            RedisDriver::builder(&server.url())
                .namespace(NAMESPACE)
                .command_timeout(Duration::from_secs(30))
                .connect_timeout(Duration::from_secs(30))
                .quarantine(Duration::from_secs(2))
                .build()
                .unwrap()
        })
        .collect();
    let driver = RedlockDriver::new(members).unwrap();
    for server in driver.servers() {
        server.ping().await.unwrap();
    }
    driver
}

/// A request for `name` by `who` whose grants would live a minute: given back, they go
/// at once; left to expire, they would outlast the test.
fn long_request(name: &str, who: u128) -> AcquireRequest {
    AcquireRequest::new(
        LockName::from(name),
        OwnerToken::from_u128(who),
        Duration::from_secs(60),
    )
}

/// `who` holds `name` on each of `servers` alone, as another client's quorum would after
/// winning them, for a minute.
async fn held_by(
    servers: &[RedisServer],
    name: &str,
    who: u128,
) -> Vec<std::sync::Arc<dyn robit::driver::Lease>> {
    let mut leases = Vec::new();
    for server in servers {
        let answer = member(&server.url())
            .acquire(&long_request(name, who))
            .await
            .unwrap();
        let Acquire::Granted(lease) = answer else {
            panic!("not granted on its own: {answer:?}");
        };
        leases.push(lease);
    }
    leases
}

/// Waits until none of `servers` holds a key for `name`.
async fn wait_until_free(servers: &[RedisServer], name: &str, what: &str) {
    let deadline = Instant::now() + LONG;
    for (index, server) in servers.iter().enumerate() {
        while let Some(key) = lock_key_on(server, name).await {
            assert!(
                Instant::now() < deadline,
                "{what}: server {index} still holds {name}: {key}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A rival holds the lock on the first half of `count` servers; a quorum's claims reach
/// the other half first (the rival's servers are frozen until then), which grants them.
/// Half is no majority: the attempt must be refused, and its grants given back at once
/// (not left for their minute).
async fn half_the_servers_are_no_majority(count: usize) {
    let servers = start(count);
    let half = count / 2;
    let _rival = held_by(&servers[..half], "job", 9).await;
    let driver = patient(&servers).await;
    for server in &servers[..half] {
        server.pause();
    }
    let attempt = tokio::spawn({
        let driver = driver.clone();
        async move { driver.acquire(&long_request("job", 1)).await }
    });
    // Every free server granted: a driver that counts half as a majority has won now.
    let granted = tokio::time::timeout(
        LONG,
        wait_for_keys(&servers[half..], "job", |held| held == half),
    )
    .await;
    for server in &servers[..half] {
        server.resume();
    }
    granted.expect("the free half never granted");
    let answer = tokio::time::timeout(LONG, attempt)
        .await
        .expect("the attempt never ended")
        .unwrap()
        .unwrap();
    assert!(
        matches!(answer, Acquire::Held { .. }),
        "granted by {half} of {count} servers, half and no majority: {answer:?}"
    );
    assert_eq!(driver.stats().split, 1, "{:?}", driver.stats());
    wait_until_free(
        &servers[half..],
        "job",
        "the split vote's grants were not given back",
    )
    .await;
    for server in &servers[..half] {
        assert!(
            lock_key_on(server, "job").await.is_some(),
            "the rival's grant is gone"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_grants_of_four_are_no_majority_and_are_given_back() {
    half_the_servers_are_no_majority(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_grants_of_six_are_no_majority_and_are_given_back() {
    half_the_servers_are_no_majority(6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_refused_by_half_of_four_servers_ends_without_waiting_for_the_last() {
    let servers = start(4);
    let _rival = held_by(&servers[..2], "job", 9).await;
    let driver = patient(&servers).await;
    // Two refusals and one grant: with the last server's grant, two of four, no majority.
    // The attempt cannot win, so it must not wait the half minute for the frozen server.
    servers[3].pause();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        driver.acquire(&long_request("job", 1)),
    )
    .await;
    let Ok(answer) = answer else {
        servers[3].resume();
        panic!("an attempt that could not win waited for a frozen server");
    };
    servers[3].resume();
    assert!(matches!(answer, Ok(Acquire::Held { .. })), "{answer:?}");
    // The third server's grant is given back, long before its minute is up; so is the
    // frozen server's, which comes in after it thaws. (A grant that came in after the
    // attempt was decided is given back once every server answered: the third's may wait
    // for the frozen one.)
    wait_until_free(
        &servers[2..],
        "job",
        "the attempt's grants were not given back",
    )
    .await;
}

/// A holder reaches the first half of `count` servers through proxies, which freeze: its
/// renewals reach half the servers, no majority. It must be told of its loss, before a
/// rival holds the lock; the rivals then acquire it.
async fn a_holder_cut_off_from_half_loses(count: usize) {
    let servers = start(count);
    let half = count / 2;
    let mut proxies = Vec::new();
    for server in &servers[..half] {
        proxies.push(FreezingProxy::start(server.port()).await);
    }
    let cut_urls: Vec<String> = proxies
        .iter()
        .map(FreezingProxy::url)
        .chain(servers[half..].iter().map(RedisServer::url))
        .collect();
    let direct = urls(&servers);
    let clients = FaultClients::new(move || quorum(&direct));
    clients.warm_up().await;
    let a = clients.holder_on("a", quorum(&cut_urls)).await;
    let fault = Instant::now();
    for proxy in &proxies {
        proxy.freeze();
    }
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(5)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    contend.await.unwrap();
    assert!(
        lost.is_ok(),
        "a, renewing on {half} of {count} servers, never learned of its loss"
    );
    assert_eq!(
        clients.loss_of("a").map(|(_, reason)| reason),
        Some(LossReason::DeadlinePassed)
    );
    clients.assert_safe_and_live(
        &format!("holder cut off from {half} of {count} servers"),
        fault,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_renewals_reach_two_of_four_servers_is_told_before_anyone_else_holds() {
    a_holder_cut_off_from_half_loses(4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_renewals_reach_three_of_six_servers_is_told_before_anyone_else_holds() {
    a_holder_cut_off_from_half_loses(6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_grants_vanish_from_two_of_four_servers_is_told_at_its_next_renewal() {
    let servers = start(4);
    let direct = urls(&servers);
    let clients = FaultClients::new(move || quorum(&direct));
    clients.warm_up().await;
    let a = clients.holder("a").await;
    wait_for_keys(&servers, "failover", |held| held == 4).await;
    let fault = Instant::now();
    // Gone from two servers (evicted, say): they answer the renewal "not yours".
    for server in &servers[..2] {
        let mut admin = server.admin().await;
        let _: () = redis::cmd("DEL")
            .arg(format!("{{{NAMESPACE}}}:lock:failover"))
            .query_async(&mut admin)
            .await
            .unwrap();
    }
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(4)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    contend.await.unwrap();
    assert!(
        lost.is_ok(),
        "a, left on two of four servers, never learned of its loss"
    );
    assert_eq!(
        clients.loss_of("a").map(|(_, reason)| reason),
        Some(LossReason::NotOwner),
        "two servers answering \"not yours\" leave two of four: the lease is lost at once"
    );
    clients.assert_safe_and_live("holder's grants gone from two of four servers", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_that_frees_only_two_of_four_servers_is_an_error_naming_the_shortfall() {
    let servers = start(4);
    let mut proxies = Vec::new();
    for server in &servers[..2] {
        proxies.push(FreezingProxy::start(server.port()).await);
    }
    let cut_urls: Vec<String> = proxies
        .iter()
        .map(FreezingProxy::url)
        .chain(servers[2..].iter().map(RedisServer::url))
        .collect();
    let mutex = robit::Mutex::builder("job", quorum(&cut_urls))
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    wait_for_keys(&servers, "job", |held| held == 4).await;
    for proxy in &proxies {
        proxy.freeze();
    }
    let unlocked = guard.unlock().await;
    let Err(UnlockError::Backend(err)) = unlocked else {
        panic!("an unlock that freed two of four servers answered {unlocked:?}");
    };
    let text = err.to_string();
    assert!(
        text.contains("reached only 2 of 4 servers, short of the majority of 3"),
        "{text}"
    );
    // Freed where it could be; the frozen two keep the grant until it expires.
    wait_until_free(&servers[2..], "job", "the reachable servers were not freed").await;
    for server in &servers[..2] {
        assert!(lock_key_on(server, "job").await.is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_written_back_to_only_two_of_four_servers_is_no_grant() {
    let servers = start(4);
    // Every server has its counter; the first's is far ahead of the others'.
    let warm = quorum(&urls(&servers));
    let Acquire::Granted(lease) = warm.acquire(&request("ledger", 1)).await.unwrap() else {
        panic!("not granted");
    };
    lease.release().await.unwrap();
    wait_for_keys(&servers, "ledger", |held| held == 0).await;
    let ahead = lease.fence().get() + 1_000_000_000;
    set_counter(&servers[0], ahead).await;
    // The second and third servers grant first, with tokens below the first's; the third
    // loses its grant before the first server's grant comes in and the token is written
    // back. The fourth stays frozen: the majority is the first three.
    let driver = patient(&servers).await;
    servers[0].pause();
    servers[3].pause();
    let attempt = tokio::spawn({
        let driver = driver.clone();
        async move { driver.acquire(&long_request("ledger", 2)).await }
    });
    let both = tokio::time::timeout(
        LONG,
        wait_for_keys(&servers[1..3], "ledger", |held| held == 2),
    )
    .await;
    let mut admin = servers[2].admin().await;
    let _: () = redis::cmd("DEL")
        .arg(format!("{{{NAMESPACE}}}:lock:ledger"))
        .query_async(&mut admin)
        .await
        .unwrap();
    servers[0].resume();
    let answer = tokio::time::timeout(LONG, attempt).await;
    servers[3].resume();
    both.expect("the second and third servers never granted");
    let answer = answer.expect("the attempt never ended").unwrap();
    // The token is at the first server (which issued it) and the second (raised): two of
    // four, no majority.
    let err = match answer {
        Ok(Acquire::Granted(lease)) => panic!(
            "granted with token {} carried by two of four servers",
            lease.fence().get()
        ),
        other => other.expect_err("not refused: the servers were free"),
    };
    let text = err.to_string();
    assert!(text.contains("reached only 2 of 4 servers"), "{text}");
    assert_eq!(driver.stats().raised, 1);
    wait_until_free(&servers, "ledger", "the grants were not given back").await;
}

#[tokio::test]
async fn a_two_two_split_of_four_servers_is_no_majority_to_inspect() {
    let servers = start(4);
    let driver = quorum(&urls(&servers));
    let name = LockName::from("job");
    // Held on two servers, free on two.
    let _x = held_by(&servers[..2], "job", 7).await;
    let err = driver.inspect(&name).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no majority of the 4 servers agrees"),
        "free on two of four: {err}"
    );
    // Held by one owner on two servers and by another on the other two.
    let _y = held_by(&servers[2..], "job", 8).await;
    let err = driver.inspect(&name).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no majority of the 4 servers agrees"),
        "held by two owners, two servers each: {err}"
    );
    // Three of four are a majority.
    let _z = held_by(&servers[..3], "other", 9).await;
    let seen = driver.inspect(&LockName::from("other")).await.unwrap();
    assert_eq!(
        (seen.state, seen.holder),
        (
            robit::driver::LockState::Held,
            Some(OwnerToken::from_u128(9))
        )
    );
}

#[tokio::test]
async fn two_of_four_servers_answering_are_no_majority_to_ping_or_force_release() {
    let mut servers = start(4);
    let driver = quorum(&urls(&servers));
    driver.ping().await.unwrap();
    let _x = held_by(&servers[2..], "job", 7).await;
    servers[0].stop();
    servers[1].stop();
    assert!(
        driver.ping().await.is_err(),
        "a ping answered by two of four servers passed"
    );
    let forced = driver
        .force_release(&LockName::from("job"), OwnerToken::from_u128(7))
        .await;
    assert!(
        forced.is_err(),
        "a force-release answered by two of four servers passed: {forced:?}"
    );
}
