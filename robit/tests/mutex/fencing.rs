//! Fencing tokens increase strictly per lock name, across releases, expiries and
//! holders, and the gate rejects a stale holder's writes.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{FaultyDriver, LossLog, RenewFault, within};
use robit::{FenceGate, LocalDriver, Mutex};

const TTL: Duration = Duration::from_secs(3);

#[tokio::test(start_paused = true)]
async fn fencing_tokens_increase_across_releases_expiries_and_holders() {
    let driver = FaultyDriver::new();
    let a = Mutex::builder("fenced", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let b = Mutex::builder("fenced", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let mut seen = Vec::new();
    for round in 0..30 {
        let who = if round % 2 == 0 { &a } else { &b };
        let guard = who.lock().await.unwrap();
        seen.push(guard.fence());
        match round % 3 {
            // Released.
            0 => guard.unlock().await.unwrap(),
            // Expired: renewals fail until the lease is lost and the grant lapses.
            1 => {
                driver.set_renew(RenewFault::Hang);
                driver.set_release_hangs(true);
                within(TTL, "the loss", guard.lost()).await;
                tokio::time::sleep(TTL).await;
                driver.set_renew(RenewFault::None);
                driver.set_release_hangs(false);
                drop(guard);
            }
            // Dropped: released in the background.
            _ => drop(guard),
        }
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn a_holder_paused_past_its_lease_has_its_late_write_rejected_by_the_gate() {
    let driver = FaultyDriver::new();
    let log = LossLog::default();
    let stale = log
        .attach(Mutex::builder("fenced", driver.clone()).ttl(TTL))
        .build()
        .unwrap();
    let fresh = Mutex::builder("fenced", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap();
    let gate = FenceGate::new();

    let old = stale.lock().await.unwrap();
    gate.check(old.fence()).unwrap();
    // The old holder stops renewing (a long pause) and its grant lapses.
    driver.set_renew(RenewFault::Hang);
    driver.set_release_hangs(true);
    let new = within(TTL * 2, "the new holder", fresh.lock())
        .await
        .unwrap();
    gate.check(new.fence()).unwrap();
    assert_eq!(log.count(), 1);

    // The old holder resumes and writes with the token it had.
    let err = gate.check(old.fence()).unwrap_err();
    assert_eq!((err.presented, err.highest), (old.fence(), new.fence()));
    // The new holder keeps writing.
    gate.check(new.fence()).unwrap();
}

#[tokio::test(start_paused = true)]
async fn fencing_tokens_of_different_names_do_not_interfere() {
    let driver = LocalDriver::new();
    let mut last = std::collections::BTreeMap::new();
    for i in 0..60 {
        let name = format!("resource-{}", i % 4);
        let guard = Mutex::builder(name.as_str(), driver.clone())
            .build()
            .unwrap()
            .lock()
            .await
            .unwrap();
        if let Some(previous) = last.insert(name, guard.fence()) {
            assert!(previous < guard.fence());
        }
        guard.unlock().await.unwrap();
    }
}

#[test]
fn the_gate_admits_equal_tokens_and_remembers_the_highest() {
    let gate = FenceGate::new();
    assert_eq!(gate.highest(), None);
    for token in [3, 3, 5, 5, 9] {
        gate.check(robit::FenceToken::new(token)).unwrap();
    }
    assert_eq!(gate.highest(), Some(robit::FenceToken::new(9)));
    assert!(gate.check(robit::FenceToken::new(8)).is_err());
    assert_eq!(gate.highest(), Some(robit::FenceToken::new(9)));
}

#[test]
fn a_stale_write_is_refused_with_both_tokens_in_its_message() {
    let gate = FenceGate::new();
    gate.check(robit::FenceToken::new(9)).unwrap();
    let err = gate.check(robit::FenceToken::new(3)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("stale fencing token 3: the resource has already seen 9,"),
        "{err}"
    );
    assert_eq!(
        format!("{:?}", err.presented),
        "FenceToken(3)",
        "the token's debug form"
    );
}
