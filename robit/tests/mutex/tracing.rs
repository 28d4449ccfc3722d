//! Acquire, renew, loss and release are visible to tracing under the target `robit`.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{AcquireFault, Captured, FaultyDriver, Highest, RenewFault, within};
use robit::{Backoff, LockError, Mutex, Wait};

#[tokio::test(start_paused = true)]
async fn acquire_renew_loss_and_release_are_traced_under_the_robit_target() {
    let captured = Captured::default();
    let _default = captured.install();

    let ttl = Duration::from_secs(3);
    let driver = FaultyDriver::new();
    let mutex = Mutex::builder("traced", driver.clone())
        .ttl(ttl)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    tokio::time::sleep(ttl / 2).await;
    guard.unlock().await.unwrap();
    let guard = mutex.lock().await.unwrap();
    driver.set_renew(RenewFault::AnswerLost);
    within(ttl, "the loss", guard.lost()).await;

    let lines = captured.lines();
    let find = |needle: &str| {
        lines
            .iter()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} event in:\n{}", lines.join("\n")))
            .clone()
    };
    for event in ["acquired", "renewed", "released", "lease lost"] {
        let line = find(event);
        assert!(
            line.contains(" robit: "),
            "not under the robit target: {line}"
        );
        assert!(
            line.contains("traced"),
            "the event does not name the lock: {line}"
        );
    }
    assert!(find("lease lost").contains("WARN"));
}

#[tokio::test(start_paused = true)]
async fn a_lock_that_keeps_failing_warns_with_the_cause_once_then_once_a_minute() {
    let captured = Captured::default();
    let _default = captured.install();
    let driver = FaultyDriver::new();
    let mutex = Mutex::builder("payroll", driver.clone()).build().unwrap();
    let warnings = || captured.lines_with("keeps failing");

    // A few failures are retried quietly.
    driver.set_acquire(AcquireFault::FailTransient(4));
    mutex.lock().await.unwrap().unlock().await.unwrap();
    assert_eq!(warnings(), Vec::<String>::new());

    // Failures that go on: one warning once they look persistent, then one a minute.
    // Attempts every 250 ms exactly (no jitter), so that one falls on each minute mark.
    let mutex = Mutex::builder("payroll", driver.clone())
        .backoff(Backoff::new(EVERY, EVERY))
        .entropy(Arc::new(Highest))
        .build()
        .unwrap();
    driver.set_acquire(AcquireFault::FailTransient(u32::MAX));
    let err = mutex
        .lock_with(Wait::Timeout(Duration::from_secs(150)))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err:?}");
    let warned = warnings();
    assert_eq!(warned.len(), 3, "{warned:#?}");
    for line in &warned {
        assert!(line.contains("WARN"), "{line}");
        assert!(
            line.contains("lock=payroll"),
            "the warning does not name the lock: {line}"
        );
        assert!(
            line.contains("refused"),
            "the warning does not give the cause: {line}"
        );
    }
    // The fifth failure, at 1 s; then the first failure a minute after each warning.
    for (line, (failures, waiting)) in warned.iter().zip([(5, 1), (245, 61), (485, 121)]) {
        assert!(
            line.contains(&format!("failures={failures} waiting={waiting}s ")),
            "{line}"
        );
    }
}

const EVERY: Duration = Duration::from_millis(250);
