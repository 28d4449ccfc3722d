//! The wait between two acquire attempts: how long, and what cuts it short.

use std::time::Duration;

use tokio::time::Instant;

use super::Plan;
use crate::driver::{DriverError, ReleaseWatch};
use crate::engine::backoff::{MIN_RETRY_DELAY, half_jitter};
use crate::engine::{Core, MAX_TTL};
use crate::error::LockError;

/// How long to wait after an attempt found the lock held. With a live release watch the
/// driver will wake the waiter, so it polls only as a fallback, at the longest interval,
/// jittered so that waiters do not poll in step; without one it backs off. Never past the
/// holder's expiry, when the driver told it.
pub(super) fn after_held(
    core: &Core,
    plan: &Plan,
    released: &ReleaseWatch,
    number: u32,
    expires_in: Option<Duration>,
) -> Duration {
    let config = &core.config;
    let delay = if released.is_live() {
        half_jitter(plan.poll_interval, &*config.entropy)
    } else {
        config.backoff.delay(number, &*config.entropy)
    };
    expires_in.map_or(delay, |left| delay.min(left))
}

/// How long to wait after the backend said it grants nothing for `left`: until the
/// quarantine ends, plus up to one poll interval, so that the waiters do not all ask at
/// its first instant.
pub(super) fn after_quarantine(core: &Core, plan: &Plan, left: Duration) -> Duration {
    let spread = u64::try_from(plan.poll_interval.as_nanos()).unwrap_or(u64::MAX);
    left.saturating_add(Duration::from_nanos(
        core.config.entropy.below_or_equal(spread),
    ))
}

/// Sleeps `delay` (at least [`MIN_RETRY_DELAY`]) after the attempt sent at `sent`, or
/// until the lock is released, whichever comes first.
///
/// # Errors
///
/// [`LockError::Timeout`] when the wait has run out, with the last transient failure.
pub(super) async fn until_next(
    core: &Core,
    plan: &Plan,
    released: ReleaseWatch,
    sent: Instant,
    delay: Duration,
    last_error: &mut Option<DriverError>,
) -> Result<(), LockError> {
    let clock = &*core.config.clock;
    let now = clock.now();
    // The backoff cap is at most a year (validated), so this cannot overflow; be
    // careful anyway rather than panic inside lock().
    let mut wake_at = now
        .checked_add(delay.max(MIN_RETRY_DELAY))
        .unwrap_or(now + MAX_TTL);
    if let Some(give_up_at) = plan.give_up_at {
        if now >= give_up_at {
            return Err(LockError::Timeout {
                waited: now.saturating_duration_since(plan.started),
                last_error: last_error.take(),
            });
        }
        wake_at = wake_at.min(give_up_at);
    }
    tokio::select! {
        biased;
        () = released => {
            tracing::trace!(target: "robit", "woken by a release");
            // Even a release wakes no sooner than the floor after the last attempt:
            // a watch that completes spuriously, again and again, must not spin.
            clock.sleep_until(sent + MIN_RETRY_DELAY).await;
        }
        () = clock.sleep_until(wake_at) => {}
    }
    Ok(())
}
