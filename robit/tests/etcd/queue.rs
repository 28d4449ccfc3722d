//! The etcd driver's queue against a real three-member etcd cluster of the test's own
//! (`--features etcd`): waiters with a driver each share the lock fairly, and keep their
//! turns and increasing tokens while the history they watch is compacted under them; a
//! waiter that polls slowly keeps its place between its attempts; only the waiter
//! directly behind a release wakes.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use etcd_client::CompactionOptions;
use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken, ReleaseWatch, Renewal, Waiter};
use robit::etcd::EtcdDriver;
use robit::{Driver, Mutex, Wait};
use robit_test_support::etcd::EtcdCluster;
use robit_test_support::kit::Beliefs;
use robit_test_support::redis::LONG;
use tokio::time::Instant;

/// A driver on `endpoints` whose requests time out after 500 ms.
fn driver(endpoints: &[String]) -> EtcdDriver {
    EtcdDriver::builder(endpoints.to_vec())
        .request_timeout(Duration::from_millis(500))
        .health_check(Duration::from_millis(250))
        .build()
        .unwrap()
}

/// Locks and unlocks `name` from `clients` tasks, each with a driver of its own, for
/// `time`, holding `hold` each time; returns how often each got it, with every belief
/// and every fencing token recorded in `beliefs` and `fences`.
async fn share(
    endpoints: &[String],
    clients: usize,
    time: Duration,
    hold: Duration,
    beliefs: &Beliefs,
    fences: &Arc<StdMutex<Vec<(Instant, u64)>>>,
) -> Vec<u32> {
    const WHO: [&str; 4] = ["p", "q", "r", "s"];
    let until = Instant::now() + time;
    let tasks: Vec<_> = WHO[..clients]
        .iter()
        .map(|&who| {
            let mutex = Mutex::builder("shared", driver(endpoints)).build().unwrap();
            let (beliefs, fences) = (beliefs.clone(), Arc::clone(fences));
            tokio::spawn(async move {
                let mut count = 0_u32;
                while Instant::now() < until {
                    if let Ok(guard) = mutex.lock_with(Wait::Timeout(LONG)).await {
                        beliefs.begin(who);
                        fences
                            .lock()
                            .unwrap()
                            .push((Instant::now(), guard.fence().get()));
                        count += 1;
                        tokio::time::sleep(hold).await;
                        beliefs.end(who);
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
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_share_the_lock_fairly() {
    let cluster = EtcdCluster::start(3);
    let (beliefs, fences) = (Beliefs::default(), Arc::default());
    let time = Duration::from_secs(3);
    let counts = share(
        &cluster.endpoints(),
        4,
        time,
        Duration::from_millis(5),
        &beliefs,
        &fences,
    )
    .await;
    eprintln!("4 waiters, a driver each, for 3 s: {counts:?} locks each");
    beliefs.assert_never_two_holders();
    let mean = counts.iter().sum::<u32>() / 4;
    assert!(mean > 0);
    assert!(
        counts.iter().all(|&count| count * 2 >= mean),
        "a waiter got less than half the mean: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_keep_their_turns_while_the_history_they_watch_is_compacted() {
    let cluster = EtcdCluster::start(3);
    let endpoints = cluster.endpoints();
    let mut admin = etcd_client::Client::connect(&endpoints, None)
        .await
        .unwrap();
    // Compacts the whole history, physically, every 10 ms: a waiter's watch then often
    // starts at a revision already compacted away.
    let compactions = tokio::spawn(async move {
        let mut done = 0_u32;
        loop {
            let put = admin.put("noise", "x", None).await.unwrap();
            let revision = put.header().unwrap().revision();
            let physical = Some(CompactionOptions::new().with_physical());
            admin.compact(revision, physical).await.unwrap();
            done += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            if done == u32::MAX {
                return;
            }
        }
    });
    let (beliefs, fences) = (Beliefs::default(), Arc::default());
    let time = Duration::from_secs(3);
    let counts = share(
        &endpoints,
        3,
        time,
        Duration::from_millis(20),
        &beliefs,
        &fences,
    )
    .await;
    compactions.abort();
    eprintln!("3 waiters for 3 s, the history compacted every 10 ms: {counts:?} locks each");
    beliefs.assert_never_two_holders();
    assert!(counts.iter().all(|&count| count >= 5), "{counts:?}");
    let mut fences = fences.lock().unwrap().clone();
    fences.sort();
    for pair in fences.windows(2) {
        assert!(
            pair[1].1 > pair[0].1,
            "token {} after {}",
            pair[1].1,
            pair[0].1
        );
    }
}

/// A waiter that polls every 2 s keeps its entry, and so its place in the queue, for four
/// of its poll intervals after an attempt, though the driver sweeps the entries of
/// callers that went away at every renewal meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_polls_slowly_keeps_its_place_between_its_attempts() {
    let cluster = EtcdCluster::start(1);
    let driver = driver(&cluster.endpoints());
    let name = LockName::from("job");
    let ttl = Duration::from_secs(5);
    let holding = AcquireRequest::new(name.clone(), OwnerToken::from_u128(1), ttl);
    let Acquire::Granted(holder) = driver.acquire(&holding).await.unwrap() else {
        panic!("the holder was not granted");
    };
    let poll = Duration::from_secs(2);
    let waiting = AcquireRequest::new(name.clone(), OwnerToken::from_u128(2), ttl)
        .with_waiter(Waiter::new(2, poll));
    let answer = driver.acquire(&waiting).await.unwrap();
    assert!(matches!(answer, Acquire::Held { .. }), "{answer:?}");
    // A poll interval and more goes by without the waiter's next attempt; each renewal
    // sweeps what is past its time.
    let until = Instant::now() + poll + Duration::from_millis(500);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(holder.renew(ttl).await.unwrap(), Renewal::Renewed);
    }
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(
        seen.waiters, 1,
        "the slow waiter's entry was swept: {seen:?}"
    );
    holder.release().await.unwrap();
    let answer = driver.acquire(&waiting).await.unwrap();
    let Acquire::Granted(next) = answer else {
        panic!("the waiter lost its turn: {answer:?}");
    };
    next.release().await.unwrap();
}

/// Whether `watch` completes within half a second.
async fn wakes_soon(watch: &mut ReleaseWatch) -> bool {
    tokio::time::timeout(Duration::from_millis(500), watch)
        .await
        .is_ok()
}

/// A waiter's watch wakes it when the entry just ahead of it goes, and not before: not
/// while the lock is held, and not when a release further ahead leaves its own turn to
/// come. Its poll interval (a minute) is far longer than the test, so only the watch can
/// wake it in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_waiter_directly_behind_a_release_wakes_and_only_then() {
    let cluster = EtcdCluster::start(1);
    let driver = driver(&cluster.endpoints());
    let name = LockName::from("job");
    let ttl = Duration::from_secs(10);
    let request = |owner: u128| {
        AcquireRequest::new(name.clone(), OwnerToken::from_u128(owner), ttl)
            .with_waiter(Waiter::new(owner, Duration::from_secs(60)))
    };
    let Acquire::Granted(holder) = driver.acquire(&request(1)).await.unwrap() else {
        panic!("the holder was not granted");
    };
    let (first, second) = (request(2), request(3));
    for waiter in [&first, &second] {
        let answer = driver.acquire(waiter).await.unwrap();
        assert!(matches!(answer, Acquire::Held { .. }), "{answer:?}");
    }
    let mut first_woken = driver.watch_release(&first);
    let mut second_woken = driver.watch_release(&second);
    assert!(
        !wakes_soon(&mut first_woken).await,
        "woken while the lock is held"
    );
    assert!(
        !wakes_soon(&mut second_woken).await,
        "woken while the lock is held"
    );
    holder.release().await.unwrap();
    tokio::time::timeout(LONG, &mut first_woken)
        .await
        .expect("the first waiter was not woken by the release ahead of it");
    assert!(
        !wakes_soon(&mut second_woken).await,
        "the second waiter woke while the first is still ahead of it"
    );
    let Acquire::Granted(next) = driver.acquire(&first).await.unwrap() else {
        panic!("the first waiter, woken, was not granted");
    };
    next.release().await.unwrap();
    tokio::time::timeout(LONG, &mut second_woken)
        .await
        .expect("the second waiter was not woken by the release ahead of it");
    let Acquire::Granted(last) = driver.acquire(&second).await.unwrap() else {
        panic!("the second waiter, woken, was not granted");
    };
    last.release().await.unwrap();
}
