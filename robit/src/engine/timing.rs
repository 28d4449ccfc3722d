//! A hold's timing, and what a renewal's answer means: the one set of rules that the
//! watchdog's renewals and a manual refresh share.
//!
//! A hold is valid until its deadline, `send time + TTL × (1 − drift) − margin` of the
//! acquire or renewal that last succeeded; it ends at its cap, if it has one, whatever
//! else happens; it is in jeopardy from `jeopardy_within` before the deadline. The
//! watchdog renews it every renew period, counted from the send time of the last success,
//! and retries a failed renewal sooner. [`Timing`] holds those instants and answers the
//! two questions its users ask: when to look next, and what an answer means.

use std::time::Duration;

use tokio::time::Instant;

use super::Config;
use super::backoff::{MIN_RETRY_DELAY, half_jitter};
use crate::driver::{DriverError, Renewal};
use crate::loss::LossReason;

/// The instants that decide a hold's fate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    /// The validity deadline: from it on, the holder believes nothing.
    deadline: Instant,
    /// When the hold reaches its maximum length, if it has one.
    cap: Option<Instant>,
    /// When the watchdog renews next. With the watchdog turned off, the deadline: the
    /// watchdog then only watches it, and a refresh moves it.
    next_renew: Instant,
}

/// What a renewal's answer means for its hold.
#[derive(Debug)]
pub(super) enum Verdict {
    /// Renewed in time: valid until `deadline`, with `slack` left of the old validity.
    Renewed { deadline: Instant, slack: Duration },
    /// Not renewed, but the old deadline stands: the hold is valid until then, and a
    /// retry may yet save it.
    Failed(DriverError),
    /// The hold is over.
    Lost(LossReason),
}

/// The instant a hold with `deadline` enters jeopardy.
pub(super) fn jeopardy_at(config: &Config, deadline: Instant) -> Instant {
    deadline
        .checked_sub(config.jeopardy_within)
        .unwrap_or(deadline)
}

/// When a hold acquired at `acquired_at` reaches its cap. A cap too far off to
/// represent is no cap.
pub(super) fn cap_of(config: &Config, acquired_at: Instant) -> Option<Instant> {
    config.max_hold.and_then(|max| acquired_at.checked_add(max))
}

impl Timing {
    /// The timing of a hold granted by an acquire sent at `sent`, valid until `deadline`.
    #[cfg(test)]
    pub(super) fn new(
        config: &Config,
        sent: Instant,
        acquired_at: Instant,
        deadline: Instant,
    ) -> Self {
        Self::of(config, acquired_at, deadline, sent + config.renew_period)
    }

    /// The timing of a hold acquired at `acquired_at`, valid until `deadline`, that the
    /// watchdog renews next at `next_renew` (if it renews at all).
    pub(super) fn of(
        config: &Config,
        acquired_at: Instant,
        deadline: Instant,
        next_renew: Instant,
    ) -> Self {
        Self {
            deadline,
            cap: cap_of(config, acquired_at),
            next_renew: if config.watchdog {
                next_renew
            } else {
                deadline
            },
        }
    }

    /// When the watchdog renews next.
    pub(super) fn next_renew(&self) -> Instant {
        self.next_renew
    }

    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// When the hold enters jeopardy, unless it is in jeopardy already.
    pub(super) fn jeopardy_due(&self, config: &Config, in_jeopardy: bool) -> Option<Instant> {
        (!in_jeopardy).then(|| jeopardy_at(config, self.deadline))
    }

    /// When the watchdog must look next: the soonest of the next renewal, the deadline,
    /// the cap, and jeopardy. The renewal always comes before the deadline, so waking
    /// for the soonest and then reading the clock tells which it was.
    pub(super) fn wake_at(&self, config: &Config, in_jeopardy: bool) -> Instant {
        [self.jeopardy_due(config, in_jeopardy), self.cap]
            .into_iter()
            .flatten()
            .fold(self.deadline.min(self.next_renew), Instant::min)
    }

    /// Why the hold is over at `now`, if it is: its deadline passed, or its cap.
    pub(super) fn over_at(&self, now: Instant) -> Option<LossReason> {
        if now >= self.deadline {
            Some(LossReason::DeadlinePassed)
        } else if self.cap.is_some_and(|cap| now >= cap) {
            Some(LossReason::HoldCapReached)
        } else {
            None
        }
    }

