//! The injected sources of time and randomness.
//!
//! Every timing decision robit makes — validity deadlines, renew times, timeouts, retry
//! backoff — reads and sleeps on a [`Clock`], and every random draw (owner tokens,
//! backoff jitter) comes from an [`Entropy`]. The defaults, [`TokioClock`] and
//! [`OsEntropy`], are what an application wants; they are here so that a simulation (or
//! a test) can replace them and control every timing decision and every draw, which is
//! how robit's harness shows that the lease arithmetic keeps its promises under clock
//! drift. Set them with [`MutexBuilder::clock`](crate::MutexBuilder::clock) and
//! [`MutexBuilder::entropy`](crate::MutexBuilder::entropy).
//!
//! ```
//! use robit::sources::SeededEntropy;
//! use robit::{LocalDriver, Mutex};
//! use std::sync::Arc;
//!
//! // The same owner tokens and jitter on every run: reproducible tests.
//! let mutex = Mutex::builder("report", LocalDriver::new())
//!     .entropy(Arc::new(SeededEntropy::new(7)))
//!     .build()?;
//! # drop(mutex);
//! # Ok::<(), robit::ConfigError>(())
//! ```

mod clock;
mod entropy;

pub use self::clock::{Clock, TokioClock};
pub use self::entropy::{Entropy, OsEntropy, SeededEntropy};
