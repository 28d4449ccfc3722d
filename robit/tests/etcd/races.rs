//! Every compare in the etcd driver's transactions, attacked by the interleaving it
//! guards against, on a one-member etcd cluster of the test's own (`--features etcd`).
//!
//! Each test drives the driver's API (`Driver`, `Lease`) directly, one step at a time,
//! and makes the racing state with a second driver or a raw etcd client: an attempt of a
//! waiter that arrives after a later one of the same waiter was granted is sent from a
//! driver that stands for it, with what the real one would have known when it sent it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use etcd_client::{GetOptions, KeyValue};
use robit::Driver;
use robit::driver::{
    Acquire, AcquireRequest, Lease, LockName, LockState, OwnerToken, Renewal, Waiter,
};
use robit::etcd::EtcdDriver;
use robit_test_support::etcd::EtcdCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

use super::driver::{admin, lease_ids};

/// Every lock's TTL here: long enough that no lease lapses during a test.
const TTL: Duration = Duration::from_secs(5);

/// A waiter's poll interval.
const POLL: Duration = Duration::from_millis(50);

fn driver(endpoints: &[String]) -> EtcdDriver {
    EtcdDriver::builder(endpoints.to_vec())
        .request_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

/// The owner token of `waiter`'s attempt `attempt`: fresh for every attempt.
fn owner(waiter: u128, attempt: u32) -> OwnerToken {
    OwnerToken::from_u128((waiter << 32) | u128::from(attempt))
}

/// Attempt `attempt` of the waiting `lock()` call `waiter`.
fn waiting(name: &LockName, waiter: u128, attempt: u32) -> AcquireRequest {
    AcquireRequest::new(name.clone(), owner(waiter, attempt), TTL)
        .with_waiter(Waiter::new(waiter, POLL).on_attempt(attempt))
}

/// A single try by `owner`.
fn trying(name: &LockName, owner: u128) -> AcquireRequest {
    AcquireRequest::new(name.clone(), OwnerToken::from_u128(owner), TTL)
}

async fn granted(driver: &EtcdDriver, request: &AcquireRequest) -> Arc<dyn Lease> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Granted(lease) => lease,
        _ => panic!("not granted: {request:?}"),
    }
}

async fn not_granted(driver: &EtcdDriver, request: &AcquireRequest, why: &str) {
    if let Acquire::Granted(lease) = driver.acquire(request).await.unwrap() {
        panic!("{why}: granted with token {}", lease.fence());
    }
}

/// The key of `waiter`'s entry in `name`'s queue (driver's default namespace).
fn key(name: &LockName, waiter: u128) -> String {
    format!("robit/{}:{}/w{waiter:032x}", name.as_bytes().len(), name)
}

async fn entry(admin: &mut etcd_client::Client, key: &str) -> Option<KeyValue> {
    let mut read = admin.get(key, None).await.unwrap();
    read.take_kvs().into_iter().next()
}

/// How many entries are in `name`'s queue.
async fn queued(admin: &mut etcd_client::Client, name: &LockName) -> usize {
    let prefix = format!("robit/{}:{}/", name.as_bytes().len(), name);
    let options = GetOptions::new().with_prefix().with_count_only();
    let read = admin.get(prefix, Some(options)).await.unwrap();
    usize::try_from(read.count()).unwrap()
}

/// The claim's `value < this attempt's` (and the outer `entry absent`): an attempt that
/// reaches etcd after a later attempt of the same waiter was granted — with the entry's
/// create revision in hand, so that it tries to claim, or without — neither takes the
/// grant over nor is granted itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_s_attempt_that_arrives_after_a_later_one_was_granted_takes_nothing_from_it() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let (holder, one, late) = (driver(&endpoints), driver(&endpoints), driver(&endpoints));
    let name = LockName::from("job");
    let held = granted(&holder, &trying(&name, 1)).await;
    // Attempt 0 queues waiter 7 behind the holder. `late` stands for its attempt 1: it
    // read where the entry is, so it sends a claim; its answer is lost on the way.
    not_granted(&one, &waiting(&name, 7, 0), "granted behind the holder").await;
    not_granted(&late, &waiting(&name, 7, 1), "granted behind the holder").await;
    held.release().await.unwrap();
    // Attempt 2 finds the entry at the head and claims it.
    let grant = granted(&one, &waiting(&name, 7, 2)).await;
    // Attempt 1 reaches etcd only now: as a claim with the entry's create revision...
    not_granted(
        &late,
        &waiting(&name, 7, 1),
        "an earlier attempt arriving late took over a later one's grant",
    )
    .await;
    // ... and as a first write, from a driver that no longer knows the entry.
    not_granted(
        &one,
        &waiting(&name, 7, 1),
        "an earlier attempt arriving late rewrote the entry",
    )
    .await;
    assert_eq!(grant.renew(TTL).await.unwrap(), Renewal::Renewed);
    let seen = one.inspect(&name).await.unwrap();
    assert_eq!(
        (seen.holder, seen.fence),
        (Some(owner(7, 2)), Some(grant.fence()))
    );
    grant.release().await.unwrap();
    assert_eq!(one.inspect(&name).await.unwrap().state, LockState::Free);
}

