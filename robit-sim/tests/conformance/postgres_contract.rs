//! The conformance suite's contract check on the Postgres driver, against a real
//! Postgres of the test's own (`--features postgres`).

use std::time::Duration;

use robit::postgres::PostgresDriver;
use robit_sim::conformance::{ContractOptions, check_contract};
use robit_test_support::postgres::PostgresServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robit_s_postgres_driver_keeps_the_contract_against_a_real_server() {
    let server = PostgresServer::start();
    let url = server.url();
    let options =
        ContractOptions::new(Duration::from_millis(400)).slack(Duration::from_millis(100));
    let report = check_contract(
        || {
            PostgresDriver::builder(&url)
                .build()
                .expect("the driver builds")
        },
        &options,
    )
    .await;
    assert!(report.passed(), "{report}");
}
