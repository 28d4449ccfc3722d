//! The state a mutex shares with its watchdog, and the transitions between states.
//!
//! Every transition that ends a hold — unlock, drop, loss — happens under one lock and
//! checks the hold's id first, so exactly one of them wins for any hold: loss is
//! signalled at most once, and never after an unlock that won the race.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::mutant::Mutant;
use crate::stats::StatsCells;
use crate::watchdog::{self, Duty, Watched};
use crate::{DriverError, FenceToken, Lease, LockError, LossEvent, LossReason, Stats, UnlockError};

pub(crate) struct Core {
    pub(crate) config: Config,
    pub(crate) stats: StatsCells,
    state: StdMutex<Slots>,
    next_hold: AtomicU64,
}

struct Slots {
    state: State,
    /// How the most recent hold ended, so that an `unlock()` after a loss can report it.
    last: Option<Ended>,
    /// The mutex's watchdog task, once a hold has started it.
    watchdog: Option<watchdog::Running>,
    /// The id of the last hold the watchdog has seen (0: none). A hold that ends before
    /// its watchdog saw it needs no wake at its end: the watchdog has yet to look.
    seen: u64,
    /// When the watchdog, idle, looks at the mutex again by itself (`None`: only when
    /// woken). A hold whose first renew is due no sooner needs no wake at its start.
    idle_until: Option<Instant>,
    /// `next_hold` when the watchdog last went idle: unchanged at its next look, the
    /// mutex went unused for a whole renew period, and the watchdog stops looking by
    /// itself until it is woken again.
    holds_at_idle: u64,
    /// Leases of holds that ended without an unlock (a dropped guard or mutex), waiting
    /// for the watchdog to release them.
    to_release: Vec<Arc<dyn Lease>>,
    /// Set when the last of the mutex and its guards is gone: the watchdog exits.
    closed: bool,
}

enum State {
    Idle,
    Acquiring,
    Held(Hold),
}

impl Slots {
    /// Takes the current hold (hold `id`, if given) and leaves the mutex idle.
    fn take_hold(&mut self, id: Option<u64>) -> Option<Hold> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Held(hold) if id.is_none_or(|id| id == hold.id) => Some(hold),
            other => {
                self.state = other;
                None
            }
        }
    }
}

struct Ended {
    id: u64,
    unreported_loss: Option<LossReason>,
}

struct Hold {
    id: u64,
    lease: Arc<dyn Lease>,
    fence: FenceToken,
    /// When the acquire that granted the lease was sent: the first renew is timed from it.
    sent: Instant,
    acquired_at: Instant,
    deadline: Instant,
    lost: CancellationToken,
}

/// Runs backend work that nobody waits for any more — an abandoned acquire's grant, a
/// cancelled unlock's release, a withdrawn waiter — on the current runtime. Outside a
/// runtime there is nowhere to run it: what it would have freed lapses at its TTL.
pub(crate) fn in_background(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}

/// Finishes a release in the background if `unlock()` is cancelled before the backend
/// answers, so a cancelled unlock does not leave the grant until its TTL.
struct PendingRelease {
    core: Arc<Core>,
    lease: Option<Arc<dyn Lease>>,
}

impl Drop for PendingRelease {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            in_background(watchdog::release(Arc::clone(&self.core), lease));
        }
    }
}

/// What `lock()` hands to the guard of a new hold.
pub(crate) struct Installed {
    pub(crate) id: u64,
    pub(crate) acquired_at: Instant,
    pub(crate) fence: FenceToken,
    pub(crate) lost: CancellationToken,
}

