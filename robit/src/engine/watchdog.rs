//! The task that keeps a mutex's leases alive, and signals their loss.
//!
//! One watchdog runs per mutex, started by its first hold on the runtime that acquired
//! it, and parked between holds: spawning and retiring a task per hold was the largest
//! single item of the mutex's own client work per lock + unlock. A hold acquired on
//! another runtime starts a new watchdog there (the old one is stopped): the watchdog
//! follows the runtime that acquires, which is running at that moment.
//!
//! For each hold it renews the lease every renew period (measured from the *send* time
//! of the last successful acquire or renew; a mutex built with `watchdog(false)` leaves
//! renewing to `refresh`), retries failed renews, signals jeopardy and the hold's cap,
//! and owns the validity deadline: the instant the deadline passes without a successful
//! renew, it signals loss — which is before the backend can grant the lock to anyone
//! else, because the deadline is `send time + TTL × (1 − drift) − margin` and the backend
//! keeps the grant until at least `send time + TTL`.
//!
//! The mutex wakes it when a hold starts (unless it will look in time by itself: see
//! [`Duty::idle_until`]), when a hold it has seen ends (one that ends before it looked
//! needs no wake), when a dropped hold leaves a lease to release, and when the last of
//! the mutex and its guards is gone; it exits then, after handing any lease still to be
//! released to a release task of its own.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::Core;
use super::backoff::{MIN_RETRY_DELAY, half_jitter};
use super::release::release;
use super::signals::Signals;
use super::wake::Wake;
use crate::driver::{DriverError, Lease, Renewal};
use crate::loss::LossReason;

/// A mutex's running watchdog, as the mutex sees it.
pub(crate) struct Running {
    runtime: tokio::runtime::Id,
    task: JoinHandle<()>,
    wake: Arc<Wake>,
}

impl Running {
    /// Whether this watchdog runs on `runtime` and has not ended (a runtime that shuts
    /// down drops its tasks).
    pub(crate) fn serves(&self, runtime: &tokio::runtime::Handle) -> bool {
        self.runtime == runtime.id() && self.is_alive()
    }

    pub(crate) fn is_alive(&self) -> bool {
        !self.task.is_finished()
    }

    /// Has the watchdog look at the mutex again. A wake while it is busy is kept for
    /// when it next waits.
    pub(crate) fn wake(&self) {
        self.wake.wake();
    }

