//! The Mutex API: non-reentrancy, both styles, drops, wait strategies, stats.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{AcquireFault, FaultyDriver, Highest, Notifications, RenewFault, settle, within};
use robit::{LocalDriver, LockError, LossReason, Mutex, UnlockError, Wait};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(3);

fn mutex(driver: impl robit::Driver) -> Mutex {
    Mutex::builder("api", driver).ttl(TTL).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn locking_a_held_mutex_returns_already_held_at_once() {
    let m = mutex(LocalDriver::new());
    let guard = m.lock().await.unwrap();
    let before = Instant::now();
    assert!(matches!(m.lock().await, Err(LockError::AlreadyHeld)));
    assert!(matches!(m.try_lock().await, Err(LockError::AlreadyHeld)));
    assert!(matches!(m.acquire().await, Err(LockError::AlreadyHeld)));
    assert_eq!(Instant::now(), before);
    // AlreadyHeld is not a failed acquisition, and the hold is untouched.
    assert_eq!(m.stats().failed, 0);
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn locking_while_another_task_waits_on_the_same_mutex_returns_already_held() {
    let driver = LocalDriver::new();
    let holder = mutex(driver.clone());
    let waiter = Arc::new(mutex(driver));
    let guard = holder.lock().await.unwrap();
    let task = tokio::spawn({
        let waiter = Arc::clone(&waiter);
        async move { waiter.lock().await.map(|g| g.detach()) }
    });
    settle().await;
    assert!(matches!(
        waiter.try_lock().await,
        Err(LockError::AlreadyHeld)
    ));
    guard.unlock().await.unwrap();
    within(TTL, "the waiter's acquire", task)
        .await
        .unwrap()
        .unwrap();
    assert!(waiter.is_held());
}

#[tokio::test(start_paused = true)]
async fn unlocking_twice_returns_already_released() {
    let m = mutex(LocalDriver::new());
    assert!(matches!(
        m.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));
    m.acquire().await.unwrap();
    m.unlock().await.unwrap();
    assert!(matches!(
        m.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));

    let guard = m.lock().await.unwrap();
    m.unlock().await.unwrap();
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));
    assert_eq!(m.stats().released, 2);
}

#[tokio::test(start_paused = true)]
async fn an_old_guard_cannot_unlock_a_newer_hold() {
    let m = mutex(LocalDriver::new());
    let old = m.lock().await.unwrap();
    m.unlock().await.unwrap();
    let _new = m.lock().await.unwrap();
    assert!(matches!(
        old.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));
    assert!(m.is_held());
}

#[tokio::test(start_paused = true)]
async fn an_old_guard_unlocking_after_a_newer_hold_was_lost_leaves_the_loss_to_the_newer_guard() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    let old = m.lock().await.unwrap();
    m.unlock().await.unwrap();
    let new = m.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    within(TTL, "the loss", new.lost()).await;
    assert!(matches!(
        old.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));
    assert!(matches!(
        new.unlock().await,
        Err(UnlockError::Lost(LossReason::NotOwner))
    ));
}

#[tokio::test(start_paused = true)]
async fn the_explicit_style_holds_and_renews_until_unlock() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    let fence = m.acquire().await.unwrap();
    assert_eq!(m.fence(), Some(fence));
    tokio::time::sleep(TTL * 5).await;
    assert!(m.is_held());
    assert!(driver.renew_calls() >= 14);
    m.unlock().await.unwrap();
    assert_eq!(m.fence(), None);
    assert!(driver.local.is_empty());
}

