//! When the watchdog runs. Over a lease with no loss signal of its own (Redis's), a
//! mutex in steady use does not wake its watchdog at the start of a hold: the watchdog
//! looks by itself once a renew period, which is before any new hold's first renew is
//! due. A short hold then costs no watchdog run; a long one is renewed on time.

use robit_test_support::kit as common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{alive_tasks, settle};
use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, ReleaseWatch, Renewal};
use robit::sources::Clock;
use robit::{Driver, FenceToken, Guard, LocalDriver, Locker, Mutex};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(3);
/// The default renew period: a third of the TTL.
const PERIOD: Duration = Duration::from_secs(1);

/// When each renewal was sent.
#[derive(Debug, Default)]
struct Renewals(StdMutex<Vec<Instant>>);

impl Renewals {
    fn push(&self, at: Instant) {
        self.0.lock().unwrap().push(at);
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// How many renewals went out at each instant.
    fn by_instant(&self) -> BTreeMap<Instant, usize> {
        let mut by = BTreeMap::new();
        for at in self.0.lock().unwrap().iter() {
            *by.entry(*at).or_default() += 1;
        }
        by
    }
}

/// The local driver, its leases saying they have no loss signal, as Redis's do.
#[derive(Debug, Clone)]
struct Silent {
    local: LocalDriver,
    renews: Arc<Renewals>,
}

struct SilentLease {
    inner: Arc<dyn Lease>,
    renews: Arc<Renewals>,
}

#[robit::driver::async_trait]
impl Driver for Silent {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        Ok(match self.local.acquire(request).await? {
            Acquire::Granted(inner) => Acquire::Granted(Arc::new(SilentLease {
                inner,
                renews: Arc::clone(&self.renews),
            })),
            held => held,
        })
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        self.local.watch_release(request)
    }
}

#[robit::driver::async_trait]
impl Lease for SilentLease {
    fn fence(&self) -> FenceToken {
        self.inner.fence()
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        self.renews.push(Instant::now());
        self.inner.renew(ttl).await
    }

    async fn release(&self) -> Result<(), DriverError> {
        self.inner.release().await
    }

    fn signals_loss(&self) -> bool {
        false
    }
}

/// tokio's time, counting the sleeps that were waited on. With a driver that answers at
/// once, only the watchdog's own timer — armed each time it goes idle or watches a hold
/// — is ever polled, so the count says how often the watchdog ran.
#[derive(Debug, Default)]
struct CountingClock {
    sleeps: AtomicUsize,
}

#[robit::driver::async_trait]
impl Clock for CountingClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    async fn sleep_until(&self, deadline: Instant) {
        self.sleeps.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep_until(deadline).await;
    }
}

struct Fixture {
    mutex: Mutex,
    clock: Arc<CountingClock>,
    renews: Arc<Renewals>,
}

impl Fixture {
    fn new() -> Self {
        let clock = Arc::new(CountingClock::default());
        let renews = Arc::new(Renewals::default());
        let driver = Silent {
            local: LocalDriver::new(),
            renews: Arc::clone(&renews),
        };
        let mutex = Mutex::builder("watched", driver)
            .ttl(TTL)
            .clock(Arc::clone(&clock) as Arc<dyn Clock>)
            .build()
            .unwrap();
        Self {
            mutex,
            clock,
            renews,
        }
    }

    fn watchdog_runs(&self) -> usize {
        self.clock.sleeps.load(Ordering::SeqCst)
    }

    fn renews(&self) -> usize {
        self.renews.count()
    }

    /// One hold the watchdog takes up, so that it is running and idle afterwards.
    async fn start_watchdog(&self) {
        let guard = self.mutex.lock().await.unwrap();
        settle().await;
        guard.unlock().await.unwrap();
        settle().await;
    }
}

#[tokio::test(start_paused = true)]
async fn short_holds_over_a_lease_without_a_loss_signal_never_run_the_watchdog() {
    let fixture = Fixture::new();
    fixture.start_watchdog().await;
    let runs = fixture.watchdog_runs();
    assert!(runs > 0, "the watchdog never ran");
    for _ in 0..100 {
        let guard = fixture.mutex.lock().await.unwrap();
        settle().await;
        guard.unlock().await.unwrap();
        settle().await;
    }
    assert_eq!(
        fixture.watchdog_runs(),
        runs,
        "the watchdog ran for short holds"
    );
    assert_eq!(fixture.mutex.stats().acquired, 101);
}

