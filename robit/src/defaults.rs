//! The defaults a [`MutexBuilder`](crate::MutexBuilder) and a
//! [`LockerBuilder`](crate::LockerBuilder) start from, and the bounds `build()` checks.
//!
//! They are public so that code can state its own settings relative to them (a TTL of
//! twice the default, a margin never below the minimum) and so that a test can assert on
//! them rather than on a copy of their values.
//!
//! ```
//! use robit::defaults::{DEFAULT_TTL, MAX_TTL};
//! use robit::{LocalDriver, Mutex};
//!
//! let mutex = Mutex::builder("slow-job", LocalDriver::new())
//!     .ttl(DEFAULT_TTL * 4)
//!     .build()?;
//! assert!(DEFAULT_TTL * 4 < MAX_TTL);
//! # drop(mutex);
//! # Ok::<(), robit::ConfigError>(())
//! ```

pub use crate::engine::{
    DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX, DEFAULT_DRIFT_FACTOR, DEFAULT_SAFETY_MARGIN,
    DEFAULT_TTL, MAX_TTL, MIN_SAFETY_MARGIN,
};
