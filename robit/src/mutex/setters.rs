//! The settings a [`MutexBuilder`](super::MutexBuilder) and a
//! [`LockerBuilder`](crate::LockerBuilder) share, written once.

/// Expands to the setters of every setting but the lock's name, on a builder with a
/// `settings: Settings` field.
macro_rules! settings_setters {
    () => {
        /// The lease TTL: how long the backend keeps a grant that is not renewed. A crashed
        /// holder blocks others for at most this long. Default
        /// [`DEFAULT_TTL`](crate::defaults::DEFAULT_TTL).
        pub fn ttl(mut self, ttl: std::time::Duration) -> Self {
            self.settings.ttl = ttl;
            self
        }

        /// How long after a successful acquire or renew (measured from its send time) the
        /// watchdog renews. Default TTL/3. A renewal goes out at the start of the 10 ms
        /// step it falls in, with the others due then; in a crowd of holds due together,
        /// the watchdog moves some up to half a period earlier, to spread them out.
        pub fn renew_period(mut self, period: std::time::Duration) -> Self {
            self.settings.renew_period = Some(period);
            self
        }

        /// How long one renew (and one acquire) attempt may take before it counts as failed.
        /// Default TTL/3. The renew period plus one and a half renew timeouts must fit in the
        /// validity (TTL less drift and margin), so that a renew that times out can still be
        /// retried in time.
        pub fn renew_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.settings.renew_timeout = Some(timeout);
            self
        }

        /// The bound on how much any two clocks (this client's, the backend's) may disagree
        /// about an elapsed interval, as a fraction in `[0, 0.5)`. The validity deadline is
        /// shortened by `ttl × drift_factor`. Default
        /// [`DEFAULT_DRIFT_FACTOR`](crate::defaults::DEFAULT_DRIFT_FACTOR).
        pub fn drift_factor(mut self, drift_factor: f64) -> Self {
            self.settings.drift_factor = drift_factor;
            self
        }

        /// A fixed amount subtracted from every validity deadline, on top of drift, to absorb
        /// timer and backend-expiry granularity. At least
        /// [`MIN_SAFETY_MARGIN`](crate::defaults::MIN_SAFETY_MARGIN); default
        /// [`DEFAULT_SAFETY_MARGIN`](crate::defaults::DEFAULT_SAFETY_MARGIN).
        pub fn safety_margin(mut self, margin: std::time::Duration) -> Self {
            self.settings.safety_margin = margin;
            self
        }

        /// How long `lock()` and `acquire()` wait for a held lock. Default [`Wait::Forever`]($crate::Wait::Forever).
        pub fn wait(mut self, wait: $crate::Wait) -> Self {
            self.settings.wait = wait;
            self
        }

        /// The retry backoff of a waiting `lock()`. Default
        /// [`DEFAULT_BACKOFF_BASE`](crate::defaults::DEFAULT_BACKOFF_BASE) to
        /// [`DEFAULT_BACKOFF_MAX`](crate::defaults::DEFAULT_BACKOFF_MAX).
        pub fn backoff(mut self, backoff: $crate::Backoff) -> Self {
            self.settings.backoff = backoff;
            self
        }

        /// Adds a callback run once when a lease is lost (never after a voluntary unlock).
        ///
        /// Callbacks run on the watchdog's task, in the order added, before the next renew
        /// could happen; that task renews every hold of a [`Locker`](crate::Locker), so
        /// keep them short and non-blocking (cancel a token, send on a channel). A panicking callback is caught and logged; the others still run.
        pub fn on_lost(
            mut self,
            callback: impl Fn(&$crate::LossEvent) + Send + Sync + 'static,
        ) -> Self {
            self.settings.on_lost.push(std::sync::Arc::new(callback));
            self
        }

        /// Whether a background watchdog renews each lease (default `true`).
        ///
        /// Turn it off for the obtain-and-refresh style: a lease then lasts one TTL from its
        /// acquire unless you extend it with [`Guard::refresh`]($crate::Guard::refresh),
        /// which follows the watchdog's rules (validity from the refresh's send time). The
        /// mutex still signals the loss at the validity deadline, and jeopardy before it, so
        /// a forgotten refresh is reported, not silently outlived.
        pub fn watchdog(mut self, renews: bool) -> Self {
            self.settings.watchdog = renews;
            self
        }

        /// How close to its validity deadline a hold is *in jeopardy*: no renewal has
        /// succeeded for so long that the lease will be lost this soon unless one does.
        /// Then the on-jeopardy callbacks run, [`Guard::jeopardy`]($crate::Guard::jeopardy)
        /// completes, and [`Stats::jeopardies`]($crate::Stats::jeopardies) counts it; a
        /// renewal that succeeds afterwards clears it and says so.
        ///
        /// Default: the validity less the renew period and one renew timeout — the time left
        /// once a renew attempt has used up its whole timeout without an answer (about a
        /// third of the TTL with the other defaults). It must be above zero and at most the
        /// validity less the renew period, or a hold would be in jeopardy before its first
        /// renewal is due.
        pub fn jeopardy_within(mut self, time_left: std::time::Duration) -> Self {
            self.settings.jeopardy_within = Some(time_left);
            self
        }

        /// The longest a hold may last, however its renewals go (default: no cap).
        ///
        /// Why: a holder that hangs while its watchdog keeps renewing — a stuck loop, a
        /// deadlock elsewhere — would otherwise keep the lock for ever. At the cap, renewal
        /// stops, the hold ends as lost with
        /// [`LossReason::HoldCapReached`]($crate::LossReason::HoldCapReached) (signalled like
        /// any loss), and the grant is released for the next holder (unless a
        /// [`lock_delay`](Self::lock_delay) is to keep others out first). Counted from
        /// when `lock()` returned.
        pub fn max_hold(mut self, max: std::time::Duration) -> Self {
            self.settings.max_hold = Some(max);
            self
        }

        /// A lock-delay: after a holder's lease ends by *expiry* — it stopped renewing, being
        /// crashed, paused or cut off — the backend refuses the lock to everyone for this
        /// long more (default: zero, none). An unlock ends a hold without delay.
        ///
        /// Why: a holder that was paused past its lease may resume and finish writes it
        /// started under the lock before it notices the loss. Fencing tokens stop such
        /// writes where the resource checks them; where it cannot, a lock-delay as long as
        /// the longest such pause keeps the next holder out until they have landed (the
        /// lock-delay of Chubby and Consul). With one, the mutex also leaves a lost grant to
        /// expire instead of releasing it early. The driver must keep it
        /// ([`Driver::supports_lock_delay`]($crate::Driver::supports_lock_delay)): the local
        /// and Redis drivers do.
        pub fn lock_delay(mut self, delay: std::time::Duration) -> Self {
            self.settings.lock_delay = delay;
            self
        }

        /// Adds a callback run when a hold enters jeopardy and when it leaves it (see
        /// [`jeopardy_within`](Self::jeopardy_within)).
        ///
        /// Callbacks run on the watchdog's task (or in the refresh that clears the
        /// jeopardy), in the order added; that task renews every hold of a
        /// [`Locker`](crate::Locker), so keep them short and non-blocking. A panicking
        /// callback is caught and logged; the others still run.
        pub fn on_jeopardy(
            mut self,
            callback: impl Fn(&$crate::JeopardyEvent) + Send + Sync + 'static,
        ) -> Self {
            self.settings
                .on_jeopardy
                .push(std::sync::Arc::new(callback));
            self
        }

        /// The clock all timing goes through. Default [`TokioClock`](crate::sources::TokioClock).
        ///
        /// With a clock of its own, the mutex times every backend call itself, even when
        /// the driver bounds its calls ([`Driver::call_limit`]($crate::Driver::call_limit)):
        /// the driver's timers run on tokio's time, which this clock need not follow.
        pub fn clock(mut self, clock: std::sync::Arc<dyn $crate::sources::Clock>) -> Self {
            self.settings.clock = clock;
            self.settings.injected_clock = true;
            self
        }

        /// The randomness for owner tokens and jitter. Default [`OsEntropy`](crate::sources::OsEntropy).
        pub fn entropy(mut self, entropy: std::sync::Arc<dyn $crate::sources::Entropy>) -> Self {
            self.settings.entropy = entropy;
            self
        }
    };
}

pub(crate) use settings_setters;
