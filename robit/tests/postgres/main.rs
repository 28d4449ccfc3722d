//! The Postgres driver's integration tests (`--features postgres`), against a real
//! Postgres of the test's own, made by `initdb` on a free port. One test binary, one
//! module per area.

#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod behaviours;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod driver;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used, clippy::print_stderr)]
mod failover;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod faults;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod guarded;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod pooler;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod schema;
#[cfg(feature = "postgres-tls")]
#[allow(clippy::unwrap_used)]
mod tls;
#[cfg(feature = "postgres")]
#[allow(clippy::unwrap_used)]
mod waiting;
