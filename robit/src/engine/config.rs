//! The mutex's configuration: its defaults, the settings a builder collects, and their
//! validation into the [`Config`] the engine runs on.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::backoff::{Backoff, Wait};
use crate::driver::{Driver, LockName};
use crate::error::ConfigError;
use crate::jeopardy::JeopardyEvent;
use crate::loss::LossEvent;
use crate::sources::{Clock, TokioClock};
use crate::sources::{Entropy, OsEntropy};

/// Default lease TTL.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// Default drift factor: clocks may disagree about elapsed time by 1 %.
pub const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// Default safety margin subtracted from every validity deadline. It absorbs the
/// granularity of timers (tokio's is 1 ms) and of backend expiry (Redis's is 1 ms).
pub const DEFAULT_SAFETY_MARGIN: Duration = Duration::from_millis(2);
/// The smallest safety margin [`MutexBuilder::build`](crate::MutexBuilder::build)
/// accepts. Timers fire up to a millisecond late (tokio's granularity); a smaller margin
/// could let the loss signal arrive after the backend has freed the grant.
pub const MIN_SAFETY_MARGIN: Duration = Duration::from_millis(1);
/// The longest TTL [`MutexBuilder::build`](crate::MutexBuilder::build) accepts. Longer
/// leases are indistinguishable from no lease at all, and deadline arithmetic must not
/// overflow.
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

pub(crate) type LostCallback = Arc<dyn Fn(&LossEvent) + Send + Sync>;
pub(crate) type JeopardyCallback = Arc<dyn Fn(&JeopardyEvent) + Send + Sync>;

/// A validated configuration, shared by a mutex and its watchdog. Cheap to clone: a
/// [`Locker`](crate::Locker) clones its own for every lock.
#[derive(Clone)]
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
    /// Whether the watchdog renews (else only `refresh` does).
    pub(crate) watchdog: bool,
    /// How close to the deadline a hold is in jeopardy.
    pub(crate) jeopardy_within: Duration,
    /// The longest a hold lasts, renewals or not.
    pub(crate) max_hold: Option<Duration>,
    /// How long the backend refuses the lock to others after a grant ends by expiry.
    pub(crate) lock_delay: Duration,
    pub(crate) drift_factor: f64,
    pub(crate) safety_margin: Duration,
    /// A planted bug, for the simulation harness.
    #[cfg(robit_mutants)]
    pub(crate) mutant: Option<super::mutant::Mutant>,
    pub(crate) wait: Wait,
    pub(crate) backoff: Backoff,
    pub(crate) on_lost: Arc<[LostCallback]>,
    pub(crate) on_jeopardy: Arc<[JeopardyCallback]>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
}

impl Config {
    /// The same configuration for lock `name`.
    pub(crate) fn named(&self, name: LockName) -> Self {
        Self {
            name,
            ..self.clone()
        }
    }

    /// TTL less drift and margin, for a lease of `ttl` (`None`: no validity at all).
    pub(crate) fn validity_of(&self, ttl: Duration) -> Option<Duration> {
        let validity = ttl
            .mul_f64(1.0 - self.drift_factor)
            .saturating_sub(self.safety_margin);
        (!validity.is_zero()).then_some(validity)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("name", &self.name)
            .field("ttl", &self.ttl)
            .field("validity", &self.validity)
            .field("renew_period", &self.renew_period)
            .field("renew_timeout", &self.renew_timeout)
            .field("watchdog", &self.watchdog)
            .field("jeopardy_within", &self.jeopardy_within)
            .field("max_hold", &self.max_hold)
            .field("lock_delay", &self.lock_delay)
            .field("drift_factor", &self.drift_factor)
            .field("safety_margin", &self.safety_margin)
            .field("wait", &self.wait)
            .field("backoff", &self.backoff)
            .field("on_lost", &self.on_lost.len())
            .field("on_jeopardy", &self.on_jeopardy.len())
            .field("clock", &self.clock)
            .field("entropy", &self.entropy)
            .finish_non_exhaustive()
    }
}

