//! A lease you renew yourself: the watchdog turned off, `refresh` by hand, with the
//! watchdog's rules — validity from send time, loss signalled at the deadline, answers
//! that come too late not counted. Paused tokio time throughout.

use robit_test_support::kit as common;

use std::time::Duration;

use std::sync::Arc;

use common::{FaultyDriver, JumpClock, LossLog, RenewFault, TTL, VALIDITY, within};
use robit::driver::DriverError;
use robit::{Jeopardy, LocalDriver, LossReason, Mutex, RefreshError, UnlockError};
use tokio::time::Instant;

fn manual(driver: &FaultyDriver, log: &LossLog) -> Mutex {
    log.attach(
        Mutex::builder("by-hand", driver.clone())
            .ttl(TTL)
            .watchdog(false),
    )
    .build()
    .unwrap()
}

/// As [`manual`], on a clock the test can jump forward.
fn manual_with_clock(driver: &FaultyDriver, log: &LossLog) -> (Mutex, Arc<JumpClock>) {
    let clock = Arc::new(JumpClock::default());
    let holder = log
        .attach(
            Mutex::builder("by-hand", driver.clone())
                .ttl(TTL)
                .watchdog(false)
                .clock(Arc::clone(&clock) as Arc<dyn robit::sources::Clock>),
        )
        .build()
        .unwrap();
    (holder, clock)
}

