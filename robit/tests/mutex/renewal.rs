//! The watchdog: renewal keeps a lease alive, and failing renewals end in a loss that is
//! signalled before the backend's own expiry.

use robit_test_support::kit as common;

use std::time::Duration;

use std::sync::Arc;

use common::{
    AcquireFault, FaultyDriver, Highest, JumpClock, LossLog, RenewFault, TTL, VALIDITY,
    logged_mutex, settle, within,
};
use robit::{LossReason, Mutex, UnlockError};
use tokio::time::Instant;

fn mutex(driver: &FaultyDriver, log: &LossLog) -> Mutex {
    logged_mutex("renewed", driver, log)
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
    // ...and only then can the rival hold it: at once, because the lost holder releases
    // its grant rather than leaving it to expire.
    assert!(
        lost_at <= rival_at,
        "lost at {lost_at:?}, rival acquired at {rival_at:?}"
    );
    assert!(
        rival_at - lost_at <= Duration::from_millis(1),
        "the rival waited for the backend expiry"
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
async fn failed_renewals_are_retried_a_quarter_period_apart_and_ever_closer_to_the_deadline() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = log
        .attach(
            Mutex::builder("renewed", driver.clone())
                .ttl(TTL)
                .entropy(Arc::new(Highest)),
        )
        .build()
        .unwrap();
    let start = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Fail(u32::MAX));
    // The first renew, a renew period in, fails; with the longest draw the retry goes out a
    // quarter period later.
    let retry = TTL / 3 + TTL / 12;
    tokio::time::sleep_until(start + retry - Duration::from_millis(1)).await;
    assert_eq!(driver.renew_calls(), 1);
    tokio::time::sleep_until(start + retry + Duration::from_millis(1)).await;
    assert_eq!(driver.renew_calls(), 2);
    // Near the deadline the retries come a third of the time left apart: some still go
    // out in its last 10 ms.
    tokio::time::sleep_until(start + VALIDITY - Duration::from_millis(10)).await;
    let before = driver.renew_calls();
    within(TTL, "the loss", guard.lost()).await;
    assert!(
        driver.renew_calls() > before,
        "no retry in the last 10 ms: the retries stopped after {before} calls"
    );
    assert_eq!(log.reasons(), vec![LossReason::DeadlinePassed]);
}

#[tokio::test(start_paused = true)]
async fn a_renew_answering_lost_sends_no_release_for_the_grant_the_backend_disowned() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let guard = holder.lock().await.unwrap();
    // This renew answers lost without asking the backend, which keeps the grant until its
    // TTL: a release sent after the loss would show.
    driver.set_renew(RenewFault::AnswerLost);
    within(TTL, "the loss", guard.lost()).await;
    settle().await;
    assert_eq!(
        driver.local.len(),
        1,
        "a release went out for a grant the backend said was not ours"
    );
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

#[tokio::test(start_paused = true)]
async fn the_deadline_counts_from_when_the_renew_was_sent_not_when_its_reply_came() {
    // Renew replies take 900 ms. The backend extends each grant from when it received
    // the renew (≈ when it was sent), so the client must count from the send: a deadline
    // counted from the reply would outlive the backend's grant by 900 ms.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    let rival = Mutex::builder("renewed", driver.local.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let start = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::DelayReply(Duration::from_millis(900)));
    // The renew sent at 1 s is answered at 1.9 s. Then renewals hang and releases too.
    tokio::time::sleep(Duration::from_millis(1950)).await;
    assert_eq!(holder.stats().renew_success, 1);
    driver.set_renew(RenewFault::Hang);
    driver.set_release_hangs(true);
    let rival_guard = within(TTL * 3, "the rival's acquire", rival.lock())
        .await
        .unwrap();
    let lost_at = log.first_at().expect("no loss") - start;
    assert_eq!(lost_at, TTL / 3 + VALIDITY);
    assert!(
        Instant::now() - start >= TTL / 3 + TTL,
        "the backend freed the grant early"
    );
    assert!(rival_guard.fence() > guard.fence());
}

