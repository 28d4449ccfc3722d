//! Natural batching on one server: calls of one kind made while another is in flight
//! go out together as one script call, and each caller gets its own answer — its own
//! token, its own refusal, its own error — as if it had gone out alone.
//!
//! On a current-thread runtime, calls started together reach the driver in order: the
//! first goes out alone, and the rest queue behind it and go out as one batch.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::granted;
use futures_util::future::join_all;
use redis::AsyncCommands;
use robit::Driver;
use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, Renewal, Waiter};
use robit::redis::RedisDriver;
use support::{RedisServer, driver, request};

use crate::driver::{commands_run, reset_stats};
use crate::slow_replies::SlowReplies;

/// How many calls each test makes at once.
const CALLS: usize = 100;

/// The script calls (EVALSHA) the server ran since its counts were reset.
async fn script_calls(server: &RedisServer) -> u64 {
    let counts = commands_run(&mut server.admin().await).await;
    counts.get("evalsha").copied().unwrap_or_default()
}

/// The requests of `CALLS` owners, each for a name of its own.
fn requests(round: u128) -> Vec<AcquireRequest> {
    (0..CALLS)
        .map(|i| request(&format!("batched-{i}"), round * 1000 + i as u128))
        .collect()
}

/// Acquires every one of `requests` at once on `driver`.
async fn acquire_all(
    driver: &RedisDriver,
    requests: &[AcquireRequest],
) -> Vec<Result<Acquire, DriverError>> {
    join_all(requests.iter().map(|request| driver.acquire(request))).await
}

