//! The check itself: a driver that keeps the contract passes every rule, and one that
//! breaks a rule is told which.

use robit_conformance::{ContractOptions, check_contract};

#[tokio::test(start_paused = true)]
async fn robit_s_local_driver_passes_every_rule() {
    let report = check_contract(robit::LocalDriver::new, &ContractOptions::default()).await;
    assert!(report.passed(), "{report}");
    assert_eq!(report.outcomes.len(), 11);
    assert!(report.failures().is_empty());
}
