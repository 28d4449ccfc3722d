//! The distributed mutex as its users see it: [`Mutex`], built by [`MutexBuilder`],
//! and the [`Guard`] of a hold. What happens underneath is the engine's
//! ([`crate::engine`]).

mod builder;
mod guard;
pub(crate) mod setters;

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use self::builder::MutexBuilder;
pub use self::guard::Guard;
use crate::driver::{Driver, FenceToken, LockName};
use crate::engine::{self, Config, Core, Stats, StatsCells, Wait, Watchdog, Which};
use crate::error::{LockError, RefreshError, UnlockError};

/// A distributed mutex: one would-be holder of one named lock on a backend.
///
/// A `Mutex` stands for one participant. Processes (or tasks) that must exclude each
/// other each build their own `Mutex` with the same name over the same backend; whoever
/// acquires it holds a *lease* that a background watchdog renews until the lock is
/// unlocked. If the lease is lost — renewals failed until the validity deadline, or the
/// backend says it is gone — the holder is told at once, through the on-lost callbacks,
/// the guard's [`lost`](Guard::lost) signal and [`is_held`](Mutex::is_held), before the
/// backend can grant the lock to anyone else.
///
/// Two styles, sharing one state:
///
/// - **Scoped:** [`lock`](Mutex::lock) returns a [`Guard`] carrying the fencing token and
///   the lost signal; [`Guard::unlock`] releases.
/// - **Explicit:** [`acquire`](Mutex::acquire) holds the lock until
///   [`unlock`](Mutex::unlock) on the mutex itself.
///
/// Mutexes are not reentrant: while one holds (or is acquiring) the lock, `lock()` and
/// `acquire()` return [`LockError::AlreadyHeld`] at once, and unlocking twice returns
/// [`UnlockError::AlreadyReleased`].
///
/// A `Mutex` is one would-be holder, so tasks that must exclude each other each need
/// their own: a second task calling `lock()` on a shared `Mutex` gets
/// [`LockError::AlreadyHeld`] at once instead of waiting. To lock from many tasks, or by
/// a key known at run time, use a [`Locker`](crate::Locker): each of its `lock(name)`
/// calls is its own would-be holder. (A `Mutex` is `Send + Sync`, so sharing one behind
/// an `Arc` is fine for a single holder's explicit style: `acquire` in one task,
/// `unlock` in another.) Its watchdog never outlives it: dropping the last of the mutex
/// and its guards (for a [`Locker`](crate::Locker)'s mutex, and the locker) stops renewal and
/// releases a held lock in the background, with one release attempt bounded by the renew
/// timeout. The other tasks robit spawns finish work nobody waits for any more — an
/// acquire attempt abandoned mid-flight, a cancelled unlock, a waiter's withdrawal — and
/// each ends within a TTL; the design document lists them all.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let driver = LocalDriver::new(); // in production: a Redis driver
/// let mutex = Mutex::builder("invoice-run", driver)
///     .ttl(Duration::from_secs(10))
///     .build()?;
///
/// let guard = mutex.lock().await?;
/// // Send the fencing token with every write to the protected resource.
/// let token = guard.fence();
/// tokio::select! {
///     () = guard.lost() => eprintln!("lease lost: stop, the work is no longer exclusive"),
///     () = async { /* the critical section, using `token` */ } => {}
/// }
/// guard.unlock().await?;
/// # let _ = token;
/// # Ok(()) }
/// ```
pub struct Mutex {
    handle: Arc<Handle>,
}

/// Owned by a mutex and its guards; when the last of them goes, the hold goes too, and
/// the watchdog exits.
pub(crate) struct Handle {
    pub(crate) core: Arc<Core>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.core.release_in_background(Which::Current);
        self.core.close();
    }
}

impl Mutex {
    /// Starts building a mutex for lock `name` over `driver`.
    ///
    /// `driver` is usually a cheap clone of a shared driver (drivers are handles), or an
    /// `Arc<dyn Driver>`.
    ///
    /// A mutex built here has a watchdog of its own (a task per runtime it holds on).
    /// Many mutexes over one driver cost less made by one [`Locker`](crate::Locker)
    /// ([`Locker::mutex`](crate::Locker::mutex)): they share its one renewal schedule,
    /// and renewals that fall due together go out together.
    pub fn builder(name: impl Into<LockName>, driver: impl Driver) -> MutexBuilder {
        MutexBuilder::new(name.into(), Arc::new(driver))
    }

