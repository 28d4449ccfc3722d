//! The contract check for [`robit`] drivers.
//!
//! A driver puts robit's mutex on a new backend by implementing
//! [`robit::driver::Driver`] and [`robit::driver::Lease`]. The mutex does everything that
//! involves time on the client and relies on the driver for eleven rules: a grant is
//! created atomically, lives at least its TTL from the *send* of the request, carries a
//! fencing token above every earlier one of its name, and is renewed and released only
//! by its own owner; a grant a release hands to a waiter holds from the waiter's attempt
//! answered held. [`check_contract`] checks each rule against the live driver and its
//! real backend, in real time, and reports each rule that broke with what the driver did
//! instead.
//!
//! Depend on this crate from the driver's tests:
//!
//! ```toml
//! [dev-dependencies]
//! robit-conformance = "0.1"
//! ```
//!
//! ```no_run
//! use robit_conformance::{ContractOptions, check_contract};
//! use std::time::Duration;
//!
//! # async fn demo() {
//! // A TTL long enough for the backend's round trips; slack covers its timer resolution.
//! let options = ContractOptions::new(Duration::from_secs(2)).slack(Duration::from_millis(400));
//! let report = check_contract(robit::LocalDriver::new, &options).await;
//! assert!(report.passed(), "{report}");
//! # }
//! ```
//!
//! A pass says the driver keeps the contract against a backend that behaves; what it does
//! under partitions, pauses, clock drift and restarts is the simulation's part, which
//! robit's repository runs with its `robit-sim` harness. The driver authors' guide
//! (`docs/driver-authors.md` in robit's repository) walks through both, rule by rule.

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod contract;

pub use self::contract::{CheckOutcome, ContractOptions, ContractReport, check_contract};
