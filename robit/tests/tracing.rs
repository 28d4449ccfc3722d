//! Acquire, renew, loss and release are visible to tracing under the target `robit`.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{Captured, FaultyDriver, RenewFault, within};
use robit::Mutex;

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