fn leases(answers: Vec<Result<Acquire, DriverError>>) -> Vec<Arc<dyn Lease>> {
    answers
        .into_iter()
        .map(|answer| match answer.unwrap() {
            Acquire::Granted(lease) => lease,
            other => panic!("expected a grant, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn acquires_made_together_share_a_few_script_calls_and_each_get_a_token_of_its_own() {
    let server = RedisServer::start();
    let driver = driver(&server);
    // The namespace's first grant creates it, alone.
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    reset_stats(&mut server.admin().await).await;

    let first = leases(acquire_all(&driver, &requests(1)).await);
    let calls = script_calls(&server).await;
    assert!(calls <= 3, "{CALLS} acquires took {calls} script calls");
    let tokens: BTreeSet<u64> = first.iter().map(|lease| lease.fence().get()).collect();
    assert_eq!(tokens.len(), CALLS, "two grants were given one token");

    // Released together, and granted again together: every name's new token is above
    // every token issued before it.
    join_all(first.iter().map(|lease| lease.release())).await;
    let second = leases(acquire_all(&driver, &requests(2)).await);
    let last = tokens.last().copied().unwrap_or_default();
    for lease in &second {
        assert!(
            lease.fence().get() > last,
            "{} after {last}",
            lease.fence().get()
        );
    }
    let again: BTreeSet<u64> = second.iter().map(|lease| lease.fence().get()).collect();
    assert_eq!(again.len(), CALLS, "two grants were given one token");
    // The counter holds the last token issued.
    let counter: String = server.admin().await.get("{robit}:fence").await.unwrap();
    let highest = again.last().copied().unwrap_or_default();
    assert!(
        counter.starts_with(&format!("{highest}/")),
        "{counter} after {highest}"
    );
}

#[tokio::test]
async fn a_refusal_or_an_error_in_a_batch_is_only_its_own_caller_s() {
    let server = RedisServer::start();
    let driver = driver(&server);
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    let requests = requests(1);
    // Every third name is held by someone else, and every seventh is a key of another
    // type, which no script can take. The first is free, so it goes out alone and the
    // rest queue behind it.
    let mut admin = server.admin().await;
    let mut others = Vec::new();
    for (i, request) in requests.iter().enumerate().skip(1) {
        let key = format!("{{robit}}:lock:batched-{i}");
        if i % 7 == 0 {
            admin.rpush::<_, _, ()>(&key, "not a lock").await.unwrap();
        } else if i % 3 == 0 {
            let mut theirs = request.clone();
            theirs.owner = robit::driver::OwnerToken::from_u128(u128::MAX - i as u128);
            others.push(granted(&driver, &theirs).await);
        }
    }
    reset_stats(&mut admin).await;
    let answers = acquire_all(&driver, &requests).await;
    assert!(script_calls(&server).await <= 3);
    for (i, answer) in answers.into_iter().enumerate() {
        match answer {
            Err(DriverError::Rejected { reason, .. }) if i % 7 == 0 && i > 0 => {
                assert!(reason.contains("WRONGTYPE"), "{i}: {reason}");
            }
            Ok(Acquire::Held { expires_in }) if i % 3 == 0 && i % 7 != 0 && i > 0 => {
                assert!(expires_in.is_some(), "{i}");
            }
            Ok(Acquire::Granted(lease)) if (i % 3 != 0 && i % 7 != 0) || i == 0 => {
                lease.release().await.unwrap();
            }
            other => panic!("name {i} was answered {other:?}"),
        }
    }
}

#[tokio::test]
async fn renewals_and_releases_made_together_each_answer_for_their_own_grant() {
    let server = RedisServer::start();
    let driver = driver(&server);
    let requests = requests(1);
    let held = leases(acquire_all(&driver, &requests).await);
    // Every fifth grant is gone behind its holder's back, and someone else holds its lock
    // now.
    let mut admin = server.admin().await;
    let mut theirs = Vec::new();
    for i in (0..CALLS).step_by(5).skip(1) {
        let key = format!("{{robit}}:lock:batched-{i}");
        admin.del::<_, ()>(&key).await.unwrap();
        let mut request = requests[i].clone();
        request.owner = robit::driver::OwnerToken::from_u128(u128::MAX - i as u128);
        granted(&driver, &request).await;
        admin.pexpire::<_, ()>(&key, 60_000).await.unwrap();
        theirs.push(key);
    }
    // Every third has a waiter queued behind it: its key is marked as having waiters.
    let mut marked = Vec::new();
    for i in (3..CALLS).step_by(3).filter(|i| i % 5 != 0) {
        let mut request = requests[i].clone();
        request.owner = robit::driver::OwnerToken::from_u128(u128::MAX - i as u128);
        let request = request.with_waiter(Waiter::new(i as u128, Duration::from_millis(500)));
        assert!(matches!(
            driver.acquire(&request).await.unwrap(),
            Acquire::Held { .. }
        ));
        marked.push((format!("{{robit}}:lock:batched-{i}"), i));
    }
    reset_stats(&mut admin).await;
    let renewals = join_all(held.iter().map(|lease| lease.renew(support::TTL))).await;
    assert!(script_calls(&server).await <= 3);
    for (i, renewal) in renewals.into_iter().enumerate() {
        let expected = if i % 5 == 0 && i > 0 {
            Renewal::Lost
        } else {
            Renewal::Renewed
        };
        assert_eq!(renewal.unwrap(), expected, "grant {i}");
    }
    // A renewed grant with a waiter keeps its mark.
    for (key, _) in &marked {
        let value: String = admin.get(key).await.unwrap();
        assert!(value.ends_with(":q"), "{key}: {value}");
    }
    // The other holders' grants are as they were: none was renewed by a stale lease.
    for key in &theirs {
        let left: i64 = admin.pttl(key).await.unwrap();
        assert!(left > 50_000, "{key}: {left} ms left");
        admin.del::<_, ()>(key).await.unwrap();
    }
    reset_stats(&mut admin).await;
    for released in join_all(held.iter().map(|lease| lease.release())).await {
        released.unwrap();
    }
    assert!(script_calls(&server).await <= 3);
    // Released, each lock is free, or granted to the waiter queued behind it.
    let mut left: Vec<String> = admin.keys("{robit}:lock:*").await.unwrap();
    left.sort();
    marked.sort();
    let keys: Vec<_> = marked.iter().map(|(key, _)| key.clone()).collect();
    assert_eq!(left, keys);
    for (key, waiter) in &marked {
        let value: String = admin.get(key).await.unwrap();
        assert!(
            value.starts_with(&format!("{waiter:032x}")),
            "{key}: {value}"
        );
    }
}

#[tokio::test]
async fn a_driver_with_a_batch_cap_of_one_sends_every_call_alone() {
    let server = RedisServer::start();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(std::time::Duration::ZERO)
        .max_batch(1)
        .build()
        .unwrap();
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    reset_stats(&mut server.admin().await).await;
    let held = leases(acquire_all(&driver, &requests(1)).await);
    assert_eq!(script_calls(&server).await, CALLS as u64);
    drop(held);
}

#[test]
fn a_batch_cut_off_by_its_runtime_s_shutdown_leaves_the_driver_sending_on_another() {
    // Shut down while the lone call ahead of the batch is in flight, then while the batch
    // is.
    for cut_at in [150, 450] {
        cut_off_at(Duration::from_millis(cut_at));
    }
}

/// A runtime sends a lone acquire and, queued behind it, ten more, with every answer held
/// back 300 ms, and shuts down at `cut_at`; then another runtime's acquire must go out.
fn cut_off_at(cut_at: Duration) {
    // The proxy runs on a runtime of its own, which outlives the one cut off.
    let server = RedisServer::start();
    let proxy_runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = proxy_runtime.block_on(SlowReplies::start(server.port()));
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .build()
        .unwrap();
    let first = runtime();
    first.block_on(async {
        granted(&driver, &request("warm", 1))
            .await
            .release()
            .await
            .unwrap();
        proxy.set_reply_delay(Duration::from_millis(300));
        for request in requests(1).into_iter().take(11) {
            let driver = driver.clone();
            tokio::spawn(async move { driver.acquire(&request).await });
        }
        tokio::time::sleep(cut_at).await;
    });
    drop(first);
    proxy.set_reply_delay(Duration::ZERO);
    // Well within a command timeout (the connection the first runtime ran is gone, and
    // is replaced).
    runtime().block_on(async {
        let granted = tokio::time::timeout(Duration::from_secs(1), async {
            loop {
                if let Ok(Acquire::Granted(lease)) = driver.acquire(&request("after", 2)).await {
                    return lease;
                }
            }
        })
        .await;
        assert!(
            granted.is_ok(),
            "cut off at {cut_at:?}: no acquire went out after"
        );
    });
    drop(proxy_runtime);
}

#[tokio::test]
async fn grants_by_the_batch_s_quick_path_and_by_the_whole_script_take_tokens_in_call_order() {
    // A grant with a lock-delay runs acquire.lua's whole code inside the batch, which
    // reads and writes the counter itself, between the quick grants around it. The
    // counter is far ahead of the clock, so that every token comes from it, not from the
    // clock: a grant that read a counter the batch had not yet written back would take a
    // token already given.
    let server = RedisServer::start();
    let driver = driver(&server);
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    let mut admin = server.admin().await;
    let counter: String = admin.get("{robit}:fence").await.unwrap();
    let (token, server_id) = counter.split_at(counter.find('/').unwrap());
    let ahead = token.parse::<u64>().unwrap() + 1_000_000_000_000;
    admin
        .set::<_, _, ()>("{robit}:fence", format!("{ahead}{server_id}"))
        .await
        .unwrap();
    let requests: Vec<AcquireRequest> = requests(1)
        .into_iter()
        .take(40)
        .enumerate()
        .map(|(i, request)| {
            if i % 4 == 2 {
                request.with_lock_delay(Duration::from_millis(50))
            } else {
                request
            }
        })
        .collect();
    let held = leases(acquire_all(&driver, &requests).await);
    let tokens: Vec<u64> = held.iter().map(|lease| lease.fence().get()).collect();
    assert_eq!(tokens[0], ahead + 1);
    for pair in tokens.windows(2) {
        assert!(pair[0] < pair[1], "tokens out of call order: {tokens:?}");
    }
    let counter: String = admin.get("{robit}:fence").await.unwrap();
    let last = tokens.last().copied().unwrap_or_default();
    assert!(
        counter.starts_with(&format!("{last}/")),
        "{counter} after {last}"
    );
}

#[tokio::test]
async fn a_full_batch_goes_out_at_once_beside_the_call_in_flight() {
    // Answers held back 400 ms: while the first call waits for its answer, the calls
    // behind it fill batch after batch, and each goes out when full, not one a round trip.
    let server = RedisServer::start();
    let proxy = SlowReplies::start(server.port()).await;
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .max_batch(100)
        .build()
        .unwrap();
    granted(&driver, &request("warm", 1))
        .await
        .release()
        .await
        .unwrap();
    reset_stats(&mut server.admin().await).await;
    proxy.set_reply_delay(Duration::from_millis(400));
    let requests: Vec<AcquireRequest> = (0..1001)
        .map(|i| request(&format!("full-{i}"), 5000 + i as u128))
        .collect();
    let all = {
        let driver = driver.clone();
        tokio::spawn(async move { leases(acquire_all(&driver, &requests).await).len() })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The first call, and ten full batches behind it, before any answer came back.
    assert_eq!(script_calls(&server).await, 11);
    assert_eq!(all.await.unwrap(), 1001);
}

#[tokio::test]
async fn a_batch_carries_at_most_its_bytes_and_the_calls_beyond_go_in_the_next() {
    // 200 acquires of names of 1 KiB, each call about 2.4 KiB (the name is in two keys),
    // and a cap of 1,000 calls: the 128 KiB a batch may carry take about 53 of them, so
    // the 199 behind the first go out in four batches, not one.
    let server = RedisServer::start();
    let driver = RedisDriver::builder(&server.url())
        .quarantine(Duration::ZERO)
        .max_batch(1000)
        .build()
        .unwrap();
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .unwrap();
    reset_stats(&mut server.admin().await).await;
    let long = "n".repeat(1024);
    let requests: Vec<AcquireRequest> = (0..200)
        .map(|i| request(&format!("{i}-{long}"), 7000 + i as u128))
        .collect();
    let held = leases(acquire_all(&driver, &requests).await);
    assert_eq!(held.len(), 200);
    let calls = script_calls(&server).await;
    assert!(
        (4..=8).contains(&calls),
        "200 acquires took {calls} script calls"
    );
}

#[test]
fn a_lane_whose_call_is_stranded_on_a_runtime_nobody_drives_is_led_by_the_next_call() {
    // A current-thread runtime leaves its lead call in flight and is kept, but never
    // driven again: that call neither finishes nor is dropped. Past the connect and
    // command timeouts (600 ms here), no call can still be in flight, and the next call,
    // on another runtime, leads the lane instead of queueing behind it.
    let server = RedisServer::start();
    let proxy_runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = proxy_runtime.block_on(SlowReplies::start(server.port()));
    let driver = RedisDriver::builder(&proxy.url())
        .quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_millis(300))
        .command_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    // The driver's connection is opened on the proxy's runtime, which runs throughout.
    proxy_runtime.block_on(async {
        granted(&driver, &request("warm", 1))
            .await
            .release()
            .await
            .unwrap();
    });
    let stranded = runtime();
    stranded.block_on(async {
        proxy.set_reply_delay(Duration::from_millis(100));
        let driver = driver.clone();
        tokio::spawn(async move { driver.acquire(&request("stranded", 2)).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    proxy.set_reply_delay(Duration::ZERO);
    runtime().block_on(async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let answer = driver.acquire(&request("after", 3)).await;
        assert!(
            matches!(answer, Ok(Acquire::Granted(_))),
            "the call behind a stranded one was answered {answer:?}"
        );
    });
    drop(stranded);
    drop(proxy_runtime);
}

/// A runtime of one thread, which runs only while a test drives it.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