#[tokio::test(start_paused = true)]
async fn the_first_deadline_counts_from_when_the_acquire_was_sent() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    driver.set_acquire(AcquireFault::DelayReply(Duration::from_millis(900)));
    driver.set_renew(RenewFault::Hang);
    let start = Instant::now();
    let guard = holder.lock().await.unwrap();
    assert_eq!(Instant::now() - start, Duration::from_millis(900));
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(log.first_at().unwrap() - start, VALIDITY);
}

#[tokio::test(start_paused = true)]
async fn a_renew_reply_that_lands_after_the_deadline_is_a_loss_not_a_renewal() {
    // The client freezes while its renew is in flight, and resumes just as the reply
    // arrives, its clock now past the deadline. The backend did renew, but the client
    // must not go on believing it held the lock through the gap.
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let clock = Arc::new(JumpClock::default());
    let holder = log
        .attach(
            Mutex::builder("renewed", driver.clone())
                .ttl(TTL)
                .clock(Arc::clone(&clock) as Arc<dyn robit::sources::Clock>),
        )
        .build()
        .unwrap();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::DelayReply(Duration::from_millis(100)));
    driver.jump_on_next_reply(&clock, TTL);
    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(log.reasons(), vec![LossReason::DeadlinePassed]);
    assert_eq!(holder.stats().renew_success, 0);
}

#[tokio::test(start_paused = true)]
async fn a_grant_whose_reply_lands_after_its_deadline_is_given_back_and_retried() {
    let driver = FaultyDriver::new();
    let clock = Arc::new(JumpClock::default());
    let holder = Mutex::builder("renewed", driver.clone())
        .ttl(TTL)
        .clock(Arc::clone(&clock) as Arc<dyn robit::sources::Clock>)
        .build()
        .unwrap();
    driver.set_acquire(AcquireFault::DelayReply(Duration::from_millis(100)));
    driver.jump_on_next_reply(&clock, TTL);
    let guard = within(TTL, "the acquire", holder.lock()).await.unwrap();
    assert!(guard.is_held());
    assert_eq!(
        guard.fence().get(),
        2,
        "the stale first grant was installed"
    );
    assert_eq!(
        driver.local.len(),
        1,
        "the stale first grant was not released"
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_grant_whose_reply_lands_exactly_at_its_deadline_is_given_back_too() {
    let driver = FaultyDriver::new();
    let clock = Arc::new(JumpClock::default());
    let holder = Mutex::builder("renewed", driver.clone())
        .ttl(TTL)
        .clock(Arc::clone(&clock) as Arc<dyn robit::sources::Clock>)
        .build()
        .unwrap();
    driver.jump_on_next_reply(&clock, VALIDITY);
    let guard = within(TTL, "the acquire", holder.lock()).await.unwrap();
    assert_eq!(
        guard.fence().get(),
        2,
        "the grant that arrived at its deadline was installed"
    );
    assert_eq!(driver.local.len(), 1);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn renewals_go_out_a_period_after_the_last_send_however_late_the_answers_come() {
    // The acquire's answer and every renewal's take 600 ms. The renew period counts from
    // each send: renewals go out at 1 s, 2 s, 3 s after the acquire was sent, not a
    // period after each answer (1.6 s, 3.2 s, …), which would waste 600 ms of slack each
    // time and leave the lease less room for retries.
    let late = Duration::from_millis(600);
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let holder = mutex(&driver, &log);
    driver.set_acquire(AcquireFault::DelayReply(late));
    driver.set_renew(RenewFault::DelayReply(late));
    let sent = Instant::now();
    let guard = holder.lock().await.unwrap();
    assert_eq!(Instant::now(), sent + late);
    let period = TTL / 3;
    for renewal in 1..=3 {
        tokio::time::sleep_until(sent + period * renewal + Duration::from_millis(1)).await;
        assert_eq!(
            driver.renew_calls(),
            renewal,
            "renewal {renewal} not sent on time"
        );
    }
    // Each renewal counted from its send: the third went out at 3 s.
    tokio::time::sleep_until(sent + period * 3 + late + Duration::from_millis(1)).await;
    assert_eq!(guard.deadline(), Some(sent + period * 3 + VALIDITY));
    assert_eq!(log.count(), 0);
    guard.unlock().await.unwrap();
}
