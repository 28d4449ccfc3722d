//! Test support shared by robit's tests, robit-sim's tests and robit's benchmarks. Not
//! published; never a dependency of a production build.
//!
//! - [`kit`]: testing the mutex itself — a fault-injecting driver over the local driver,
//!   a loss log, a clock that jumps, captured tracing output, paused-time helpers.
//! - [`redis`]: testing against a real Redis — a `redis-server` of the test's own on a
//!   free port, a proxy that freezes a link, a connection that counts round trips.
//! - [`etcd`]: testing against a real etcd — a cluster of the test's own, whose members
//!   can be killed, frozen and restarted.
//! - [`postgres`]: testing against a real Postgres — a cluster of the test's own, made
//!   by `initdb` on a free port, that can be killed, frozen and restarted.
//! - [`behaviours`]: one set of checks of the documented behaviours, run over every
//!   topology of every driver (Sentinel, Cluster, a quorum, etcd).
//! - [`bench`](mod@bench): what the benchmarks share — their runtime, their TTL, robit's driver.
//!
//! Test files bring them in under the names they always used:
//!
//! ```
//! use robit_test_support::kit as common;
//! use robit_test_support::redis as support;
//! # let _ = (common::TTL, support::TTL);
//! ```

// Test support fails loudly: a broken fixture must stop the test, not be reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod behaviours;
pub mod bench;
pub mod etcd;
mod host;
pub mod kit;
pub mod postgres;
pub mod redis;
