//! Quorum operations that fail on some servers only: what a release answers when some
//! members' releases fail (fewer than a majority freed: an error naming the shortfall; a
//! majority freed: done, the rest expire at their TTL), and a renewal that errors on a
//! minority while a majority renews (the lease goes on); an operator's calls that some
//! servers miss; a grant lost before its token is raised; a refusal that arrives late.
//! On three servers and on four, with members stopped (their calls fail at once, before
//! the others answer) or cut off behind a frozen proxy (their calls time out, after the
//! others answered).

use std::time::Duration;

use robit::driver::{
    Acquire, AcquireRequest, Lease, LockName, LockState, OwnerToken, Renewal, Waiter,
};
use robit::redis::{RedisDriver, RedlockDriver};
use robit::{Driver, Mutex, UnlockError};
use robit_test_support::kit::within;
use robit_test_support::redis::{
    FAULT_TTL, FaultClients, FreezingProxy, LONG, RedisServer, request,
};
use tokio::time::Instant;

use super::redlock::{
    NAMESPACE, lock_key_on, member, quorum, set_counter, start, until_queued, urls, wait_for_keys,
};
use crate::slow_replies::SlowReplies;

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

/// A ping, an inspection and a release by force are answered once a majority of the
/// servers answers: a stopped server of three leaves them answered; two leave them
/// failed, with the servers' error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_s_calls_are_answered_while_a_majority_answers_and_fail_otherwise() {
    let mut servers = start(3);
    let driver = quorum(&urls(&servers));
    let name = LockName::from("job");
    let nobody = OwnerToken::from_u128(9);
    driver.ping().await.expect("all three answer");
    servers[0].stop();
    driver.ping().await.expect("two of three answer a ping");
    let seen = driver
        .inspect(&name)
        .await
        .expect("two of three answer an inspection");
    assert_eq!(seen.state, LockState::Free);
    let freed = driver.force_release(&name, nobody).await;
    assert!(matches!(freed, Ok(false)), "{freed:?}");
    servers[1].stop();
    let errors = [
        driver.ping().await.unwrap_err(),
        driver.inspect(&name).await.unwrap_err(),
        driver.force_release(&name, nobody).await.unwrap_err(),
    ];
    for err in errors {
        assert!(err.is_transient(), "{err}");
    }
}

/// A quorum of `urls`' servers whose commands time out after 5 s, so that a reply held
/// back for a second is late, not lost.
fn patient_quorum(urls: &[String]) -> RedlockDriver {
    let members = urls
        .iter()
        .map(|url| {
            RedisDriver::builder(url)
                .namespace(NAMESPACE)
                .command_timeout(Duration::from_secs(5))
                .build()
                .unwrap()
        })
        .collect();
    RedlockDriver::new(members).unwrap()
}

/// A request for `name` by `who` whose TTL leaves room for a reply a second late.
fn patient(name: &str, who: u128) -> AcquireRequest {
    AcquireRequest::new(
        LockName::from(name),
        OwnerToken::from_u128(who),
        Duration::from_secs(10),
    )
}

/// Two servers of three grant, with different tokens: the lower must be raised to the
/// higher before the grant is the quorum's. If the lower server's grant is gone by then
/// (an operator deleted it while the higher server's answer, 2 s late, was on its way), only one
/// server holds the token: no majority, so an error, and the other grant given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_that_ends_before_its_token_is_raised_leaves_no_majority() {
    let mut servers = start(3);
    let slow = SlowReplies::start(servers[1].port()).await;
    let driver = patient_quorum(&[servers[0].url(), slow.url(), servers[2].url()]);
    // Connected, scripts loaded, counters made; then the second server's counter is
    // far ahead, and the third is stopped.
    let Acquire::Granted(warm) = driver.acquire(&request("warm", 1)).await.unwrap() else {
        panic!("not granted");
    };
    warm.release().await.unwrap();
    set_counter(&servers[1], warm.fence().get() + 1_000).await;
    servers[2].stop();
    slow.set_reply_delay(Duration::from_secs(2));
    let acquire = tokio::spawn({
        let driver = driver.clone();
        async move { driver.acquire(&patient("job", 2)).await }
    });
    let deadline = Instant::now() + LONG;
    while lock_key_on(&servers[0], "job").await.is_none() {
        assert!(Instant::now() < deadline, "the first server never granted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut admin = servers[0].admin().await;
    let _: () = redis::cmd("DEL")
        .arg(format!("{{{NAMESPACE}}}:lock:job"))
        .query_async(&mut admin)
        .await
        .unwrap();
    let answer = acquire.await.unwrap();
    let Err(err) = answer else {
        panic!("granted by one server's token: {answer:?}");
    };
    assert!(err.to_string().contains("reached only 1 of 3"), "{err}");
    wait_for_keys(&servers[..2], "job", |held| held == 0).await;
}

/// A waiter granted by two servers of three before the third's refusal arrives leaves
/// that server's queue once the refusal is in: otherwise the third server would hand
/// it the lock later, and hold the lock up for a hand-off window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_granted_before_a_refusal_arrives_leaves_that_server_s_queue() {
    let servers = start(3);
    let slow = SlowReplies::start(servers[2].port()).await;
    let driver = patient_quorum(&[servers[0].url(), servers[1].url(), slow.url()]);
    let Acquire::Granted(warm) = driver.acquire(&request("warm", 1)).await.unwrap() else {
        panic!("not granted");
    };
    warm.release().await.unwrap();
    // Another client holds the lock on the third server alone.
    let other = member(&servers[2].url());
    let Acquire::Granted(_held) = other.acquire(&patient("job", 1)).await.unwrap() else {
        panic!("not granted");
    };
    slow.set_reply_delay(Duration::from_secs(2));
    let waiting = patient("job", 2).with_waiter(Waiter::new(2, Duration::from_secs(10)));
    let Acquire::Granted(lease) = driver.acquire(&waiting).await.unwrap() else {
        panic!("not granted by the first two");
    };
    // The third server queues the waiter, and its refusal is on its way.
    let third = &servers[2];
    until_queued(
        third,
        "job",
        |queued| queued > 0,
        "never queued on the third server",
    )
    .await;
    until_queued(
        third,
        "job",
        |queued| queued == 0,
        "still queued on the third server",
    )
    .await;
    lease.release().await.unwrap();
}

