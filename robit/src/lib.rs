//! A distributed mutex for async Rust.
//!
//! A [`Mutex`] protects a critical section across processes. Acquiring it gives a
//! *lease* on a backend — a grant that expires unless renewed — and a background
//! watchdog renews it. What sets robit apart is what happens when renewal fails: the
//! holder is told the lease is lost *before* the backend can grant the lock to anyone
//! else, because the mutex measures its own validity deadline from the send time of
//! each acquire or renew, minus a clock-drift allowance and a safety margin. Every grant
//! also carries a [`FenceToken`], so a resource can reject writes from a holder that
//! lost its lease without noticing (a long GC pause, a frozen VM).
//!
//! ```
//! use robit::{LocalDriver, Mutex};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mutex = Mutex::builder("daily-billing", LocalDriver::new())
//!     .ttl(Duration::from_secs(15))
//!     .on_lost(|event| tracing::error!("lost {}: {}", event.name, event.reason))
//!     .build()?;
//!
//! let guard = mutex.lock().await?;
//! println!("holding with fencing token {}", guard.fence());
//! guard.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! # The pieces
//!
//! The source is laid out the same way: `mutex/` (the public face: [`Mutex`],
//! [`MutexBuilder`], [`Guard`]), `locker/` ([`Locker`]: locking by name), `engine/` (the
//! state machine behind both, with the acquire loop and the watchdog as its children),
//! `driver/` (the contract a backend implements), and the drivers `local/`, `redis/`
//! (which holds the quorum driver, `redis/redlock/`), `etcd/` (feature `etcd`) and
//! `postgres/` (feature `postgres`).
//!
//! - [`Mutex`], built by [`MutexBuilder`]: lock/unlock, the watchdog, loss signalling,
//!   [`Stats`]. Scoped style through [`Guard`], or explicit `acquire`/`unlock`.
//! - [`Locker`], built by [`LockerBuilder`]: one set of settings from which any task
//!   locks any name, and [`Locker::with_lock`] around a closure.
//! - Warnings before a loss: [`JeopardyEvent`] and [`Guard::jeopardy`]; a lease renewed
//!   by hand: [`MutexBuilder::watchdog`] and [`Guard::refresh`]; a cap on a hold
//!   ([`MutexBuilder::max_hold`]) and a lock-delay after an expiry
//!   ([`MutexBuilder::lock_delay`]).
//! - For operators: [`Driver::inspect`] ([`Inspection`](driver::Inspection)) and
//!   [`Driver::force_release`].
//! - [`FenceToken`] and [`FenceGate`]: fencing, on both sides.
//! - [`LocalDriver`], the in-process backend; the modules `redis` (feature `redis`, on by
//!   default), `etcd` (feature `etcd`) and `postgres` (feature `postgres`) for the
//!   shared ones.
//!
//! Three modules serve other readers than the application author:
//!
//! - [`driver`]: the contract a backend implements ([`Driver`], [`Lease`](driver::Lease))
//!   and the types that cross it; what a driver author reads.
//! - [`sources`]: the injected sources of time and randomness
//!   ([`Clock`](sources::Clock), [`Entropy`](sources::Entropy)), so that a simulation
//!   controls every timing decision and every random draw.
//! - [`defaults`]: the defaults the builders start from and the bounds they check.
//!
//! # Promises
//!
//! The contract robit is tested against (the `robit-sim` crate checks each promise under
//! partitions, latency, clock drift, pauses and backend restarts):
//!
//! - **P1** the intervals in which clients believe they hold a lock never overlap, while
//!   clock drift stays within the configured bound;
//! - **P2** a holder is told of a loss no later than the backend could grant the lock to
//!   another, exactly once, and never after a voluntary unlock;
//! - **P3** without faults, a renewing holder never loses its lease;
//! - **P4** fencing tokens strictly increase per lock name;
//! - **P5** after faults heal, a waiter acquires within a bounded time;
//! - **P6** release and renew only ever touch the caller's own grant.
//!
//! # Tracing
//!
//! Spans `lock` (an acquire) and `lease` (a hold's watchdog) and events for acquire,
//! renew, loss and release are emitted under the target `robit`.

// docs.rs marks what each driver needs: which cargo feature turns it on.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports errors; it does not unwrap them. (Tests may.)
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod defaults;
pub mod driver;
mod engine;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
mod jeopardy;
mod local;
mod locker;
mod loss;
mod millis;
mod mutex;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
pub mod sources;

pub use crate::driver::{BoxError, Driver, FenceGate, FenceToken, StaleFence};
#[cfg(robit_mutants)]
#[doc(hidden)]
pub use crate::engine::Mutant;
pub use crate::engine::{Backoff, Stats, Wait};
pub use crate::error::{ConfigError, LockError, RefreshError, UnlockError};
pub use crate::jeopardy::{Jeopardy, JeopardyEvent};
pub use crate::local::LocalDriver;
pub use crate::locker::{Locker, LockerBuilder, WithLockError};
pub use crate::loss::{LossEvent, LossReason};
pub use crate::mutex::{Guard, Mutex, MutexBuilder};

/// The README's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The Redis guide's code blocks, compiled as doctests.
#[cfg(all(doctest, feature = "redis"))]
#[doc = include_str!("../../docs/redis.md")]
struct RedisGuideDoctests;

/// The quorum guide's code blocks, compiled as doctests.
#[cfg(all(doctest, feature = "redis"))]
#[doc = include_str!("../../docs/redlock.md")]
struct RedlockGuideDoctests;

/// The etcd guide's code blocks, compiled as doctests.
#[cfg(all(doctest, feature = "etcd"))]
#[doc = include_str!("../../docs/etcd.md")]
struct EtcdGuideDoctests;

/// The Postgres guide's code blocks, compiled as doctests.
#[cfg(all(doctest, feature = "postgres"))]
#[doc = include_str!("../../docs/postgres.md")]
struct PostgresGuideDoctests;

/// The safety argument's code blocks, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/safety.md")]
struct SafetyDoctests;

/// The operations guide's code blocks, compiled and run as doctests.
#[cfg(all(doctest, feature = "redis"))]
#[doc = include_str!("../../docs/operations.md")]
struct OperationsDoctests;