/// What a [`MutexBuilder`](crate::MutexBuilder) or a
/// [`LockerBuilder`](crate::LockerBuilder) collects, before validation.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) name: LockName,
    pub(crate) driver: Arc<dyn Driver>,
    pub(crate) ttl: Duration,
    pub(crate) renew_period: Option<Duration>,
    pub(crate) renew_timeout: Option<Duration>,
    pub(crate) watchdog: bool,
    pub(crate) jeopardy_within: Option<Duration>,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) lock_delay: Duration,
    pub(crate) drift_factor: f64,
    pub(crate) safety_margin: Duration,
    pub(crate) wait: Wait,
    pub(crate) backoff: Backoff,
    pub(crate) on_lost: Vec<LostCallback>,
    pub(crate) on_jeopardy: Vec<JeopardyCallback>,
    pub(crate) clock: Arc<dyn Clock>,
    /// Whether `clock` was injected: then the mutex's time is not tokio's, which a
    /// driver's own timers run on.
    pub(crate) injected_clock: bool,
    pub(crate) entropy: Arc<dyn Entropy>,
    #[cfg(robit_mutants)]
    pub(crate) mutant: Option<super::mutant::Mutant>,
}

impl Settings {
    /// The defaults, for lock `name` over `driver`.
    pub(crate) fn new(name: LockName, driver: Arc<dyn Driver>) -> Self {
        Self {
            name,
            driver,
            ttl: DEFAULT_TTL,
            renew_period: None,
            renew_timeout: None,
            watchdog: true,
            jeopardy_within: None,
            max_hold: None,
            lock_delay: Duration::ZERO,
            drift_factor: DEFAULT_DRIFT_FACTOR,
            safety_margin: DEFAULT_SAFETY_MARGIN,
            wait: Wait::default(),
            backoff: Backoff::default(),
            on_lost: Vec::new(),
            on_jeopardy: Vec::new(),
            clock: Arc::new(TokioClock),
            injected_clock: false,
            entropy: Arc::new(OsEntropy::new()),
            #[cfg(robit_mutants)]
            mutant: None,
        }
    }

    pub(crate) fn validate(self) -> Result<Config, ConfigError> {
        self.check_lease()?;
        let drift = self.drift_factor;
        #[cfg(robit_mutants)]
        let drift = if self.mutant == Some(super::mutant::Mutant::DriftIgnored) {
            0.0
        } else {
            drift
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
        let timings = self.timings(validity)?;
        self.check_limits()?;
        Ok(self.into_config(validity, timings))
    }

    /// The name, the TTL, and what the validity is computed from.
    fn check_lease(&self) -> Result<(), ConfigError> {
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
        Ok(())
    }

    /// The renew period, the renew timeout and the jeopardy window, defaults filled in,
    /// checked against the validity they must fit in.
    fn timings(&self, validity: Duration) -> Result<Timings, ConfigError> {
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
        // By default a hold is in jeopardy once a renew attempt has used up its whole
        // timeout without success. It must not be in jeopardy before its first renew is
        // even due.
        let latest = validity.saturating_sub(renew_period);
        let jeopardy_within = self
            .jeopardy_within
            .unwrap_or_else(|| latest.saturating_sub(renew_timeout));
        if jeopardy_within.is_zero() || jeopardy_within > latest {
            return Err(ConfigError::JeopardyOutOfRange {
                jeopardy_within,
                latest,
            });
        }
        Ok(Timings {
            renew_period,
            renew_timeout,
            jeopardy_within,
        })
    }

    /// The hold's cap, the lock-delay, and the waiting `lock()`'s backoff.
    fn check_limits(&self) -> Result<(), ConfigError> {
        if self.max_hold.is_some_and(|max| max.is_zero()) {
            return Err(ConfigError::ZeroMaxHold);
        }
        if self.lock_delay > MAX_TTL {
            return Err(ConfigError::LockDelayTooLong {
                lock_delay: self.lock_delay,
            });
        }
        if !self.lock_delay.is_zero() && !self.driver.supports_lock_delay() {
            return Err(ConfigError::LockDelayUnsupported);
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
        Ok(())
    }

    /// The checked settings, as the mutex keeps them.
    fn into_config(self, validity: Duration, timings: Timings) -> Config {
        let Timings {
            renew_period,
            renew_timeout,
            jeopardy_within,
        } = timings;
        Config {
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
            watchdog: self.watchdog,
            jeopardy_within,
            max_hold: self.max_hold,
            lock_delay: self.lock_delay,
            drift_factor: self.drift_factor,
            safety_margin: self.safety_margin,
            wait: self.wait,
            backoff: self.backoff,
            on_lost: self.on_lost.into(),
            on_jeopardy: self.on_jeopardy.into(),
            clock: self.clock,
            entropy: self.entropy,
            #[cfg(robit_mutants)]
            mutant: self.mutant,
        }
    }
}

/// The renewal timings a configuration settles on.
struct Timings {
    renew_period: Duration,
    renew_timeout: Duration,
    jeopardy_within: Duration,
}