    pub(crate) fn from_config(
        config: Config,
        stats: Arc<StatsCells>,
        watchdog: Arc<Watchdog>,
    ) -> Self {
        Self {
            handle: Arc::new(Handle {
                core: Arc::new(Core::new(config, stats, watchdog)),
            }),
        }
    }

    fn core(&self) -> &Arc<Core> {
        &self.handle.core
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.core().config.name
    }

    /// Acquires the lock, waiting as configured (by default until acquired or until
    /// this future is dropped), and returns a guard for the hold.
    ///
    /// Dropping the guard without calling [`Guard::unlock`] stops renewal and releases
    /// the lock in the background.
    ///
    /// # Errors
    ///
    /// [`LockError::AlreadyHeld`] if this mutex holds or is acquiring the lock;
    /// [`LockError::Timeout`] when a [`Wait::Timeout`] runs out; [`LockError::Backend`]
    /// when the backend refuses for good; [`LockError::NoRuntime`] outside tokio.
    pub async fn lock(&self) -> Result<Guard, LockError> {
        self.lock_with(self.core().config.wait).await
    }

    /// Tries once to acquire the lock.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock), and [`LockError::Contended`] if someone else holds it.
    pub async fn try_lock(&self) -> Result<Guard, LockError> {
        self.lock_with(Wait::Try).await
    }

    /// Acquires the lock, waiting as `wait` says rather than as configured.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock) and [`try_lock`](Self::try_lock).
    pub async fn lock_with(&self, wait: Wait) -> Result<Guard, LockError> {
        let installed = engine::acquire(self.core(), wait).await?;
        Ok(Guard::new(Arc::clone(&self.handle), installed))
    }

    /// Acquires the lock in the explicit style: it stays held (and renewed) until
    /// [`unlock`](Self::unlock) is called or the mutex is dropped. Returns the fencing
    /// token of the grant.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock).
    pub async fn acquire(&self) -> Result<FenceToken, LockError> {
        Ok(self.lock().await?.detach())
    }

    /// Releases the lock this mutex holds, whichever style acquired it, and waits for the
    /// backend to confirm.
    ///
    /// # Errors
    ///
    /// [`UnlockError::AlreadyReleased`] if nothing is held; [`UnlockError::Lost`] the
    /// first time after the lease was lost; [`UnlockError::Backend`] if the backend did
    /// not confirm (the lock is released locally either way).
    pub async fn unlock(&self) -> Result<(), UnlockError> {
        engine::unlock(self.core(), Which::Current).await
    }

    /// Extends the lease this mutex holds by `ttl` from now, for a mutex built with
    /// [`watchdog(false)`](MutexBuilder::watchdog), and returns how long it is valid
    /// from now. The explicit style's [`Guard::refresh`].
    ///
    /// # Errors
    ///
    /// As [`Guard::refresh`].
    pub async fn refresh(
        &self,
        ttl: std::time::Duration,
    ) -> Result<std::time::Duration, RefreshError> {
        engine::refresh(self.core(), Which::Current, ttl).await
    }

    /// Whether this mutex holds the lock now: acquired, not unlocked, not lost, and
    /// inside its validity deadline. Turns false the moment loss is signalled.
    pub fn is_held(&self) -> bool {
        self.core().is_held(Which::Current)
    }

    /// The fencing token of the current hold, if any.
    pub fn fence(&self) -> Option<FenceToken> {
        self.core().current().map(|(fence, _)| fence)
    }

    /// A token cancelled when the current hold's lease is lost (never on unlock), for the
    /// explicit style. `None` when nothing is held.
    pub fn lost_token(&self) -> Option<CancellationToken> {
        self.core().current().map(|(_, lost)| lost)
    }

    /// A snapshot of this mutex's counters.
    pub fn stats(&self) -> Stats {
        self.core().stats()
    }
}

impl fmt::Debug for Mutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("config", &self.core().config)
            .field("held", &self.is_held())
            .finish()
    }
}
