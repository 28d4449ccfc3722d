//! A guard's time left: the validity deadline the mutex itself believes in, from send
//! time, and how long is left until it. Paused tokio time throughout.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{FaultyDriver, RenewFault};
use robit::{Driver, LocalDriver, Mutex};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
/// TTL less a drift allowance of zero and a safety margin of a second.
const VALIDITY: Duration = Duration::from_secs(9);

fn mutex(driver: impl Driver) -> Mutex {
    Mutex::builder("time-left", driver)
        .ttl(TTL)
        .drift_factor(0.0)
        .safety_margin(Duration::from_secs(1))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_guard_knows_when_its_validity_ends_and_each_renewal_moves_it_later() {
    let mutex = mutex(LocalDriver::new());
    let started = Instant::now();
    let guard = mutex.lock().await.unwrap();
    assert_eq!(guard.deadline(), Some(started + VALIDITY));
    assert_eq!(guard.valid_for(), VALIDITY);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(guard.valid_for(), VALIDITY - Duration::from_secs(2));
    // The watchdog renews a third of the TTL after the acquire was sent, at the start of
    // its grid's 10 ms step (tokio's timers fire on the millisecond): the deadline now
    // counts from that renewal's send.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let renewed_at = started + TTL / 3;
    let deadline = guard.deadline().unwrap();
    assert!(
        deadline >= renewed_at - Duration::from_millis(10) + VALIDITY
            && deadline <= renewed_at + VALIDITY + Duration::from_millis(1),
        "{:?} after the acquire",
        deadline - started
    );
    assert_eq!(guard.valid_for(), deadline - Instant::now());
    guard.unlock().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_renewals_failing_the_time_left_runs_down_to_zero() {
    let driver = FaultyDriver::new();
    let mutex = mutex(driver.clone());
    let guard = mutex.lock().await.unwrap();
    driver.set_renew(RenewFault::Hang);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(guard.valid_for(), Duration::from_secs(1));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!guard.is_held());
    assert_eq!(guard.valid_for(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn an_ended_hold_has_no_deadline_even_when_the_mutex_holds_again() {
    let mutex = mutex(LocalDriver::new());
    let first = mutex.lock().await.unwrap();
    mutex.unlock().await.unwrap();
    assert_eq!(first.deadline(), None);
    assert_eq!(first.valid_for(), Duration::ZERO);
    let second = mutex.lock().await.unwrap();
    assert!(second.deadline().is_some());
    assert_eq!(first.deadline(), None, "the old guard sees the new hold");
    assert_eq!(first.valid_for(), Duration::ZERO);
    second.unlock().await.unwrap();
}
