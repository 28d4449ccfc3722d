//! [`Locker`]: one set of settings over one driver, from which any task locks any name.

mod with_lock;

use std::fmt;
use std::sync::Arc;

pub use self::with_lock::WithLockError;
use crate::driver::{Driver, LockName};
use crate::engine::{Config, Settings, Stats, StatsCells, Wait, Watchdog};
use crate::error::{ConfigError, LockError};
use crate::mutex::setters::settings_setters;
use crate::mutex::{Guard, Mutex};

/// A cheap, cloneable handle for locking by name: `locker.lock("job:42")`.
///
/// Why it exists: real code locks per key — a job, a tenant, an invoice — and the key is
/// known only at run time. A `Locker` holds a driver and one set of settings (everything
/// a [`MutexBuilder`](crate::MutexBuilder) takes but the name); each call locks the name
/// it is given and returns the same [`Guard`] a [`Mutex`] does, with the same watchdog,
/// loss signal, jeopardy warning and fencing token.
///
/// **Every call is its own would-be holder.** Two tasks that lock the same name through
/// one `Locker` exclude each other exactly as two processes do: the second waits (or,
/// with [`try_lock`](Self::try_lock), is told the lock is contended). Locks are not
/// reentrant: a task that locks a name it already holds waits for itself, until its wait
/// runs out. Clones share everything, including the [`stats`](Self::stats), which total
/// the counters of every lock taken through them.
///
/// **Cost.** Each `lock(name)` builds a fresh mutex, but every hold taken through a
/// locker (and its clones) is renewed by one watchdog: a schedule with an entry per
/// hold, run by one task per runtime, not a task and a timer per hold. Holds that fall
/// due together are renewed together, in one batch where the driver batches. For a hot
/// loop on one name, take [`mutex(name)`](Self::mutex) once and lock it repeatedly.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Locker};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let locker = Locker::builder(LocalDriver::new())
///     .ttl(Duration::from_secs(10))
///     .build()?;
///
/// for job in [17, 42] {
///     let locker = locker.clone();
///     tokio::spawn(async move {
///         let guard = locker.lock(format!("job:{job}")).await?;
///         // ... run the job, sending guard.fence() with its writes ...
///         guard.unlock().await?;
///         Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
///     });
/// }
///
/// // Or around a closure: unlocked afterwards, cancelled if the lease is lost.
/// let total = locker.with_lock("tenant:7:settings", async |guard| {
///     guard.fence().get() // ... the critical section ...
/// }).await?;
/// # let _ = total;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Locker {
    shared: Arc<Shared>,
}

struct Shared {
    /// The settings, checked once; each lock takes a copy under its own name.
    config: Config,
    stats: Arc<StatsCells>,
    /// One schedule renews every hold taken through the locker and its clones.
    watchdog: Arc<Watchdog>,
}

impl Locker {
    /// Starts building a locker over `driver`.
    pub fn builder(driver: impl Driver) -> LockerBuilder {
        LockerBuilder {
            settings: Settings::new(LockName::from(PLACEHOLDER), Arc::new(driver)),
        }
    }

    /// A [`Mutex`] for lock `name` with this locker's settings, for the explicit style
    /// (or to keep one would-be holder across calls). Its counters count in this
    /// locker's stats, and its holds are renewed by this locker's one watchdog: many
    /// mutexes made here cost one schedule, not a task each.
    ///
    /// # Errors
    ///
    /// [`ConfigError::EmptyName`] for an empty name.
    pub fn mutex(&self, name: impl Into<LockName>) -> Result<Mutex, ConfigError> {
        let name = name.into();
        if name.is_empty() {
            return Err(ConfigError::EmptyName);
        }
        let config = self.shared.config.named(name);
        Ok(Mutex::from_config(
            config,
            Arc::clone(&self.shared.stats),
            Arc::clone(&self.shared.watchdog),
        ))
    }

    /// Locks `name`, waiting as configured (by default until acquired or until this
    /// future is dropped). As [`Mutex::lock`]: dropping the guard releases the lock in
    /// the background.
    ///
    /// # Errors
    ///
    /// [`LockError::EmptyName`] for an empty name, and as [`Mutex::lock`].
    pub async fn lock(&self, name: impl Into<LockName>) -> Result<Guard, LockError> {
        self.lock_with(name, self.shared.config.wait).await
    }

    /// Tries once to lock `name`.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock), and [`LockError::Contended`] if someone else holds it.
    pub async fn try_lock(&self, name: impl Into<LockName>) -> Result<Guard, LockError> {
        self.lock_with(name, Wait::Try).await
    }

    /// Locks `name`, waiting as `wait` says rather than as configured.
    ///
    /// # Errors
    ///
    /// As [`lock`](Self::lock) and [`try_lock`](Self::try_lock).
    pub async fn lock_with(
        &self,
        name: impl Into<LockName>,
        wait: Wait,
    ) -> Result<Guard, LockError> {
        let mutex = self.mutex(name).map_err(|_| LockError::EmptyName)?;
        // The guard keeps what it needs of the mutex alive.
        mutex.lock_with(wait).await
    }

    /// The counters of every lock taken through this locker and its clones. Hold time
    /// counts holds that have ended; [`Mutex::stats`] also counts the one in progress.
    pub fn stats(&self) -> Stats {
        self.shared.stats.snapshot(std::time::Duration::ZERO)
    }
}

/// The name a locker's settings are checked under; every lock replaces it.
const PLACEHOLDER: &str = "locker";

impl fmt::Debug for Locker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locker")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Locker`]; start with [`Locker::builder`]. It takes the settings of a
/// [`MutexBuilder`](crate::MutexBuilder), except the name, with the same defaults and
/// checks.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Locker, Wait};
/// use std::time::Duration;
///
/// let locker = Locker::builder(LocalDriver::new())
///     .ttl(Duration::from_secs(10))
///     .wait(Wait::Timeout(Duration::from_secs(30)))
///     .on_lost(|event| tracing::error!(lock = %event.name, "lease lost: {}", event.reason))
///     .build()?;
/// # drop(locker);
/// # Ok::<(), robit::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
#[derive(Clone)]
pub struct LockerBuilder {
    settings: Settings,
}

impl LockerBuilder {
    settings_setters!();

    /// Validates the settings and builds the locker. Nothing touches the backend until
    /// the first lock.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that is out of range.
    pub fn build(self) -> Result<Locker, ConfigError> {
        let config = self.settings.validate()?;
        let watchdog = Arc::new(Watchdog::new(Arc::clone(&config.clock)));
        Ok(Locker {
            shared: Arc::new(Shared {
                config,
                stats: Arc::default(),
                watchdog,
            }),
        })
    }
}

impl fmt::Debug for LockerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockerBuilder")
            .field("ttl", &self.settings.ttl)
            .field("renew_period", &self.settings.renew_period)
            .field("renew_timeout", &self.settings.renew_timeout)
            .field("watchdog", &self.settings.watchdog)
            .field("wait", &self.settings.wait)
            .finish_non_exhaustive()
    }
}
