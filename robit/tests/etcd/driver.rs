//! The etcd driver against a real three-member etcd cluster of the test's own
//! (`--features etcd`): grants, queueing and waking, fencing across a restart of the
//! whole cluster, and faults — the leader killed, a member frozen, the holder's link
//! frozen, the lease revoked — with every belief interval checked for overlap; users,
//! passwords and TLS; keys robit did not write. Sharing the lock among waiters is in
//! `etcd/queue.rs`.

use std::time::Duration;

use etcd_client::Permission;
use robit::driver::{Acquire, AcquireRequest, LockName, LockState, OwnerToken, Renewal, Waiter};
use robit::etcd::EtcdDriver;
use robit::{Driver, LossReason, Mutex, RefreshError, Wait};
use robit_test_support::etcd::EtcdCluster;
use robit_test_support::redis::{FAULT_TTL, FaultClients, FreezingProxy, LONG};
use tokio::time::Instant;

/// A driver on `endpoints` whose requests time out after 500 ms and whose connections
/// are pinged every 250 ms, so that a fault is seen quickly.
pub(super) fn driver(endpoints: &[String]) -> EtcdDriver {
    EtcdDriver::builder(endpoints.to_vec())
        .request_timeout(Duration::from_millis(500))
        .health_check(Duration::from_millis(250))
        .build()
        .unwrap()
}

/// A client of `cluster` for what the test does by hand, as an operator would.
pub(super) async fn admin(cluster: &EtcdCluster) -> etcd_client::Client {
    etcd_client::Client::connect(cluster.endpoints(), None)
        .await
        .unwrap()
}

/// The ids of the leases etcd has now, in order.
pub(super) async fn lease_ids(admin: &mut etcd_client::Client) -> Vec<i64> {
    let leases = admin.leases().await.unwrap();
    let mut ids: Vec<i64> = leases.leases().iter().map(|lease| lease.id()).collect();
    ids.sort_unstable();
    ids
}

