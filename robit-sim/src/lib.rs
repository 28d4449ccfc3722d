//! Deterministic simulation of [`robit`] under faults.
//!
//! robit-sim runs robit's mutex and drivers inside a turmoil simulation — per-host
//! clocks with drift and pauses, partitions, latency, message loss, crashes and backend
//! restarts — records a history, and checks promises P1–P6 on it, seed by seed.
//!
//! The `robit-sim` command runs scenarios across seeds and replays one run as a
//! [`Timeline`] (text, or an SVG picture); [`cli`] is that command.

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod cli;

mod batch;
mod check;
mod clock;
pub mod conformance;
mod faults;
mod history;
mod model;
pub mod redis;
mod remote;
mod scenario;
mod timeline;
mod world;

pub use self::batch::{Outcome, load_scenarios, replay_command, run_batch};
pub use self::check::{CheckConfig, Promise, UnknownPromise, Violation, check};
pub use self::clock::{SimClock, true_now};
pub use self::history::{Event, EventKind, History};
pub use self::model::{ModelConfig, ModelFailure, Op, check_model};
pub use self::remote::{BackendLog, DriverFactory, RemoteDriver, ServedDriver, serve_driver};
pub use self::scenario::{Backend, Scenario, ScenarioError};
pub use self::timeline::Timeline;
pub use self::world::{Run, RunError, Verdict, run, run_driver};

/// The driver-author guide's code blocks, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/driver-authors.md")]
struct DriverAuthorsGuide;
