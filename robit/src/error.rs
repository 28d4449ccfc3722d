//! The errors the mutex returns. Each says what went wrong and what to do about it.
//! (What a driver reports, [`DriverError`], is part of the driver contract.)

use std::time::Duration;

use crate::driver::DriverError;
use crate::loss::LossReason;
use crate::millis::Millis;

/// [`MutexBuilder::build`](crate::MutexBuilder::build) rejected the configuration.
///
/// # Example
///
/// ```
/// use robit::{ConfigError, LocalDriver, Mutex};
/// use std::time::Duration;
///
/// let err = Mutex::builder("jobs", LocalDriver::new())
///     .ttl(Duration::ZERO)
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, ConfigError::ZeroTtl));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The lock name is empty.
    #[error("the lock name is empty; give every lock a non-empty name")]
    EmptyName,
    /// The TTL is zero.
    #[error("the TTL is zero; a lease must last long enough to be renewed (seconds, typically)")]
    ZeroTtl,
    /// The TTL is longer than [`MAX_TTL`](crate::defaults::MAX_TTL).
    #[error("a TTL of {} is longer than a year; a lease that long is no lease at all", Millis(*.ttl))]
    TtlTooLong {
        /// The rejected TTL.
        ttl: Duration,
    },
    /// The drift factor is outside `[0, 0.5)` or not a number.
    #[error(
        "drift factor {drift_factor} is outside [0, 0.5); it is the fraction by which clocks \
         may disagree about elapsed time (0.01 by default)"
    )]
    DriftOutOfRange {
        /// The rejected value.
        drift_factor: f64,
    },
    /// The safety margin is below [`MIN_SAFETY_MARGIN`](crate::defaults::MIN_SAFETY_MARGIN).
    #[error(
        "a safety margin of {} is below 1 ms, the granularity of timers; \
         the loss signal could come after the backend frees the grant",
        Millis(*.safety_margin)
    )]
    MarginTooSmall {
        /// The rejected margin.
        safety_margin: Duration,
    },
    /// The TTL, less drift and safety margin, leaves no time to hold the lock.
    #[error(
        "a TTL of {} less drift and the safety margin of {} leaves no \
         validity; raise the TTL or lower the margin",
        Millis(*.ttl),
        Millis(*.safety_margin)
    )]
    NoValidity {
        /// The configured TTL.
        ttl: Duration,
        /// The configured safety margin.
        safety_margin: Duration,
    },
    /// The renew period is zero.
    #[error("the renew period is zero; renew every TTL/3 or so")]
    ZeroRenewPeriod,
    /// The per-attempt renew timeout is zero.
    #[error("the renew timeout is zero; allow each renew attempt TTL/3 or so")]
    ZeroRenewTimeout,
    /// A first renew attempt that times out would leave less than half an attempt's time
    /// to retry before the validity deadline: one slow answer would lose the lease.
    #[error(
        "renew period {} plus 1.5 × renew timeout {} does not \
         fit in the validity {} (TTL less drift and margin), so a renew that \
         timed out could not be retried in time; shorten the period or the timeout, or \
         raise the TTL",
        Millis(*.renew_period),
        Millis(*.renew_timeout),
        Millis(*.validity)
    )]
    NoRoomToRetry {
        /// The configured renew period.
        renew_period: Duration,
        /// The configured renew timeout.
        renew_timeout: Duration,
        /// TTL less drift and safety margin.
        validity: Duration,
    },
    /// The jeopardy time is zero, or so long that a hold would be in jeopardy before its
    /// first renewal is even due.
    #[error(
        "a jeopardy time of {} is out of range: it must be above zero and at most the \
         validity less the renew period ({}), or every hold would be in jeopardy before its \
         first renewal",
        Millis(*.jeopardy_within),
        Millis(*.latest)
    )]
    JeopardyOutOfRange {
        /// The configured jeopardy time.
        jeopardy_within: Duration,
        /// The longest jeopardy time these settings allow.
        latest: Duration,
    },
    /// A lock-delay was asked of a driver that does not keep one
    /// ([`Driver::supports_lock_delay`](crate::Driver::supports_lock_delay)).
    #[error(
        "this driver does not keep a lock-delay, so the lock would be granted to others \
         at once after a holder's lease expires; use a driver that does (the local and \
         Redis drivers) or leave lock_delay unset"
    )]
    LockDelayUnsupported,
    /// The lock-delay is longer than [`MAX_TTL`](crate::defaults::MAX_TTL).
    #[error("a lock-delay of {} is longer than a year", Millis(*.lock_delay))]
    LockDelayTooLong {
        /// The rejected lock-delay.
        lock_delay: Duration,
    },
    /// The maximum hold is zero.
    #[error("a maximum hold of zero would end every hold as it starts; leave it unset for no cap")]
    ZeroMaxHold,
    /// The retry backoff has a zero base, a cap below its base, or a cap over a year.
    #[error(
        "retry backoff base {} must be non-zero and no larger than its cap {}, \
         and the cap at most a year",
        Millis(*.base),
        Millis(*.max)
    )]
    InvalidBackoff {
        /// The configured base delay.
        base: Duration,
        /// The configured cap.
        max: Duration,
    },
}

