//! Locking by name through a `Locker`: every call its own would-be holder, settings and
//! stats shared by every clone, and `with_lock` around a closure. Paused tokio time
//! throughout.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use common::{FaultyDriver, JumpClock, RenewFault, TTL, VALIDITY, settle, within};
use robit::{ConfigError, LocalDriver, LockError, Locker, LossReason, Wait, WithLockError};
use tokio::time::Instant;

fn locker(driver: impl robit::Driver) -> Locker {
    Locker::builder(driver).ttl(TTL).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn two_tasks_locking_one_name_through_one_locker_exclude_each_other() {
    let locker = locker(LocalDriver::new());
    let first = locker.lock("job:1").await.unwrap();
    let second = tokio::spawn({
        let locker = locker.clone();
        async move { locker.lock("job:1").await }
    });
    tokio::time::sleep(TTL * 5).await;
    assert!(
        !second.is_finished(),
        "the second task waits while the first holds"
    );
    assert!(first.is_held());

    let first_fence = first.fence();
    first.unlock().await.unwrap();
    let second = within(TTL, "the hand-off", second).await.unwrap().unwrap();
    assert!(second.fence() > first_fence);
    second.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn locks_of_different_names_do_not_block_each_other() {
    let locker = locker(LocalDriver::new());
    let a = locker.lock("tenant:a").await.unwrap();
    let b = locker.try_lock("tenant:b").await.unwrap();
    assert!(matches!(
        locker.try_lock("tenant:a").await,
        Err(LockError::Contended { .. })
    ));
    a.unlock().await.unwrap();
    b.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_lockers_settings_apply_to_every_name() {
    let locker = Locker::builder(LocalDriver::new())
        .ttl(TTL)
        .wait(Wait::Timeout(Duration::from_secs(1)))
        .build()
        .unwrap();
    let started = Instant::now();
    let guard = locker.lock("report:7").await.unwrap();
    assert_eq!(guard.deadline(), Some(started + VALIDITY));
    let waited = locker.lock("report:7").await;
    assert!(
        matches!(waited, Err(LockError::Timeout { waited, .. }) if waited == Duration::from_secs(1)),
        "{waited:?}"
    );
    let mutex = locker.mutex("report:7").unwrap();
    assert_eq!(mutex.name().as_bytes(), b"report:7");
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_lockers_stats_total_every_lock_taken_through_it_and_its_clones() {
    let locker = locker(LocalDriver::new());
    let clone = locker.clone();
    for name in ["a", "b", "c"] {
        clone.lock(name).await.unwrap().unlock().await.unwrap();
    }
    let held = locker.lock("a").await.unwrap();
    assert!(clone.try_lock("a").await.is_err());
    let mutex = locker.mutex("d").unwrap();
    mutex.acquire().await.unwrap();
    mutex.unlock().await.unwrap();
    let stats = locker.stats();
    assert_eq!(
        (stats.acquired, stats.released, stats.failed),
        (5, 4, 1),
        "{stats:?}"
    );
    assert_eq!(clone.stats(), stats);
    held.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_empty_name_is_refused_with_a_typed_error() {
    let locker = locker(LocalDriver::new());
    assert!(matches!(locker.lock("").await, Err(LockError::EmptyName)));
    assert!(matches!(
        locker.with_lock("", async |_| ()).await,
        Err(WithLockError::Lock(LockError::EmptyName))
    ));
    assert!(matches!(locker.mutex(""), Err(ConfigError::EmptyName)));
    assert_eq!(locker.stats().failed, 0, "refused before any attempt");
}

#[tokio::test(start_paused = true)]
async fn with_lock_runs_the_work_under_the_lock_and_frees_it_after() {
    let locker = locker(LocalDriver::new());
    let value = locker
        .with_lock("invoice:9", async |guard| {
            assert!(guard.is_held());
            tokio::time::sleep(TTL * 3).await; // renewed meanwhile
            assert!(guard.is_held());
            guard.fence().get() * 2
        })
        .await
        .unwrap();
    assert!(value > 0);
    let stats = locker.stats();
    assert_eq!((stats.acquired, stats.released, stats.lost), (1, 1, 0));
    locker
        .try_lock("invoice:9")
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_lock_cancels_the_work_when_the_lease_is_lost() {
    let driver = FaultyDriver::new();
    let locker = locker(driver.clone());
    let steps = Arc::new(AtomicU32::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let outcome = locker
        .with_lock("job:5", {
            let (steps, dropped) = (Arc::clone(&steps), Arc::clone(&dropped));
            async move |guard| {
                let _flag = SetOnDrop(dropped);
                driver.set_renew(RenewFault::Hang);
                loop {
                    // Every step runs while the hold is valid.
                    assert!(guard.is_held());
                    steps.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        })
        .await;
    assert!(
        matches!(
            outcome,
            Err(WithLockError::Lost(LossReason::DeadlinePassed))
        ),
        "{outcome:?}"
    );
    assert_eq!(Instant::now(), started + VALIDITY);
    assert!(
        dropped.load(Ordering::Relaxed),
        "the work's future was dropped"
    );
    assert_eq!(steps.load(Ordering::Relaxed), 30);
    let stats = locker.stats();
    assert_eq!((stats.lost, stats.released), (1, 0));
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[tokio::test(start_paused = true)]
async fn with_lock_never_runs_work_it_could_not_lock_for() {
    let locker = Locker::builder(LocalDriver::new())
        .ttl(TTL)
        .wait(Wait::Timeout(Duration::from_secs(2)))
        .build()
        .unwrap();
    let held = locker.lock("job:6").await.unwrap();
    let ran = AtomicBool::new(false);
    let outcome = locker
        .with_lock("job:6", async |_| ran.store(true, Ordering::Relaxed))
        .await;
    assert!(matches!(
        outcome,
        Err(WithLockError::Lock(LockError::Timeout { .. }))
    ));
    assert!(
        outcome
            .unwrap_err()
            .to_string()
            .starts_with("the work did not run: gave up waiting for the lock after 2.000s")
    );
    assert!(!ran.load(Ordering::Relaxed));
    held.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_lock_dropped_midway_releases_the_lock() {
    let locker = locker(LocalDriver::new());
    let work = locker.with_lock("job:7", async |_| {
        tokio::time::sleep(TTL * 10).await;
    });
    assert!(tokio::time::timeout(TTL, work).await.is_err());
    settle().await;
    locker
        .try_lock("job:7")
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
}

#[test]
fn a_locker_and_its_builder_show_their_settings() {
    let builder = Locker::builder(LocalDriver::new()).ttl(Duration::from_secs(7));
    let shown = format!("{builder:?}");
    assert!(shown.starts_with("LockerBuilder {"), "{shown}");
    assert!(shown.contains("ttl: 7s"), "{shown}");
    let locker = builder.build().unwrap();
    let shown = format!("{locker:?}");
    assert!(shown.starts_with("Locker {"), "{shown}");
    assert!(shown.contains("ttl: 7s"), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn work_that_ends_after_the_deadline_is_reported_lost_even_before_the_watchdog_looks() {
    let clock = Arc::new(JumpClock::default());
    let locker = Locker::builder(LocalDriver::new())
        .ttl(TTL)
        .clock(Arc::clone(&clock) as Arc<dyn robit::sources::Clock>)
        .build()
        .unwrap();
    let outcome = locker
        .with_lock("job:8", async |guard| {
            // The process freezes past the deadline in the work's last step, which then
            // returns at once: nothing else has run since.
            clock.jump(guard.valid_for() + Duration::from_millis(1));
            guard.fence()
        })
        .await;
    assert!(
        matches!(
            outcome,
            Err(WithLockError::Lost(LossReason::DeadlinePassed))
        ),
        "{outcome:?}"
    );
    assert_eq!(locker.stats().lost, 1);
}
