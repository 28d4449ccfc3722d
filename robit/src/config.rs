//! Mutex configuration: the builder, its defaults and its validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    Clock, ConfigError, Driver, Entropy, LockName, LossEvent, Mutex, OsEntropy, TokioClock,
};

/// Default lease TTL.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// Default drift factor: clocks may disagree about elapsed time by 1 %.
pub const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// Default safety margin subtracted from every validity deadline. It absorbs the
/// granularity of timers (tokio's is 1 ms) and of backend expiry (Redis's is 1 ms).
pub const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_millis(2);
/// Default first retry delay of a waiting `lock()`; it doubles per attempt, with full
/// jitter, up to [`DEFAULT_BACKOFF_MAX`].
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(5);
/// Default cap on a waiting `lock()`'s retry delay: the longest a waiter can sleep between
/// polls when no release notification reaches it.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_millis(250);
/// The shortest wait between two attempts (acquire or renew). A zero delay would let a
/// fast-failing backend spin the task; under paused or simulated time, where the clock
/// only moves while tasks are idle, it would never end.
pub(crate) const MIN_RETRY_DELAY: Duration = Duration::from_millis(1);
/// The smallest safety margin [`MutexBuilder::build`] accepts. Timers fire up to a
/// millisecond late (tokio's granularity); a smaller margin could let the loss signal
/// arrive after the backend has freed the grant.
pub const MIN_SAFETY_MARGIN: Duration = Duration::from_millis(1);
/// The longest TTL [`MutexBuilder::build`] accepts. Longer leases are indistinguishable
/// from no lease at all, and deadline arithmetic must not overflow.
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long `lock()` waits for a lock held by someone else.
///
/// # Example
///
/// ```
/// use robit::{LocalDriver, Mutex, Wait};
/// use std::time::Duration;
///
/// let mutex = Mutex::builder("reports", LocalDriver::new())
///     .wait(Wait::Timeout(Duration::from_secs(5)))
///     .build()
///     .unwrap();
/// # drop(mutex);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// One attempt; if the lock is held, fail with
    /// [`LockError::Contended`](crate::LockError::Contended).
    Try,
    /// Retry until the lock is acquired or this much time has passed, then fail with
    /// [`LockError::Timeout`](crate::LockError::Timeout).
    Timeout(Duration),
    /// Retry until the lock is acquired or the `lock()` future is dropped (wrap it in
    /// `tokio::select!` or `tokio::time::timeout` to cancel). The default.
    #[default]
    Forever,
}

/// Full-jitter exponential backoff for a waiting `lock()`: attempt *n* sleeps a uniformly
/// random time in `[0, min(max, base·2ⁿ)]`.
///
/// Full jitter spreads contending waiters out, so that they do not retry in lock-step.
/// A driver's release notifications wake waiters sooner; the backoff bounds how long a
/// waiter sleeps when a notification is lost.
///
/// # Example
///
/// ```
/// use robit::Backoff;
/// use std::time::Duration;
///
/// let backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
/// assert_eq!(backoff.ceiling(0), Duration::from_millis(10));
/// assert_eq!(backoff.ceiling(3), Duration::from_millis(80));
/// assert_eq!(backoff.ceiling(30), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff starting at `base` and capped at `max`. Validated by
    /// [`MutexBuilder::build`].
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The upper bound of the delay before retry number `attempt` (counting from 0).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1_u32 << attempt.min(31);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// A random delay in `[0, ceiling(attempt)]` drawn from `entropy`.
    pub fn delay(&self, attempt: u32, entropy: &dyn Entropy) -> Duration {
        let ceiling = u64::try_from(self.ceiling(attempt).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(entropy.below_or_equal(ceiling))
    }
}

/// A random duration in `[ceiling / 2, ceiling]`: a delay that keeps its order of
/// magnitude but does not fire in step with others'.
pub(crate) fn half_jitter(ceiling: Duration, entropy: &dyn Entropy) -> Duration {
    let half = ceiling / 2;
    let spread = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    half + Duration::from_nanos(entropy.below_or_equal(spread))
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX)
    }
}

pub(crate) type LostCallback = Arc<dyn Fn(&LossEvent) + Send + Sync>;

