//! Loss is signalled exactly once per grant, through every channel, and never after a
//! voluntary unlock.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{FaultyDriver, LossLog, RenewFault, TTL, VALIDITY, logged_mutex, settle, within};
use robit::{LossReason, Mutex, UnlockError};

fn mutex(driver: &FaultyDriver, log: &LossLog) -> Mutex {
    logged_mutex("signalled", driver, log)
}

#[tokio::test(start_paused = true)]
async fn loss_goes_out_exactly_once_through_callbacks_token_and_is_held() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let second_callback = LossLog::default();
    let holder = second_callback
        .attach(log.attach(Mutex::builder("signalled", driver.clone()).ttl(TTL)))
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    let token = guard.lost_token();
    let explicit_token = holder.lost_token().unwrap();
    driver.set_renew(RenewFault::Fail(u32::MAX));

    within(TTL, "the lost signal", guard.lost()).await;
    assert!(token.is_cancelled());
    assert!(explicit_token.is_cancelled());
    assert!(!guard.is_held());
    assert!(!holder.is_held());
    assert_eq!((log.count(), second_callback.count()), (1, 1));

    // Nothing more, however long we wait and however the backend behaves.
    driver.set_renew(RenewFault::AnswerLost);
    tokio::time::sleep(TTL * 20).await;
    assert_eq!((log.count(), second_callback.count()), (1, 1));
    assert_eq!(holder.stats().lost, 1);

    // The first unlock reports the loss; the next finds nothing to unlock.
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::DeadlinePassed))
    ));
    assert!(matches!(
        holder.unlock().await,
        Err(UnlockError::AlreadyReleased)
    ));
}

#[tokio::test(start_paused = true)]
async fn an_unlock_just_before_the_deadline_means_no_loss_is_ever_signalled() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    let token = guard.lost_token();
    driver.set_renew(RenewFault::Hang);
    tokio::time::sleep(VALIDITY - Duration::from_millis(1)).await;
    guard.unlock().await.unwrap();
    tokio::time::sleep(TTL * 10).await;
    assert_eq!(log.count(), 0);
    assert!(!token.is_cancelled());
    assert_eq!(holder.stats().lost, 0);
}

#[tokio::test(start_paused = true)]
async fn an_unlock_racing_the_deadline_either_unlocks_or_reports_the_loss_never_both() {
    for offset_micros in [0_u64, 1, 500, 999, 1000, 1001] {
        let driver = FaultyDriver::new();
        let log = LossLog::default();
        let holder = mutex(&driver, &log);
        let guard = holder.lock().await.unwrap();
        let token = guard.lost_token();
        driver.set_renew(RenewFault::Hang);
        tokio::time::sleep(
            VALIDITY - Duration::from_millis(1) + Duration::from_micros(offset_micros),
        )
        .await;
        let unlocked = guard.unlock().await;
        settle().await;
        match unlocked {
            Ok(()) => {
                assert_eq!(
                    log.count(),
                    0,
                    "loss after a successful unlock (+{offset_micros} µs)"
                );
                assert!(!token.is_cancelled());
            }
            Err(UnlockError::Lost(_)) => {
                assert_eq!(log.count(), 1);
                assert!(token.is_cancelled());
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_renew_in_flight_at_unlock_that_answers_lost_signals_nothing() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    let token = guard.lost_token();
    // The renew sent at TTL/3 answers lost 500 ms later; unlock while it is in flight.
    driver.set_renew(RenewFault::DelayThenLost(Duration::from_millis(500)));
    tokio::time::sleep(TTL / 3 + Duration::from_millis(100)).await;
    assert_eq!(driver.renew_calls(), 1);
    guard.unlock().await.unwrap();
    tokio::time::sleep(TTL * 3).await;
    assert_eq!(log.count(), 0);
    assert!(!token.is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn unlocking_during_a_hung_renew_ends_the_watchdog_at_once() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    tokio::time::sleep(TTL / 3 + Duration::from_millis(100)).await;
    guard.unlock().await.unwrap();
    settle().await;
    assert_eq!(
        driver.live_leases(),
        0,
        "the watchdog lingered on its hung renew"
    );
    assert_eq!(log.count(), 0);
}

#[tokio::test(start_paused = true)]
async fn each_grant_is_lost_at_most_once_across_many_holds() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    for round in 1..=5 {
        let guard = holder.lock().await.unwrap();
        driver.set_renew(RenewFault::AnswerLost);
        within(TTL, "the lost signal", guard.lost()).await;
        driver.set_renew(RenewFault::None);
        tokio::time::sleep(TTL).await;
        assert_eq!(log.count(), round);
        drop(guard);
    }
    assert_eq!(holder.stats().lost, 5);
    assert_eq!(log.reasons(), vec![LossReason::NotOwner; 5]);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_callback_does_not_stop_the_others_or_the_watchdog() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = log
        .attach(
            Mutex::builder("signalled", driver.clone())
                .ttl(TTL)
                .on_lost(|_| panic!("callback bug")),
        )
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    within(TTL, "the lost signal", guard.lost()).await;
    settle().await;
    assert_eq!(log.count(), 1);
    settle().await;
    assert_eq!(driver.live_leases(), 0, "the watchdog did not finish");
}

#[tokio::test(start_paused = true)]
async fn a_loss_the_driver_reports_early_in_a_hold_goes_out_at_once_even_with_the_watchdog_idle() {
    // After a hold ends, the watchdog sleeps a renew period before it looks again, and a
    // hold that starts meanwhile need not wake it, unless its lease can report a loss by
    // itself (the local driver's reports an eviction): that report must not wait for
    // the watchdog's next look.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    holder.lock().await.unwrap().unlock().await.unwrap();
    settle().await;
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(driver.local.evict(holder.name()));
    let evicted_at = tokio::time::Instant::now();
    settle().await;
    assert_eq!(log.reasons(), vec![LossReason::DriverSignalled]);
    assert_eq!(log.first_at(), Some(evicted_at));
    assert!(!guard.is_held());
}