/// The claim's `entry created at the revision this driver knows` and `no entry older`:
/// a waiter's attempt rewrites its entry only at the head of the queue — not behind the
/// holder, and not when its entry went and came back behind a younger waiter. And a
/// withdraw's `entry exists`: the withdrawn entry is gone when the withdraw returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_rewrites_its_entry_only_at_the_head_and_a_withdraw_deletes_it() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let mut admin = admin(&cluster).await;
    let (holder, one, other, late) = (
        driver(&endpoints),
        driver(&endpoints),
        driver(&endpoints),
        driver(&endpoints),
    );
    let name = LockName::from("job");
    let seven = key(&name, 7);
    let held = granted(&holder, &trying(&name, 1)).await;
    not_granted(&one, &waiting(&name, 7, 0), "granted behind the holder").await;
    let first = entry(&mut admin, &seven).await.unwrap();
    // Attempts 1 and 2 know the entry's create revision; it is not at the head.
    for attempt in 1..3 {
        not_granted(
            &one,
            &waiting(&name, 7, attempt),
            "granted behind the holder",
        )
        .await;
    }
    let now = entry(&mut admin, &seven).await.unwrap();
    assert_eq!(
        (now.mod_revision(), now.value_str().unwrap()),
        (first.mod_revision(), first.value_str().unwrap()),
        "an attempt behind the holder rewrote its entry"
    );
    // The entry goes (its lease lapsed, or a sweep took it), waiter 8 queues, and an
    // attempt of waiter 7 dropped on its way writes the entry again, behind waiter 8.
    admin.delete(seven.as_str(), None).await.unwrap();
    not_granted(&other, &waiting(&name, 8, 0), "granted behind the holder").await;
    not_granted(&late, &waiting(&name, 7, 0), "granted behind the holder").await;
    held.release().await.unwrap();
    // Waiter 8 is at the head; `one` still knows the old entry's create revision, and
    // every entry in the queue is younger than that.
    let again = entry(&mut admin, &seven).await.unwrap();
    not_granted(&one, &waiting(&name, 7, 3), "granted behind waiter 8").await;
    let now = entry(&mut admin, &seven).await.unwrap();
    assert_eq!(
        (now.mod_revision(), now.value_str().unwrap()),
        (again.mod_revision(), again.value_str().unwrap()),
        "an attempt claimed an entry behind another waiter's"
    );
    let eight = granted(&other, &waiting(&name, 8, 1)).await;
    one.withdraw(&waiting(&name, 7, 4)).await.unwrap();
    assert!(
        entry(&mut admin, &seven).await.is_none(),
        "the withdrawn entry is still queued"
    );
    eight.release().await.unwrap();
    assert_eq!(queued(&mut admin, &name).await, 0);
}