    /// Stops a watchdog that another has replaced.
    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

/// Starts a watchdog for `core` on `runtime`; it picks up the current hold at once.
pub(crate) fn start(core: &Arc<Core>, runtime: &tokio::runtime::Handle) -> Running {
    let wake = Arc::new(Wake::default());
    let task = runtime.spawn(run(Arc::clone(core), Arc::clone(&wake)));
    Running {
        runtime: runtime.id(),
        task,
        wake,
    }
}

/// What the watchdog finds when it looks at the mutex.
pub(crate) struct Duty {
    /// Leases of holds dropped without an unlock: release them.
    pub(crate) to_release: Vec<Arc<dyn Lease>>,
    /// The mutex is gone: exit.
    pub(crate) exit: bool,
    /// The current hold, if any.
    pub(crate) hold: Option<Watched>,
    /// With no hold: when to look again unasked. The mutex does not wake the watchdog
    /// for a hold whose first renew is due no sooner (unless its lease has a loss signal
    /// of its own), so a short hold costs the watchdog nothing; the watchdog takes a
    /// longer one up by then, in time for its first renew.
    pub(crate) idle_until: Option<Instant>,
}

/// A hold, as the watchdog needs it.
pub(crate) struct Watched {
    pub(crate) id: u64,
    pub(crate) lease: Arc<dyn Lease>,
    pub(crate) sent: Instant,
    pub(crate) deadline: Instant,
    pub(crate) signals: Arc<Signals>,
    /// When the hold reaches its maximum length, if it has one.
    pub(crate) cap: Option<Instant>,
}

/// Looks at the mutex: starts the releases it was handed, and says whether to keep
/// watching hold `id` (`None`: whether to keep running at all), which hold is current,
/// and, with none, when to look again unasked.
fn review(core: &Arc<Core>, id: Option<u64>) -> (bool, Option<Watched>, Option<Instant>) {
    let duty = core.duty();
    for lease in duty.to_release {
        tokio::spawn(release(Arc::clone(core), lease));
    }
    let keep =
        !duty.exit && id.is_none_or(|id| duty.hold.as_ref().is_some_and(|hold| hold.id == id));
    (keep, duty.hold, duty.idle_until)
}

async fn run(core: Arc<Core>, wake: Arc<Wake>) {
    // The hold watched last: once its watch ends, it is never watched again, even if it
    // is still installed (a loss the mutex declined to signal).
    let mut watched = None;
    loop {
        let (keep, hold, idle_until) = review(&core, None);
        if !keep {
            return;
        }
        match hold.filter(|hold| Some(hold.id) != watched) {
            Some(hold) => {
                watched = Some(hold.id);
                let span = tracing::info_span!(target: "robit", parent: None, "lease", lock = %core.config.name, fence = hold.lease.fence().get());
                // An instrumented future costs something on every poll even when no
                // subscriber listens; skip it then.
                if span.is_disabled() {
                    watch(&core, &wake, hold).await;
                } else {
                    watch(&core, &wake, hold).instrument(span).await;
                }
            }
            None => match idle_until {
                Some(until) => {
                    tokio::select! {
                        biased;
                        () = wake.woken() => {}
                        () = core.config.clock.sleep_until(until) => {}
                    }
                }
                None => wake.woken().await,
            },
        }
    }
}

/// What ended a renew attempt.
enum Attempt {
    Done(Result<Renewal, DriverError>),
    Stopped,
    DriverSignalled,
    /// The attempt's timer fired: its timeout, or the validity deadline if that is sooner.
    TimedOut,
}

/// Keeps one hold's lease alive until the hold ends, and signals jeopardy and loss.
///
/// With the watchdog turned off ([`Config::watchdog`](super::Config)), it renews
/// nothing: its next renewal is the deadline itself, which a manual refresh moves — and
/// wakes it to re-read, since the move may be earlier than its timer.
async fn watch(core: &Arc<Core>, wake: &Wake, hold: Watched) {
    let Watched {
        id,
        lease,
        sent,
        mut deadline,
        signals,
        cap,
    } = hold;
    let config = &core.config;
    let clock = &*config.clock;
    let mut driver_lost = pin!(lease.lost());
    let mut next_renew = if config.watchdog {
        sent + config.renew_period
    } else {
        deadline
    };
    // The deadline as the mutex has it now: a refresh may have moved it. `None`: the
    // hold ended.
    let current = |next_renew: &mut Instant| {
        let deadline = core.deadline(id)?;
        if !config.watchdog {
            *next_renew = deadline;
        }
        Some(deadline)
    };
    // When the hold enters jeopardy, if it is not in jeopardy already.
    let jeopardy = |deadline| (!signals.in_jeopardy()).then(|| core.jeopardy_at(deadline));

    // One timer at a time: the renew time always comes before the deadline, and an
    // attempt's timeout never runs past it, so waking for the soonest and then reading
    // the clock tells which it was.
    let reason = 'hold: loop {
        let timer = [jeopardy(deadline), cap]
            .into_iter()
            .flatten()
            .fold(deadline, Instant::min);
        tokio::select! {
            biased;
            () = wake.woken() => {
                if !review(core, Some(id)).0 {
                    break None;
                }
                match current(&mut next_renew) {
                    Some(now_due) => deadline = now_due,
                    None => break None,
                }
                continue;
            }
            () = &mut driver_lost => break Some(LossReason::DriverSignalled),
            () = clock.sleep_until(next_renew.min(timer)) => {}
        }
        // Only a refresh moves the deadline behind the watchdog's back.
        if !config.watchdog {
            match current(&mut next_renew) {
                Some(now_due) => deadline = now_due,
                None => break None,
            }
        }
        let now = clock.now();
        if now >= deadline {
            break Some(LossReason::DeadlinePassed);
        }
        if cap.is_some_and(|cap| now >= cap) {
            break Some(LossReason::HoldCapReached);
        }
        if jeopardy(deadline).is_some_and(|at| now >= at) {
            core.endanger(id, now);
        }
        if now < next_renew || !config.watchdog {
            continue;
        }

        let sent = now;
        let attempt_end = [Some(sent + config.renew_timeout), cap]
            .into_iter()
            .flatten()
            .fold(deadline, Instant::min);
        let mut renew = pin!(lease.renew(config.ttl));
        let attempt = renew_once(
            core,
            wake,
            id,
            &mut renew,
            &mut driver_lost,
            attempt_end,
            jeopardy(deadline),
        )
        .await;

        let now = clock.now();
        match attempt {
            Attempt::Stopped => break None,
            Attempt::DriverSignalled => break Some(LossReason::DriverSignalled),
            // Past the deadline we no longer believe we hold the lock, whatever the
            // backend says: a reply landing at or after it comes too late, even if the
            // timer has not fired yet.
            Attempt::TimedOut | Attempt::Done(Ok(Renewal::Renewed)) if now >= deadline => {
                break Some(LossReason::DeadlinePassed);
            }
            // The cap came while the renew was out: whatever it answered, the hold ends.
            _ if cap.is_some_and(|cap| now >= cap) => break Some(LossReason::HoldCapReached),
            Attempt::TimedOut => {
                let error = DriverError::Timeout(attempt_end - sent);
                next_renew = retry_after(core, &error, deadline);
            }
            Attempt::Done(Ok(Renewal::Renewed)) => {
                let slack = deadline.saturating_duration_since(now);
                let from = sent;
                #[cfg(robit_mutants)]
                let from = super::mutant::validity_from(config, from, || clock.now());
                deadline = from + config.validity;
                if !core.extend(id, deadline, now) {
                    break 'hold None;
                }
                core.stats.renewed(slack);
                next_renew = sent + config.renew_period;
                tracing::trace!(target: "robit", ?slack, "renewed");
            }
            Attempt::Done(Ok(Renewal::Lost)) => break Some(LossReason::NotOwner),
            Attempt::Done(Err(error)) => next_renew = retry_after(core, &error, deadline),
        }
    };

