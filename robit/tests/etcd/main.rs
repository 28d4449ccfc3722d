//! The etcd driver's integration tests (`--features etcd`), against a real three-member
//! etcd cluster of the test's own. One test binary, one module per area.

#[cfg(feature = "etcd")]
#[allow(clippy::unwrap_used)]
mod behaviours;
#[cfg(feature = "etcd")]
#[allow(clippy::unwrap_used, clippy::print_stderr)]
mod driver;
#[cfg(feature = "etcd")]
#[allow(clippy::unwrap_used, clippy::print_stderr)]
mod queue;
#[cfg(feature = "etcd")]
#[allow(clippy::unwrap_used, clippy::print_stderr)]
mod races;
#[cfg(feature = "etcd")]
#[allow(clippy::unwrap_used)]
mod recovery;
