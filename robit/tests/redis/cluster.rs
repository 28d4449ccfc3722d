//! The driver in cluster mode against a real Redis Cluster started by the test: three
//! masters, and three masters with a replica each, on loopback ports in temp dirs.
//!
//! A namespace's lock names spread over every master; a master that stops answering
//! holds up only its own locks; a release published on one node wakes a waiter
//! subscribed on another; a node that lost its scripts is sent them in full; a lock held through a `CLUSTER FAILOVER`, through its
//! master's death while the replica lagged, and through the migration of its slot: one
//! client holds the lock when the fault strikes, two others contend for it from then on,
//! and every belief interval is recorded and checked for overlap.
//!
//! The clients' quarantine is 5 s (at least their TTL, 2 s, as it must be) rather than
//! the default 30 s, to keep the run short. Real time throughout.

use robit_test_support::kit as common;
use robit_test_support::redis as support;

use std::time::Duration;

use common::{granted, handed, within};
use robit::driver::{Acquire, Waiter};
use robit::redis::{ClusterConnector, RedisDriver};
use robit::{Driver, Mutex};
use support::{FAULT_TTL, FaultClients, LONG, RedisCluster, request};
use tokio::time::Instant;

/// The clients' quarantine: their TTL (2 s) and some.
const QUARANTINE: Duration = Duration::from_secs(5);

/// A cluster-mode driver for `cluster`, with the failover detection as given.
pub(super) fn cluster_driver(
    cluster: &RedisCluster,
    detect: bool,
) -> RedisDriver<ClusterConnector> {
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    RedisDriver::cluster(&urls)
        .quarantine(QUARANTINE)
        .command_timeout(Duration::from_millis(500))
        .detect_failover(detect)
        .build()
        .expect("the driver builds")
}

/// The clients of a fault test, each with a cluster-mode driver of its own.
fn clients(cluster: &RedisCluster, detect: bool) -> FaultClients<RedisDriver<ClusterConnector>> {
    let urls = cluster.urls();
    FaultClients::new(move || {
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        RedisDriver::cluster(&urls)
            .quarantine(QUARANTINE)
            .detect_failover(detect)
            .build()
            .expect("the driver builds")
    })
}