/// `lock()` did not acquire the lock.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, LockError, Mutex};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let driver = LocalDriver::new();
/// let first = Mutex::builder("jobs", driver.clone()).build().unwrap();
/// let second = Mutex::builder("jobs", driver).build().unwrap();
/// let _guard = first.lock().await.unwrap();
/// assert!(matches!(second.try_lock().await, Err(LockError::Contended { .. })));
/// assert!(matches!(first.try_lock().await, Err(LockError::AlreadyHeld)));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// This Mutex already holds the lock, or another task is acquiring it through this
    /// same Mutex. robit mutexes are not reentrant: unlock first, or give each
    /// concurrent task its own Mutex.
    #[error(
        "this mutex already holds the lock or is acquiring it; mutexes are not reentrant, \
         so unlock first or give each task its own mutex"
    )]
    AlreadyHeld,
    /// The lock name is empty.
    #[error("the lock name is empty; give every lock a non-empty name")]
    EmptyName,
    /// A single attempt found the lock held by another owner.
    #[error(
        "the lock is held by another owner{}; retry later, or wait with lock()",
        fmt_expiry(*.expires_in)
    )]
    Contended {
        /// The backend's estimate of when the other grant expires, if it gave one.
        expires_in: Option<Duration>,
    },
    /// A single attempt found the backend in quarantine: it lost its state (a restart
    /// without persistence, a flush), or another server now answers with older state (a
    /// failover, a restart from a snapshot), and it grants nothing until every grant from
    /// before has run out, since their holders may still believe in them.
    #[error(
        "the lock backend grants nothing for {}: it lost its state or came back with older \
         state (a restart, a flush, a failover), and holders from before may still believe \
         they hold the lock; retry after that, or wait with lock()",
        Millis(*.left)
    )]
    Quarantined {
        /// How long the quarantine has left.
        left: Duration,
    },
    /// The wait timed out.
    #[error("gave up waiting for the lock after {}; {}", Millis(*.waited), fmt_why(.last_error))]
    Timeout {
        /// How long `lock()` waited.
        waited: Duration,
        /// The most recent backend error during the wait, if the backend was failing.
        #[source]
        last_error: Option<DriverError>,
    },
    /// The backend failed in a way that retrying does not fix, or failed on a single
    /// attempt.
    #[error(transparent)]
    Backend(#[from] DriverError),
    /// `lock()` was called outside a tokio runtime; the lease watchdog needs one.
    #[error(
        "no tokio runtime: call lock() from within a tokio runtime, which runs the lease watchdog"
    )]
    NoRuntime,
}

fn fmt_expiry(expires_in: Option<Duration>) -> String {
    expires_in
        .map(|d| format!(" (its grant expires in {} unless renewed)", Millis(d)))
        .unwrap_or_default()
}

/// Why a wait ran out: the backend's failure if it was failing (its own message says what
/// to do), else a holder.
fn fmt_why(last: &Option<DriverError>) -> String {
    match last {
        Some(error) => format!("the backend was failing: {error}"),
        None => "wait longer, or find out why the holder keeps it".to_owned(),
    }
}

/// `unlock()` did not release a live lease.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex, UnlockError};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mutex = Mutex::builder("jobs", LocalDriver::new()).build().unwrap();
/// mutex.acquire().await.unwrap();
/// mutex.unlock().await.unwrap();
/// assert!(matches!(mutex.unlock().await, Err(UnlockError::AlreadyReleased)));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum UnlockError {
    /// Nothing to unlock: the lock was never taken, or was already unlocked (or its loss
    /// already reported).
    #[error("the lock is not held: it was never acquired or was already released")]
    AlreadyReleased,
    /// The lease had been lost before `unlock()`; the loss was signalled when it happened.
    /// Work done after that instant was not protected: treat its effects with suspicion.
    #[error("the lease was lost before unlock ({0}); work after the loss was not exclusive")]
    Lost(LossReason),
    /// The backend did not confirm the release. The lock is released locally, and the
    /// backend frees it when its TTL runs out at the latest.
    #[error("the backend did not confirm the release; it expires within its TTL: {0}")]
    Backend(#[from] DriverError),
}

/// `refresh()` did not extend the lease.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex, RefreshError};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // The watchdog renews this mutex's leases, so there is nothing to refresh by hand.
/// let mutex = Mutex::builder("jobs", LocalDriver::new()).build().unwrap();
/// let guard = mutex.lock().await.unwrap();
/// let refused = guard.refresh(Duration::from_secs(5)).await;
/// assert!(matches!(refused, Err(RefreshError::WatchdogRenews)));
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The mutex's watchdog renews its leases; a refresh by hand alongside it could leave
    /// the mutex believing in the wrong one of two renewals.
    #[error(
        "this mutex's watchdog renews its leases; build it with .watchdog(false) to \
         refresh them yourself"
    )]
    WatchdogRenews,
    /// The TTL is zero, longer than [`MAX_TTL`](crate::defaults::MAX_TTL), or too short to leave
    /// any validity after drift and the safety margin.
    #[error(
        "a TTL of {} leaves no validity (or is longer than a year); refresh for \
         longer than the safety margin and at most a year",
        Millis(*.ttl)
    )]
    InvalidTtl {
        /// The rejected TTL.
        ttl: Duration,
    },
    /// Nothing to refresh: the lock was never taken, or was already unlocked.
    #[error("the lock is not held: it was never acquired or was already released")]
    NotHeld,
    /// The lease was lost, before or during the refresh; the loss has been signalled.
    #[error("the lease is lost ({0}); stop the work, it is no longer exclusive")]
    Lost(LossReason),
    /// The backend did not confirm the refresh. The lease stays valid until its deadline
    /// (see [`Guard::valid_for`](crate::Guard::valid_for)): retry before then.
    #[error("the backend did not confirm the refresh; retry before the lease's deadline: {0}")]
    Backend(#[source] DriverError),
}
