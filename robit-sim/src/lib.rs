//! Deterministic simulation of [`robit`] under faults.
//!
//! robit-sim runs robit's mutex and drivers inside a turmoil simulation — per-host
//! clocks with drift and pauses, partitions, latency, message loss, crashes and backend
//! restarts — records a history, and checks promises P1–P6 on it, seed by seed.

mod clock;
pub mod redis;

pub use self::clock::{SimClock, true_now};
