//! [`MutexBuilder`]: the settings of a mutex, with their defaults, checked by `build()`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::Mutex;
use crate::clock::Clock;
use crate::driver::{Driver, LockName};
use crate::engine::{Backoff, Settings, Wait};
use crate::entropy::Entropy;
use crate::error::ConfigError;
use crate::loss::LossEvent;

/// Builds a [`Mutex`]; start with [`Mutex::builder`].
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
pub struct MutexBuilder {
    settings: Settings,
}

impl MutexBuilder {
    pub(crate) fn new(name: LockName, driver: Arc<dyn Driver>) -> Self {
        Self {
            settings: Settings::new(name, driver),
        }
    }

    /// The lease TTL: how long the backend keeps a grant that is not renewed. A crashed
    /// holder blocks others for at most this long. Default
    /// [`DEFAULT_TTL`](crate::DEFAULT_TTL).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.settings.ttl = ttl;
        self
    }

    /// How long after a successful acquire or renew (measured from its send time) the
    /// watchdog renews. Default TTL/3.
    pub fn renew_period(mut self, period: Duration) -> Self {
        self.settings.renew_period = Some(period);
        self
    }

    /// How long one renew (and one acquire) attempt may take before it counts as failed.
    /// Default TTL/3. The renew period plus one and a half renew timeouts must fit in the
    /// validity (TTL less drift and margin), so that a renew that times out can still be
    /// retried in time.
    pub fn renew_timeout(mut self, timeout: Duration) -> Self {
        self.settings.renew_timeout = Some(timeout);
        self
    }

    /// The bound on how much any two clocks (this client's, the backend's) may disagree
    /// about an elapsed interval, as a fraction in `[0, 0.5)`. The validity deadline is
    /// shortened by `ttl × drift_factor`. Default
    /// [`DEFAULT_DRIFT_FACTOR`](crate::DEFAULT_DRIFT_FACTOR).
    pub fn drift_factor(mut self, drift_factor: f64) -> Self {
        self.settings.drift_factor = drift_factor;
        self
    }

    /// A fixed amount subtracted from every validity deadline, on top of drift, to absorb
    /// timer and backend-expiry granularity. At least
    /// [`MIN_SAFETY_MARGIN`](crate::MIN_SAFETY_MARGIN); default
    /// [`DEFAULT_SAFETY_MARGIN`](crate::DEFAULT_SAFETY_MARGIN).
    pub fn safety_margin(mut self, margin: Duration) -> Self {
        self.settings.safety_margin = margin;
        self
    }

    /// How long `lock()` and `acquire()` wait for a held lock. Default [`Wait::Forever`].
    pub fn wait(mut self, wait: Wait) -> Self {
        self.settings.wait = wait;
        self
    }

    /// The retry backoff of a waiting `lock()`. Default
    /// [`DEFAULT_BACKOFF_BASE`](crate::DEFAULT_BACKOFF_BASE) to
    /// [`DEFAULT_BACKOFF_MAX`](crate::DEFAULT_BACKOFF_MAX).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.settings.backoff = backoff;
        self
    }

    /// Adds a callback run once when a lease is lost (never after a voluntary unlock).
    ///
    /// Callbacks run on the watchdog task, in the order added, before the next renew
    /// could happen: keep them short and non-blocking (cancel a token, send on a
    /// channel). A panicking callback is caught and logged; the others still run.
    pub fn on_lost(mut self, callback: impl Fn(&LossEvent) + Send + Sync + 'static) -> Self {
        self.settings.on_lost.push(Arc::new(callback));
        self
    }

    /// The clock all timing goes through. Default [`TokioClock`](crate::TokioClock).
    ///
    /// With a clock of its own, the mutex times every backend call itself, even when
    /// the driver bounds its calls ([`Driver::call_limit`]):
    /// the driver's timers run on tokio's time, which this clock need not follow.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.settings.clock = clock;
        self.settings.injected_clock = true;
        self
    }

    /// The randomness for owner tokens and jitter. Default [`OsEntropy`](crate::OsEntropy).
    pub fn entropy(mut self, entropy: Arc<dyn Entropy>) -> Self {
        self.settings.entropy = entropy;
        self
    }

    /// Validates the configuration and builds the mutex. Nothing touches the backend
    /// until the first `lock()`.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that is out of range.
    pub fn build(self) -> Result<Mutex, ConfigError> {
        Ok(Mutex::from_config(self.settings.validate()?))
    }

    /// Plants `mutant` in the mutex this builds: for robit-sim's conformance tests only.
    #[cfg(feature = "mutants")]
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
            .field("drift_factor", &self.settings.drift_factor)
            .field("safety_margin", &self.settings.safety_margin)
            .field("wait", &self.settings.wait)
            .field("backoff", &self.settings.backoff)
            .field("on_lost", &self.settings.on_lost.len())
            .finish_non_exhaustive()
    }
}