#[tokio::test(start_paused = true)]
async fn dropping_a_guard_stops_renewal_and_releases_in_the_background() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    let rival = mutex(driver.local.clone());
    drop(m.lock().await.unwrap());
    assert!(!m.is_held());
    settle().await;
    assert!(
        driver.local.is_empty(),
        "the dropped guard's grant was not released"
    );
    assert_eq!(driver.live_leases(), 0, "the watchdog outlived the guard");
    let renewals = driver.renew_calls();
    tokio::time::sleep(TTL * 3).await;
    assert_eq!(driver.renew_calls(), renewals);
    rival.try_lock().await.unwrap().unlock().await.unwrap();
    assert_eq!(m.stats().released, 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_holding_mutex_stops_its_watchdog_and_releases() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    m.acquire().await.unwrap();
    assert_eq!(driver.live_leases(), 1);
    drop(m);
    settle().await;
    assert_eq!(driver.live_leases(), 0, "the watchdog outlived its mutex");
    assert!(driver.local.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_guard_keeps_the_hold_alive_after_its_mutex_is_dropped() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    let guard = m.lock().await.unwrap();
    drop(m);
    tokio::time::sleep(TTL * 3).await;
    assert!(guard.is_held());
    guard.unlock().await.unwrap();
    settle().await;
    assert_eq!(driver.live_leases(), 0);
}

#[tokio::test(start_paused = true)]
async fn try_lock_on_a_held_lock_says_when_the_grant_expires() {
    let driver = LocalDriver::new();
    let holder = mutex(driver.clone());
    let _guard = holder.lock().await.unwrap();
    settle().await;
    let other = mutex(driver);
    match other.try_lock().await {
        Err(LockError::Contended { expires_in }) => assert_eq!(expires_in, Some(TTL)),
        other => panic!("expected Contended, got {other:?}"),
    }
    assert_eq!(other.stats().failed, 1);
}

#[tokio::test(start_paused = true)]
async fn a_timed_wait_gives_up_after_its_timeout() {
    let driver = LocalDriver::new();
    let holder = mutex(driver.clone());
    let _guard = holder.lock().await.unwrap();
    let waiter = mutex(driver);
    let start = Instant::now();
    let limit = Duration::from_millis(700);
    match waiter.lock_with(Wait::Timeout(limit)).await {
        Err(LockError::Timeout { waited, last_error }) => {
            assert_eq!(waited, limit);
            assert!(last_error.is_none());
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(Instant::now() - start, limit);
    assert_eq!(waiter.stats().total_wait_time, limit);
    // The waiter is idle again and can try later.
    assert!(matches!(
        waiter.try_lock().await,
        Err(LockError::Contended { .. })
    ));
}

/// A waiter queues behind a holder long enough for its backoff to reach its cap; then the
/// holder unlocks. Returns how long after the unlock the waiter acquired.
async fn hand_off_delay(driver: impl robit::Driver + Clone) -> Duration {
    let holder = mutex(driver.clone());
    let guard = holder.lock().await.unwrap();
    let waiting = common::spawn_waiter(mutex(driver));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let released_at = Instant::now();
    guard.unlock().await.unwrap();
    let (fence, _waiter) = within(TTL, "the waiter's acquire", waiting).await.unwrap();
    fence.unwrap();
    Instant::now() - released_at
}

#[tokio::test(start_paused = true)]
async fn a_waiter_wakes_on_the_release_notification_not_its_next_poll() {
    let delay = hand_off_delay(LocalDriver::new()).await;
    assert_eq!(
        delay,
        Duration::ZERO,
        "the waiter slept through the release"
    );
}

#[tokio::test(start_paused = true)]
async fn without_notifications_a_waiter_still_acquires_within_the_backoff_cap() {
    let delay = hand_off_delay(FaultyDriver::polling()).await;
    assert!(delay <= robit::defaults::DEFAULT_BACKOFF_MAX, "{delay:?}");
}

/// How many attempts a waiter drawing the longest waits makes on a lock that stays held
/// for the whole of `window`.
async fn attempts_while_held(driver: FaultyDriver, window: Duration) -> u32 {
    let holder = mutex(driver.clone());
    let _guard = holder.lock().await.unwrap();
    let waiter = Mutex::builder("api", driver.clone())
        .ttl(TTL)
        .entropy(Arc::new(Highest))
        .build()
        .unwrap();
    let calls = || {
        driver
            .faults
            .acquire_calls
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    let before = calls();
    assert!(
        tokio::time::timeout(window, waiter.lock()).await.is_err(),
        "the waiter got a held lock"
    );
    calls() - before
}

#[tokio::test(start_paused = true)]
async fn without_notifications_a_waiter_backs_off_doubling_its_wait_up_to_the_cap() {
    // Waits of 5, 10, 20, 40, 80, 160 ms, then the 250 ms cap: attempts at 0, 5, 15, 35,
    // 75, 155, 315, 565, 815, 1065, 1315, 1565 and 1815 ms.
    let attempts = attempts_while_held(FaultyDriver::polling(), Duration::from_secs(2)).await;
    assert_eq!(attempts, 13);
}

#[tokio::test(start_paused = true)]
async fn with_notifications_a_waiter_still_polls_as_a_fallback_once_per_backoff_cap() {
    // Jittered between half the cap and the cap; the longest draw: every 250 ms.
    let attempts = attempts_while_held(FaultyDriver::new(), Duration::from_millis(900)).await;
    assert_eq!(attempts, 4, "attempts at 0, 250, 500 and 750 ms");
}

#[tokio::test(start_paused = true)]
async fn transient_backend_errors_are_retried_and_permanent_ones_returned_at_once() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    driver.set_acquire(AcquireFault::FailTransient(3));
    m.lock().await.unwrap().unlock().await.unwrap();
    assert_eq!(
        driver
            .faults
            .acquire_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        4
    );

    driver.set_acquire(AcquireFault::FailTransient(1));
    assert!(matches!(m.try_lock().await, Err(LockError::Backend(e)) if e.is_transient()));

    driver.set_acquire(AcquireFault::Reject);
    let start = Instant::now();
    assert!(matches!(m.lock().await, Err(LockError::Backend(e)) if !e.is_transient()));
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_reports_the_backend_error_that_kept_it_waiting() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    driver.set_acquire(AcquireFault::FailTransient(u32::MAX));
    let err = m
        .lock_with(Wait::Timeout(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LockError::Timeout {
                last_error: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("the backend was failing"), "{err}");
    assert!(
        !err.to_string().contains("holder"),
        "there is no holder: {err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timed_wait_returns_on_time_even_when_an_attempt_hangs() {
    // The reply to the only attempt is held back far beyond the wait: lock() must still
    // give up when the wait ends, not when the attempt's own timeout would.
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    driver.set_acquire(AcquireFault::DelayReply(TTL * 2));
    let start = Instant::now();
    let limit = Duration::from_millis(300);
    let err = m.lock_with(Wait::Timeout(limit)).await.unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err:?}");
    assert_eq!(Instant::now() - start, limit);
    // The abandoned attempt's grant is released once its reply arrives.
    tokio::time::sleep(TTL * 2).await;
    settle().await;
    assert!(driver.local.is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_abandoned_attempt_that_was_granted_late_is_released_for_others() {
    // The first acquire is granted on the backend but its reply is held back past the
    // attempt timeout (TTL/3). The mutex abandons it; the grant must not block everyone
    // until the TTL runs out.
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    driver.set_acquire(AcquireFault::DelayReply(TTL / 2));
    let start = Instant::now();
    let guard = within(TTL * 3, "the acquire", m.lock()).await.unwrap();
    let took = Instant::now() - start;
    assert!(took >= TTL / 2 && took < TTL, "acquired after {took:?}");
    assert_eq!(guard.fence().get(), 2);
    guard.unlock().await.unwrap();
    settle().await;
    assert_eq!(driver.live_leases(), 0);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_waiting_lock_leaves_the_mutex_usable_and_counts_a_failure() {
    let driver = FaultyDriver::new();
    let holder = mutex(driver.clone());
    let guard = holder.lock().await.unwrap();
    let waiter = mutex(driver.clone());
    assert!(
        tokio::time::timeout(Duration::from_secs(1), waiter.lock())
            .await
            .is_err()
    );
    assert_eq!(waiter.stats().failed, 1);
    guard.unlock().await.unwrap();
    waiter.try_lock().await.unwrap().unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_lock_cancelled_mid_attempt_releases_the_grant_it_was_given() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    driver.set_acquire(AcquireFault::DelayReply(Duration::from_millis(500)));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), m.lock())
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    settle().await;
    assert!(
        driver.local.is_empty(),
        "the cancelled attempt's grant was left behind"
    );
    assert_eq!(driver.live_leases(), 0);
}

#[tokio::test(start_paused = true)]
async fn stats_count_acquisitions_releases_and_time() {
    let driver = LocalDriver::new();
    let m = mutex(driver.clone());
    let guard = m.lock().await.unwrap();
    let held = Duration::from_millis(2500);
    tokio::time::sleep(held).await;
    assert_eq!(m.stats().total_hold_time, held);
    guard.unlock().await.unwrap();
    let stats = m.stats();
    assert_eq!(
        (stats.acquired, stats.released, stats.failed, stats.lost),
        (1, 1, 0, 0)
    );
    // Renewals at 1 s and 2 s.
    assert_eq!(stats.renew_success, 2);
    assert_eq!(stats.total_hold_time, held);
    assert_eq!(stats.total_wait_time, Duration::ZERO);
}

#[tokio::test]
async fn the_mutex_and_its_guard_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    let m = mutex(LocalDriver::new());
    assert_send_sync(&m);
    let guard = m.lock().await.unwrap();
    assert_send_sync(&guard);
    guard.unlock().await.unwrap();
}

#[test]
fn locking_outside_a_tokio_runtime_is_an_error_not_a_panic() {
    let m = mutex(LocalDriver::new());
    let result = futures_lite_block_on(m.lock());
    assert!(matches!(result, Err(LockError::NoRuntime)));
}

/// Polls a future to completion on this thread, outside any tokio runtime.
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_driver_whose_release_watch_is_always_ready_cannot_make_a_waiter_spin() {
    let driver = FaultyDriver::over(LocalDriver::new(), Notifications::AlwaysReady);
    let holder = mutex(driver.clone());
    let _guard = holder.lock().await.unwrap();
    let waiter = mutex(driver.clone());
    let calls = || {
        driver
            .faults
            .acquire_calls
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    let before = calls();
    // If the waiter spun, this timeout could never fire (time only moves when idle).
    assert!(
        tokio::time::timeout(Duration::from_millis(100), waiter.lock())
            .await
            .is_err()
    );
    let attempts = calls() - before;
    assert!(attempts <= 101, "{attempts} attempts in 100 ms");
}

#[tokio::test(start_paused = true)]
async fn a_wait_too_long_to_represent_waits_without_end() {
    let driver = LocalDriver::new();
    let holder = mutex(driver.clone());
    let guard = holder.lock().await.unwrap();
    let waiter = Arc::new(mutex(driver));
    let task = tokio::spawn({
        let waiter = Arc::clone(&waiter);
        async move {
            waiter
                .lock_with(Wait::Timeout(Duration::MAX))
                .await
                .map(|g| g.detach())
        }
    });
    tokio::time::sleep(TTL * 10).await;
    assert!(!task.is_finished());
    guard.unlock().await.unwrap();
    within(TTL, "the waiter's acquire", task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_unlock_still_releases_the_grant() {
    let driver = FaultyDriver::new();
    let m = mutex(driver.clone());
    let guard = m.lock().await.unwrap();
    driver.set_release_delay(Duration::from_millis(200));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), guard.unlock())
            .await
            .is_err()
    );
    assert!(!m.is_held());
    tokio::time::sleep(Duration::from_millis(200)).await;
    settle().await;
    assert!(
        driver.local.is_empty(),
        "the cancelled unlock left the grant to expire"
    );
}

#[tokio::test(start_paused = true)]
async fn the_local_driver_refuses_a_ttl_it_cannot_represent_with_an_error() {
    use robit::Driver;
    use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken};
    let driver = LocalDriver::new();
    let name = LockName::from("huge");
    let huge = AcquireRequest::new(name.clone(), OwnerToken::from_u128(1), Duration::MAX);
    let err = driver.acquire(&huge).await.unwrap_err();
    assert!(!err.is_transient(), "{err}");
    let fine = AcquireRequest::new(name, OwnerToken::from_u128(1), TTL);
    let Acquire::Granted(lease) = driver.acquire(&fine).await.unwrap() else {
        panic!("the failed acquire left something behind");
    };
    assert!(lease.renew(Duration::MAX).await.is_err());
}

/// A `lock()` waiting up to `limit` whose first attempt finds the lock held and whose
/// later attempts get no answer for a minute; its error.
async fn wait_behind_a_holder_then_unanswered(limit: Duration) -> LockError {
    let driver = FaultyDriver::new();
    let holder = mutex(driver.clone());
    let _guard = holder.lock().await.unwrap();
    let waiter = mutex(driver.clone());
    let waiting = tokio::spawn(async move { waiter.lock_with(Wait::Timeout(limit)).await });
    settle().await;
    driver.set_acquire(AcquireFault::DelayReply(Duration::from_secs(60)));
    within(Duration::from_secs(5), "the wait's end", waiting)
        .await
        .unwrap()
        .unwrap_err()
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_ends_during_an_unanswered_attempt_blames_the_holder_not_the_backend() {
    // The next attempt's answer never comes in time.
    let err = wait_behind_a_holder_then_unanswered(Duration::from_millis(500)).await;
    assert!(
        matches!(
            err,
            LockError::Timeout {
                last_error: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        !err.to_string().contains("the backend was failing"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_times_out_in_full_is_reported_even_after_the_lock_was_seen_held() {
    // The next attempt's answer takes longer than an attempt may (the renew timeout,
    // TTL/3), well inside the wait: the backend failed.
    let err = wait_behind_a_holder_then_unanswered(Duration::from_secs(3)).await;
    assert!(
        matches!(
            err,
            LockError::Timeout {
                last_error: Some(robit::driver::DriverError::Timeout(waited)),
                ..
            } if waited == TTL / 3
        ),
        "{err:?}"
    );
}
