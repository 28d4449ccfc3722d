//! `refresh()`: a renewal the holder makes itself, for mutexes built without the
//! watchdog's renewals.
//!
//! Its answer means what a watchdog renewal's would: one function decides both
//! ([`Timing::judge`]). The new deadline counts from the refresh's send time, an answer
//! that lands at or after the old deadline (or the hold's cap) comes too late, and a
//! backend that says the grant is gone ends the hold as lost, signalled through every
//! channel. Refreshes of one mutex run one at a time: two in flight could reach the
//! backend in either order, and the mutex must believe the later of the two sends, not
//! the later of the two answers.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold::{HoldId, Phase, Which};
use super::timing::{Timing, Verdict};
use super::watchdog::NextRenew;
use super::{Core, MAX_TTL, Signals};
use crate::driver::Lease;
use crate::error::RefreshError;
use crate::loss::LossReason;

/// Renews the hold `which` names for `ttl`, and returns how long it is valid from now.
pub(crate) async fn refresh(
    core: &Arc<Core>,
    which: Which,
    ttl: Duration,
) -> Result<Duration, RefreshError> {
    let config = &core.config;
    if config.watchdog {
        return Err(RefreshError::WatchdogRenews);
    }
    // The bound first: the validity of a TTL past it need not even be representable.
    let validity = Some(ttl)
        .filter(|ttl| *ttl <= MAX_TTL)
        .and_then(|ttl| config.validity_of(ttl))
        .ok_or(RefreshError::InvalidTtl { ttl })?;
    let _one_at_a_time = core.refreshing.lock().await;
    let Refreshable {
        id,
        lease,
        signals,
        timing,
    } = core.refreshable(which)?;
    let sent = core.now();
    if sent >= timing.deadline() {
        core.lose_and_free(id, LossReason::DeadlinePassed);
        return Err(RefreshError::Lost(LossReason::DeadlinePassed));
    }
    let limit = config
        .renew_timeout
        .min(timing.deadline().saturating_duration_since(sent));
    let answer = tokio::select! {
        biased;
        () = signals.lost.cancelled() => {
            return Err(RefreshError::Lost(signals.loss().unwrap_or(LossReason::DriverSignalled)));
        }
        answer = core.within_from(sent, limit, lease.renew(ttl)) => answer,
    };
    let now = core.now();
    settle(
        core,
        id,
        &signals,
        timing.judge(config, answer, sent, now, validity),
        now,
    )
}

/// Acts on what a refresh's answer, read at `now`, means for hold `id`.
fn settle(
    core: &Arc<Core>,
    id: HoldId,
    signals: &Signals,
    verdict: Verdict,
    now: Instant,
) -> Result<Duration, RefreshError> {
    match verdict {
        Verdict::Renewed { deadline, slack } => {
            if core.extend(id, deadline, now) {
                // The watchdog looks again by the new deadline, which may come sooner.
                core.schedule(id, NextRenew::Unchanged);
                core.stats.renewed(slack);
                return Ok(deadline.saturating_duration_since(now));
            }
            // Gone meanwhile (a loss the watchdog signalled), or too late.
            let reason = signals.loss().unwrap_or(LossReason::DeadlinePassed);
            core.lose_and_free(id, reason);
            Err(RefreshError::Lost(reason))
        }
        Verdict::Failed(error) => {
            core.stats.renew_failed();
            tracing::warn!(target: "robit", lock = %core.config.name, %error, "refresh failed; the lease stays valid until its deadline");
            Err(RefreshError::Backend(error))
        }
        Verdict::Lost(reason) => {
            core.lose_and_free(id, reason);
            Err(RefreshError::Lost(signals.loss().unwrap_or(reason)))
        }
    }
}

/// A hold to refresh.
struct Refreshable {
    id: HoldId,
    lease: Arc<dyn Lease>,
    signals: Arc<Signals>,
    timing: Timing,
}

impl Core {
    /// The hold `which` names, if it can be refreshed: otherwise why not.
    fn refreshable(&self, which: Which) -> Result<Refreshable, RefreshError> {
        let state = self.state();
        match &state.phase {
            Phase::Held(hold) if which.is(hold.id) => {
                return Ok(Refreshable {
                    id: hold.id,
                    lease: Arc::clone(&hold.lease),
                    signals: Arc::clone(&hold.signals),
                    timing: hold.timing(&self.config),
                });
            }
            Phase::Idle | Phase::Acquiring | Phase::Held(_) => {}
        }
        match &state.last {
            Some(ended) if which.is(ended.id) => match ended.loss {
                Some(reason) => Err(RefreshError::Lost(reason)),
                None => Err(RefreshError::NotHeld),
            },
            _ => Err(RefreshError::NotHeld),
        }
    }
}
