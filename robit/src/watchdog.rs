//! The task that keeps one hold's lease alive, and signals its loss.
//!
//! One watchdog runs per hold. It renews the lease every renew period (measured from the
//! *send* time of the last successful acquire or renew), retries failed renews, and owns
//! the validity deadline: the instant the deadline passes without a successful renew, it
//! signals loss — which is before the backend can grant the lock to anyone else, because
//! the deadline is `send time + TTL × (1 − drift) − margin` and the backend keeps the
//! grant until at least `send time + TTL`.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::time::Instant;

use crate::config::{MIN_RETRY_DELAY, half_jitter};
use crate::core::{Core, HoldCtl};
use crate::mutant::Mutant;
use crate::{DriverError, Lease, LossReason, Renewal};

/// What ended a renew attempt.
enum Attempt {
    Done(Result<Renewal, DriverError>),
    Stopped,
    DriverSignalled,
    /// The attempt's timer fired: its timeout, or the validity deadline if that is sooner.
    TimedOut,
}

pub(crate) async fn run(
    core: Arc<Core>,
    lease: Arc<dyn Lease>,
    id: u64,
    ctl: Arc<HoldCtl>,
    sent: Instant,
    mut deadline: Instant,
) {
    let config = &core.config;
    let clock = &*config.clock;
    let mut driver_lost = pin!(lease.lost());
    let mut next_renew = sent + config.renew_period;

    // One timer at a time: the renew time always comes before the deadline, and an
    // attempt's timeout never runs past it, so waking for the sooner of the two and then
    // reading the clock tells which it was.
    let reason = loop {
        tokio::select! {
            biased;
            () = ctl.stopped() => break None,
            () = &mut driver_lost => break Some(LossReason::DriverSignalled),
            () = clock.sleep_until(next_renew.min(deadline)) => {}
        }
        if clock.now() >= deadline {
            break Some(LossReason::DeadlinePassed);
        }

        let sent = clock.now();
        let attempt_end = (sent + config.renew_timeout).min(deadline);
        let attempt = tokio::select! {
            biased;
            () = ctl.stopped() => Attempt::Stopped,
            () = &mut driver_lost => Attempt::DriverSignalled,
            result = lease.renew(config.ttl) => Attempt::Done(result),
            () = clock.sleep_until(attempt_end) => Attempt::TimedOut,
        };

        match attempt {
            Attempt::Stopped => break None,
            Attempt::DriverSignalled => break Some(LossReason::DriverSignalled),
            // Past the deadline we no longer believe we hold the lock, whatever the
            // backend says: a reply landing at or after it comes too late, even if the
            // timer has not fired yet.
            Attempt::TimedOut | Attempt::Done(Ok(Renewal::Renewed)) if clock.now() >= deadline => {
                break Some(LossReason::DeadlinePassed);
            }
            Attempt::TimedOut => {
                let error = DriverError::Timeout(attempt_end - sent);
                next_renew = retry_after(&core, &error, deadline);
            }
            Attempt::Done(Ok(Renewal::Renewed)) => {
                let slack = deadline.saturating_duration_since(clock.now());
                deadline = if config.has(Mutant::ValidityFromReceive) {
                    clock.now()
                } else {
                    sent
                } + config.validity;
                if !core.extend(id, deadline) {
                    break None;
                }
                core.stats.renewed(slack);
                next_renew = sent + config.renew_period;
                tracing::trace!(target: "robit", ?slack, "renewed");
            }
            Attempt::Done(Ok(Renewal::Lost)) => break Some(LossReason::NotOwner),
            Attempt::Done(Err(error)) => next_renew = retry_after(&core, &error, deadline),
        }
    };

    let signalled = reason.is_some_and(|reason| core.lose(id, reason));
    // After a deadline loss the grant may still be live on the backend: free it early for
    // the next waiter (owner-checked, so harmless if it is gone). A hold that was dropped
    // rather than unlocked — even one whose drop beat the loss to it — is released here.
    let release = if signalled {
        reason == Some(LossReason::DeadlinePassed)
    } else {
        ctl.release_on_stop.load(Ordering::Acquire)
    };
    if release {
        if let Err(error) = core.within(config.renew_timeout, lease.release()).await {
            tracing::warn!(target: "robit", %error, "release not confirmed; the grant lapses at its expiry");
        }
    }
}

/// Counts and logs a failed renew, and says when to retry: after a jittered quarter of
/// the renew period, but never so late that fewer than two more attempts fit before the
/// deadline, and never sooner than [`MIN_RETRY_DELAY`].
fn retry_after(core: &Core, error: &DriverError, deadline: Instant) -> Instant {
    let config = &core.config;
    let now = config.clock.now();
    let left = deadline.saturating_duration_since(now);
    core.stats.renew_failed();
    tracing::warn!(target: "robit", %error, ?left, "renew failed; retrying before the validity deadline");
    let ceiling = (config.renew_period / 4).min(left / 3);
    now + half_jitter(ceiling, &*config.entropy).max(MIN_RETRY_DELAY)
}
