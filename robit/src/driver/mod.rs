//! The driver-author contract: what a backend implements ([`Driver`], [`Lease`]) and the
//! types that cross the boundary between the mutex and a driver — the request, the
//! owner token, the lock name, the fencing token, the release watch, the driver's error.
//!
//! An application needs none of this beyond passing a driver to a builder (and, for
//! operators, [`Driver::inspect`] and [`Driver::force_release`]). A driver author starts
//! here: [`Driver`] states the contract rule by rule with a complete example driver, the
//! `robit-conformance` crate checks a driver against it in real time, and
//! `docs/driver-authors.md` in robit's repository gives the reasons and the pitfalls.
//!
//! ```
//! use robit::driver::{Acquire, AcquireRequest, Driver, LockName, OwnerToken};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), robit::BoxError> {
//! // What the mutex does with any driver, by hand: one acquire, then a release.
//! let driver = robit::LocalDriver::new();
//! let request = AcquireRequest::new(LockName::from("job"), OwnerToken::from_u128(1), Duration::from_secs(5));
//! if let Acquire::Granted(lease) = driver.acquire(&request).await? {
//!     println!("granted with fencing token {}", lease.fence());
//!     lease.release().await?;
//! }
//! # Ok(()) }
//! ```

mod error;
mod fence;
mod inspect;
mod lease;
mod name;
mod owner;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod quarantine_log;
mod request;
mod watch;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The attribute both traits are declared with, re-exported so that a driver needs no
/// dependency of its own to implement them.
pub use async_trait::async_trait;

#[cfg(any(feature = "redis", feature = "etcd", feature = "postgres"))]
pub(crate) use self::error::Explained;
pub use self::error::{BoxError, DriverError};
pub use self::fence::{FenceGate, FenceToken, StaleFence};
pub use self::inspect::{Inspection, LockState};
pub use self::lease::{Lease, Renewal};
#[cfg(feature = "redis")]
pub(crate) use self::name::BUCKETS;
pub use self::name::LockName;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) use self::name::bucket;
pub use self::owner::OwnerToken;
#[cfg(any(feature = "redis", feature = "etcd", feature = "postgres"))]
pub(crate) use self::owner::hex128;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) use self::quarantine_log::QuarantineLog;
pub use self::request::{AcquireRequest, Waiter};
pub use self::watch::ReleaseWatch;
pub(crate) use self::watch::WatchRegistry;