#[tokio::test(start_paused = true)]
async fn a_long_hold_the_watchdog_was_not_woken_for_is_renewed_on_time() {
    let fixture = Fixture::new();
    fixture.start_watchdog().await;
    // Half a period into the watchdog's idle wait: it looks by itself in half a period,
    // before this hold's first renew is due.
    tokio::time::sleep(PERIOD / 2).await;
    let runs = fixture.watchdog_runs();
    let guard = fixture.mutex.lock().await.unwrap();
    let sent = Instant::now();
    settle().await;
    assert_eq!(
        fixture.watchdog_runs(),
        runs,
        "woken at the start of the hold"
    );

    tokio::time::sleep_until(sent + PERIOD - Duration::from_millis(1)).await;
    assert_eq!(fixture.renews(), 0, "renewed early");
    tokio::time::sleep_until(sent + PERIOD + Duration::from_millis(1)).await;
    assert_eq!(fixture.renews(), 1, "the first renew is late");
    tokio::time::sleep(TTL * 4).await;
    assert!(guard.is_held());
    assert!(fixture.renews() >= 12, "{:?}", fixture.mutex.stats());
    assert_eq!(fixture.mutex.stats().lost, 0);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unused_mutex_s_watchdog_arms_no_timer_per_period_and_still_renews_its_next_hold() {
    let fixture = Fixture::new();
    fixture.start_watchdog().await;
    let runs = fixture.watchdog_runs();
    tokio::time::sleep(PERIOD * 20).await;
    // It looks once, a period after the last hold, finds that none started in that
    // period, and waits to be woken from then on: no timer armed again.
    assert_eq!(
        fixture.watchdog_runs(),
        runs,
        "the idle watchdog kept ticking: {} timers over 20 periods",
        fixture.watchdog_runs() - runs
    );

    // Woken again by the next hold, which it renews on time.
    let guard = fixture.mutex.lock().await.unwrap();
    let sent = Instant::now();
    tokio::time::sleep_until(sent + PERIOD + Duration::from_millis(1)).await;
    assert_eq!(fixture.renews(), 1);
    tokio::time::sleep(TTL * 4).await;
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_hold_started_right_after_an_unlock_the_watchdog_saw_is_renewed_on_time() {
    let fixture = Fixture::new();
    // The watchdog watches the first hold; the next starts just after its unlock,
    // before the watchdog has looked again (the unlock's wake is still pending).
    let guard = fixture.mutex.lock().await.unwrap();
    settle().await;
    guard.unlock().await.unwrap();
    let guard = fixture.mutex.lock().await.unwrap();
    let sent = Instant::now();
    tokio::time::sleep_until(sent + PERIOD + Duration::from_millis(1)).await;
    assert_eq!(fixture.renews(), 1, "the first renew is late");
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cap_shorter_than_the_renew_period_is_kept_on_a_mutex_used_again() {
    // A renew period of 10 s: the watchdog, idle after the first hold, would take the
    // second one up only when its first renewal is due, were it not woken for the cap.
    let driver = Silent {
        local: LocalDriver::new(),
        renews: Arc::default(),
    };
    let mutex = Mutex::builder("watched", driver)
        .ttl(Duration::from_secs(30))
        .max_hold(Duration::from_secs(2))
        .build()
        .unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
    settle().await;
    let started = Instant::now();
    let guard = mutex.lock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), guard.lost())
        .await
        .unwrap();
    assert_eq!(Instant::now(), started + Duration::from_secs(2));
    assert_eq!(guard.loss(), Some(robit::LossReason::HoldCapReached));
}

/// `holds` locks, `held-0` … , taken at once through one `Locker` over [`Silent`]; and
/// when each renewal went out.
async fn held_through_a_locker(holds: usize) -> (Locker, Vec<Guard>, Arc<Renewals>) {
    let renews = Arc::new(Renewals::default());
    let driver = Silent {
        local: LocalDriver::new(),
        renews: Arc::clone(&renews),
    };
    let locker = Locker::builder(driver).ttl(TTL).build().unwrap();
    let mut guards = Vec::with_capacity(holds);
    for name in 0..holds {
        guards.push(locker.lock(format!("held-{name}")).await.unwrap());
    }
    (locker, guards, renews)
}

#[tokio::test(start_paused = true)]
async fn a_thousand_holds_through_one_locker_are_renewed_by_one_task_that_ends_with_it() {
    const HOLDS: usize = 1000;
    let (locker, guards, renews) = held_through_a_locker(HOLDS).await;
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(alive_tasks(), 1, "a task per hold, not one for all");
    assert!(guards.iter().all(Guard::is_held));
    // Renewed every period: five renewals before two TTLs are up (the sixth is due at
    // that instant).
    let renewed = renews.count();
    assert!(renewed >= HOLDS * 5, "{renewed} renewals");
    assert_eq!(locker.stats().lost, 0);

    drop(guards);
    drop(locker);
    // The guards' releases run in tasks of their own, each within the renew timeout.
    tokio::time::sleep(TTL).await;
    assert_eq!(alive_tasks(), 0, "a task outlived its locker");
}

#[tokio::test(start_paused = true)]
async fn holds_taken_together_renew_spread_over_the_half_period_before_they_are_due() {
    // More than the half period's steps take: the last spill down to its start.
    const HOLDS: usize = 3000;
    let taken = Instant::now();
    let (_locker, guards, renews) = held_through_a_locker(HOLDS).await;
    tokio::time::sleep(PERIOD).await;
    settle().await;
    let first = renews.by_instant();
    assert_eq!(
        first.values().sum::<usize>(),
        HOLDS,
        "every hold renewed once"
    );
    let (earliest, latest) = (first.keys().next().unwrap(), first.keys().last().unwrap());
    assert_eq!(
        *earliest,
        taken + PERIOD / 2,
        "not spread down to half a period"
    );
    assert!(*latest <= taken + PERIOD);
    // A crowd is half again a step's share of the holds, and 8: at most 53 here. Only
    // the earliest step takes more.
    let most = first
        .range(taken + PERIOD / 2 + Duration::from_millis(1)..)
        .map(|(_, n)| *n)
        .max()
        .unwrap();
    assert!(most <= 53, "{most} renewals at one instant");

    // A lone hold renews a whole period after its acquire, on its step.
    let alone = Arc::new(Renewals::default());
    let driver = Silent {
        local: LocalDriver::new(),
        renews: Arc::clone(&alone),
    };
    let lone = Mutex::builder("lone", driver).ttl(TTL).build().unwrap();
    let sent = Instant::now();
    let guard = lone.lock().await.unwrap();
    tokio::time::sleep(PERIOD - Duration::from_millis(1)).await;
    assert_eq!(alone.count(), 0, "a lone hold renewed early");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(
        alone.by_instant().into_iter().collect::<Vec<_>>(),
        [(sent + PERIOD, 1)]
    );
    guard.unlock().await.unwrap();
    drop(guards);
}
