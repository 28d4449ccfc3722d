//! TLS (`--features postgres-tls`): a server that speaks it, a driver that insists on it
//! and checks the server's certificate against an authority of the test's own.

use std::time::Duration;

use robit::Mutex;
use robit::postgres::PostgresDriver;
use robit_test_support::postgres::PostgresServer;

#[tokio::test]
async fn a_driver_that_insists_on_tls_verifies_the_server_and_locks() {
    let (server, authority) = PostgresServer::start_tls();
    let url = format!(
        "postgres://robit@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port(),
        authority.display()
    );
    let driver = PostgresDriver::builder(url).build().unwrap();
    driver.ping().await.unwrap();
    let encrypted = server.psql("SELECT count(*) FROM pg_stat_ssl WHERE ssl");
    assert_ne!(encrypted, "0", "no connection used TLS");
    let mutex = Mutex::builder("job", driver).build().unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
}

#[tokio::test]
async fn a_server_whose_certificate_the_authority_did_not_sign_is_refused_for_good() {
    let (server, _) = PostgresServer::start_tls();
    let (_other, other_authority) = PostgresServer::start_tls();
    let url = format!(
        "postgres://robit@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port(),
        other_authority.display()
    );
    let driver = PostgresDriver::builder(url)
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let refused = driver.ping().await.unwrap_err();
    assert!(!refused.is_transient(), "{refused}");
    assert!(refused.to_string().contains("sslrootcert"), "{refused}");
}