/// A lock backend: grants leases on lock names.
///
/// Implement this (and [`Lease`]) to put robit on a new backend. The [`Mutex`](crate::Mutex)
/// does everything else — validity deadlines, renewal, loss signalling, waiting — so a
/// driver only has to make four operations atomic on its backend.
///
/// # The contract
///
/// A *grant* is the triple (name, owner, fencing token), alive on the backend until its
/// expiry. For every lock name:
///
/// 1. **At most one live grant.** [`acquire`](Driver::acquire) creates a grant only when
///    the name has none, atomically (check-and-set in one backend operation).
/// 2. **The TTL is a promise.** A grant created by an acquire (or extended by a renew)
///    that *the client sent at time `t`* must stay live until at least `t + ttl` in real
///    time. Measuring from when the backend *received* the request satisfies this.
///    A backend that may drop grants earlier (an eviction, a restart without persistence)
///    breaks the promise; drivers should document when that can happen.
/// 3. **Fencing.** Every grant carries a [`FenceToken`] strictly greater than that of every
///    earlier grant of the same name — across releases, expiries and owners. Tokens start
///    at 1. A global counter (shared by all names) satisfies this, as long as it does not
///    live in the record it fences (deleted with the grant, it would start over) and
///    survives the backend's restarts.
/// 4. **Owner-checked renew and release.** [`Lease::renew`] and [`Lease::release`] act
///    only on the lease's own grant (same owner *and* token) and only while it is live.
///    A renew that finds the grant expired answers [`Renewal::Lost`] even if nobody else
///    holds the name: the client may already have been told it lost the lock.
/// 5. **Release is idempotent** and never fails because the grant is gone.
/// 6. **Errors are errors.** Report a failed operation as a [`DriverError`]; never
///    report `Held` or `Lost` when the backend could not be asked.
///
/// 7. **A hand-off may grant ahead of the attempt.** A fair driver may grant the lock to
///    the waiter first in line when the holder releases it, so that the waiter need not
///    claim it: the waiter's next acquire answers [`Acquire::Handed`]. Such a grant is
///    made after the waiter's last attempt answered [`Acquire::Held`] (or
///    [`Acquire::Quarantined`]) was *processed*, so its TTL counts from that attempt's
///    sending: rule 2 with the earlier send time. The grant's owner is the driver's to
///    choose (the waiter's [`Waiter::id`], typically); renew and release act on it as
///    rule 4 says. A waiter that gives up is [withdrawn](Driver::withdraw), and the
///    driver frees a grant it made the waiter and nobody took up.
///
/// The Mutex draws a fresh [`OwnerToken`] for every attempt, so a driver never sees one
/// owner acquire twice.
///
/// Drivers need no timeouts for the Mutex's sake: it bounds every call and treats a call
/// that overruns as failed. (A driver may still keep its own, to notice a dead connection
/// and replace it, as the Redis driver does; it then says so with
/// [`call_limit`](Driver::call_limit), and the Mutex does not arm a second timer.) They
/// should be cancel-safe in the ordinary sense — a dropped call may or may not have taken
/// effect, and the contract above still holds either way.
///
/// The `robit-conformance` crate checks all of this against a driver and its real
/// backend (`check_contract`); robit's simulation harness, robit-sim, also puts it
/// through fault scenarios and model checking. A driver that keeps TTLs itself must read
/// time from an injected [`Clock`](crate::sources::Clock), never from the wall clock, or
/// neither can control its time (the driver authors' guide, `docs/driver-authors.md`,
/// explains why and walks through a complete driver).
///
/// # Example
///
/// A driver over a backend that is a single in-memory slot per name. Real drivers talk to
/// a server; see [`LocalDriver`](crate::LocalDriver) for a complete in-process one.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex as StdMutex};
/// use std::time::Duration;
/// use robit::{Driver, FenceToken};
/// use robit::driver::{async_trait, Acquire, AcquireRequest, DriverError, Lease, LockName, OwnerToken, Renewal};
/// use tokio::time::Instant;
///
/// #[derive(Default)]
/// struct Table { next_fence: u64, grants: BTreeMap<LockName, (OwnerToken, FenceToken, Instant)> }
///
/// #[derive(Clone, Default)]
/// struct SlotDriver(Arc<StdMutex<Table>>);
///
/// struct SlotLease { table: SlotDriver, name: LockName, owner: OwnerToken, fence: FenceToken }
///
/// #[async_trait]
/// impl Driver for SlotDriver {
///     async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
///         let (name, owner, ttl) = (&request.name, request.owner, request.ttl);
///         let now = Instant::now();
///         let mut t = self.0.lock().unwrap();
///         match t.grants.get(name) {
///             Some((_, _, until)) if *until > now => {
///                 Ok(Acquire::Held { expires_in: Some(*until - now) })
///             }
///             _ => {
///                 t.next_fence += 1;
///                 let fence = FenceToken::new(t.next_fence);
///                 t.grants.insert(name.clone(), (owner, fence, now + ttl));
///                 let lease = SlotLease { table: self.clone(), name: name.clone(), owner, fence };
///                 Ok(Acquire::Granted(Arc::new(lease)))
///             }
///         }
///     }
/// }
///
/// #[async_trait]
/// impl Lease for SlotLease {
///     fn fence(&self) -> FenceToken { self.fence }
///
///     async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
///         let now = Instant::now();
///         let mut t = self.table.0.lock().unwrap();
///         match t.grants.get_mut(&self.name) {
///             Some((o, f, until)) if *o == self.owner && *f == self.fence && *until > now => {
///                 *until = now + ttl;
///                 Ok(Renewal::Renewed)
///             }
///             _ => Ok(Renewal::Lost),
///         }
///     }
///
///     async fn release(&self) -> Result<(), DriverError> {
///         let mut t = self.table.0.lock().unwrap();
///         if matches!(t.grants.get(&self.name), Some((o, f, _)) if *o == self.owner && *f == self.fence) {
///             t.grants.remove(&self.name);
///         }
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mutex = robit::Mutex::builder("slot", SlotDriver::default()).build().unwrap();
/// let guard = mutex.lock().await.unwrap();
/// assert_eq!(guard.fence(), FenceToken::new(1));
/// guard.unlock().await.unwrap();
/// # }
/// ```
#[async_trait]
pub trait Driver: Send + Sync + 'static {
    /// Tries once to create a grant of `request.name` for `request.owner`, live for at
    /// least `request.ttl` from the moment this call was made.
    ///
    /// Returns [`Acquire::Granted`] with a lease for the new grant, [`Acquire::Held`]
    /// when another owner holds a live grant (or, for a fair driver, when earlier waiters
    /// are queued ahead of this one), [`Acquire::Quarantined`] while a backend that
    /// lost its state refuses every grant, or, for a waiter, [`Acquire::Handed`] with
    /// a lease on the grant a release made it before this attempt (rule 7).
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when the backend could not be asked or refused.
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError>;

    /// Subscribes to the releases that concern `request`, so that a waiting `lock()`
    /// wakes as soon as the lock is free for it instead of at its next poll.
    ///
    /// The Mutex subscribes *before* each acquire attempt and awaits the watch only after
    /// the attempt found the lock held, so a release between the two is not missed: the
    /// watch must complete if a release (or expiry the driver notices) that could let this
    /// waiter acquire happens any time after this call. A fair driver that hands the lock
    /// to one queued waiter at a time wakes only that waiter (keyed on
    /// [`Waiter::id`]). Spurious completions are harmless (the waiter just tries again, no
    /// sooner than a millisecond after its last attempt); missed ones cost a poll
    /// interval, never correctness. Most attempts are granted and drop their watch
    /// unpolled; a driver may register the watch when it is first polled instead, if it
    /// keeps a release that comes before then for it (the Redis driver does).
    ///
    /// The default never completes: waiters poll with jittered backoff.
    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        let _ = request;
        ReleaseWatch::never()
    }

    /// Tells the driver that the waiter of `request` gave up (its wait timed out, failed,
    /// or was cancelled), so a fair driver can take it out of its queue — and pass on
    /// anything it had reserved for it — instead of waiting for the entry to expire.
    /// Called in the background, at most once per waiting `lock()` call that ends
    /// without the lock after it made an attempt (any attempt may have queued it, even
    /// one whose answer was lost).
    ///
    /// The default does nothing.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] if the backend could not be told; the entry then expires.
    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        let _ = request;
        Ok(())
    }

    /// The longest any call to this driver or to its leases takes before it returns,
    /// with a result or an error, if the driver enforces such a limit itself.
    ///
    /// The Mutex bounds every acquire, release and withdraw call by a timeout of its own
    /// (the renew timeout, or what is left of a `lock()` wait). A driver that already
    /// bounds its calls — to notice a dead connection, say — makes that second timer
    /// redundant whenever its limit is no longer than the Mutex's: the Mutex then leaves
    /// the bounding to the driver and saves a timer's registration and removal per call,
    /// which is a measurable part of an uncontended lock + unlock. (Renewals keep the
    /// watchdog's timer, which also watches the validity deadline.) The limit is read in
    /// tokio's time, so a Mutex built with a clock of its own ignores it. The Mutex reads
    /// this once, when it is built.
    ///
    /// Return a limit only if it holds for every call, on every path (connecting,
    /// waiting for a connection, retrying): a call that outlives a promised limit makes
    /// `lock()` and `unlock()` wait that much longer. Safety never depends on it — lease
    /// validity is counted from each call's send time either way.
    ///
    /// The default is `None`: the Mutex bounds every call itself.
    fn call_limit(&self) -> Option<Duration> {
        None
    }

    /// Whether the driver keeps a grant's [`lock_delay`](AcquireRequest::lock_delay):
    /// after the grant ends by expiry (its holder stopped renewing: crashed, paused, cut
    /// off), it refuses the lock to everyone for that long more; after a release, not.
    /// A Mutex built with a lock-delay refuses a driver that does not
    /// ([`ConfigError::LockDelayUnsupported`](crate::ConfigError::LockDelayUnsupported)),
    /// rather than promise a protection nobody keeps.
    ///
    /// The default is `false`.
    fn supports_lock_delay(&self) -> bool {
        false
    }

    /// What the backend holds for lock `name` now, for an operator: who holds it, its
    /// fencing token, how long it has left, how many wait. Reads only.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when the backend could not be asked; the default refuses, for a
    /// driver that cannot tell.
    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        let _ = name;
        Err(DriverError::rejected(
            "this driver cannot inspect its locks",
        ))
    }

    /// Frees lock `name` by force if `holder` holds it (or held it, in its lock-delay),
    /// handing it to the first waiter as a release would: for an operator whose holder
    /// is known to be stuck. Owner-checked, so that an operator acting on a stale
    /// [`inspect`](Driver::inspect) never frees a newer holder's grant. Returns whether
    /// it freed anything.
    ///
    /// The holder is not asked. A driver with a loss signal of its own tells it at once
    /// (the local driver does); otherwise, if it is alive after all, it learns at its next
    /// renewal (or its validity deadline) that the lease is gone, and meanwhile another
    /// may hold the lock — what fencing tokens are for.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when the backend could not be asked; the default refuses.
    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        let _ = (name, holder);
        Err(DriverError::rejected(
            "this driver cannot release a lock by force",
        ))
    }
}

