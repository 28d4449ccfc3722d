//! The quorum driver against real redis-server processes of the test's own: grants,
//! fencing across servers whose counters disagree, and faults — a stopped server, one
//! restarted without its data, a client cut off from a majority — with every belief
//! interval checked for overlap.

use std::time::Duration;

use robit::driver::{Acquire, LockName, LockState, OwnerToken, Waiter};
use robit::redis::{RedisConfigError, RedisDriver, RedlockDriver, UrlConnector};
use robit::{Driver, Mutex, Wait};
use robit_test_support::redis::{FaultClients, FreezingProxy, LONG, RedisServer, TTL, request};
use tokio::time::Instant;

use crate::slow_replies::SlowReplies;

pub(super) const NAMESPACE: &str = "quorum";

pub(super) fn start(count: usize) -> Vec<RedisServer> {
    (0..count).map(|_| RedisServer::start()).collect()
}

pub(super) fn urls(servers: &[RedisServer]) -> Vec<String> {
    servers.iter().map(RedisServer::url).collect()
}

/// A quorum over `urls`, with commands that time out after 250 ms, so that a fault is
/// seen quickly, and a 2 s quarantine.
pub(super) fn quorum(urls: &[String]) -> RedlockDriver {
    RedlockDriver::new(urls.iter().map(|url| member(url)).collect()).unwrap()
}

pub(super) fn member(url: &str) -> RedisDriver<UrlConnector> {
    RedisDriver::builder(url)
        .namespace(NAMESPACE)
        .command_timeout(Duration::from_millis(250))
        .quarantine(Duration::from_secs(2))
        .build()
        .unwrap()
}

pub(super) async fn lock_key_on(server: &RedisServer, name: &str) -> Option<String> {
    let mut admin = server.admin().await;
    redis::cmd("GET")
        .arg(format!("{{{NAMESPACE}}}:lock:{name}"))
        .query_async(&mut admin)
        .await
        .unwrap()
}