/// The master whose keys include the lock `name`'s, found by taking the lock once.
async fn master_of(cluster: &RedisCluster, name: &str, detect: bool) -> u16 {
    let driver = cluster_driver(cluster, detect);
    let lease = granted(&driver, &request(name, u128::MAX)).await;
    let mut found = None;
    for port in cluster.master_ports().await {
        if !cluster
            .keys_on(port, &format!("*:lock:{name}"))
            .await
            .is_empty()
        {
            found = Some(port);
        }
    }
    lease.release().await.expect("the probe's release");
    found.unwrap_or_else(|| panic!("no master holds the lock {name:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_lock_names_of_one_namespace_land_on_every_master_of_a_three_master_cluster() {
    let cluster = RedisCluster::start(3, 0).await;
    let driver = cluster_driver(&cluster, true);
    let mut leases = Vec::new();
    for i in 0..1000 {
        leases.push(granted(&driver, &request(&format!("job-{i}"), 1)).await);
    }
    let masters = cluster.master_ports().await;
    assert_eq!(masters.len(), 3);
    let (mut locks, mut counters) = (0, 0);
    for port in masters {
        let here = cluster.keys_on(port, "{robit:*}:lock:*").await.len();
        let fences = cluster.keys_on(port, "{robit:*}:fence").await.len();
        eprintln!("master on port {port}: {here} of the 1000 locks, {fences} bucket counters");
        assert!(
            here >= 200,
            "a master holds {here} of 1000 locks, under 20 %"
        );
        locks += here;
        counters += fences;
    }
    assert_eq!(locks, 1000);
    // The grant that created the namespace created every bucket's counter.
    assert_eq!(counters, 1024);
    for lease in leases {
        lease.release().await.expect("a release");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_master_holds_up_only_the_locks_it_serves() {
    let cluster = RedisCluster::start(3, 0).await;
    let driver = cluster_driver(&cluster, true);
    let stopped = master_of(&cluster, "stuck", true).await;
    let mut elsewhere = None;
    for i in 0.. {
        let name = format!("free-{i}");
        if master_of(&cluster, &name, true).await != stopped {
            elsewhere = Some(name);
            break;
        }
    }
    let elsewhere = elsewhere.expect("a name on another master");
    // The driver's cluster connection is open before the master stops.
    let warm = granted(&driver, &request(&elsewhere, 1)).await;
    warm.release().await.expect("a release");
    cluster.node(stopped).pause();
    // A call to the stopped master waits on it, and times out ...
    let driver_for_stuck = driver.clone();
    let mut stuck =
        tokio::spawn(async move { driver_for_stuck.acquire(&request("stuck", 1)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // ... while locks on another master are granted meanwhile, and after it timed out.
    for (owner, what) in [(2, "a grant beside a stuck call"), (3, "a grant after it")] {
        let answer = within(
            Duration::from_millis(400),
            what,
            driver.acquire(&request(&elsewhere, owner)),
        )
        .await;
        let Ok(Acquire::Granted(lease)) = answer else {
            panic!("{what}: {answer:?}");
        };
        lease.release().await.expect("a release");
        if owner == 2 {
            let stuck = within(LONG, "the stuck call's timeout", &mut stuck)
                .await
                .expect("the task");
            assert!(stuck.is_err(), "a stopped master answered: {stuck:?}");
        }
    }
    cluster.node(stopped).resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_a_release_published_on_another_node_than_its_subscription() {
    let cluster = RedisCluster::start(3, 0).await;
    // A driver subscribes on the first node it is given.
    let subscribed_on = cluster.urls()[0]
        .rsplit(':')
        .next()
        .and_then(|port| port.parse::<u16>().ok())
        .expect("a port");
    let mut name = None;
    for i in 0.. {
        let candidate = format!("handed-{i}");
        if master_of(&cluster, &candidate, true).await != subscribed_on {
            name = Some(candidate);
            break;
        }
    }
    let name = name.expect("a name on another node");
    let (holding, waiting) = (
        cluster_driver(&cluster, true),
        cluster_driver(&cluster, true),
    );
    let holder = granted(&holding, &request(&name, 1)).await;
    // The waiter polls only every 20 s: a wake-up sooner is the notification's.
    let waiter = request(&name, 2).with_waiter(Waiter::new(7, LONG));
    let answer = waiting.acquire(&waiter).await;
    assert!(matches!(answer, Ok(Acquire::Held { .. })), "{answer:?}");
    let woken = waiting.watch_release(&waiter);
    within(LONG, "the hand-off subscription", async {
        while cluster
            .node(subscribed_on)
            .subscribers("robit:handoff")
            .await
            == 0
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    holder.release().await.expect("the release");
    within(Duration::from_secs(2), "the hand-off notification", woken).await;
    handed(&waiting, &waiter)
        .await
        .release()
        .await
        .expect("a release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_lost_its_scripts_is_sent_them_in_full_and_no_script_load_goes_out() {
    let cluster = RedisCluster::start(3, 0).await;
    let driver = cluster_driver(&cluster, true);
    granted(&driver, &request("scripted", 1))
        .await
        .release()
        .await
        .expect("a release");
    let masters = cluster.master_ports().await;
    for &port in &masters {
        let mut admin = cluster.node(port).admin().await;
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut admin)
            .await
            .expect("SCRIPT FLUSH");
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut admin)
            .await
            .expect("CONFIG RESETSTAT");
    }
    for i in 0..30 {
        granted(&driver, &request(&format!("scripted-{i}"), 1))
            .await
            .release()
            .await
            .expect("a release");
    }
    let mut evals = 0;
    for &port in &masters {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut cluster.node(port).admin().await)
            .await
            .expect("INFO commandstats");
        assert!(!stats.contains("cmdstat_script|load"), "{stats}");
        evals += stats
            .lines()
            .filter(|line| line.starts_with("cmdstat_eval:"))
            .count();
    }
    // Each master that served a lock was sent acquire and release in full once.
    assert!(evals > 0, "no EVAL reached any master");
}

/// `a`, holding the lock when the fault struck, renews it for three TTLs on whichever
/// master now serves it, then lets go; `b` and `c` contend from the fault on, until
/// after the quarantine that the first acquire to find the lock free starts. The bucket
/// was quarantined: nobody was granted the lock within the quarantine of `a`'s release.
async fn hold_through_then_let_go(
    clients: &FaultClients<RedisDriver<ClusterConnector>>,
    a: robit::Guard,
) {
    let contenders = {
        let clients = clients.clone();
        tokio::spawn(async move {
            clients
                .contend(FAULT_TTL * 3 + QUARANTINE + Duration::from_secs(3))
                .await;
        })
    };
    tokio::time::sleep(FAULT_TTL * 3).await;
    assert!(a.is_held(), "a lost its lease: {:?}", a.loss());
    let let_go = clients.beliefs.end("a");
    a.unlock().await.expect("a's release");
    contenders.await.expect("the contenders");
    let next = clients
        .beliefs
        .first_begun_after(let_go)
        .expect("the lock granted again");
    // A lower bound: the server refuses every grant for the quarantine, however slowly
    // the test runs (100 ms for the clocks' granularity).
    assert!(
        next - let_go >= QUARANTINE - Duration::from_millis(100),
        "granted again {:?} after a let go: no quarantine",
        next - let_go
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_through_a_cluster_failover_keeps_its_lease_and_nobody_else_holds_it() {
    let cluster = RedisCluster::start(3, 1).await;
    let clients = clients(&cluster, true);
    clients.warm_up().await;
    let master = master_of(&cluster, "failover", true).await;
    let a = clients.holder("a").await;
    cluster.fail_over(master).await;
    let fault = Instant::now();
    hold_through_then_let_go(&clients, a).await;
    clients.assert_safe_and_live("CLUSTER FAILOVER", fault);
    assert_eq!(
        clients.loss_of("a"),
        None,
        "a replica in sync kept a's grant"
    );
}

/// The TTL of the lock a master dies under: its holder's validity outlasts the replica's
/// promotion (about 2.5 s), so that only the detection can keep the lock from two
/// holders. The quarantine is at least the TTL.
const LONG_TTL: Duration = Duration::from_secs(8);

/// With detection off, the TTL is longer still: the holder's renewals (every TTL/3, and
/// after a failure every quarter of what is left) then reach the promoted replica well
/// after the others' grants, so that the overlap the detection prevents shows every time.
/// Without a quarantine, the others need not wait for one: they contend until one of
/// them is granted the lock, for at most [`UNDETECTED_CONTENTION`] after the promotion,
/// which ends well before the holder's first renewal (60 s after its grant) even on a
/// busy machine: at load 8 on two cores, 10 s once passed without a grant, and beside a
/// mutation run, 25 s.
const UNDETECTED_TTL: Duration = Duration::from_secs(180);

/// How long the others contend at most, with detection off, for a grant after the
/// promotion.
const UNDETECTED_CONTENTION: Duration = Duration::from_secs(40);

/// `a` locks while the replica of the lock's master is stopped and cut off from it (the
/// master closed the replication link), so that its grant never reaches the replica; the
/// master is then killed and the replica, resumed, promoted.
async fn lagging_master_death(
    detect: bool,
) -> (FaultClients<RedisDriver<ClusterConnector>>, Instant) {
    let mut cluster = RedisCluster::start(3, 1).await;
    let ttl = if detect { LONG_TTL } else { UNDETECTED_TTL };
    let clients = clients(&cluster, detect).with_ttl(ttl);
    clients.warm_up().await;
    let master = master_of(&cluster, "failover", detect).await;
    let replica = cluster.replicas_of(master).await[0];
    // The replica lags from here on, not before: had it missed the namespace's counter
    // (written when the buckets were created), the promoted replica would take the
    // namespace for lost and quarantine it for the TTL, with or without detection.
    cluster.wait_replica_in_sync(master, replica).await;
    cluster.node(replica).pause();
    // What the replica's kernel has received it reads when resumed: close the link
    // before the grant, so that nothing of the grant is on its way.
    let _: () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .query_async(&mut cluster.node(master).admin().await)
        .await
        .expect("the master closes its replica's link");
    let _a = clients.holder("a").await;
    let fault = Instant::now();
    cluster.kill_master_resuming(master, Some(replica)).await;
    if detect {
        clients.contend(LONG_TTL + Duration::from_secs(3)).await;
    } else {
        clients
            .contend_until_granted(fault, UNDETECTED_CONTENTION)
            .await;
        let granted = clients.beliefs.first_begun_after(fault);
        eprintln!(
            "detection off: granted again {:?} after the master was killed",
            granted.map(|at| at - fault)
        );
    }
    (clients, fault)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_dying_while_its_replica_lags_never_gives_two_holders() {
    let (clients, fault) = lagging_master_death(true).await;
    clients.assert_safe_and_live("killed master, lagging replica", fault);
    // Its renewals found the grant gone on the new master, or could not reach any
    // master before its validity deadline, whichever came first.
    assert!(
        clients.loss_of("a").is_some(),
        "a was never told of its loss"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_failover_detection_a_master_dying_while_its_replica_lags_gives_two_holders() {
    let (clients, _) = lagging_master_death(false).await;
    clients.assert_two_holders("killed master, lagging replica, detection off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_while_its_slot_migrates_keeps_its_lease_and_its_tokens_keep_rising() {
    let cluster = RedisCluster::start(3, 0).await;
    let clients = clients(&cluster, true);
    clients.warm_up().await;
    let master = master_of(&cluster, "failover", true).await;
    let before = Mutex::builder("failover", cluster_driver(&cluster, true))
        .build()
        .expect("the mutex builds");
    let first = before.lock().await.expect("the first grant");
    let first_token = first.fence();
    first.unlock().await.expect("its release");

    let a = clients.holder("a").await;
    let token_of_a = a.fence();
    assert!(token_of_a > first_token);
    let key = cluster.keys_on(master, "*:lock:failover").await;
    let slot = cluster.slot_of(&key[0]).await;
    // The bucket's counter far ahead of every clock: tokens after the migration must go
    // on from it, so it must have moved with the slot.
    let fence = String::from_utf8_lossy(&key[0]).replace(":lock:failover", ":fence");
    let mut source = cluster.node(master).admin().await;
    let counter: String = redis::cmd("GET")
        .arg(&fence)
        .query_async(&mut source)
        .await
        .expect("the bucket's counter");
    let (digits, identity) = counter.split_at(counter.find('/').expect("an identity"));
    let ahead = digits.parse::<u64>().expect("a token") + 1_000_000_000_000;
    let _: () = redis::cmd("SET")
        .arg(&fence)
        .arg(format!("{ahead}{identity}"))
        .query_async(&mut source)
        .await
        .expect("the counter set ahead");
    let target = cluster
        .master_ports()
        .await
        .into_iter()
        .find(|&port| port != master)
        .expect("another master");
    cluster.migrate_slot(slot, target).await;
    let fault = Instant::now();
    hold_through_then_let_go(&clients, a).await;
    clients.assert_safe_and_live("slot migration", fault);
    assert_eq!(clients.loss_of("a"), None, "the migration kept a's grant");
    assert_eq!(cluster.port_of_slot(slot).await, target);

    let after = before.lock().await.expect("a grant after the migration");
    assert!(
        after.fence() > token_of_a && after.fence().get() > ahead,
        "token {:?} after the migration; {token_of_a:?} before, the counter at {ahead}",
        after.fence()
    );
    after.unlock().await.expect("its release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_taken_together_in_cluster_mode_go_out_in_batches_of_one_slot_each() {
    // Three thousand names over 1,024 buckets: several share each bucket, hence a slot,
    // and their calls a batch. A batch that mixed slots would be refused (CROSSSLOT).
    let cluster = RedisCluster::start(3, 0).await;
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    // Thousands of calls at once, the first of them with each script in full: the
    // default command timeout, not the fault tests' short one.
    let driver = RedisDriver::cluster(&urls)
        .quarantine(QUARANTINE)
        .build()
        .expect("the driver builds");
    granted(&driver, &request("first", 1))
        .await
        .release()
        .await
        .expect("a release");
    let take_all = |round: &'static str| {
        let driver = driver.clone();
        async move {
            let requests: Vec<_> = (0..3000)
                .map(|i| request(&format!("{round}-{i}"), 1))
                .collect();
            let answers = futures_util::future::join_all(
                requests.iter().map(|request| driver.acquire(request)),
            )
            .await;
            let mut leases = Vec::new();
            for (i, answer) in answers.into_iter().enumerate() {
                match answer {
                    Ok(Acquire::Granted(lease)) => leases.push(lease),
                    other => panic!("{round}-{i} was answered {other:?}"),
                }
            }
            futures_util::future::join_all(leases.iter().map(|lease| lease.release())).await;
        }
    };
    // The first round sends every node every script in full.
    take_all("warm").await;
    let masters = cluster.master_ports().await;
    for &port in &masters {
        crate::driver::reset_stats(&mut cluster.node(port).admin().await).await;
    }
    take_all("together").await;
    // Acquires and releases: 6,000 calls, in about two script calls a bucket each.
    let mut calls = 0;
    for &port in &masters {
        let counts = crate::driver::commands_run(&mut cluster.node(port).admin().await).await;
        calls += ["evalsha", "eval"]
            .iter()
            .filter_map(|name| counts.get(*name))
            .sum::<u64>();
    }
    assert!(calls < 4500, "6,000 calls took {calls} script calls");
}
