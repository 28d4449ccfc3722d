//! The engine of a mutex: its state machine, shared with its watchdog, and the
//! transitions between states.
//!
//! A mutex is idle, acquiring, or holding one grant (a *hold*). Every transition that
//! ends a hold — unlock, drop, loss — happens under one lock and checks the hold's id
//! first, so exactly one of them wins for any hold: loss is signalled at most once, and
//! never after an unlock that won the race.
//!
//! The state machine is this module; the work around it lives in its children:
//! [`acquire`](mod@acquire) (the `lock()` loop), [`watchdog`] (renewal and the validity
//! deadline), [`release`](mod@release) (ending a hold), with [`hold`], [`timing`],
//! [`timed`], [`config`], [`backoff`] and [`stats`].

mod acquire;
mod backoff;
mod config;
mod hold;
#[cfg(robit_mutants)]
mod mutant;
mod refresh;
mod release;
mod signal_jeopardy;
mod signal_loss;
mod signals;
mod stats;
mod timed;
mod timing;
mod watchdog;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use self::acquire::acquire;
pub use self::backoff::{Backoff, DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX, Wait};
pub(crate) use self::config::{Config, Settings};
pub use self::config::{
    DEFAULT_DRIFT_FACTOR, DEFAULT_SAFETY_MARGIN, DEFAULT_TTL, MAX_TTL, MIN_SAFETY_MARGIN,
};
use self::hold::{Ended, Hold, Phase};
pub(crate) use self::hold::{HoldId, Installed, Which};
#[cfg(robit_mutants)]
pub use self::mutant::Mutant;
pub(crate) use self::refresh::refresh;
pub(crate) use self::release::unlock;
use self::release::{in_background, release, release_or_orphan};
pub(crate) use self::signals::Signals;
pub use self::stats::Stats;
pub(crate) use self::stats::StatsCells;
pub(crate) use self::watchdog::Watchdog;
use crate::driver::{FenceToken, Lease};
use crate::error::{LockError, UnlockError};

/// One mutex's engine: its configuration, its counters and its state, shared by the
/// mutex, its guards and its watchdog.
pub(crate) struct Core {
    pub(crate) config: Config,
    /// Shared by every mutex of a [`Locker`](crate::Locker).
    pub(crate) stats: Arc<StatsCells>,
    /// Everything about the mutex that changes, behind one lock.
    state: StdMutex<MutexState>,
    /// The id the next hold gets.
    next_hold: AtomicU64,
    /// Taken by each manual refresh: they run one at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// Keeps the mutex's holds alive: shared by every mutex of a
    /// [`Locker`](crate::Locker).
    watchdog: Arc<Watchdog>,
}

/// The mutable state of a mutex. Never locked across an `.await`.
struct MutexState {
    /// Where the mutex is in its cycle.
    phase: Phase,
    /// How the most recent hold ended, so that an `unlock()` after a loss can report it.
    last: Option<Ended>,
    /// Leases whose background release a runtime dropped unrun as it shut down: released
    /// when the mutex goes.
    orphans: Vec<Arc<dyn Lease>>,
}

impl MutexState {
    /// Takes the current hold (hold `id`, if given) out of the watchdog's hands and
    /// leaves the mutex idle.
    fn take_hold(&mut self, which: Which) -> Option<Hold> {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(mut hold) if which.is(hold.id) => {
                hold.unwatch();
                Some(hold)
            }
            other => {
                self.phase = other;
                None
            }
        }
    }
}

impl Core {
    pub(crate) fn new(config: Config, stats: Arc<StatsCells>, watchdog: Arc<Watchdog>) -> Self {
        Self {
            config,
            stats,
            state: StdMutex::new(MutexState {
                phase: Phase::Idle,
                last: None,
                orphans: Vec::new(),
            }),
            next_hold: AtomicU64::new(1),
            refreshing: tokio::sync::Mutex::new(()),
            watchdog,
        }
    }