/// The outcome of one acquire attempt.
///
/// # Example
///
/// ```
/// use robit::driver::Acquire;
/// use std::time::Duration;
///
/// let held = Acquire::Held { expires_in: Some(Duration::from_secs(3)) };
/// assert!(matches!(held, Acquire::Held { .. }));
/// ```
#[non_exhaustive]
pub enum Acquire {
    /// The caller now holds the lock.
    Granted(Arc<dyn Lease>),
    /// The caller's waiter holds the lock by a hand-off: a release granted it to the
    /// waiter first in line, before this attempt was sent
    /// (see [`Driver::acquire`]). The grant must stay live until at least the TTL from
    /// the sending of the waiter's last attempt answered [`Held`](Self::Held) or
    /// [`Quarantined`](Self::Quarantined), and the Mutex counts its validity from
    /// there (from the first attempt's sending, if none was answered so).
    Handed(Arc<dyn Lease>),
    /// Another owner holds a live grant.
    Held {
        /// When that grant expires unless renewed, if the backend says.
        expires_in: Option<Duration>,
    },
    /// The backend grants nothing to anyone for `left`: it lost state (a restart without
    /// persistence, a flush), and a holder from before may still believe in its grant
    /// until its TTL runs out. A waiter sleeps until then rather than polling.
    Quarantined {
        /// How long the quarantine has left.
        left: Duration,
    },
}

impl fmt::Debug for Acquire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Granted(lease) => f.debug_tuple("Granted").field(&lease.fence()).finish(),
            Self::Handed(lease) => f.debug_tuple("Handed").field(&lease.fence()).finish(),
            Self::Held { expires_in } => f
                .debug_struct("Held")
                .field("expires_in", expires_in)
                .finish(),
            Self::Quarantined { left } => {
                f.debug_struct("Quarantined").field("left", left).finish()
            }
        }
    }
}

/// A shared driver is a driver, so one `Arc<dyn Driver>` can serve many mutexes.
#[async_trait]
impl<D: Driver + ?Sized> Driver for std::sync::Arc<D> {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        (**self).acquire(request).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        (**self).watch_release(request)
    }

    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        (**self).withdraw(request).await
    }

    fn call_limit(&self) -> Option<Duration> {
        (**self).call_limit()
    }

    fn supports_lock_delay(&self) -> bool {
        (**self).supports_lock_delay()
    }

    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        (**self).inspect(name).await
    }

    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        (**self).force_release(name, holder).await
    }
}