    /// Whether the watchdog renews at `now`.
    pub(super) fn renew_due(&self, config: &Config, now: Instant) -> bool {
        config.watchdog && now >= self.next_renew
    }

    /// When a renewal sent at `sent` gives up: its timeout, or the deadline or the cap if
    /// one comes sooner.
    pub(super) fn attempt_end(&self, config: &Config, sent: Instant) -> Instant {
        [Some(sent + config.renew_timeout), self.cap]
            .into_iter()
            .flatten()
            .fold(self.deadline, Instant::min)
    }

    /// What `answer` means, to a renewal for `validity` sent at `sent` and read at `now`.
    /// A timeout is an answer of its own: [`DriverError::Timeout`].
    ///
    /// From the deadline on we no longer believe we hold the lock, whatever the backend
    /// says: a renewal read at or after it comes too late, as does a timeout, even if the
    /// deadline's own timer has not fired yet. At the cap the hold ends, whatever the
    /// answer. Otherwise the new validity counts from the renewal's send time.
    pub(super) fn judge(
        &self,
        config: &Config,
        answer: Result<Renewal, DriverError>,
        sent: Instant,
        now: Instant,
        validity: Duration,
    ) -> Verdict {
        match answer {
            Ok(Renewal::Renewed) | Err(DriverError::Timeout(_)) if now >= self.deadline => {
                Verdict::Lost(LossReason::DeadlinePassed)
            }
            _ if self.cap.is_some_and(|cap| now >= cap) => {
                Verdict::Lost(LossReason::HoldCapReached)
            }
            Ok(Renewal::Renewed) => {
                let from = sent;
                #[cfg(robit_mutants)]
                let from = super::mutant::validity_from(config, from, || now);
                #[cfg(not(robit_mutants))]
                let _ = config;
                Verdict::Renewed {
                    deadline: from + validity,
                    slack: self.deadline.saturating_duration_since(now),
                }
            }
            Ok(Renewal::Lost) => Verdict::Lost(LossReason::NotOwner),
            Err(error) => Verdict::Failed(error),
        }
    }

    /// A renewal sent at `sent` moved the deadline to `deadline`: the next one is due a
    /// renew period after its send.
    pub(super) fn renewed(&mut self, config: &Config, sent: Instant, deadline: Instant) {
        self.deadline = deadline;
        self.next_renew = sent + config.renew_period;
    }

    /// A renewal failed at `now`: the next attempt comes after a jittered quarter of the
    /// renew period, but never so late that fewer than two more attempts fit before the
    /// deadline, and never sooner than [`MIN_RETRY_DELAY`]. Returns the validity left.
    pub(super) fn retry(&mut self, config: &Config, now: Instant) -> Duration {
        let left = self.deadline.saturating_duration_since(now);
        let ceiling = (config.renew_period / 4).min(left / 3);
        self.next_renew = now + half_jitter(ceiling, &*config.entropy).max(MIN_RETRY_DELAY);
        left
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Timing, Verdict};
    use crate::LocalDriver;
    use crate::driver::{DriverError, LockName, Renewal};
    use crate::engine::{Config, Settings};
    use crate::loss::LossReason;

    const SECOND: Duration = Duration::from_secs(1);

    /// A 3 s TTL, renewed every second; `max_hold` and `watchdog` as given.
    fn config(max_hold: Option<Duration>, watchdog: bool) -> Config {
        let mut settings = Settings::new(LockName::from("timing"), Arc::new(LocalDriver::new()));
        settings.ttl = 3 * SECOND;
        settings.renew_period = Some(SECOND);
        settings.renew_timeout = Some(SECOND / 2);
        settings.max_hold = max_hold;
        settings.watchdog = watchdog;
        settings.validate().unwrap()
    }

    fn renewed(verdict: Verdict) -> (Instant, Duration) {
        match verdict {
            Verdict::Renewed { deadline, slack } => (deadline, slack),
            other => panic!("not renewed: {other:?}"),
        }
    }

    fn lost(verdict: Verdict) -> LossReason {
        match verdict {
            Verdict::Lost(reason) => reason,
            other => panic!("not lost: {other:?}"),
        }
    }

