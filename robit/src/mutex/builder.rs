//! [`MutexBuilder`]: the settings of a mutex, with their defaults, checked by `build()`.

use std::fmt;
use std::sync::Arc;

use super::Mutex;
use super::setters::settings_setters;
use crate::driver::{Driver, LockName};
use crate::engine::{Settings, Watchdog};
use crate::error::ConfigError;

/// Builds a [`Mutex`]; start with [`Mutex::builder`].
///
/// To lock many names with one set of settings, build a [`Locker`](crate::Locker)
/// instead. A builder is `Clone`, so one configured builder can also start several
/// mutexes.
///
/// Every setting has a default derived from the TTL, and [`build`](Self::build) checks
/// that they fit together: in particular that a failed renew can be retried before the
/// validity deadline, since otherwise one slow answer would lose the lease.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex, Wait};
/// use std::time::Duration;
///
/// let mutex = Mutex::builder("nightly-report", LocalDriver::new())
///     .ttl(Duration::from_secs(10))
///     .renew_period(Duration::from_secs(3))
///     .renew_timeout(Duration::from_secs(2))
///     .wait(Wait::Timeout(Duration::from_secs(60)))
///     .on_lost(|event| tracing::error!(lock = %event.name, "lease lost: {}", event.reason))
///     .build()?;
/// # drop(mutex);
/// # Ok::<(), robit::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
#[derive(Clone)]
pub struct MutexBuilder {
    settings: Settings,
}

impl MutexBuilder {
    pub(crate) fn new(name: LockName, driver: Arc<dyn Driver>) -> Self {
        Self {
            settings: Settings::new(name, driver),
        }
    }

    settings_setters!();

    /// Validates the configuration and builds the mutex. Nothing touches the backend
    /// until the first `lock()`.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that is out of range.
    pub fn build(self) -> Result<Mutex, ConfigError> {
        let config = self.settings.validate()?;
        let watchdog = Arc::new(Watchdog::new(Arc::clone(&config.clock)));
        Ok(Mutex::from_config(config, Arc::default(), watchdog))
    }

    /// Plants `mutant` in the mutex this builds: for robit-sim's conformance tests only.
    #[cfg(robit_mutants)]
    #[doc(hidden)]
    pub fn mutant(mut self, mutant: crate::engine::Mutant) -> Self {
        self.settings.mutant = Some(mutant);
        self
    }
}

impl fmt::Debug for MutexBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexBuilder")
            .field("name", &self.settings.name)
            .field("ttl", &self.settings.ttl)
            .field("renew_period", &self.settings.renew_period)
            .field("renew_timeout", &self.settings.renew_timeout)
            .field("watchdog", &self.settings.watchdog)
            .field("jeopardy_within", &self.settings.jeopardy_within)
            .field("drift_factor", &self.settings.drift_factor)
            .field("safety_margin", &self.settings.safety_margin)
            .field("wait", &self.settings.wait)
            .field("backoff", &self.settings.backoff)
            .field("on_lost", &self.settings.on_lost.len())
            .field("on_jeopardy", &self.settings.on_jeopardy.len())
            .finish_non_exhaustive()
    }
}