    fn state(&self) -> MutexGuard<'_, MutexState> {
        // Nothing panics while holding this lock; recover rather than propagate if a
        // panic ever does.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn now(&self) -> Instant {
        self.config.clock.now()
    }

    /// Idle → Acquiring, or `AlreadyHeld`.
    pub(crate) fn begin_acquire(&self) -> Result<(), LockError> {
        let mut state = self.state();
        match state.phase {
            Phase::Idle => {
                state.phase = Phase::Acquiring;
                Ok(())
            }
            Phase::Acquiring | Phase::Held(_) => Err(LockError::AlreadyHeld),
        }
    }

    /// Acquiring → Idle, when an acquire fails or is cancelled.
    pub(crate) fn abort_acquire(&self) {
        let mut state = self.state();
        if matches!(state.phase, Phase::Acquiring) {
            state.phase = Phase::Idle;
        }
    }

    /// Acquiring → Held, and hands the hold to the watchdog's lane on `runtime`, with
    /// its first renewal due a renew period after `sent`.
    pub(crate) fn install(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        lease: Arc<dyn Lease>,
        sent: Instant,
        acquired_at: Instant,
        deadline: Instant,
    ) -> Installed {
        let id = HoldId::nth(self.next_hold.fetch_add(1, Ordering::Relaxed));
        let fence = lease.fence();
        let signals = Arc::new(Signals::new());
        let listens = lease.signals_loss().then(|| Arc::clone(&lease));
        let lane = self.watchdog.lane(runtime);
        let period = self.config.renew_period;
        // Placed on the lane's grid, up to half a period early in a crowd. With the
        // watchdog off, nothing renews: the next instant is the deadline.
        let next_renew = if self.config.watchdog {
            let (due, earliest) = watchdog::window(sent, period);
            lane.place_renewal(due, earliest, period)
        } else {
            deadline
        };
        let mut hold = Hold {
            id,
            lease,
            fence,
            acquired_at,
            deadline,
            next_renew,
            signals: Arc::clone(&signals),
            lane,
            slot: None,
            placed: self.config.watchdog.then_some(next_renew),
            listener: None,
        };
        let at = hold.timing(&self.config).wake_at(&self.config, false);
        let mut state = self.state();
        // Started under the mutex's lock: a loss signalled at once finds the hold.
        hold.listener = listens.map(|lease| {
            runtime
                .spawn(listen(Arc::clone(self), id, lease))
                .abort_handle()
        });
        hold.schedule_at(self, at);
        state.phase = Phase::Held(hold);
        Installed {
            id,
            acquired_at,
            fence,
            signals,
        }
    }

    /// Publishes a deadline renewed at `now`, and takes the hold out of jeopardy if the
    /// deadline is far enough off now; false if the hold is no longer current, or its
    /// old deadline passed before `now` (a renewal that came too late does not count).
    pub(crate) fn extend(&self, id: HoldId, deadline: Instant, now: Instant) -> bool {
        let (cleared, fence) = match &mut self.state().phase {
            Phase::Held(hold) if hold.id == id && now < hold.deadline => {
                hold.deadline = deadline;
                (
                    self.clears_jeopardy(&hold.signals, deadline, now),
                    hold.fence,
                )
            }
            _ => return false,
        };
        if cleared {
            self.left_jeopardy(fence, deadline, now);
        }
        true
    }

    /// Ends the current hold (or hold `id`) voluntarily, or explains why there is none.
    fn end_voluntarily(&self, which: Which) -> Result<(Hold, Instant), UnlockError> {
        let mut state = self.state();
        if let Some(hold) = state.take_hold(which) {
            state.last = Some(Ended {
                id: hold.id,
                loss: None,
                unreported_loss: None,
            });
            drop(state);
            let now = self.now();
            self.stats
                .released(now.saturating_duration_since(hold.acquired_at));
            return Ok((hold, now));
        }
        match state.last.as_mut() {
            Some(ended) if which.is(ended.id) => match ended.unreported_loss.take() {
                Some(reason) => Err(UnlockError::Lost(reason)),
                None => Err(UnlockError::AlreadyReleased),
            },
            _ => Err(UnlockError::AlreadyReleased),
        }
    }

    /// Ends the current hold (or hold `id`) and has its lease released in the background:
    /// the path for dropped guards and mutexes. The release runs on the current runtime,
    /// or, outside any, on the one the hold's watchdog lane runs on.
    pub(crate) fn release_in_background(self: &Arc<Self>, which: Which) {
        let Ok((hold, _)) = self.end_voluntarily(which) else {
            return;
        };
        tracing::debug!(target: "robit", lock = %self.config.name, fence = hold.fence.get(), "dropped while held; releasing in the background");
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn(release(Arc::clone(self), hold.lease)),
            Err(_) => hold
                .lane
                .runtime()
                .spawn(release_or_orphan(Arc::clone(self), hold.lease)),
        };
    }

    /// The last of the mutex and its guards is gone: releases what a runtime that shut
    /// down left unreleased, on the current runtime.
    pub(crate) fn close(self: &Arc<Self>) {
        let orphans = std::mem::take(&mut self.state().orphans);
        for lease in orphans {
            in_background(release(Arc::clone(self), lease));
        }
    }

    /// Whether hold `id` (or any hold) is current and inside its validity deadline.
    pub(crate) fn is_held(&self, which: Which) -> bool {
        let now = self.now();
        let phase = &self.state().phase;
        #[cfg(robit_mutants)]
        if self.config.planted(mutant::Mutant::NoLossSignal) {
            return matches!(phase, Phase::Held(hold) if which.is(hold.id));
        }
        matches!(phase, Phase::Held(hold) if which.is(hold.id) && now < hold.deadline)
    }

    /// The validity deadline of hold `id`, while it is the current hold (past or not).
    pub(crate) fn deadline(&self, id: HoldId) -> Option<Instant> {
        match &self.state().phase {
            Phase::Held(hold) if hold.id == id => Some(hold.deadline),
            Phase::Idle | Phase::Acquiring | Phase::Held(_) => None,
        }
    }

    /// The current hold's fencing token and lost signal.
    pub(crate) fn current(&self) -> Option<(FenceToken, CancellationToken)> {
        match &self.state().phase {
            Phase::Held(hold) => Some((hold.fence, hold.signals.lost.child_token())),
            Phase::Idle | Phase::Acquiring => None,
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let current = match &self.state().phase {
            Phase::Held(hold) => Some(hold.acquired_at),
            Phase::Idle | Phase::Acquiring => None,
        };
        let held = current.map_or(Duration::ZERO, |since| {
            self.now().saturating_duration_since(since)
        });
        self.stats.snapshot(held)
    }
}

/// Listens for a lease's own loss signal for as long as hold `id` lasts (the hold's end
/// stops the task), and signals the loss at once.
async fn listen(core: Arc<Core>, id: HoldId, lease: Arc<dyn Lease>) {
    lease.lost().await;
    core.lose_and_free(id, crate::loss::LossReason::DriverSignalled);
}
