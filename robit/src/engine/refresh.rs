//! `refresh()`: a renewal the holder makes itself, for mutexes built without the
//! watchdog's renewals.
//!
//! It follows the watchdog's rules: the new deadline counts from the refresh's send
//! time, an answer that lands at or after the old deadline comes too late, and a backend
//! that says the grant is gone ends the hold as lost, signalled through every channel.
//! Refreshes of one mutex run one at a time: two in flight could reach the backend in
//! either order, and the mutex must believe the later of the two sends, not the later of
//! the two answers.

use std::sync::Arc;
use std::time::Duration;

use super::hold::Phase;
use super::{Core, MAX_TTL, Signals};
use crate::driver::{Lease, Renewal};
use crate::error::RefreshError;
use crate::loss::LossReason;

/// Renews hold `id` (or the current hold) for `ttl`, and returns how long it is valid
/// from now.
pub(crate) async fn refresh(
    core: &Arc<Core>,
    id: Option<u64>,
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
    let (id, lease, signals) = core.refreshable(id)?;
    let sent = core.now();
    let Some(deadline) = core.deadline(id).filter(|deadline| sent < *deadline) else {
        core.lose_and_free(id, LossReason::DeadlinePassed);
        return Err(RefreshError::Lost(LossReason::DeadlinePassed));
    };
    let limit = config
        .renew_timeout
        .min(deadline.saturating_duration_since(sent));
    let result = tokio::select! {
        biased;
        () = signals.lost.cancelled() => {
            return Err(RefreshError::Lost(signals.loss().unwrap_or(LossReason::DriverSignalled)));
        }
        result = core.within_from(sent, limit, lease.renew(ttl)) => result,
    };
    let now = core.now();
    match result {
        Ok(Renewal::Renewed) => {
            if core.extend(id, sent + validity, now) {
                // The new deadline may come before the watchdog's timer: it re-reads.
                core.wake_watchdog();
                core.stats.renewed(deadline.saturating_duration_since(now));
                return Ok((sent + validity).saturating_duration_since(now));
            }
            // Gone meanwhile (a loss the watchdog signalled), or too late.
            let reason = signals.loss().unwrap_or(LossReason::DeadlinePassed);
            core.lose_and_free(id, reason);
            Err(RefreshError::Lost(reason))
        }
        Ok(Renewal::Lost) => {
            core.lose(id, LossReason::NotOwner);
            Err(RefreshError::Lost(LossReason::NotOwner))
        }
        Err(error) => {
            core.stats.renew_failed();
            tracing::warn!(target: "robit", lock = %config.name, %error, "refresh failed; the lease stays valid until its deadline");
            Err(RefreshError::Backend(error))
        }
    }
}

/// A hold to refresh: its id, lease and signals.
type Refreshable = (u64, Arc<dyn Lease>, Arc<Signals>);

impl Core {
    /// Hold `id` (or the current hold), its lease and signals, if it can be refreshed:
    /// otherwise why not.
    fn refreshable(&self, id: Option<u64>) -> Result<Refreshable, RefreshError> {
        let state = self.state();
        match &state.phase {
            Phase::Held(hold) if id.is_none_or(|id| id == hold.id) => {
                return Ok((hold.id, Arc::clone(&hold.lease), Arc::clone(&hold.signals)));
            }
            Phase::Idle | Phase::Acquiring | Phase::Held(_) => {}
        }
        match &state.last {
            Some(ended) if id.is_none_or(|id| id == ended.id) => match ended.loss {
                Some(reason) => Err(RefreshError::Lost(reason)),
                None => Err(RefreshError::NotHeld),
            },
            _ => Err(RefreshError::NotHeld),
        }
    }
}