impl Core {
    pub(crate) fn new(config: Config) -> Self {
        Self {
            config,
            stats: StatsCells::default(),
            state: StdMutex::new(Slots {
                state: State::Idle,
                last: None,
                watchdog: None,
                seen: 0,
                idle_until: None,
                holds_at_idle: 0,
                to_release: Vec::new(),
                closed: false,
            }),
            next_hold: AtomicU64::new(1),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        // Nothing panics while holding this lock; recover rather than propagate if a
        // panic ever does.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn now(&self) -> Instant {
        self.config.clock.now()
    }

    /// Idle → Acquiring, or `AlreadyHeld`.
    pub(crate) fn begin_acquire(&self) -> Result<(), LockError> {
        let mut slots = self.slots();
        match slots.state {
            State::Idle => {
                slots.state = State::Acquiring;
                Ok(())
            }
            State::Acquiring | State::Held(_) => Err(LockError::AlreadyHeld),
        }
    }

    /// Acquiring → Idle, when an acquire fails or is cancelled.
    pub(crate) fn abort_acquire(&self) {
        let mut slots = self.slots();
        if matches!(slots.state, State::Acquiring) {
            slots.state = State::Idle;
        }
    }

    /// Acquiring → Held, and hands the hold to the mutex's watchdog, starting one on
    /// `runtime` if the mutex has none running there.
    pub(crate) fn install(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        lease: Arc<dyn Lease>,
        sent: Instant,
        acquired_at: Instant,
        deadline: Instant,
    ) -> Installed {
        let id = self.next_hold.fetch_add(1, Ordering::Relaxed);
        let fence = lease.fence();
        let lease_signals_loss = lease.signals_loss();
        let lost = CancellationToken::new();
        let mut slots = self.slots();
        slots.state = State::Held(Hold {
            id,
            lease,
            fence,
            sent,
            acquired_at,
            deadline,
            lost: lost.clone(),
        });
        // The watchdog need not look at once if it will look by itself before the first
        // renew is due, and the lease has no loss signal of its own to listen to: a
        // short hold then ends without the watchdog ever running (see `Duty`).
        let looks_in_time = !lease_signals_loss
            && slots
                .idle_until
                .is_some_and(|until| sent.checked_add(self.config.renew_period) >= Some(until));
        match &slots.watchdog {
            Some(running) if running.serves(runtime) => {
                if !looks_in_time {
                    running.wake();
                }
            }
            _ => {
                if let Some(stale) = slots.watchdog.take() {
                    stale.stop();
                }
                slots.watchdog = Some(watchdog::start(self, runtime));
            }
        }
        Installed {
            id,
            acquired_at,
            fence,
            lost,
        }
    }

    /// What the watchdog is to do now: it hands over the leases waiting to be released,
    /// says whether the watchdog should exit, and shows the current hold.
    pub(crate) fn duty(&self) -> Duty {
        // Read before taking the lock: the clock may be the user's, and nothing it does
        // (a look at this mutex, say) must run under the mutex's own lock.
        let now = self.now();
        let mut slots = self.slots();
        let hold = match &slots.state {
            State::Held(hold) => Some(Watched {
                id: hold.id,
                lease: Arc::clone(&hold.lease),
                sent: hold.sent,
                deadline: hold.deadline,
            }),
            State::Idle | State::Acquiring => None,
        };
        slots.idle_until = match &hold {
            Some(hold) => {
                slots.seen = hold.id;
                None
            }
            None => {
                // Idle: look again a renew period from now, unless this look is that
                // of a period in which no hold started. A mutex used again and again
                // then never has to wake its watchdog for a short hold, and one left
                // unused costs its watchdog one look, not one per period.
                let holds = self.next_hold.load(Ordering::Relaxed);
                let unused = slots.holds_at_idle == holds
                    && slots.idle_until.is_some_and(|until| now >= until);
                slots.holds_at_idle = holds;
                if unused {
                    None
                } else {
                    now.checked_add(self.config.renew_period)
                }
            }
        };
        Duty {
            to_release: std::mem::take(&mut slots.to_release),
            exit: slots.closed,
            hold,
            idle_until: slots.idle_until,
        }
    }

    /// The last of the mutex and its guards is gone: its watchdog exits, once it has
    /// released what it was given to release. Leases left with a watchdog that has
    /// since died (its runtime shut down) are released on the current runtime instead.
    pub(crate) fn close(self: &Arc<Self>) {
        let mut slots = self.slots();
        slots.closed = true;
        match &slots.watchdog {
            Some(running) if running.is_alive() => running.wake(),
            _ => {
                let orphans = std::mem::take(&mut slots.to_release);
                drop(slots);
                for lease in orphans {
                    in_background(watchdog::release(Arc::clone(self), lease));
                }
            }
        }
    }

    /// Publishes a renewed deadline; false if the hold is no longer current.
    pub(crate) fn extend(&self, id: u64, deadline: Instant) -> bool {
        match &mut self.slots().state {
            State::Held(hold) if hold.id == id => {
                hold.deadline = deadline;
                true
            }
            _ => false,
        }
    }

    /// Ends hold `id` as lost and signals it through every channel, unless the hold
    /// already ended. Returns whether this call signalled.
    pub(crate) fn lose(&self, id: u64, reason: LossReason) -> bool {
        if self.config.has(Mutant::NoLossSignal) {
            return false;
        }
        let hold = {
            let mut slots = self.slots();
            let Some(hold) = slots.take_hold(Some(id)) else {
                return false;
            };
            slots.last = Some(Ended {
                id,
                unreported_loss: Some(reason),
            });
            hold
        };
        let held_for = self.now().saturating_duration_since(hold.acquired_at);
        self.stats.lost(held_for);
        tracing::warn!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), ?held_for, %reason, "lease lost");
        hold.lost.cancel();
        let event = LossEvent {
            name: self.config.name.clone(),
            fence: hold.fence,
            reason,
            held_for,
        };
        for callback in &self.config.on_lost {
            if catch_unwind(AssertUnwindSafe(|| callback(&event))).is_err() {
                tracing::error!(target: "robit", lock = %self.config.name, "an on_lost callback panicked");
            }
        }
        true
    }

    /// Ends the current hold (or hold `id`) voluntarily, or explains why there is none.
    fn end_voluntarily(&self, id: Option<u64>) -> Result<(Hold, Instant), UnlockError> {
        let mut slots = self.slots();
        if let Some(hold) = slots.take_hold(id) {
            slots.last = Some(Ended {
                id: hold.id,
                unreported_loss: None,
            });
            if let Some(running) = &slots.watchdog
                && slots.seen == hold.id
            {
                running.wake();
            }
            drop(slots);
            let now = self.now();
            self.stats
                .released(now.saturating_duration_since(hold.acquired_at));
            return Ok((hold, now));
        }
        match slots.last.as_mut() {
            Some(ended) if id.is_none_or(|id| id == ended.id) => match ended.unreported_loss.take()
            {
                Some(reason) => Err(UnlockError::Lost(reason)),
                None => Err(UnlockError::AlreadyReleased),
            },
            _ => Err(UnlockError::AlreadyReleased),
        }
    }

    /// Unlocks and waits for the backend to confirm the release.
    pub(crate) async fn unlock(self: &Arc<Self>, id: Option<u64>) -> Result<(), UnlockError> {
        let (hold, now) = self.end_voluntarily(id)?;
        if self.config.has(Mutant::LossAfterUnlock) {
            let event = LossEvent {
                name: self.config.name.clone(),
                fence: hold.fence,
                reason: LossReason::DeadlinePassed,
                held_for: now.saturating_duration_since(hold.acquired_at),
            };
            self.config
                .on_lost
                .iter()
                .for_each(|callback| callback(&event));
        }
        let mut pending = PendingRelease {
            core: Arc::clone(self),
            lease: Some(Arc::clone(&hold.lease)),
        };
        let result = self
            .within_from(now, self.config.renew_timeout, hold.lease.release())
            .await;
        pending.lease = None;
        match &result {
            Ok(()) => {
                tracing::debug!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), "released")
            }
            Err(error) => {
                tracing::warn!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), %error, "release not confirmed; the grant lapses at its expiry")
            }
        }
        Ok(result?)
    }

    /// Ends the current hold (or hold `id`) and has its lease released in the background:
    /// the path for dropped guards and mutexes. The watchdog does it if it runs on the
    /// current runtime (or there is none); otherwise — its runtime idle elsewhere, or shut
    /// down — the release runs on the current runtime, which is running now.
    pub(crate) fn release_in_background(self: &Arc<Self>, id: Option<u64>) {
        let Ok((hold, _)) = self.end_voluntarily(id) else {
            return;
        };
        tracing::debug!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), "dropped while held; releasing in the background");
        let runtime = tokio::runtime::Handle::try_current().ok();
        let mut slots = self.slots();
        match (&slots.watchdog, &runtime) {
            (Some(running), Some(runtime)) if running.serves(runtime) => running.wake(),
            (Some(running), None) if running.is_alive() => running.wake(),
            _ => {
                drop(slots);
                in_background(watchdog::release(Arc::clone(self), hold.lease));
                return;
            }
        }
        slots.to_release.push(hold.lease);
    }

    /// Whether hold `id` (or any hold) is current and inside its validity deadline.
    pub(crate) fn is_held(&self, id: Option<u64>) -> bool {
        let now = self.now();
        let ignore_deadline = self.config.has(Mutant::NoLossSignal);
        matches!(&self.slots().state, State::Held(hold) if id.is_none_or(|id| id == hold.id) && (ignore_deadline || now < hold.deadline))
    }

    /// The current hold's fencing token and lost signal.
    pub(crate) fn current(&self) -> Option<(FenceToken, CancellationToken)> {
        match &self.slots().state {
            State::Held(hold) => Some((hold.fence, hold.lost.child_token())),
            State::Idle | State::Acquiring => None,
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let current = match &self.slots().state {
            State::Held(hold) => Some(hold.acquired_at),
            State::Idle | State::Acquiring => None,
        };
        let held = current.map_or(Duration::ZERO, |since| {
            self.now().saturating_duration_since(since)
        });
        self.stats.snapshot(held)
    }

    /// Runs a backend call with a time limit on this mutex's clock.
    pub(crate) async fn within<T>(
        &self,
        limit: Duration,
        call: impl Future<Output = Result<T, DriverError>>,
    ) -> Result<T, DriverError> {
        self.within_from(self.now(), limit, call).await
    }

    /// Runs a backend call that may take until `limit` after `start`, a clock reading the
    /// caller already has. A driver that bounds its own calls at least as tightly, on
    /// the same (tokio's) time, is left to do so: a second timer would not fire first.
    pub(crate) async fn within_from<T>(
        &self,
        start: Instant,
        limit: Duration,
        call: impl Future<Output = Result<T, DriverError>>,
    ) -> Result<T, DriverError> {
        if self.config.driver_limit.is_some_and(|own| own <= limit) {
            return call.await;
        }
        let clock = &self.config.clock;
        let until = start + limit;
        tokio::select! {
            biased;
            result = call => result,
            () = clock.sleep_until(until) => Err(DriverError::Timeout(limit)),
        }
    }
}
