//! The conformance suite's contract check on the quorum driver, against 3 and 5 real
//! redis-server processes of the test's own.

use std::time::Duration;

use robit::redis::{RedisDriver, RedlockDriver};
use robit_sim::conformance::{ContractOptions, check_contract};
use robit_test_support::redis::RedisServer;

async fn keeps_the_contract_on(count: usize) {
    let servers: Vec<RedisServer> = (0..count).map(|_| RedisServer::start()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let options =
        ContractOptions::new(Duration::from_millis(400)).slack(Duration::from_millis(100));
    let report = check_contract(
        || {
            let members = urls
                .iter()
                .map(|url| {
                    RedisDriver::builder(url)
                        .quarantine(Duration::ZERO)
                        .build()
                        .expect("the server's driver builds")
                })
                .collect();
            RedlockDriver::new(members).expect("the quorum builds")
        },
        &options,
    )
    .await;
    assert!(report.passed(), "{count} servers: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robit_s_quorum_driver_keeps_the_contract_on_three_real_servers() {
    keeps_the_contract_on(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robit_s_quorum_driver_keeps_the_contract_on_five_real_servers() {
    keeps_the_contract_on(5).await;
}
