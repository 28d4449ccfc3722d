//! The in-process driver.

mod lease;
mod table;

use std::fmt;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use self::lease::LocalLease;
use self::table::Table;
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
    WatchRegistry,
};
use crate::millis::Millis;
use crate::sources::{Clock, TokioClock};

/// An in-process lock backend with the full driver contract: TTL expiry on an injected
/// clock, fencing, owner-checked renew and release, release notifications, and a
/// loss signal when a grant is evicted.
///
/// Use it to coordinate tasks inside one process, in tests, and as the simulator's
/// simplest backend. It is a cheap handle: clones share one lock table, so give a clone to
/// every [`Mutex`](crate::Mutex) that should contend.
///
/// Memory stays bounded by the live grants: released grants are removed at once, and
/// expired ones at the next operation on the driver. Fencing tokens come from one counter
/// for the whole driver, so removing a name's entry never lets its tokens go backwards.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let driver = LocalDriver::new();
/// let a = Mutex::builder("report", driver.clone()).build().unwrap();
/// let b = Mutex::builder("report", driver.clone()).build().unwrap();
///
/// let guard = a.lock().await.unwrap();
/// assert!(b.try_lock().await.is_err());
/// guard.unlock().await.unwrap();
/// let guard = b.try_lock().await.unwrap();
/// assert_eq!(guard.fence().get(), 2);
/// # guard.unlock().await.unwrap();
/// assert!(driver.is_empty());
/// # }
/// ```
#[derive(Clone)]
pub struct LocalDriver {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Arc<dyn Clock>,
    table: StdMutex<Table>,
    /// The table's release watches; registered without taking the table's lock.
    watchers: Arc<WatchRegistry<LockName>>,
}

impl Shared {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LocalDriver {
    /// A driver on tokio's clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(TokioClock))
    }

    /// A driver whose grants expire on `clock`: the simulator passes the backend host's
    /// clock.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        let table = Table::default();
        let watchers = Arc::clone(&table.watchers);
        Self {
            shared: Arc::new(Shared {
                clock,
                table: StdMutex::new(table),
                watchers,
            }),
        }
    }

    /// The number of live grants.
    pub fn len(&self) -> usize {
        let now = self.shared.clock.now();
        let mut table = self.shared.table();
        table.sweep(now);
        table.len()
    }

    /// Whether no grant is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deletes the live grant of `name`, as a backend evicting a key would, and signals
    /// the loss to its holder through [`Lease::lost`](crate::driver::Lease::lost). Returns whether
    /// there was a live grant. For tests of loss handling.
    pub fn evict(&self, name: &LockName) -> bool {
        let now = self.shared.clock.now();
        let mut table = self.shared.table();
        table.sweep(now);
        table.evict(name)
    }
}

impl Default for LocalDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for LocalDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalDriver")
            .field("clock", &self.shared.clock)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Driver for LocalDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let (name, owner) = (&request.name, request.owner);
        let now = self.shared.clock.now();
        let expires_at = expiry(now, request.ttl)?;
        let mut table = self.shared.table();
        table.sweep(now);
        Ok(
            match table.grant(name, owner, now, (expires_at, request.lock_delay)) {
                Ok(grant) => Acquire::Granted(Arc::new(LocalLease::new(
                    Arc::clone(&self.shared),
                    name.clone(),
                    owner,
                    grant,
                ))),
                Err(expires_in) => Acquire::Held {
                    expires_in: Some(expires_in),
                },
            },
        )
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        self.shared.watchers.watch(request.name.clone())
    }

    fn supports_lock_delay(&self) -> bool {
        true
    }

    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        let now = self.shared.clock.now();
        let mut table = self.shared.table();
        table.sweep(now);
        Ok(table.inspect(name, now))
    }

    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        let now = self.shared.clock.now();
        let mut table = self.shared.table();
        table.sweep(now);
        Ok(table.force_release(name, holder))
    }
}

/// `now + ttl`, or a typed error for a TTL too long to represent.
fn expiry(now: tokio::time::Instant, ttl: Duration) -> Result<tokio::time::Instant, DriverError> {
    now.checked_add(ttl).ok_or_else(|| {
        DriverError::rejected(format!(
            "a TTL of {} is too long for the local driver's clock; use a TTL of at most a year",
            Millis(ttl)
        ))
    })
}

#[cfg(test)]
mod tests;