/// The sweep's `value not larger than the recorded one`: entries whose caller went
/// away are deleted — the one its last attempt wrote, and the one an attempt that wrote
/// nothing left with an earlier value — while an entry that a later attempt of the same
/// waiter claimed after the sweeper last saw it keeps its grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_deletes_forgotten_entries_and_spares_one_a_later_attempt_claimed() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let mut admin = admin(&cluster).await;
    // Its waiters count as gone 4 polls and a request timeout (400 ms) after an attempt.
    let sweeper = EtcdDriver::builder(endpoints.clone())
        .request_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let (holder, other) = (driver(&endpoints), driver(&endpoints));
    let (solo, job) = (LockName::from("solo"), LockName::from("job"));
    // On `solo`, the sweeper knows only waiter 3's attempt 0 (queued behind a holder);
    // a later attempt, from `other`, is granted once the holder leaves: the sweep that
    // races it was chosen before it.
    let held = granted(&holder, &trying(&solo, 1)).await;
    not_granted(&sweeper, &waiting(&solo, 3, 0), "granted behind the holder").await;
    not_granted(&other, &waiting(&solo, 3, 1), "granted behind the holder").await;
    held.release().await.unwrap();
    let claimed = granted(&other, &waiting(&solo, 3, 2)).await;
    // On `job`, behind a holder: waiter 1 after one attempt, and waiter 2 after two, the
    // second of which wrote nothing (the entry holds a smaller value than recorded).
    let _held = granted(&holder, &trying(&job, 2)).await;
    not_granted(&sweeper, &waiting(&job, 1, 0), "granted behind the holder").await;
    not_granted(&sweeper, &waiting(&job, 2, 0), "granted behind the holder").await;
    not_granted(&sweeper, &waiting(&job, 2, 1), "granted behind the holder").await;
    // Then they all go away. The sweeper's own renewals sweep, once their time is up.
    let poke = granted(&sweeper, &trying(&LockName::from("poke"), 9)).await;
    let (one, two) = (key(&job, 1), key(&job, 2));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = (
            entry(&mut admin, &one).await.is_some(),
            entry(&mut admin, &two).await.is_some(),
        );
        if left == (false, false) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "forgotten entries never swept (waiter 1's, waiter 2's left: {left:?})"
        );
        assert_eq!(poke.renew(TTL).await.unwrap(), Renewal::Renewed);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every sweep since waiter 3 went stale raced its grant; the grant stands.
    assert_eq!(
        claimed.renew(TTL).await.unwrap(),
        Renewal::Renewed,
        "the sweep deleted a grant made after it chose its entries"
    );
    let seen = other.inspect(&solo).await.unwrap();
    assert_eq!(
        (seen.holder, seen.fence),
        (Some(owner(3, 2)), Some(claimed.fence()))
    );
}

/// The keepalive sent with an acquire and with a renewal: when it finds the driver's
/// etcd lease gone, neither counts, though the entry still reads as the grant's — as
/// between a lease's expiry and its revocation, when etcd still serves its keys but
/// answers its keepalives "not found". Made here by an entry on another lease: the same
/// attempt sent first from `first` (whose lease the entry is on), then from `second`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neither_an_acquire_nor_a_renewal_counts_when_its_keepalive_finds_the_lease_gone() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let mut admin = admin(&cluster).await;
    let (first, second) = (driver(&endpoints), driver(&endpoints));
    let name = LockName::from("job");
    // `second`'s lease, granted by a lock taken and released.
    let warm = granted(&second, &trying(&LockName::from("warm"), 1)).await;
    warm.release().await.unwrap();
    let seconds = lease_ids(&mut admin).await;
    let request = waiting(&name, 9, 0);
    let _on_first = granted(&first, &request).await;
    let firsts: Vec<i64> = lease_ids(&mut admin)
        .await
        .into_iter()
        .filter(|id| !seconds.contains(id))
        .collect();
    // The acquire's keepalive finds `second`'s lease gone: the attempt starts again on a
    // new lease, and that grant renews.
    for &id in &seconds {
        admin.lease_revoke(id).await.unwrap();
    }
    let grant = granted(&second, &request).await;
    assert_eq!(
        grant.renew(TTL).await.unwrap(),
        Renewal::Renewed,
        "granted on a lease its keepalive found gone"
    );
    // Now that lease goes too; the entry stays, on `first`'s lease, as the grant's.
    for id in lease_ids(&mut admin).await {
        if !firsts.contains(&id) {
            admin.lease_revoke(id).await.unwrap();
        }
    }
    let kept = entry(&mut admin, &key(&name, 9)).await.unwrap();
    assert_eq!(
        u64::try_from(kept.mod_revision()).unwrap(),
        grant.fence().get()
    );
    assert_eq!(
        grant.renew(TTL).await.unwrap(),
        Renewal::Lost,
        "renewed though the keepalive found the lease gone"
    );
}