#[tokio::test(start_paused = true)]
async fn without_the_watchdog_nothing_renews_and_the_loss_comes_at_the_deadline() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), started + VALIDITY);
    assert_eq!(driver.renew_calls(), 0);
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::DeadlinePassed))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_refresh_extends_the_hold_from_its_send_time() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let refreshed_at = Instant::now();
    assert_eq!(guard.refresh(TTL).await.unwrap(), VALIDITY);
    assert_eq!(guard.deadline(), Some(refreshed_at + VALIDITY));
    // Past the first deadline, still held; lost at the new one.
    within(TTL * 2, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), refreshed_at + VALIDITY);
    assert_eq!(driver.renew_calls(), 1);
    assert_eq!(holder.stats().renew_success, 1);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_may_ask_for_a_longer_or_shorter_ttl() {
    let holder = Mutex::builder("by-hand", LocalDriver::new())
        .ttl(TTL)
        .watchdog(false)
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    let long = Duration::from_secs(100);
    // TTL × 0.99 − 2 ms.
    assert_eq!(
        guard.refresh(long).await.unwrap(),
        Duration::from_millis(98_998)
    );
    assert_eq!(holder.refresh(TTL).await.unwrap(), VALIDITY);
    tokio::time::sleep(VALIDITY).await;
    assert!(
        !guard.is_held(),
        "the shorter refresh counts, being the later"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refresh_answered_lost_signals_the_loss_once() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::Lost(LossReason::NotOwner))
    ));
    assert!(guard.lost_token().is_cancelled());
    assert_eq!(guard.loss(), Some(LossReason::NotOwner));
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::Lost(LossReason::NotOwner))
    ));
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(log.reasons(), [LossReason::NotOwner]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_leaves_the_hold_valid_until_its_deadline_and_can_be_retried() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Fail(1));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::Backend(DriverError::Unavailable { .. }))
    ));
    assert!(guard.is_held());
    assert_eq!(guard.deadline(), Some(started + VALIDITY));
    assert_eq!(holder.stats().renew_failed, 1);
    assert_eq!(guard.refresh(TTL).await.unwrap(), VALIDITY);
    assert_eq!(log.count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_still_unanswered_at_the_deadline_does_not_count() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    // The backend renews at once, but its answer would arrive after the deadline.
    driver.set_renew(RenewFault::DelayReply(Duration::from_secs(1)));
    let refreshed = guard.refresh(TTL).await;
    assert!(
        matches!(
            refreshed,
            Err(RefreshError::Lost(LossReason::DeadlinePassed)
                | RefreshError::Backend(DriverError::Timeout(_)))
        ),
        "{refreshed:?}"
    );
    assert_eq!(Instant::now(), started + VALIDITY);
    assert!(!guard.is_held());
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(log.first_at(), Some(started + VALIDITY));
    assert_eq!(log.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_answer_read_after_the_deadline_does_not_count() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let (holder, clock) = manual_with_clock(&driver, &log);
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    // The backend renews at once, but the client freezes before it reads the answer, 10 ms
    // later, until its deadline exactly: then it already believes nothing.
    let reply_at = Instant::now() + Duration::from_millis(10);
    let freeze = guard.deadline().unwrap() - reply_at;
    driver.set_renew(RenewFault::DelayReply(Duration::from_millis(10)));
    driver.jump_on_next_reply(&clock, freeze);
    let refreshed = guard.refresh(TTL).await;
    assert!(
        matches!(
            refreshed,
            Err(RefreshError::Lost(LossReason::DeadlinePassed))
        ),
        "{refreshed:?}"
    );
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
    assert_eq!(holder.stats().renew_success, 0);
}

#[tokio::test(start_paused = true)]
async fn jeopardy_warns_before_a_forgotten_refresh_and_a_refresh_clears_it() {
    let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&changes);
    let holder = Mutex::builder("by-hand", LocalDriver::new())
        .ttl(TTL)
        .watchdog(false)
        .on_jeopardy(move |event| seen.lock().unwrap().push(event.change))
        .build()
        .unwrap();
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    within(TTL, "jeopardy", guard.jeopardy()).await;
    // The default: the validity less a renew period and a renew timeout (1 s each).
    assert_eq!(
        Instant::now(),
        started + VALIDITY - Duration::from_millis(968)
    );
    guard.refresh(TTL).await.unwrap();
    assert!(!guard.in_jeopardy());
    assert_eq!(
        *changes.lock().unwrap(),
        [Jeopardy::Entered, Jeopardy::Cleared]
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn refresh_is_refused_while_the_watchdog_renews_and_after_an_unlock() {
    let watched = Mutex::builder("by-hand", LocalDriver::new())
        .build()
        .unwrap();
    let guard = watched.lock().await.unwrap();
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::WatchdogRenews)
    ));
    guard.unlock().await.unwrap();

    // Without a drift allowance, the validity of the longest TTL would overflow.
    let manual = Mutex::builder("by-hand", LocalDriver::new())
        .drift_factor(0.0)
        .watchdog(false)
        .build()
        .unwrap();
    let guard = manual.lock().await.unwrap();
    for no_validity in [Duration::ZERO, Duration::from_millis(2), Duration::MAX] {
        let refused = guard.refresh(no_validity).await;
        assert!(
            matches!(refused, Err(RefreshError::InvalidTtl { ttl }) if ttl == no_validity),
            "{refused:?}"
        );
    }
    manual.unlock().await.unwrap();
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::NotHeld)
    ));
    assert!(matches!(
        manual.refresh(TTL).await,
        Err(RefreshError::NotHeld)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_refresh_that_leaves_the_deadline_near_keeps_the_hold_in_jeopardy() {
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&changes);
    let holder = Mutex::builder("by-hand", LocalDriver::new())
        .ttl(TTL)
        .watchdog(false)
        .on_jeopardy(move |event| seen.lock().unwrap().push(event.change))
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    within(TTL, "jeopardy", guard.jeopardy()).await;
    // Half a second more is less than the jeopardy time (968 ms): still in jeopardy.
    let left = guard.refresh(Duration::from_millis(500)).await.unwrap();
    assert_eq!(left, Duration::from_millis(493));
    assert!(guard.in_jeopardy());
    assert_eq!(*changes.lock().unwrap(), [Jeopardy::Entered]);
    guard.refresh(TTL).await.unwrap();
    assert!(!guard.in_jeopardy());
}

#[tokio::test(start_paused = true)]
async fn a_refresh_sent_at_the_deadline_is_not_sent_at_all() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let (holder, clock) = manual_with_clock(&driver, &log);
    let guard = holder.lock().await.unwrap();
    // The client's clock reaches the deadline exactly, before the watchdog has looked.
    clock.jump(guard.valid_for());
    assert!(matches!(
        guard.refresh(TTL).await,
        Err(RefreshError::Lost(LossReason::DeadlinePassed))
    ));
    assert_eq!(driver.renew_calls(), 0);
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
}