/// A validated configuration, shared by a mutex and its watchdog.
pub(crate) struct Config {
    pub(crate) name: LockName,
    pub(crate) driver: Arc<dyn Driver>,
    /// The driver's own bound on each call ([`Driver::call_limit`]), read once.
    pub(crate) driver_limit: Option<Duration>,
    pub(crate) ttl: Duration,
    /// TTL less drift and margin: how long after an acquire's or renew's send time the
    /// client may believe it holds the lock.
    pub(crate) validity: Duration,
    pub(crate) renew_period: Duration,
    pub(crate) renew_timeout: Duration,
    pub(crate) drift_factor: f64,
    pub(crate) safety_margin: Duration,
    /// A planted bug, for the simulation harness (feature `mutants`).
    pub(crate) mutant: Option<crate::mutant::Mutant>,
    pub(crate) wait: Wait,
    pub(crate) backoff: Backoff,
    pub(crate) on_lost: Vec<LostCallback>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("name", &self.name)
            .field("ttl", &self.ttl)
            .field("validity", &self.validity)
            .field("renew_period", &self.renew_period)
            .field("renew_timeout", &self.renew_timeout)
            .field("drift_factor", &self.drift_factor)
            .field("safety_margin", &self.safety_margin)
            .field("wait", &self.wait)
            .field("backoff", &self.backoff)
            .field("on_lost", &self.on_lost.len())
            .field("clock", &self.clock)
            .field("entropy", &self.entropy)
            .finish_non_exhaustive()
    }
}

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
    name: LockName,
    driver: Arc<dyn Driver>,
    ttl: Duration,
    renew_period: Option<Duration>,
    renew_timeout: Option<Duration>,
    drift_factor: f64,
    safety_margin: Duration,
    wait: Wait,
    backoff: Backoff,
    on_lost: Vec<LostCallback>,
    clock: Arc<dyn Clock>,
    /// Whether `clock` was injected: then the mutex's time is not tokio's, which a
    /// driver's own timers run on.
    injected_clock: bool,
    entropy: Arc<dyn Entropy>,
    mutant: Option<crate::mutant::Mutant>,
}

impl MutexBuilder {
    pub(crate) fn new(name: LockName, driver: Arc<dyn Driver>) -> Self {
        Self {
            name,
            driver,
            ttl: DEFAULT_TTL,
            renew_period: None,
            renew_timeout: None,
            drift_factor: DEFAULT_DRIFT_FACTOR,
            safety_margin: DEFAULT_SAFETY_MARGIN,
            wait: Wait::default(),
            backoff: Backoff::default(),
            on_lost: Vec::new(),
            clock: Arc::new(TokioClock),
            injected_clock: false,
            entropy: Arc::new(OsEntropy::new()),
            mutant: None,
        }
    }

    /// The lease TTL: how long the backend keeps a grant that is not renewed. A crashed
    /// holder blocks others for at most this long. Default [`DEFAULT_TTL`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long after a successful acquire or renew (measured from its send time) the
    /// watchdog renews. Default TTL/3.
    pub fn renew_period(mut self, period: Duration) -> Self {
        self.renew_period = Some(period);
        self
    }

    /// How long one renew (and one acquire) attempt may take before it counts as failed.
    /// Default TTL/3. The renew period plus one and a half renew timeouts must fit in the
    /// validity (TTL less drift and margin), so that a renew that times out can still be
    /// retried in time.
    pub fn renew_timeout(mut self, timeout: Duration) -> Self {
        self.renew_timeout = Some(timeout);
        self
    }

    /// The bound on how much any two clocks (this client's, the backend's) may disagree
    /// about an elapsed interval, as a fraction in `[0, 0.5)`. The validity deadline is
    /// shortened by `ttl × drift_factor`. Default [`DEFAULT_DRIFT_FACTOR`].
    pub fn drift_factor(mut self, drift_factor: f64) -> Self {
        self.drift_factor = drift_factor;
        self
    }

    /// A fixed amount subtracted from every validity deadline, on top of drift, to absorb
    /// timer and backend-expiry granularity. At least [`MIN_SAFETY_MARGIN`]; default
    /// [`DEFAULT_SAFETY_MARGIN`].
    pub fn safety_margin(mut self, margin: Duration) -> Self {
        self.safety_margin = margin;
        self
    }

    /// How long `lock()` and `acquire()` wait for a held lock. Default [`Wait::Forever`].
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    /// The retry backoff of a waiting `lock()`. Default
    /// [`DEFAULT_BACKOFF_BASE`]..[`DEFAULT_BACKOFF_MAX`].
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Adds a callback run once when a lease is lost (never after a voluntary unlock).
    ///
    /// Callbacks run on the watchdog task, in the order added, before the next renew
    /// could happen: keep them short and non-blocking (cancel a token, send on a
    /// channel). A panicking callback is caught and logged; the others still run.
    pub fn on_lost(mut self, callback: impl Fn(&LossEvent) + Send + Sync + 'static) -> Self {
        self.on_lost.push(Arc::new(callback));
        self
    }