    #[test]
    fn a_renewal_answered_in_time_counts_from_its_send_time_not_its_answer() {
        let config = config(None, true);
        let start = Instant::now();
        let timing = Timing::new(&config, start, start, start + config.validity);
        let sent = start + SECOND;
        let read = sent + SECOND / 4;
        let verdict = timing.judge(&config, Ok(Renewal::Renewed), sent, read, config.validity);
        let (deadline, slack) = renewed(verdict);
        assert_eq!(deadline, sent + config.validity);
        assert_eq!(slack, start + config.validity - read);
    }

    #[test]
    fn a_renewal_or_a_timeout_read_at_the_deadline_comes_too_late() {
        let config = config(None, true);
        let start = Instant::now();
        let deadline = start + config.validity;
        let timing = Timing::new(&config, start, start, deadline);
        let sent = deadline - SECOND;
        for answer in [Ok(Renewal::Renewed), Err(DriverError::Timeout(SECOND))] {
            let verdict = timing.judge(&config, answer, sent, deadline, config.validity);
            assert_eq!(lost(verdict), LossReason::DeadlinePassed);
        }
        let just_before = deadline - Duration::from_nanos(1);
        let verdict = timing.judge(
            &config,
            Ok(Renewal::Renewed),
            sent,
            just_before,
            config.validity,
        );
        renewed(verdict);
        let verdict = timing.judge(
            &config,
            Err(DriverError::Timeout(SECOND)),
            sent,
            just_before,
            config.validity,
        );
        assert!(
            matches!(verdict, Verdict::Failed(DriverError::Timeout(_))),
            "{verdict:?}"
        );
    }

    #[test]
    fn an_answer_read_at_the_cap_ends_the_hold_whatever_it_says() {
        let config = config(Some(SECOND), true);
        let start = Instant::now();
        let timing = Timing::new(&config, start, start, start + config.validity);
        let sent = start + SECOND / 2;
        for answer in [Ok(Renewal::Renewed), Err(DriverError::Timeout(SECOND))] {
            let verdict = timing.judge(&config, answer, sent, start + SECOND, config.validity);
            assert_eq!(lost(verdict), LossReason::HoldCapReached);
        }
        let verdict = timing.judge(
            &config,
            Ok(Renewal::Renewed),
            sent,
            start + SECOND / 2,
            config.validity,
        );
        renewed(verdict);
    }

    #[test]
    fn a_backend_that_no_longer_has_the_grant_ends_the_hold_as_not_owned() {
        let config = config(None, true);
        let start = Instant::now();
        let timing = Timing::new(&config, start, start, start + config.validity);
        let verdict = timing.judge(
            &config,
            Ok(Renewal::Lost),
            start,
            start + SECOND,
            config.validity,
        );
        assert_eq!(lost(verdict), LossReason::NotOwner);
    }

    #[test]
    fn the_watchdog_looks_at_the_soonest_of_renewal_jeopardy_cap_and_deadline() {
        let start = Instant::now();
        let plain = config(None, true);
        let deadline = start + plain.validity;
        let timing = Timing::new(&plain, start, start, deadline);
        assert_eq!(timing.wake_at(&plain, false), start + SECOND);
        let mut late = timing;
        late.renewed(&plain, start + SECOND * 3 / 2, deadline);
        assert_eq!(
            late.wake_at(&plain, false),
            deadline - plain.jeopardy_within
        );
        assert_eq!(late.wake_at(&plain, true), start + SECOND * 5 / 2);
        let capped = config(Some(SECOND / 2), true);
        let timing = Timing::new(&capped, start, start, deadline);
        assert_eq!(timing.wake_at(&capped, false), start + SECOND / 2);
        let manual = config(None, false);
        let timing = Timing::new(&manual, start, start, deadline);
        assert_eq!(timing.wake_at(&manual, true), deadline);
        assert!(!timing.renew_due(&manual, deadline));
    }

    #[test]
    fn a_failed_renewal_is_retried_soon_enough_for_two_more_attempts() {
        let config = config(None, true);
        let start = Instant::now();
        let deadline = start + config.validity;
        let mut timing = Timing::new(&config, start, start, deadline);
        let now = deadline - SECOND / 10;
        let left = timing.retry(&config, now);
        assert_eq!(left, SECOND / 10);
        assert!(timing.wake_at(&config, true) <= now + left / 3);
        assert!(timing.renew_due(&config, now + left / 3));
        assert!(!timing.renew_due(&config, now));
    }
}
