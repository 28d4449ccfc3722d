//! Deterministic simulation of [`robit`] under faults.
//!
//! This crate will run robit's mutex and drivers inside a turmoil simulation — per-host
//! clocks with drift and pauses, partitions, latency, message loss, crashes and backend
//! restarts — record a history, and check promises P1–P6 on it, seed by seed. It is empty
//! until that work lands; until then the library's own tests (`cargo test -p robit`)
//! exercise the promises with tokio's paused clock and fault-injecting drivers.