fn clients(cluster: &EtcdCluster) -> FaultClients<EtcdDriver> {
    let endpoints = cluster.endpoints();
    FaultClients::new(move || driver(&endpoints))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_is_the_oldest_key_of_its_queue_and_a_release_wakes_the_next() {
    let cluster = EtcdCluster::start(3);
    let driver = driver(&cluster.endpoints());
    let mutex = Mutex::builder("job", driver.clone()).build().unwrap();
    let first = mutex.lock().await.unwrap();
    // Renewed by hand, to see the forced release below at once.
    let other = Mutex::builder("job", driver.clone())
        .ttl(FAULT_TTL)
        .watchdog(false)
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move { other.lock_with(Wait::Timeout(LONG)).await });
    let name = LockName::from("job");
    let deadline = Instant::now() + LONG;
    while driver.inspect(&name).await.unwrap().waiters == 0 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = driver.inspect(&name).await.unwrap();
    assert_eq!(
        (seen.state, seen.fence, seen.waiters),
        (LockState::Held, Some(first.fence()), 1)
    );
    assert!(
        seen.expires_in
            .is_some_and(|left| left <= Duration::from_secs(31))
    );
    assert!(
        !driver
            .force_release(&name, OwnerToken::from_u128(9))
            .await
            .unwrap()
    );
    let before = first.fence();
    first.unlock().await.unwrap();
    let second = waiting.await.unwrap().unwrap();
    assert!(second.fence() > before);
    // An operator frees the lock by force: the holder's next renewal finds it gone.
    let holder = driver.inspect(&name).await.unwrap().holder.unwrap();
    assert!(driver.force_release(&name, holder).await.unwrap());
    assert_eq!(driver.inspect(&name).await.unwrap().state, LockState::Free);
    let refreshed = second.refresh(FAULT_TTL).await;
    assert!(
        matches!(refreshed, Err(RefreshError::Lost(LossReason::NotOwner))),
        "{refreshed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_keeps_its_lease_when_the_leader_is_killed() {
    let mut cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    let leader = cluster.leader();
    cluster.kill(leader);
    clients.contend(Duration::from_secs(4)).await;
    assert!(
        clients.loss_of("a").is_none(),
        "a lost its lease to the leader's death"
    );
    clients.beliefs.end("a");
    a.unlock().await.unwrap();
    // A waiter that gave up during the fault may have left its entry behind (its
    // withdraw failed): its own driver sweeps it within about 1.5 s.
    clients.contend(Duration::from_secs(3)).await;
    clients.assert_safe_and_live("leader killed", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_leader_is_replaced_and_nobody_holds_twice() {
    let cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let fault = Instant::now();
    let leader = cluster.leader();
    cluster.pause(leader);
    clients.contend(Duration::from_secs(4)).await;
    cluster.resume(leader);
    clients.beliefs.end("a");
    let _ = a.unlock().await;
    // As when the leader is killed: a waiter's entry may be left to sweep.
    clients.contend(Duration::from_secs(3)).await;
    clients.assert_safe_and_live("leader frozen (SIGSTOP)", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_link_freezes_is_told_before_anyone_else_holds() {
    let cluster = EtcdCluster::start(3);
    let proxy = FreezingProxy::start(cluster.client_port(0)).await;
    let cut = driver(&[format!("http://127.0.0.1:{}", proxy.port())]);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder_on("a", cut).await;
    let fault = Instant::now();
    proxy.freeze();
    let others = clients.clone();
    let contend = tokio::spawn(async move { others.contend(Duration::from_secs(5)).await });
    let lost = tokio::time::timeout(LONG, a.lost_token().cancelled_owned()).await;
    assert!(lost.is_ok(), "a never learned of its loss");
    contend.await.unwrap();
    assert!(clients.loss_of("a").is_some());
    clients.assert_safe_and_live("holder's link frozen", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_and_tokens_survive_a_restart_of_the_whole_cluster() {
    let mut cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    clients.warm_up().await;
    let a = clients.holder("a").await;
    let before = a.fence();
    let fault = Instant::now();
    cluster.restart_all();
    clients.contend(Duration::from_secs(4)).await;
    clients.beliefs.end("a");
    let _ = a.unlock().await;
    clients.contend(Duration::from_secs(3)).await;
    let mutex = Mutex::builder("failover", driver(&cluster.endpoints()))
        .build()
        .unwrap();
    let after = mutex.lock().await.unwrap();
    assert!(after.fence() > before, "{} after {before}", after.fence());
    after.unlock().await.unwrap();
    clients.assert_safe_and_live("whole cluster restarted", fault);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_lease_is_a_loss_at_the_next_renewal() {
    let cluster = EtcdCluster::start(3);
    let clients = clients(&cluster);
    let a = clients.holder("a").await;
    let mut admin = etcd_client::Client::connect(cluster.endpoints(), None)
        .await
        .unwrap();
    let leases = admin.leases().await.unwrap();
    let revoked = Instant::now();
    for lease in leases.leases() {
        admin.lease_revoke(lease.id()).await.unwrap();
    }
    let deadline = Instant::now() + LONG;
    let (at, reason) = loop {
        // The on-lost callback that records it runs just after the signal.
        if let Some(loss) = clients.loss_of("a") {
            break loss;
        }
        assert!(Instant::now() < deadline, "a never learned of its loss");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    drop(a);
    eprintln!(
        "lease revoked: a told ({reason:?}) {} ms later",
        at.saturating_duration_since(revoked).as_millis()
    );
    assert_eq!(reason, LossReason::NotOwner);
    // Within one renewal interval (a third of the TTL), not at the validity deadline.
    assert!(at.saturating_duration_since(revoked) < FAULT_TTL / 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_with_the_right_password_locks_and_a_wrong_password_is_a_clear_error() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let mut admin = etcd_client::Client::connect(&endpoints, None)
        .await
        .unwrap();
    admin.user_add("root", "root-pw", None).await.unwrap();
    admin.user_grant_role("root", "root").await.unwrap();
    admin.role_add("locker").await.unwrap();
    let namespace = Permission::read_write("robit/").with_prefix();
    admin
        .role_grant_permission("locker", namespace)
        .await
        .unwrap();
    admin.user_add("app", "app-pw", None).await.unwrap();
    admin.user_grant_role("app", "locker").await.unwrap();
    admin.auth_enable().await.unwrap();

    let user = |password: &str| {
        EtcdDriver::builder(endpoints.clone())
            .user("app", password)
            .build()
            .unwrap()
    };
    user("app-pw").ping().await.unwrap();
    let refused = user("wrong").ping().await.unwrap_err();
    assert!(!refused.is_transient(), "{refused}");
    let mutex = Mutex::builder("job", user("app-pw")).build().unwrap();
    let guard = mutex.lock().await.unwrap();
    guard.unlock().await.unwrap();

    let refused = Mutex::builder("job", user("wrong")).build().unwrap();
    let err = refused
        .lock_with(Wait::Timeout(Duration::from_secs(5)))
        .await
        .unwrap_err();
    let text = format!("{err}: {:?}", std::error::Error::source(&err));
    assert!(text.contains("check the user and password"), "{text}");
    assert!(!text.contains("wrong"), "the password was printed: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(feature = "etcd-tls")]
async fn a_cluster_that_speaks_only_tls_is_reached_with_its_authority() {
    let (cluster, ca) = EtcdCluster::start_tls(1);
    let driver = EtcdDriver::builder(cluster.endpoints())
        .ca_certificate(ca)
        .build()
        .unwrap();
    driver.ping().await.unwrap();
    let mutex = Mutex::builder("job", driver).build().unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
    // Without the authority, the members' certificate is not trusted.
    let untrusted = EtcdDriver::builder(cluster.endpoints()).build().unwrap();
    assert!(untrusted.ping().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_attempt_granted_late_neither_renews_nor_releases_a_later_one_s_grant() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let (one, other) = (driver(&endpoints), driver(&endpoints));
    let name = LockName::from("job");
    let waiter = Waiter::new(7, Duration::from_millis(250));
    let attempt = |number: u32| {
        AcquireRequest::new(
            name.clone(),
            OwnerToken::from_u128(u128::from(number) + 1),
            FAULT_TTL,
        )
        .with_waiter(waiter.on_attempt(number))
    };
    // Attempt 0 is granted, but its answer reaches a Mutex that gave up on it; the same
    // waiter's later attempts go on.
    let Acquire::Granted(early) = one.acquire(&attempt(0)).await.unwrap() else {
        panic!("the free lock was not granted");
    };
    let mut late = None;
    for number in 1..4 {
        if let Acquire::Granted(lease) = one.acquire(&attempt(number)).await.unwrap() {
            late = Some(lease);
            break;
        }
    }
    let late = late.expect("a later attempt at the head was never granted");
    assert!(
        late.fence() > early.fence(),
        "{} after {}",
        late.fence(),
        early.fence()
    );
    early.release().await.unwrap();
    assert_eq!(early.renew(FAULT_TTL).await.unwrap(), Renewal::Lost);
    assert_eq!(late.renew(FAULT_TTL).await.unwrap(), Renewal::Renewed);
    let try_now =
        |owner| AcquireRequest::new(name.clone(), OwnerToken::from_u128(owner), FAULT_TTL);
    assert!(matches!(
        other.acquire(&try_now(90)).await.unwrap(),
        Acquire::Held { .. }
    ));
    late.release().await.unwrap();
    assert!(matches!(
        other.acquire(&try_now(91)).await.unwrap(),
        Acquire::Granted(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_on_an_old_lease_lives_the_ttl_from_the_acquire_not_from_the_lease_s_grant() {
    // The driver puts every entry of one TTL on one etcd lease, granted by its first
    // acquire. A later acquire must keep that lease alive for the TTL from its own send
    // (a keepalive sent with it): counted from the lease's grant, 1.2 s earlier, the
    // entry would vanish while its holder still believes in it, and a rival would take
    // the lock.
    let cluster = EtcdCluster::start(1);
    let ttl = Duration::from_secs(2);
    let beliefs = robit_test_support::kit::Beliefs::default();
    let on_lost = beliefs.clone();
    let holder = Mutex::builder("old-lease", driver(&cluster.endpoints()))
        .ttl(ttl)
        .watchdog(false)
        .on_lost(move |_| {
            on_lost.end("holder");
        })
        .build()
        .unwrap();
    let rival = Mutex::builder("old-lease", driver(&cluster.endpoints()))
        .ttl(ttl)
        .build()
        .unwrap();
    holder.lock().await.unwrap().unlock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let guard = holder.lock().await.unwrap();
    beliefs.begin("holder");
    // The rival tries until well past the holder's deadline (no renewals: the holder
    // believes until its deadline, then is told of the loss).
    let until = Instant::now() + ttl + Duration::from_secs(1);
    let mut rival_held = false;
    while Instant::now() < until {
        if let Ok(rival_guard) = rival.try_lock().await {
            beliefs.begin("rival");
            rival_held = true;
            rival_guard.unlock().await.unwrap();
            beliefs.end("rival");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    beliefs.assert_never_two_holders();
    assert!(rival_held, "the rival never got the expired lock");
    assert!(!guard.is_held());
}

/// A key at the head of a lock's queue that robit did not write is reported as foreign,
/// whether its name is not an entry's or its value is not an owner's: inspection names
/// no holder it cannot vouch for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_headed_by_a_key_robit_did_not_write_is_inspected_as_foreign() {
    let cluster = EtcdCluster::start(1);
    let driver = driver(&cluster.endpoints());
    let mut admin = admin(&cluster).await;
    let name = LockName::from("job");
    let owner = format!("{:08x}{:032x}", 1, 7);
    let entry = format!("robit/3:job/t{:032x}", 7);
    for (key, value) in [
        (entry.as_str(), "written by hand"),
        ("robit/3:job/note", owner.as_str()),
    ] {
        admin.put(key, value, None).await.unwrap();
        let seen = driver.inspect(&name).await.unwrap();
        assert_eq!(
            (seen.state, seen.holder),
            (LockState::Foreign, None),
            "{key} = {value}: {seen:?}"
        );
        admin.delete(key, None).await.unwrap();
    }
}
