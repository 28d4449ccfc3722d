//! What one acquire attempt asks of a driver.

use std::time::Duration;

use super::{LockName, OwnerToken};

/// One acquire attempt, as the [`Mutex`](crate::Mutex) asks it of a
/// [`Driver`](crate::Driver).
///
/// `owner` is fresh for every attempt; `waiter`, when present, is the same for every
/// attempt of one waiting `lock()` call, so that a driver can queue waiters fairly and
/// hand the lock to the longest-waiting one. A driver without fairness ignores it.
///
/// # Example
///
/// ```
/// use robit::driver::{AcquireRequest, LockName, OwnerToken, Waiter};
/// use std::time::Duration;
///
/// let request = AcquireRequest::new(LockName::from("jobs"), OwnerToken::from_u128(7), Duration::from_secs(10))
///     .with_waiter(Waiter::new(42, Duration::from_millis(250)));
/// assert_eq!(request.waiter.map(|w| w.id), Some(42));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct AcquireRequest {
    /// The lock to acquire.
    pub name: LockName,
    /// The owner of the grant, if granted: fresh for every attempt.
    pub owner: OwnerToken,
    /// How long the grant must live, from the moment the request was sent.
    pub ttl: Duration,
    /// Who is waiting, for a `lock()` call that waits; `None` for a single try.
    pub waiter: Option<Waiter>,
    /// How long after the grant ends *by expiry* the backend must keep refusing the
    /// lock to everyone (zero: not at all); a release ends it without delay. Only asked
    /// of a driver whose [`supports_lock_delay`](crate::Driver::supports_lock_delay)
    /// says it keeps it, for this grant and every renewal of it.
    pub lock_delay: Duration,
}

impl AcquireRequest {
    /// A single try, with no waiter.
    pub fn new(name: LockName, owner: OwnerToken, ttl: Duration) -> Self {
        Self {
            name,
            owner,
            ttl,
            waiter: None,
            lock_delay: Duration::ZERO,
        }
    }

    /// The same request, with a lock-delay.
    pub fn with_lock_delay(mut self, lock_delay: Duration) -> Self {
        self.lock_delay = lock_delay;
        self
    }

    /// The same request, made on behalf of `waiter`.
    pub fn with_waiter(mut self, waiter: Waiter) -> Self {
        self.waiter = Some(waiter);
        self
    }
}

/// A waiting `lock()` call, as seen by a driver that queues waiters.
///
/// # Example
///
/// ```
/// use robit::driver::Waiter;
/// use std::time::Duration;
///
/// let waiter = Waiter::new(0xfeed, Duration::from_millis(250));
/// assert_eq!(waiter.retry_within, Duration::from_millis(250));
/// assert_eq!(waiter.on_attempt(3).attempt, 3);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiter {
    /// A random id, the same for every attempt of one `lock()` call.
    pub id: u128,
    /// The longest the waiter goes between two attempts while it waits: a driver can
    /// drop a queue entry whose waiter has not been heard from for several times this.
    pub retry_within: Duration,
    /// Which attempt of the `lock()` call this is, from 0. Only the first can be sure
    /// that it is not queued yet: a later one may have been queued by any earlier one,
    /// even one whose answer was lost, so a fair driver looks before queueing it again.
    pub attempt: u32,
}

impl Waiter {
    /// A waiter with the given id and poll interval, on its first attempt.
    pub const fn new(id: u128, retry_within: Duration) -> Self {
        Self {
            id,
            retry_within,
            attempt: 0,
        }
    }

    /// The same waiter, on attempt `attempt` (from 0).
    #[must_use]
    pub const fn on_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }
}