    /// The clock all timing goes through. Default [`TokioClock`].
    ///
    /// With a clock of its own, the mutex times every backend call itself, even when
    /// the driver bounds its calls ([`Driver::call_limit`](crate::Driver::call_limit)):
    /// the driver's timers run on tokio's time, which this clock need not follow.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self.injected_clock = true;
        self
    }

    /// The randomness for owner tokens and jitter. Default [`OsEntropy`].
    pub fn entropy(mut self, entropy: Arc<dyn Entropy>) -> Self {
        self.entropy = entropy;
        self
    }

    /// Validates the configuration and builds the mutex. Nothing touches the backend
    /// until the first `lock()`.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that is out of range.
    pub fn build(self) -> Result<Mutex, ConfigError> {
        Ok(Mutex::from_config(self.validate()?))
    }

    /// Plants `mutant` in the mutex this builds: for robit-sim's conformance tests only.
    #[cfg(feature = "mutants")]
    #[doc(hidden)]
    pub fn mutant(mut self, mutant: crate::Mutant) -> Self {
        self.mutant = Some(mutant);
        self
    }

    fn validate(self) -> Result<Config, ConfigError> {
        if self.name.is_empty() {
            return Err(ConfigError::EmptyName);
        }
        if self.ttl.is_zero() {
            return Err(ConfigError::ZeroTtl);
        }
        if self.ttl > MAX_TTL {
            return Err(ConfigError::TtlTooLong { ttl: self.ttl });
        }
        if !(0.0..0.5).contains(&self.drift_factor) {
            return Err(ConfigError::DriftOutOfRange {
                drift_factor: self.drift_factor,
            });
        }
        if self.safety_margin < MIN_SAFETY_MARGIN {
            return Err(ConfigError::MarginTooSmall {
                safety_margin: self.safety_margin,
            });
        }
        let drift = if self.mutant == Some(crate::mutant::Mutant::DriftIgnored) {
            0.0
        } else {
            self.drift_factor
        };
        let validity = self
            .ttl
            .mul_f64(1.0 - drift)
            .saturating_sub(self.safety_margin);
        if validity.is_zero() {
            return Err(ConfigError::NoValidity {
                ttl: self.ttl,
                safety_margin: self.safety_margin,
            });
        }
        let renew_period = self.renew_period.unwrap_or(self.ttl / 3);
        let renew_timeout = self.renew_timeout.unwrap_or(self.ttl / 3);
        if renew_period.is_zero() {
            return Err(ConfigError::ZeroRenewPeriod);
        }
        if renew_timeout.is_zero() {
            return Err(ConfigError::ZeroRenewTimeout);
        }
        // The first renew may time out; what is left before the deadline must give a
        // retry at least half an attempt's time.
        let first_attempt_ends = renew_period.saturating_add(renew_timeout);
        if first_attempt_ends.saturating_add(renew_timeout / 2) > validity {
            return Err(ConfigError::NoRoomToRetry {
                renew_period,
                renew_timeout,
                validity,
            });
        }
        if self.backoff.base.is_zero()
            || self.backoff.max < self.backoff.base
            || self.backoff.max > MAX_TTL
        {
            return Err(ConfigError::InvalidBackoff {
                base: self.backoff.base,
                max: self.backoff.max,
            });
        }
        Ok(Config {
            name: self.name,
            // A driver's own timers run on tokio's time; they stand in for the mutex's
            // only if that is the mutex's time too.
            driver_limit: if self.injected_clock {
                None
            } else {
                self.driver.call_limit()
            },
            driver: self.driver,
            ttl: self.ttl,
            validity,
            renew_period,
            renew_timeout,
            drift_factor: self.drift_factor,
            safety_margin: self.safety_margin,
            wait: self.wait,
            backoff: self.backoff,
            on_lost: self.on_lost,
            clock: self.clock,
            entropy: self.entropy,
            mutant: self.mutant,
        })
    }
}

impl Config {
    /// Whether `mutant` is planted (never, without the `mutants` feature).
    pub(crate) fn has(&self, mutant: crate::mutant::Mutant) -> bool {
        self.mutant == Some(mutant)
    }
}

impl fmt::Debug for MutexBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexBuilder")
            .field("name", &self.name)
            .field("ttl", &self.ttl)
            .field("renew_period", &self.renew_period)
            .field("renew_timeout", &self.renew_timeout)
            .field("drift_factor", &self.drift_factor)
            .field("safety_margin", &self.safety_margin)
            .field("wait", &self.wait)
            .field("backoff", &self.backoff)
            .field("on_lost", &self.on_lost.len())
            .finish_non_exhaustive()
    }
}
