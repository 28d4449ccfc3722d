//! The conformance suite's contract check on the etcd driver, against a real
//! three-member etcd cluster of the test's own (`--features etcd`).

use std::time::Duration;

use robit::etcd::EtcdDriver;
use robit_sim::conformance::{ContractOptions, check_contract};
use robit_test_support::etcd::EtcdCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robit_s_etcd_driver_keeps_the_contract_on_a_real_three_member_cluster() {
    let cluster = EtcdCluster::start(3);
    let endpoints = cluster.endpoints();
    // etcd counts leases in whole seconds and reaps expired ones every half second:
    // a TTL of 2 s, with 900 ms either way.
    let options = ContractOptions::new(Duration::from_secs(2)).slack(Duration::from_millis(900));
    let report = check_contract(
        || {
            EtcdDriver::builder(endpoints.clone())
                .build()
                .expect("the driver builds")
        },
        &options,
    )
    .await;
    assert!(report.passed(), "{report}");
}
