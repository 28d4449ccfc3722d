//! What robit says: the text of an error or a loss, as a log shows it, names the cause
//! and what to do; the `Debug` of a driver's answer, as a failing test prints it, names
//! the answer and its figures.

use robit_test_support::kit as common;

use std::collections::BTreeSet;
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, Inspection, LockName, OwnerToken, ReleaseWatch};
use robit::{LocalDriver, LockError, LossReason, Mutex};

#[test]
fn a_contended_error_says_when_the_other_grant_expires_when_the_backend_said() {
    let expires_in = Some(Duration::from_millis(1_500));
    assert_eq!(
        LockError::Contended { expires_in }.to_string(),
        "the lock is held by another owner (its grant expires in 1.500s unless renewed); \
         retry later, or wait with lock()"
    );
    assert_eq!(
        LockError::Contended { expires_in: None }.to_string(),
        "the lock is held by another owner; retry later, or wait with lock()"
    );
}

#[test]
fn every_loss_reason_says_what_happened_in_words_of_its_own() {
    let said = [
        (LossReason::DeadlinePassed, "deadline passed"),
        (LossReason::NotOwner, "held by someone else"),
        (LossReason::DriverSignalled, "driver reported"),
        (LossReason::HoldCapReached, "max_hold"),
    ];
    for (reason, words) in &said {
        let text = reason.to_string();
        assert!(text.contains(words), "{reason:?} says {text:?}");
    }
    let texts: BTreeSet<String> = said.iter().map(|(reason, _)| reason.to_string()).collect();
    assert_eq!(texts.len(), said.len(), "two reasons read alike: {texts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_driver_s_answer_shows_its_kind_and_figures_in_debug() {
    let held = Acquire::Held {
        expires_in: Some(Duration::from_secs(2)),
    };
    assert_eq!(format!("{held:?}"), "Held { expires_in: Some(2s) }");
    let quarantined = Acquire::Quarantined {
        left: Duration::from_millis(250),
    };
    assert_eq!(format!("{quarantined:?}"), "Quarantined { left: 250ms }");
    let request = AcquireRequest::new(
        LockName::from("debug"),
        OwnerToken::from_u128(1),
        Duration::from_secs(3),
    );
    let lease = common::granted(&LocalDriver::new(), &request).await;
    let granted = Acquire::Granted(lease);
    assert!(
        format!("{granted:?}").starts_with("Granted("),
        "{granted:?}"
    );
}

#[test]
fn an_inspection_says_how_many_wait_when_any_do() {
    let mut seen = Inspection::free();
    seen.waiters = 2;
    assert!(seen.to_string().ends_with(", 2 waiting"), "{seen}");
    seen.waiters = 0;
    assert!(!seen.to_string().contains("waiting"), "{seen}");
}

#[test]
fn a_release_watch_shows_whether_it_can_ever_notify() {
    assert_eq!(
        format!("{:?}", ReleaseWatch::new(async {})),
        "ReleaseWatch { notifies: true }"
    );
    assert_eq!(
        format!("{:?}", ReleaseWatch::never()),
        "ReleaseWatch { notifies: false }"
    );
}

#[test]
fn a_mutex_builder_shows_its_lock_and_settings_in_debug() {
    let builder = Mutex::builder("orders", LocalDriver::new()).ttl(Duration::from_secs(7));
    let shown = format!("{builder:?}");
    assert!(shown.starts_with("MutexBuilder {"), "{shown}");
    assert!(shown.contains("name: LockName(\"orders\")"), "{shown}");
    assert!(shown.contains("ttl: 7s"), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn a_guard_shows_its_lock_its_token_and_whether_it_holds_in_debug() {
    let mutex = Mutex::builder("orders", LocalDriver::new())
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let shown = format!("{guard:?}");
    assert!(shown.starts_with("Guard {"), "{shown}");
    assert!(shown.contains("lock: LockName(\"orders\")"), "{shown}");
    assert!(shown.contains(&format!("{:?}", guard.fence())), "{shown}");
    assert!(shown.contains("held: true"), "{shown}");
    guard.unlock().await.unwrap();
}