/// Waits until the number of `servers` holding a key for lock `name` satisfies `until`.
pub(super) async fn wait_for_keys(
    servers: &[RedisServer],
    name: &str,
    until: impl Fn(usize) -> bool,
) {
    let deadline = Instant::now() + LONG;
    loop {
        let mut held = 0;
        for server in servers {
            held += usize::from(lock_key_on(server, name).await.is_some());
        }
        if until(held) {
            return;
        }
        assert!(Instant::now() < deadline, "{held} servers hold {name}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_lock_is_held_on_every_server_and_a_release_frees_them_all() {
    let servers = start(3);
    let driver = quorum(&urls(&servers));
    let mutex = Mutex::builder("job", driver.clone()).build().unwrap();
    let guard = mutex.lock().await.unwrap();
    // A majority at once; the last server's grant may join a moment later.
    wait_for_keys(&servers, "job", |held| held >= 2).await;
    wait_for_keys(&servers, "job", |held| held == 3).await;
    let seen = driver.inspect(&LockName::from("job")).await.unwrap();
    assert_eq!(
        (seen.state, seen.fence),
        (LockState::Held, Some(guard.fence()))
    );
    assert!(
        driver
            .force_release(&LockName::from("job"), OwnerToken::from_u128(9))
            .await
            .is_ok_and(|freed| !freed)
    );
    guard.unlock().await.unwrap();
    wait_for_keys(&servers, "job", |held| held == 0).await;
    let seen = driver.inspect(&LockName::from("job")).await.unwrap();
    assert_eq!(seen.state, LockState::Free);
    let stats = driver.stats();
    assert_eq!((stats.attempts, stats.granted, stats.split), (1, 1, 0));
    // With every server's counter at one value, the next grant's tokens are all equal,
    // and need no raise.
    for server in &servers {
        set_counter(server, 1_000).await;
    }
    let raised = stats.raised;
    mutex.lock().await.unwrap().unlock().await.unwrap();
    let stats = driver.stats();
    assert_eq!((stats.granted, stats.raised), (2, raised), "{stats:?}");
}

#[tokio::test]
async fn a_quorum_refuses_fewer_than_three_servers_and_a_server_named_twice() {
    let url = "redis://127.0.0.1:1".to_owned();
    let two = RedlockDriver::builder([&url, "redis://127.0.0.1:2"]).build();
    assert!(matches!(
        two,
        Err(RedisConfigError::QuorumTooSmall { servers: 2 })
    ));
    let twice = RedlockDriver::builder([&url, "redis://127.0.0.1:2", &url]).build();
    assert!(matches!(
        twice,
        Err(RedisConfigError::QuorumServerTwice { .. })
    ));
    let mixed = RedlockDriver::new(vec![
        member(&url),
        member("redis://127.0.0.1:2"),
        RedisDriver::builder("redis://127.0.0.1:3").build().unwrap(),
    ]);
    let err = mixed.unwrap_err();
    assert!(
        err.to_string().contains("\"quorum\" and \"robit\""),
        "{err}"
    );
}

#[tokio::test]
async fn a_frozen_server_holds_up_neither_lock_nor_unlock() {
    let servers = start(3);
    // Commands that would wait half a minute for the frozen server.
    let patient = |url: &String| {
        RedisDriver::builder(url)
            .namespace(NAMESPACE)
            .command_timeout(Duration::from_secs(30))
            .build()
            .unwrap()
    };
    let driver = RedlockDriver::new(urls(&servers).iter().map(patient).collect()).unwrap();
    let mutex = Mutex::builder("job", driver).build().unwrap();
    // Held on all three servers when the first freezes.
    let guard = mutex.lock().await.unwrap();
    wait_for_keys(&servers, "job", |held| held == 3).await;
    servers[0].pause();
    let cycle = async {
        guard.unlock().await.unwrap();
        mutex.lock().await.unwrap().unlock().await.unwrap();
    };
    let quick = tokio::time::timeout(Duration::from_secs(10), cycle).await;
    servers[0].resume();
    assert!(
        quick.is_ok(),
        "a lock + unlock waited for the frozen server"
    );
}

#[tokio::test]
async fn a_split_vote_gives_its_grant_back_with_the_waiter_first_in_that_server_s_queue() {
    // The split vote this test is about needs the first server's grant to come in before
    // the two refusals decide the attempt. When the refusals come first, the attempt
    // returns without it, and the late grant is given back quietly (to nobody, since its
    // waiter may be gone by then): a different path. Try again on fresh servers then.
    for _ in 0..20 {
        if split_vote_on_fresh_servers().await {
            return;
        }
    }
    panic!("in 20 tries, the refusals always decided the attempt before the grant came in");
}

/// One try of the test above: false if the attempt was decided before the first
/// server's grant came in.
async fn split_vote_on_fresh_servers() -> bool {
    let servers = start(3);
    let direct: Vec<_> = servers.iter().map(|server| member(&server.url())).collect();
    // Others hold the lock on each server alone.
    let mut held = Vec::new();
    for (who, server) in (100..).zip(&direct) {
        let Acquire::Granted(lease) = server.acquire(&request("job", who)).await.unwrap() else {
            panic!("not granted");
        };
        held.push(lease);
    }
    let driver = quorum(&urls(&servers));
    let w = Waiter::new(0xa, Duration::from_secs(10));
    let first = driver
        .acquire(&request("job", 1).with_waiter(w))
        .await
        .unwrap();
    assert!(matches!(first, Acquire::Held { .. }), "{first:?}");
    // Two refusals decide the attempt: the first server may queue w only after it
    // returned. Another waiter queues behind w there, once w is in line.
    let deadline = Instant::now() + LONG;
    while queued_on(&servers[0], "job").await == 0 {
        assert!(
            Instant::now() < deadline,
            "w never queued on the first server"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let v = request("job", 2).with_waiter(Waiter::new(0xb, Duration::from_secs(10)));
    let _ = direct[0].acquire(&v).await.unwrap();
    // The first server's holder lets go and hands the lock to w, which wins it there
    // alone, and gives it back.
    held[0].release().await.unwrap();
    let again = driver
        .acquire(&request("job", 3).with_waiter(w.on_attempt(1)))
        .await
        .unwrap();
    assert!(matches!(again, Acquire::Held { .. }), "{again:?}");
    if driver.stats().split == 0 {
        return false;
    }
    assert_eq!(driver.stats().split, 1);
    let mut admin = servers[0].admin().await;
    let queue: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{{{NAMESPACE}}}:queue:job"))
        .arg(0)
        .arg(-1)
        .query_async(&mut admin)
        .await
        .unwrap();
    let ids: Vec<&str> = queue.iter().map(|entry| &entry[..32]).collect();
    assert_eq!(ids, [format!("{:032x}", 0xa), format!("{:032x}", 0xb)]);
    // Marked as waited for, so that the next claim hands it to w.
    let key = lock_key_on(&servers[0], "job").await;
    assert!(
        key.as_deref().is_some_and(|key| key.ends_with(":q")),
        "{key:?}"
    );
    true
}

/// Waits until the number of waiters queued for `name` on `server` satisfies `until`;
/// fails naming `what` if it never does.
pub(super) async fn until_queued(
    server: &RedisServer,
    name: &str,
    until: impl Fn(usize) -> bool,
    what: &str,
) {
    let deadline = Instant::now() + LONG;
    while !until(queued_on(server, name).await) {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn queued_on(server: &RedisServer, name: &str) -> usize {
    let mut admin = server.admin().await;
    redis::cmd("LLEN")
        .arg(format!("{{{NAMESPACE}}}:queue:{name}"))
        .query_async(&mut admin)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_waiter_granted_by_a_majority_leaves_the_queue_of_the_server_that_refused_it() {
    let servers = start(3);
    // Another client holds the lock on the third server alone.
    let other = member(&servers[2].url());
    let Acquire::Granted(_held) = other.acquire(&request("job", 1)).await.unwrap() else {
        panic!("not granted");
    };
    let driver = quorum(&urls(&servers));
    let waiting = request("job", 2).with_waiter(Waiter::new(2, Duration::from_secs(10)));
    let Acquire::Granted(lease) = driver.acquire(&waiting).await.unwrap() else {
        panic!("not granted by the first two");
    };
    // Queued by the refusal, then withdrawn: otherwise the third server would hand the
    // lock to a waiter that holds it already, once the other client lets go. (Its entry
    // would outlive the test: a waiter polling every 10 s is kept 40 s.)
    until_queued(
        &servers[2],
        "job",
        |queued| queued == 0,
        "still queued on the third server",
    )
    .await;
    lease.release().await.unwrap();
}

/// Sets the namespace's fencing counter on `server` to `token`, keeping the identity of
/// the server that wrote it (so that failover detection takes no notice).
pub(super) async fn set_counter(server: &RedisServer, token: u64) {
    let mut admin = server.admin().await;
    let key = format!("{{{NAMESPACE}}}:fence");
    // A majority's grant returns before the last server's: that server may create its
    // counter only after the acquire returned. Wait for it.
    let deadline = Instant::now() + LONG;
    let old: String = loop {
        let old: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut admin)
            .await
            .unwrap();
        if let Some(old) = old {
            break old;
        }
        assert!(
            Instant::now() < deadline,
            "the server never created its counter"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let suffix = old.trim_start_matches(|c: char| c.is_ascii_digit());
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(format!("{token}{suffix}"))
        .query_async(&mut admin)
        .await
        .unwrap();
}

/// Grants `name` to a fresh driver (another process, as it were: it has seen no token)
/// while `paused` is frozen, so that the other two servers make the quorum.
///
/// Returns once no server holds the lock. The frozen server runs the acquire it was sent
/// when it wakes, after the driver gave up on it: a grant nobody will release, which
/// lives out its TTL and would refuse the next quorum (one server of two).
async fn token_without(servers: &[RedisServer], paused: usize, who: u128) -> u64 {
    servers[paused].pause();
    let driver = quorum(&urls(servers));
    let answer = driver.acquire(&request("ledger", who)).await.unwrap();
    servers[paused].resume();
    let Acquire::Granted(lease) = answer else {
        panic!("not granted: {answer:?}");
    };
    lease.release().await.unwrap();
    // A command on a new connection runs after what the woken server had received.
    let _: () = redis::cmd("PING")
        .query_async(&mut servers[paused].admin().await)
        .await
        .unwrap();
    wait_for_keys(servers, "ledger", |held| held == 0).await;
    lease.fence().get()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_tokens_increase_although_one_server_s_counter_is_far_ahead() {
    let servers = start(3);
    let warm = quorum(&urls(&servers));
    let Acquire::Granted(lease) = warm.acquire(&request("ledger", 1)).await.unwrap() else {
        panic!("not granted");
    };
    lease.release().await.unwrap();
    let ahead = lease.fence().get() + 1_000_000_000;
    set_counter(&servers[2], ahead).await;
    // A and C grant: C's token, a billion ahead, is the quorum's.
    let first = token_without(&servers, 1, 2).await;
    assert!(first > ahead, "{first} <= {ahead}");
    // A and B grant: A's counter must carry the first quorum's token, or B's and A's own
    // would be far below it.
    let second = token_without(&servers, 2, 3).await;
    assert!(
        second > first,
        "the token went back from {first} to {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_tokens_increase_after_a_server_comes_back_from_an_old_snapshot() {
    let mut servers = start(3);
    let warm = quorum(&urls(&servers));
    let Acquire::Granted(lease) = warm.acquire(&request("ledger", 1)).await.unwrap() else {
        panic!("not granted");
    };
    lease.release().await.unwrap();
    let mut admin = servers[0].admin().await;
    let _: () = redis::cmd("SAVE").query_async(&mut admin).await.unwrap();
    // A and C grant while B is frozen: their counters move on, B's and A's snapshot's
    // stay behind.
    let mut high = 0;
    for who in 2..7 {
        high = token_without(&servers, 1, who).await;
    }
    servers[0].stop();
    servers[0].start_again();
    // A (back from its snapshot, quarantined as another life of itself) and B grant.
    servers[2].pause();
    let mutex = Mutex::builder("ledger", quorum(&urls(&servers)))
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = tokio::time::timeout(LONG, mutex.lock()).await;
    servers[2].resume();
    let guard = guard.expect("never granted").unwrap();
    let token = guard.fence().get();
    guard.unlock().await.unwrap();
    assert!(token > high, "the token went back from {high} to {token}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_keeps_its_lease_while_one_of_three_servers_is_frozen() {
    let servers = start(3);
    let urls = urls(&servers);
    let clients = FaultClients::new(move || quorum(&urls));
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    servers[1].pause();
    clients.contend(Duration::from_secs(3)).await;
    servers[1].resume();
    assert!(
        clients.loss_of("a").is_none(),
        "a lost its lease to one frozen server"
    );
    let let_go = clients.beliefs.end("a");
    a.unlock().await.unwrap();
    clients.contend_until_granted(let_go, LONG).await;
    clients.assert_safe_and_live("one of three servers frozen", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_without_its_data_is_quarantined_alone() {
    let mut servers = start(3);
    let urls = urls(&servers);
    let clients = FaultClients::new(move || quorum(&urls));
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    servers[0].restart();
    // The others' claims (or a's renewal) find the restarted server empty and quarantine
    // it: contend until they have, however long a busy machine takes to get there.
    let mut admin = servers[0].admin().await;
    let give_up = Instant::now() + LONG;
    loop {
        clients.contend(Duration::from_millis(200)).await;
        let left: i64 = redis::cmd("PTTL")
            .arg(format!("{{{NAMESPACE}}}:quarantine"))
            .query_async(&mut admin)
            .await
            .unwrap();
        if left > 0 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the restarted server is not quarantined ({left})"
        );
    }
    clients.contend(Duration::from_secs(2)).await;
    assert!(
        clients.loss_of("a").is_none(),
        "a lost its lease to one server's restart"
    );
    let let_go = clients.beliefs.end("a");
    a.unlock().await.unwrap();
    clients.contend_until_granted(let_go, LONG).await;
    clients.assert_safe_and_live("one of three servers restarted empty", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_from_a_majority_is_told_before_anyone_else_holds() {
    let servers = start(3);
    let mut proxies = Vec::new();
    for server in &servers[..2] {
        proxies.push(FreezingProxy::start(server.port()).await);
    }
    // The holder reaches two of the servers through the proxies; the others, directly.
    let cut = quorum(&[proxies[0].url(), proxies[1].url(), servers[2].url()]);
    let direct = urls(&servers);
    let clients = FaultClients::new(move || quorum(&direct));
    clients.warm_up().await;
    let a = clients.holder_on("a", cut).await;
    let fault = Instant::now();
    for proxy in &proxies {
        proxy.freeze();
    }
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(4)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    assert!(lost.is_ok(), "a never learned of its loss");
    contend.await.unwrap();
    assert!(clients.loss_of("a").is_some());
    clients.assert_safe_and_live("holder cut off from two of three servers", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_a_quorum_share_the_lock_fairly() {
    let servers = start(3);
    let urls = urls(&servers);
    let until = Instant::now() + Duration::from_secs(3);
    let drivers: Vec<_> = (0..4).map(|_| quorum(&urls)).collect();
    let tasks: Vec<_> = drivers
        .iter()
        .map(|driver| {
            let mutex = Mutex::builder("shared", driver.clone()).build().unwrap();
            tokio::spawn(async move {
                let mut count = 0_u32;
                while Instant::now() < until {
                    if let Ok(guard) = mutex.lock_with(Wait::Timeout(LONG)).await {
                        count += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        guard.unlock().await.unwrap();
                    }
                }
                count
            })
        })
        .collect();
    let mut counts = Vec::new();
    for task in tasks {
        counts.push(task.await.unwrap());
    }
    let mean = counts.iter().sum::<u32>() / 4;
    let (attempts, split) = drivers
        .iter()
        .map(RedlockDriver::stats)
        .fold((0, 0), |(a, s), stats| {
            (a + stats.attempts, s + stats.split)
        });
    eprintln!(
        "4 waiters on 3 servers for 3 s: {counts:?} locks each; {split} of {attempts} \
         attempts split"
    );
    assert!(mean > 0);
    assert!(
        counts.iter().all(|&count| count * 2 >= mean),
        "a waiter got less than half the mean: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_s_validity_counts_from_the_send_not_from_the_majority_s_answers() {
    // Three servers: one answers at once, one 400 ms late, one 800 ms late. A majority
    // has granted (or renewed) only once the 400 ms answer is in; every grant was made
    // after the send, and lives the TTL from there. So the validity deadline of the
    // acquire, and of each renewal, is at least 400 ms earlier than the TTL's validity
    // from the majority's answer (or 800 ms from the last member's).
    let ttl = Duration::from_secs(3);
    let servers = start(3);
    let slow = [
        SlowReplies::start(servers[1].port()).await,
        SlowReplies::start(servers[2].port()).await,
    ];
    let members = [servers[0].url(), slow[0].url(), slow[1].url()]
        .iter()
        .map(|url| {
            RedisDriver::builder(url)
                .namespace(NAMESPACE)
                .command_timeout(Duration::from_secs(2))
                .build()
                .unwrap()
        })
        .collect();
    let mutex = Mutex::builder("late", RedlockDriver::new(members).unwrap())
        .ttl(ttl)
        .build()
        .unwrap();
    // Connected, scripts loaded, while every answer still comes at once.
    mutex.lock().await.unwrap().unlock().await.unwrap();
    let majority = Duration::from_millis(400);
    slow[0].set_reply_delay(majority);
    slow[1].set_reply_delay(majority * 2);
    let validity = ttl.mul_f64(1.0 - robit::defaults::DEFAULT_DRIFT_FACTOR)
        - robit::defaults::DEFAULT_SAFETY_MARGIN;

    let before = Instant::now();
    let guard = mutex.lock().await.unwrap();
    let answered = Instant::now();
    let deadline = guard.deadline().unwrap();
    assert!(
        deadline >= before + validity,
        "validity from before the send"
    );
    assert!(
        deadline + majority <= answered + validity,
        "the deadline counts from an answer, not the send: {:?} after the majority's \
         answer",
        (deadline - validity).saturating_duration_since(answered - majority)
    );

    // The first renewal, a renew period (TTL / 3) after the acquire's send, at the start
    // of the watchdog's 10 ms step.
    let renewed_at = within_long("the first renewal", async {
        loop {
            if guard.deadline() != Some(deadline) {
                return Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let renewed = guard.deadline().unwrap();
    assert!(
        renewed + Duration::from_millis(10) >= deadline + ttl / 3,
        "the renewal came early"
    );
    assert!(
        renewed + majority <= renewed_at + validity,
        "the renewal's deadline counts from an answer, not its send: {:?} after the \
         majority's answer",
        (renewed - validity).saturating_duration_since(renewed_at - majority)
    );
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
}

async fn within_long<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LONG, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {LONG:?}"))
}
