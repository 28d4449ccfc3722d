//! The watchdog: renewal keeps a lease alive, and failing renewals end in a loss that is
//! signalled before the backend's own expiry.

mod common;

use std::time::Duration;

use common::{FaultyDriver, LossLog, RenewFault, settle, within};
use robit::{LossReason, Mutex, UnlockError};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(3);
/// TTL × (1 − 0.01) − 2 ms, with the default drift factor and margin.
const VALIDITY: Duration = Duration::from_millis(2968);

fn mutex(driver: &FaultyDriver, log: &LossLog) -> Mutex {
    log.attach(Mutex::builder("renewed", driver.clone()).ttl(TTL))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn renewal_keeps_a_lock_alive_for_a_hundred_ttls() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let rival = Mutex::builder("renewed", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();

    for _ in 0..100 {
        tokio::time::sleep(TTL).await;
        assert!(guard.is_held());
        assert!(
            rival.try_lock().await.is_err(),
            "a rival got a renewed lock"
        );
    }
    let stats = holder.stats();
    assert_eq!(log.count(), 0);
    assert_eq!(stats.renew_failed, 0);
    // One renew per renew period (TTL/3) over 100 TTLs.
    assert!((299..=300).contains(&stats.renew_success), "{stats:?}");
    // On a healthy backend every renewal lands a renew period after the last one,
    // leaving validity − period of slack.
    assert_eq!(stats.min_renew_slack, Some(VALIDITY - TTL / 3));
    guard.unlock().await.unwrap();
}

/// Locks, lets renewals fail as `fault` says, and returns (loss instant, instant the
/// backend's grant expired) relative to the acquire.
async fn loss_against_backend_expiry(fault: RenewFault) -> (Duration, Duration, LossLog) {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let rival = Mutex::builder("renewed", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();

    let start = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(fault);
    // The rival waits; it gets the lock the moment the backend lets it go.
    let rival_guard = within(TTL * 10, "the rival's acquire", rival.lock())
        .await
        .unwrap();
    let rival_at = Instant::now() - start;
    let lost_at = log.first_at().expect("loss was never signalled") - start;
    within(TTL, "the guard's lost signal", guard.lost()).await;
    assert!(!guard.is_held());
    drop(rival_guard);
    (lost_at, rival_at, log)
}

#[tokio::test(start_paused = true)]
async fn renewals_that_keep_failing_end_in_loss_before_the_backend_expires_the_grant() {
    let (lost_at, rival_at, log) = loss_against_backend_expiry(RenewFault::Fail(u32::MAX)).await;
    assert_eq!(log.reasons(), vec![LossReason::DeadlinePassed]);
    // Signalled at the validity deadline (timers round up to the millisecond)...
    assert!(
        lost_at >= VALIDITY && lost_at <= VALIDITY + Duration::from_millis(1),
        "{lost_at:?}"
    );
    // ...and only then, after the loss and a best-effort release, can the rival hold it.
    assert!(
        lost_at <= rival_at,
        "lost at {lost_at:?}, rival acquired at {rival_at:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_renew_that_hangs_times_out_and_ends_in_loss_before_the_backend_expiry() {
    let (lost_at, rival_at, log) = loss_against_backend_expiry(RenewFault::Hang).await;
    assert_eq!(log.reasons(), vec![LossReason::DeadlinePassed]);
    assert!(
        lost_at >= VALIDITY && lost_at <= VALIDITY + Duration::from_millis(1),
        "{lost_at:?}"
    );
    assert!(lost_at <= rival_at);
}

#[tokio::test(start_paused = true)]
async fn a_renew_answering_lost_signals_loss_at_once() {
    let (lost_at, _, log) = loss_against_backend_expiry(RenewFault::AnswerLost).await;
    assert_eq!(log.reasons(), vec![LossReason::NotOwner]);
    // The first renew, a renew period after acquiring, answers lost.
    assert_eq!(lost_at, TTL / 3);
}

#[tokio::test(start_paused = true)]
async fn loss_is_signalled_before_the_backend_expiry_even_when_the_grant_is_never_released() {
    // Renewals hang and so does the holder's best-effort release after the loss: the
    // grant stays on the backend until its TTL runs out. The loss must come first.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let start = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    driver.set_release_hangs(true);
    let rival = Mutex::builder("renewed", driver.local.clone())
        .ttl(TTL)
        .build()
        .unwrap();

    tokio::time::sleep(VALIDITY - Duration::from_millis(1)).await;
    assert_eq!(log.count(), 0);
    assert!(guard.is_held());
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(log.count(), 1, "loss not signalled at the deadline");
    assert!(!guard.is_held());

    let rival_guard = within(TTL * 10, "the rival's acquire", rival.lock())
        .await
        .unwrap();
    let rival_at = Instant::now() - start;
    assert!(
        rival_at >= TTL,
        "the backend freed the grant early, at {rival_at:?}"
    );
    assert!(rival_guard.fence() > guard.fence());
}

#[tokio::test(start_paused = true)]
async fn a_few_failed_renewals_are_retried_before_the_deadline_without_loss() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Fail(3));
    tokio::time::sleep(TTL * 10).await;
    assert!(guard.is_held());
    assert_eq!(log.count(), 0);
    let stats = holder.stats();
    assert_eq!(stats.renew_failed, 3);
    assert!(stats.min_renew_slack.unwrap() > Duration::ZERO);
    assert!(
        stats.min_renew_slack.unwrap() < VALIDITY - TTL / 3,
        "{stats:?}"
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_hung_renew_is_abandoned_after_the_renew_timeout_and_retried() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    // First renew at TTL/3, abandoned at 2·TTL/3; retries follow before the deadline.
    tokio::time::sleep(TTL * 2 / 3 + Duration::from_millis(1)).await;
    assert_eq!(driver.renew_calls(), 1);
    assert_eq!(holder.stats().renew_failed, 1);
    driver.set_renew(RenewFault::None);
    tokio::time::sleep(TTL * 5).await;
    assert!(guard.is_held());
    assert_eq!(log.count(), 0);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_eviction_the_driver_reports_signals_loss_without_waiting_for_a_renew() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    assert!(driver.local.evict(holder.name()));
    settle().await;
    assert_eq!(log.reasons(), vec![LossReason::DriverSignalled]);
    assert!(!guard.is_held());
    assert_eq!(driver.renew_calls(), 0);
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::DriverSignalled))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_stalled_watchdog_still_reports_not_held_once_the_deadline_passes() {
    // is_held() reads the deadline itself, so it is right even before the watchdog runs.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    assert!(guard.is_held());
    // Jump the clock without letting any task run.
    tokio::time::advance(VALIDITY).await;
    assert!(!guard.is_held());
    assert!(!holder.is_held());
}
