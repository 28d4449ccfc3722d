//! What the watchdog does for a hold that falls due: signal a loss or jeopardy, renew,
//! and put the hold back into the schedule for its next instant.

use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

use futures_util::FutureExt;

use super::lane::{Running, Slot};
use crate::driver::{DriverError, Lease};
use crate::engine::hold::{HoldId, Phase};
use crate::engine::timing::{Timing, Verdict};
use crate::engine::{Core, Signals};
use crate::loss::LossReason;

/// When a hold renews next, as [`Core::schedule`] is told.
pub(crate) enum NextRenew {
    /// As it was.
    Unchanged,
    /// At this instant.
    At(Instant),
    /// A renewal succeeded: the next is due at `due`, and goes out on the watchdog's
    /// grid, no sooner than `earliest` ([`grid`](super::grid)).
    OnGrid { due: Instant, earliest: Instant },
}

/// A renewal about to go out.
struct Renewal {
    core: Arc<Core>,
    id: HoldId,
    lease: Arc<dyn Lease>,
    signals: Arc<Signals>,
    timing: Timing,
    sent: Instant,
}

impl Core {
    /// Hold `id`'s entry at `slot` fell due at `now`: signals its loss if its deadline or
    /// cap has passed, puts it into jeopardy if that is due, and returns its renewal if
    /// that is due; otherwise puts it back into the schedule for its next instant. An
    /// entry the hold no longer points to (a refresh put it elsewhere meanwhile, or the
    /// hold ended) is nothing.
    pub(super) fn due(self: &Arc<Self>, id: HoldId, slot: Slot, now: Instant) -> Option<Running> {
        let (timing, lease, signals) = match &mut self.state().phase {
            Phase::Held(hold) if hold.id == id && hold.slot == Some(slot) => {
                hold.slot = None;
                let timing = hold.timing(&self.config);
                (timing, Arc::clone(&hold.lease), Arc::clone(&hold.signals))
            }
            Phase::Idle | Phase::Acquiring | Phase::Held(_) => return None,
        };
        if let Some(reason) = timing.over_at(now) {
            self.lose_and_free(id, reason);
            return None;
        }
        // The mutex decides, under its lock, so that a refresh's new deadline is seen.
        self.endanger(id, now);
        if !timing.renew_due(&self.config, now) {
            self.schedule(id, NextRenew::Unchanged);
            return None;
        }
        let renewal = Renewal {
            core: Arc::clone(self),
            id,
            lease,
            signals,
            timing,
            sent: now,
        };
        let span = tracing::info_span!(target: "robit", parent: None, "lease", lock = %self.config.name, fence = renewal.lease.fence().get());
        // An instrumented future costs something on every poll even when no subscriber
        // listens; skip it then.
        Some(if span.is_disabled() {
            Box::pin(renewal.run())
        } else {
            Box::pin(renewal.run().instrument(span))
        })
    }

    /// Puts hold `id`, if it is still current, into the schedule for its next instant.
    pub(crate) fn schedule(self: &Arc<Self>, id: HoldId, next_renew: NextRenew) {
        let config = &self.config;
        if let Phase::Held(hold) = &mut self.state().phase
            && hold.id == id
        {
            match next_renew {
                NextRenew::Unchanged => {}
                NextRenew::At(at) => {
                    hold.next_renew = at;
                    hold.placed = None;
                }
                NextRenew::OnGrid { due, earliest } => {
                    let at = hold.lane.place_renewal(due, earliest, config.renew_period);
                    hold.next_renew = at;
                    hold.placed = Some(at);
                }
            }
            let at = hold
                .timing(config)
                .wake_at(config, hold.signals.in_jeopardy());
            hold.schedule_at(self, at);
        }
    }
}

impl Renewal {
    /// Renews the lease and acts on what the answer means: a new deadline, a retry, or
    /// the loss.
    async fn run(mut self) {
        let core = &self.core;
        let config = &core.config;
        let Some(answer) = self.answer().await else {
            return;
        };
        let now = config.clock.now();
        let next_renew = match self
            .timing
            .judge(config, answer, self.sent, now, config.validity)
        {
            Verdict::Renewed { deadline, slack } => {
                if !core.extend(self.id, deadline, now) {
                    // Ended meanwhile, or too late: if it is still current, nothing
                    // else watches it now, so it ends here (or did already).
                    core.lose_and_free(self.id, LossReason::DeadlinePassed);
                    return;
                }
                core.stats.renewed(slack);
                self.timing.renewed(config, self.sent, deadline);
                tracing::trace!(target: "robit", ?slack, "renewed");
                // Up to half a period early, never before now.
                let (due, earliest) = super::window(self.sent, config.renew_period);
                NextRenew::OnGrid {
                    due,
                    earliest: earliest.max(now),
                }
            }
            Verdict::Failed(error) => {
                core.stats.renew_failed();
                let left = self.timing.retry(config, config.clock.now());
                tracing::warn!(target: "robit", %error, ?left, "renew failed; retrying before the validity deadline");
                NextRenew::At(self.timing.next_renew())
            }
            Verdict::Lost(reason) => {
                core.lose_and_free(self.id, reason);
                return;
            }
        };
        core.schedule(self.id, next_renew);
    }

    /// The renewal's answer, or a timeout at the end of its attempt (its timeout, or the
    /// deadline or the cap if one comes sooner). Puts the hold into jeopardy if the
    /// answer is still out when that is due. `None`: the hold ended meanwhile.
    async fn answer(&self) -> Option<Result<crate::driver::Renewal, DriverError>> {
        let config = &self.core.config;
        let attempt_end = self.timing.attempt_end(config, self.sent);
        let mut jeopardy_at = self
            .timing
            .jeopardy_due(config, self.signals.in_jeopardy())
            .filter(|at| *at < attempt_end);
        // A driver's renewal that panics fails like any other, instead of taking down the
        // lane's task, which watches every hold of the locker on this runtime.
        let mut renew = pin!(AssertUnwindSafe(self.lease.renew(config.ttl)).catch_unwind());
        loop {
            let timer = jeopardy_at.unwrap_or(attempt_end);
            tokio::select! {
                biased;
                // The hold ended: nothing waits for the answer.
                () = self.signals.ended() => return None,
                answer = renew.as_mut() => {
                    return Some(answer.unwrap_or_else(|_| {
                        Err(DriverError::unavailable("the driver's renewal panicked"))
                    }));
                }
                () = config.clock.sleep_until(timer) => {}
            }
            if jeopardy_at.take().is_none() {
                return Some(Err(DriverError::Timeout(attempt_end - self.sent)));
            }
            self.core.endanger(self.id, config.clock.now());
        }
    }
}