#[tokio::test(start_paused = true)]
async fn an_old_guard_never_refreshes_a_newer_hold_of_its_mutex() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let old = holder.lock().await.unwrap();
    let old_fence = old.fence();
    holder.unlock().await.unwrap();
    let new = holder.lock().await.unwrap();
    assert!(new.fence() > old_fence);
    assert!(matches!(old.refresh(TTL).await, Err(RefreshError::NotHeld)));
    assert_eq!(driver.renew_calls(), 0, "the new hold was not renewed");
    // Nor is it told of the newer hold's loss.
    driver.set_renew(RenewFault::AnswerLost);
    assert!(matches!(
        new.refresh(TTL).await,
        Err(RefreshError::Lost(LossReason::NotOwner))
    ));
    assert!(matches!(old.refresh(TTL).await, Err(RefreshError::NotHeld)));
}

#[tokio::test(start_paused = true)]
async fn a_refresh_for_less_time_than_is_left_brings_the_loss_forward() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let refreshed_at = Instant::now();
    // The backend now keeps the grant for 500 ms only: the mutex must believe no longer.
    let left = guard.refresh(Duration::from_millis(500)).await.unwrap();
    assert_eq!(left, Duration::from_millis(493));
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), refreshed_at + left);
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_that_leaves_exactly_the_jeopardy_time_keeps_the_hold_in_jeopardy() {
    let holder = Mutex::builder("by-hand", LocalDriver::new())
        .ttl(TTL)
        .drift_factor(0.0)
        .watchdog(false)
        .jeopardy_within(Duration::from_millis(500))
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    within(TTL, "jeopardy", guard.jeopardy()).await;
    // 502 ms less the 2 ms margin: the new deadline is exactly the jeopardy time away.
    let left = guard.refresh(Duration::from_millis(502)).await.unwrap();
    assert_eq!(left, Duration::from_millis(500));
    assert!(guard.in_jeopardy());
    assert_eq!(holder.stats().jeopardies, 1);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_answered_late_counts_from_its_send_not_from_its_answer() {
    // The backend renews at once and its answer takes 600 ms to come back: the backend
    // keeps the grant for the TTL from the send, so the new deadline must count from
    // there, and the time left it reports is what remains of it when the answer lands.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = manual(&driver, &log);
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let late = Duration::from_millis(600);
    driver.set_renew(RenewFault::DelayReply(late));
    let sent = Instant::now();
    let left = guard.refresh(TTL).await.unwrap();
    assert_eq!(Instant::now(), sent + late);
    assert_eq!(guard.deadline(), Some(sent + VALIDITY));
    assert_eq!(left, VALIDITY - late);
    within(TTL * 2, "the loss", guard.lost()).await;
    assert_eq!(log.first_at(), Some(sent + VALIDITY));
    assert_eq!(log.reasons(), [LossReason::DeadlinePassed]);
}

#[tokio::test(start_paused = true)]
async fn a_refresh_and_a_watchdog_renewal_answered_equally_late_move_the_deadline_alike() {
    // The same renewal, sent at the same instant and answered 600 ms later, once by hand
    // and once by the watchdog: both must follow one rule for the new deadline.
    let late = Duration::from_millis(600);
    let by_hand = FaultyDriver::new();
    let log = LossLog::default();
    let manual = manual(&by_hand, &log);
    let by_watchdog = FaultyDriver::new();
    let renewed = Mutex::builder("by-watchdog", by_watchdog.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let started = Instant::now();
    let (manual_guard, renewed_guard) =
        (manual.lock().await.unwrap(), renewed.lock().await.unwrap());
    by_hand.set_renew(RenewFault::DelayReply(late));
    by_watchdog.set_renew(RenewFault::DelayReply(late));
    // The watchdog sends its first renewal a renew period (TTL / 3) after the acquire.
    tokio::time::sleep(TTL / 3).await;
    let sent = Instant::now();
    assert_eq!(sent, started + TTL / 3);
    manual_guard.refresh(TTL).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(renewed.stats().renew_success, 1);
    assert_eq!(manual_guard.deadline(), Some(sent + VALIDITY));
    assert_eq!(renewed_guard.deadline(), manual_guard.deadline());
}