/// How many scripts `server` has run.
async fn scripts_run(server: &RedisServer) -> u64 {
    let mut admin = server.admin().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut admin)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

/// Renews `lease` until every one of `servers` has run one of its renewals. A grant
/// answered after its quorum was decided joins the lease in the background, and until
/// it has, the lease renews without it: on a busy machine, the last of three grants is
/// often in the server's keys before it is in the lease.
async fn renew_until_every_server_has_its_grant(lease: &dyn Lease, servers: &[RedisServer]) {
    let mut before = Vec::new();
    for server in servers {
        before.push(scripts_run(server).await);
    }
    within(LONG, "a renewal run by every server", async {
        loop {
            let answer = lease.renew(Duration::from_secs(10)).await;
            assert!(matches!(answer, Ok(Renewal::Renewed)), "{answer:?}");
            let mut everywhere = true;
            for (server, before) in servers.iter().zip(&before) {
                everywhere &= scripts_run(server).await > *before;
            }
            if everywhere {
                break;
            }
        }
    })
    .await;
}

/// A renewal that a majority of the servers answers lost is a loss at once, not an
/// error to retry until the validity deadline. One lost grant of three is not: the
/// renewal goes on with the other two, and the server that lost it is asked no more.
/// The other two answer 200 ms late, so the lost answer is always in first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_a_majority_answers_lost_is_a_loss_at_once() {
    let servers = start(3);
    let slow = [
        SlowReplies::start(servers[1].port()).await,
        SlowReplies::start(servers[2].port()).await,
    ];
    let driver = patient_quorum(&[servers[0].url(), slow[0].url(), slow[1].url()]);
    let Acquire::Granted(lease) = driver.acquire(&patient("job", 1)).await.unwrap() else {
        panic!("not granted");
    };
    wait_for_keys(&servers, "job", |held| held == 3).await;
    renew_until_every_server_has_its_grant(&*lease, &servers).await;
    for proxy in &slow {
        proxy.set_reply_delay(Duration::from_millis(200));
    }
    let ttl = Duration::from_secs(10);
    let delete = |server: usize| {
        let server = &servers[server];
        async move {
            let mut admin = server.admin().await;
            let _: () = redis::cmd("DEL")
                .arg(format!("{{{NAMESPACE}}}:lock:job"))
                .query_async(&mut admin)
                .await
                .unwrap();
        }
    };
    delete(0).await;
    let answer = lease.renew(ttl).await;
    assert!(
        matches!(answer, Ok(Renewal::Renewed)),
        "one grant deleted: {answer:?}"
    );
    let asked = scripts_run(&servers[0]).await;
    let answer = lease.renew(ttl).await;
    assert!(matches!(answer, Ok(Renewal::Renewed)), "again: {answer:?}");
    assert_eq!(
        scripts_run(&servers[0]).await,
        asked,
        "the server that lost the grant was asked again"
    );
    delete(1).await;
    let answer = lease.renew(ttl).await;
    assert!(
        matches!(answer, Ok(Renewal::Lost)),
        "two grants deleted: {answer:?}"
    );
}