/// A TCP proxy in front of one etcd member that, once armed, lets the client's next
/// request through and the answer back, then holds everything the client sends until
/// let go: whatever the test does meanwhile happens between the two requests of one
/// driver call.
struct HoldingProxy {
    port: u16,
    armed: Arc<AtomicBool>,
    asked: Arc<AtomicBool>,
    holding: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl HoldingProxy {
    async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (armed, asked) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (holding, _) = watch::channel(false);
        let (armed_too, asked_too, holding_too) =
            (Arc::clone(&armed), Arc::clone(&asked), holding.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let (armed, asked) = (Arc::clone(&armed_too), Arc::clone(&asked_too));
                let holding = holding_too.clone();
                let asked_up = Arc::clone(&asked);
                let mut held = holding.subscribe();
                tokio::spawn(async move {
                    let mut buffer = vec![0_u8; 16 * 1024];
                    loop {
                        let Ok(read) = client_read.read(&mut buffer).await else {
                            return;
                        };
                        if read == 0 {
                            return;
                        }
                        if held.wait_for(|holding| !holding).await.is_err() {
                            return;
                        }
                        asked_up.store(true, Ordering::SeqCst);
                        if server_write.write_all(&buffer[..read]).await.is_err() {
                            return;
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buffer = vec![0_u8; 16 * 1024];
                    loop {
                        let Ok(read) = server_read.read(&mut buffer).await else {
                            return;
                        };
                        if read == 0 {
                            return;
                        }
                        // The first answer after a request sent since arming: hold what
                        // the client sends from now on, before it can see the answer.
                        if asked.load(Ordering::SeqCst) && armed.swap(false, Ordering::SeqCst) {
                            holding.send_replace(true);
                        }
                        if client_write.write_all(&buffer[..read]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            port,
            armed,
            asked,
            holding,
            task,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Holds the client's requests once its next request is answered.
    fn arm(&self) {
        self.asked.store(false, Ordering::SeqCst);
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Waits until the proxy holds the client's requests.
    async fn holding(&self) {
        let mut holding = self.holding.subscribe();
        let held = tokio::time::timeout(Duration::from_secs(5), holding.wait_for(|held| *held));
        assert!(matches!(held.await, Ok(Ok(_))), "the answer never came");
    }

    fn let_go(&self) {
        self.holding.send_replace(false);
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A forced release's `entry unchanged since it was read`: an operator frees a waiter's
/// entry that reached the head with its first attempt's value (the owner that `inspect`
/// names); between the release's read and its delete, the waiter's next attempt claims
/// the entry and is granted. The forced release must not delete that newer grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_release_never_frees_a_grant_made_after_it_read_the_queue() {
    let cluster = EtcdCluster::start(1);
    let endpoints = cluster.endpoints();
    let proxy = HoldingProxy::start(cluster.client_port(0)).await;
    // No health-check pings on the operator's connection while the test holds it.
    let operator = EtcdDriver::builder([proxy.endpoint()])
        .request_timeout(Duration::from_secs(10))
        .health_check(Duration::from_secs(60))
        .build()
        .unwrap();
    operator.ping().await.unwrap();
    let (holder, one) = (driver(&endpoints), driver(&endpoints));
    let name = LockName::from("job");
    let held = granted(&holder, &trying(&name, 1)).await;
    not_granted(&one, &waiting(&name, 7, 0), "granted behind the holder").await;
    held.release().await.unwrap();
    // Waiter 7's entry is at the head with attempt 0's value: the holder, says inspect.
    let stale = operator.inspect(&name).await.unwrap();
    assert_eq!(stale.holder, Some(owner(7, 0)));
    proxy.arm();
    let forcing = {
        let operator = operator.clone();
        let name = name.clone();
        tokio::spawn(async move { operator.force_release(&name, owner(7, 0)).await })
    };
    proxy.holding().await;
    // Between the forced release's read and its delete: attempt 1 claims the entry.
    let grant = granted(&one, &waiting(&name, 7, 1)).await;
    proxy.let_go();
    let freed = forcing.await.unwrap().unwrap();
    assert_eq!(
        grant.renew(TTL).await.unwrap(),
        Renewal::Renewed,
        "a forced release for attempt 0 freed attempt 1's grant"
    );
    assert!(!freed, "a forced release said it freed a holder it did not");
    grant.release().await.unwrap();
}