    if let Some(reason) = reason {
        core.lose_and_free(id, reason);
    }
}

/// Waits for what ends one renew: its answer, its timer, a wake that finds the hold
/// ended, or the driver's own loss signal — and puts the hold into jeopardy if the
/// renew is still out at the instant `jeopardy_at`. The caller owns the renew's future,
/// so that an unfinished renew is dropped where it always was: after the caller has dealt
/// with the outcome.
async fn renew_once<R, L>(
    core: &Arc<Core>,
    wake: &Wake,
    id: u64,
    renew: &mut Pin<&mut R>,
    driver_lost: &mut Pin<&mut L>,
    attempt_end: Instant,
    mut jeopardy_at: Option<Instant>,
) -> Attempt
where
    R: Future<Output = Result<Renewal, DriverError>>,
    L: Future<Output = ()>,
{
    let config = &core.config;
    loop {
        tokio::select! {
            biased;
            () = wake.woken() => {
                if !review(core, Some(id)).0 {
                    return Attempt::Stopped;
                }
            }
            () = driver_lost.as_mut() => return Attempt::DriverSignalled,
            result = renew.as_mut() => return Attempt::Done(result),
            () = config.clock.sleep_until(attempt_end) => return Attempt::TimedOut,
            () = config.clock.sleep_until(jeopardy_at.unwrap_or(attempt_end)), if jeopardy_at.is_some() => {
                core.endanger(id, config.clock.now());
                jeopardy_at = None;
            }
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
