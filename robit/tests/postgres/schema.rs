//! The schema: created on first use when the role may, refused with a clear error when
//! it may not, and every missing privilege named at `ping()`.

use std::time::Duration;

use robit::driver::{Acquire, DriverError};
use robit::postgres::PostgresDriver;
use robit::{Driver, Mutex};
use robit_test_support::postgres::PostgresServer;

use super::driver::{admin, driver, granted, request};

fn rejected_with(result: Result<(), DriverError>, words: &[&str]) {
    let err = result.expect_err("an error");
    assert!(!err.is_transient(), "{err}");
    let said = err.to_string();
    for word in words {
        assert!(said.contains(word), "{word:?} is missing from: {said}");
    }
}

#[tokio::test]
async fn the_first_ping_creates_the_tables_once_however_many_drivers_start_together() {
    let server = PostgresServer::start();
    let drivers: Vec<PostgresDriver> = (0..4).map(|_| driver(&server)).collect();
    let pings = drivers.iter().map(PostgresDriver::ping);
    for ping in futures_util::future::join_all(pings).await {
        ping.unwrap();
    }
    assert_eq!(
        server.psql(
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables \
             WHERE schemaname = 'robit'"
        ),
        "fences,locks,namespaces,waiters"
    );
    let mutex = Mutex::builder("job", drivers[0].clone()).build().unwrap();
    mutex.lock().await.unwrap().unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_creation_that_times_out_is_transient_and_the_next_ping_creates_it() {
    let server = PostgresServer::start();
    // Another creator holds the creation's advisory lock: this driver's creation waits
    // for it past the request timeout (long enough for the connection and the check
    // before it, so that only the creation can time out). That is no missing privilege,
    // and no reason to give up for good.
    let mut admin = admin(&server).await;
    let mut creator = sqlx::Connection::begin(&mut admin).await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('robit schema'))")
        .execute(&mut *creator)
        .await
        .unwrap();
    let driver = PostgresDriver::builder(server.url())
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let err = driver
        .ping()
        .await
        .expect_err("the creation waited out the lock");
    assert!(
        matches!(err, DriverError::Timeout(_)),
        "a creation that timed out is not refused for good: {err}"
    );
    creator.rollback().await.unwrap();
    driver.ping().await.unwrap();
}

#[tokio::test]
async fn a_driver_told_not_to_create_the_schema_names_what_is_missing() {
    let server = PostgresServer::start();
    let driver = PostgresDriver::builder(server.url())
        .create_schema(false)
        .build()
        .unwrap();
    rejected_with(
        driver.ping().await,
        &["missing from schema robit", "docs/postgres.md"],
    );
    let tried = driver
        .acquire(&request("job", 1, Duration::from_secs(5)))
        .await;
    assert!(
        matches!(tried, Err(DriverError::Rejected { .. })),
        "{tried:?}"
    );
}

#[tokio::test]
async fn a_role_that_may_not_create_the_schema_is_told_to_have_an_owner_run_it() {
    let server = PostgresServer::start();
    server.psql("CREATE ROLE app LOGIN; REVOKE CREATE ON DATABASE postgres FROM PUBLIC");
    let app = PostgresDriver::builder(server.url_as("app"))
        .build()
        .unwrap();
    rejected_with(
        app.ping().await,
        &["could not be created", "have an owner run"],
    );
}

#[tokio::test]
async fn ping_names_every_privilege_the_role_lacks_and_passes_once_granted() {
    let server = PostgresServer::start();
    driver(&server).ping().await.unwrap();
    server.psql("CREATE ROLE app LOGIN");
    let app = PostgresDriver::builder(server.url_as("app"))
        .build()
        .unwrap();
    rejected_with(
        app.ping().await,
        &[
            "USAGE on schema robit",
            "SELECT on robit.locks",
            "DELETE on robit.waiters",
        ],
    );
    server.psql("GRANT USAGE ON SCHEMA robit TO app");
    server.psql("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA robit TO app");
    rejected_with(app.ping().await, &["DELETE on robit.locks"]);
    // A call the server refuses for want of a privilege says which to grant, and is not
    // retried: a release deletes the lock's row.
    let lease = granted(&app, &request("job", 3, Duration::from_secs(5))).await;
    let refused = lease.release().await;
    let err = refused.expect_err("a release without DELETE");
    assert!(!err.is_transient(), "{err}");
    assert!(
        err.to_string()
            .contains("grant the role USAGE on schema robit"),
        "{err}"
    );
    server.psql("GRANT DELETE ON ALL TABLES IN SCHEMA robit TO app");
    server.psql("DELETE FROM robit.locks");
    app.ping().await.unwrap();
    let lease = granted(&app, &request("job", 1, Duration::from_secs(5))).await;
    lease.release().await.unwrap();
    assert!(matches!(
        app.acquire(&request("job", 2, Duration::from_secs(5)))
            .await
            .unwrap(),
        Acquire::Granted(_)
    ));
}

#[tokio::test]
async fn a_wrong_password_or_database_is_refused_for_good() {
    let server = PostgresServer::start();
    let url = server.url().replace("/postgres", "/nowhere");
    let nowhere = PostgresDriver::builder(url).build().unwrap();
    rejected_with(nowhere.ping().await, &["check the database name"]);
    // The server trusts loopback, so no password is wrong here; a role it does not know
    // is refused the same way (invalid_authorization_specification).
    let nobody = PostgresDriver::builder(server.url_as("nobody"))
        .build()
        .unwrap();
    rejected_with(nobody.ping().await, &["check the user and password"]);
}

#[tokio::test]
async fn a_schema_dropped_under_a_running_driver_is_refused_for_good_and_says_so() {
    let server = PostgresServer::start();
    let driver = driver(&server);
    driver.ping().await.unwrap();
    server.psql("DROP SCHEMA robit CASCADE");
    let tried = driver
        .acquire(&request("job", 1, Duration::from_secs(5)))
        .await
        .map(drop);
    rejected_with(tried, &["missing from schema robit", "create_schema"]);
}

#[tokio::test]
async fn an_owner_runs_the_schema_sql_once_and_a_role_that_may_not_create_uses_it() {
    let server = PostgresServer::start();
    server.psql("CREATE ROLE app LOGIN; REVOKE CREATE ON DATABASE postgres FROM PUBLIC");
    let app = PostgresDriver::builder(server.url_as("app"))
        .schema("locks")
        .create_schema(false)
        .build()
        .unwrap();
    // The owner runs what the driver gives, twice (it is idempotent), and grants.
    let sql = app.schema_sql();
    server.psql(&sql);
    server.psql(&sql);
    server.psql("GRANT USAGE ON SCHEMA locks TO app");
    server.psql("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA locks TO app");
    app.ping().await.unwrap();
    let lease = granted(&app, &request("job", 1, Duration::from_secs(5))).await;
    lease.release().await.unwrap();
}
