//! Jeopardy: the warning that comes while a lease can still be saved — entered when no
//! renewal has succeeded and the deadline is near, cleared by a renewal that gets
//! through. Paused tokio time throughout.

use robit_test_support::kit as common;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{FaultyDriver, RenewFault, TTL, VALIDITY, settle, within};
use robit::{ConfigError, Jeopardy, JeopardyEvent, LocalDriver, Mutex, MutexBuilder};
use tokio::time::Instant;

/// Every jeopardy event a mutex reported, with the instant it came.
#[derive(Clone, Default)]
struct Events(Arc<StdMutex<Vec<(Instant, JeopardyEvent)>>>);

impl Events {
    fn attach(&self, builder: MutexBuilder) -> MutexBuilder {
        let events = self.clone();
        builder.on_jeopardy(move |event| {
            events
                .0
                .lock()
                .unwrap()
                .push((Instant::now(), event.clone()))
        })
    }

    fn changes(&self) -> Vec<Jeopardy> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.change)
            .collect()
    }

    fn get(&self, index: usize) -> (Instant, JeopardyEvent) {
        self.0.lock().unwrap()[index].clone()
    }
}

/// With the defaults and a TTL of 3 s: a renew period and timeout of 1 s each, so a hold
/// is in jeopardy once the deadline is 2.968 − 1 − 1 = 0.968 s away.
const DEFAULT_JEOPARDY: Duration = Duration::from_millis(968);

fn mutex(driver: &FaultyDriver, events: &Events) -> Mutex {
    events
        .attach(Mutex::builder("endangered", driver.clone()).ttl(TTL))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_hold_whose_renewals_hang_is_in_jeopardy_before_it_is_lost() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let holder = mutex(&driver, &events);
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);

    within(TTL, "jeopardy", guard.jeopardy()).await;
    let deadline = started + VALIDITY;
    assert_eq!(Instant::now(), deadline - DEFAULT_JEOPARDY);
    assert!(guard.in_jeopardy());
    assert!(
        guard.is_held(),
        "jeopardy comes while the hold is still valid"
    );
    assert_eq!(guard.valid_for(), DEFAULT_JEOPARDY);
    let (at, event) = events.get(0);
    assert_eq!(at, deadline - DEFAULT_JEOPARDY);
    assert_eq!(
        (event.change, event.valid_for, event.fence),
        (Jeopardy::Entered, DEFAULT_JEOPARDY, guard.fence())
    );
    assert_eq!(holder.stats().jeopardies, 1);

    within(TTL, "the loss", guard.lost()).await;
    assert_eq!(Instant::now(), deadline);
    assert_eq!(
        events.changes(),
        [Jeopardy::Entered],
        "entered once, never cleared"
    );
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_gets_through_clears_jeopardy_and_says_so() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let holder = mutex(&driver, &events);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Fail(u32::MAX));
    within(TTL, "jeopardy", guard.jeopardy()).await;

    driver.set_renew(RenewFault::None);
    // The watchdog retries at least every third of the time left.
    tokio::time::sleep(DEFAULT_JEOPARDY / 2).await;
    assert!(!guard.in_jeopardy());
    assert!(
        guard.valid_for() > VALIDITY - TTL / 3,
        "{:?}",
        guard.valid_for()
    );
    assert_eq!(events.changes(), [Jeopardy::Entered, Jeopardy::Cleared]);
    assert!(events.get(1).1.valid_for > DEFAULT_JEOPARDY);

    // A new wait for jeopardy waits for the next one.
    let next = tokio::time::timeout(TTL * 5, guard.jeopardy()).await;
    assert!(next.is_err(), "a healthy hold is not in jeopardy");
    assert_eq!(holder.stats().jeopardies, 1);
    assert_eq!(holder.stats().lost, 0);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_healthy_hold_never_enters_jeopardy() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let holder = mutex(&driver, &events);
    let guard = holder.lock().await.unwrap();
    tokio::time::sleep(TTL * 20).await;
    assert!(!guard.in_jeopardy());
    assert!(events.changes().is_empty());
    assert!(holder.stats().renew_success >= 59);
    assert_eq!(holder.stats().jeopardies, 0);
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_sudden_loss_ends_a_wait_for_jeopardy_without_a_jeopardy_event() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let holder = mutex(&driver, &events);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    within(TTL, "the end of the wait", guard.jeopardy()).await;
    assert!(!guard.is_held());
    assert!(!guard.in_jeopardy());
    assert!(events.changes().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_jeopardy_time_is_configurable() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let jeopardy = Duration::from_millis(1_500);
    let holder = events
        .attach(
            Mutex::builder("endangered", driver.clone())
                .ttl(TTL)
                .jeopardy_within(jeopardy),
        )
        .build()
        .unwrap();
    let started = Instant::now();
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    within(TTL, "jeopardy", guard.jeopardy()).await;
    assert_eq!(Instant::now(), started + VALIDITY - jeopardy);
    // The first renew (at 1 s) is still out: jeopardy does not wait for it to fail.
    assert_eq!(driver.renew_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unlocked_hold_is_never_in_jeopardy() {
    let driver = FaultyDriver::new();
    let events = Events::default();
    let holder = mutex(&driver, &events);
    let guard = holder.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    tokio::time::sleep(TTL / 2).await;
    guard.unlock().await.unwrap();
    tokio::time::sleep(TTL * 3).await;
    settle().await;
    assert!(events.changes().is_empty());
}

#[test]
fn a_jeopardy_time_of_zero_or_past_the_first_renewal_is_refused() {
    let build = |jeopardy: Duration| {
        Mutex::builder("endangered", LocalDriver::new())
            .ttl(TTL)
            .jeopardy_within(jeopardy)
            .build()
    };
    // The latest allowed: the validity less the renew period.
    let latest = VALIDITY - TTL / 3;
    for refused in [Duration::ZERO, latest + Duration::from_nanos(1)] {
        let error = build(refused).unwrap_err();
        assert!(
            matches!(error, ConfigError::JeopardyOutOfRange { jeopardy_within, latest: l } if jeopardy_within == refused && l == latest),
            "{error:?}"
        );
        assert!(error.to_string().contains("1.968s"), "{error}");
    }
    build(latest).unwrap();
    build(Duration::from_millis(1)).unwrap();
}
