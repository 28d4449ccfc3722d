//! The hold cap: however well renewals go, a hold ends at `max_hold`, told as a loss and
//! released for the next holder. Paused tokio time throughout.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{AcquireFault, FaultyDriver, LossLog, RenewFault, TTL, VALIDITY, settle, within};
use robit::{ConfigError, LocalDriver, LossReason, Mutex, UnlockError};
use tokio::time::Instant;

fn capped(driver: &FaultyDriver, log: &LossLog, max: Duration) -> Mutex {
    log.attach(
        Mutex::builder("capped", driver.clone())
            .ttl(TTL)
            .max_hold(max),
    )
    .build()
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_renewed_hold_ends_at_its_cap_and_the_next_holder_gets_the_lock_at_once() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let max = TTL * 4 + Duration::from_millis(500);
    let holder = capped(&driver, &log, max);
    let rival = Mutex::builder("capped", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    let waiting = tokio::spawn(async move { rival.lock().await.map(|guard| (guard, rival)) });

    within(max * 2, "the loss at the cap", guard.lost()).await;
    assert_eq!(Instant::now(), started + max);
    assert!(holder.stats().renew_success >= 12, "renewed until the cap");
    assert_eq!(log.reasons(), [LossReason::HoldCapReached]);
    assert_eq!(guard.loss(), Some(LossReason::HoldCapReached));
    // Released at the cap, not left to expire.
    let (next, _rival) = within(Duration::from_millis(10), "the next holder", waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(next.fence() > guard.fence());
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::HoldCapReached))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_cap_that_comes_while_a_renew_is_out_ends_the_hold_then() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    // The first renew goes out at 1 s and hangs; the cap comes before its timeout.
    let max = Duration::from_millis(1_500);
    let holder = capped(&driver, &log, max);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    within(TTL, "the loss at the cap", guard.lost()).await;
    assert_eq!(Instant::now(), started + max);
    assert_eq!(log.reasons(), [LossReason::HoldCapReached]);
    // The renew cut short by the cap is no failed renew.
    assert_eq!(holder.stats().renew_failed, 0);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_before_the_cap_is_still_a_deadline_loss() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = capped(&driver, &log, TTL * 10);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), started + VALIDITY);
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
}

#[tokio::test(start_paused = true)]
async fn an_unlock_before_the_cap_is_no_loss_and_the_next_hold_has_a_cap_of_its_own() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let max = TTL * 2;
    let holder = capped(&driver, &log, max);
    holder.lock().await.unwrap().unlock().await.unwrap();
    tokio::time::sleep(max * 3).await;
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(max - Duration::from_millis(1)).await;
    assert!(guard.is_held(), "the cap counts from this hold's start");
    within(TTL, "the loss at the cap", guard.lost()).await;
    assert_eq!(Instant::now(), started + max);
    settle().await;
    assert_eq!(log.count(), 1);
}

#[test]
fn a_cap_of_zero_is_refused() {
    let refused = Mutex::builder("capped", LocalDriver::new())
        .max_hold(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(refused, ConfigError::ZeroMaxHold);
}

#[tokio::test(start_paused = true)]
async fn a_cap_counts_from_when_lock_returned_not_from_when_the_acquire_was_sent() {
    // The grant's answer takes 600 ms: `lock()` returns then, and the cap counts from
    // there (as documented), not from the acquire's send.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let max = Duration::from_secs(2);
    let holder = capped(&driver, &log, max);
    let late = Duration::from_millis(600);
    driver.set_acquire(AcquireFault::DelayReply(late));
    let sent = Instant::now();
    let guard = holder.lock().await.unwrap();
    let returned = Instant::now();
    assert_eq!(returned, sent + late);
    tokio::time::sleep(max - Duration::from_millis(1)).await;
    assert!(guard.is_held(), "the cap came early: counted from the send");
    within(TTL, "the loss at the cap", guard.lost()).await;
    assert_eq!(log.first_at(), Some(returned + max));
    assert_eq!(log.reasons(), [LossReason::HoldCapReached]);
}
