//! A backend in quarantine (it lost its state, and grants nothing until every grant from
//! before has run out): a single try says so, and a waiter sleeps until it ends instead
//! of polling.

use robit_test_support::kit as common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{AcquireFault, FaultyDriver};
use robit::{LockError, Mutex, Wait};
use tokio::time::Instant;

const QUARANTINE: Duration = Duration::from_secs(30);

fn quarantined() -> (FaultyDriver, Mutex, Instant) {
    let driver = FaultyDriver::new();
    let until = Instant::now() + QUARANTINE;
    driver.set_acquire(AcquireFault::QuarantinedUntil(until));
    let mutex = Mutex::builder("ledger", driver.clone()).build().unwrap();
    (driver, mutex, until)
}

fn calls(driver: &FaultyDriver) -> u32 {
    driver.faults.acquire_calls.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn a_single_try_during_a_quarantine_says_how_long_it_has_left() {
    let (_driver, mutex, _) = quarantined();
    match mutex.try_lock().await {
        Err(error @ LockError::Quarantined { left }) => {
            assert_eq!(left, QUARANTINE);
            assert!(error.to_string().contains("lost its state"), "{error}");
        }
        other => panic!("expected a quarantine, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiter_sleeps_until_the_quarantine_ends_instead_of_polling() {
    let (driver, mutex, until) = quarantined();
    let guard = mutex.lock().await.unwrap();
    // One attempt into the quarantine, one after it: none in between.
    assert_eq!(calls(&driver), 2);
    let waited = Instant::now() - (until - QUARANTINE);
    // Up to one poll interval (the backoff cap, 250 ms) after the end, so that waiters
    // do not all ask at its first instant.
    assert!(
        waited >= QUARANTINE && waited <= QUARANTINE + Duration::from_millis(250),
        "acquired after {waited:?}"
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_ends_in_a_quarantine_names_it() {
    let (driver, mutex, _) = quarantined();
    let error = mutex
        .lock_with(Wait::Timeout(Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert!(matches!(error, LockError::Timeout { .. }), "{error:?}");
    assert!(error.to_string().contains("grants nothing"), "{error}");
    assert!(!error.to_string().contains("holder keeps it"), "{error}");
    // It slept to the end of its wait rather than polling: one attempt at the start, the
    // last try as the wait ends.
    assert_eq!(calls(&driver), 2);
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_outlasts_the_quarantine_and_ends_behind_a_holder_names_the_holder() {
    let driver = FaultyDriver::new();
    let holder = Mutex::builder("ledger", driver.clone()).build().unwrap();
    let _guard = holder.lock().await.unwrap();
    driver.set_acquire(AcquireFault::QuarantinedUntil(
        Instant::now() + Duration::from_secs(1),
    ));
    let waiter = Mutex::builder("ledger", driver.clone()).build().unwrap();
    let error = waiter
        .lock_with(Wait::Timeout(Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("holder keeps it"), "{error}");
}
