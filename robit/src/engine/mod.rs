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
//! deadline), [`release`](mod@release) (ending a hold), with [`hold`], [`timed`],
//! [`config`], [`backoff`], [`stats`] and [`wake`].

mod acquire;
mod backoff;
mod config;
mod hold;
mod jeopardy;
mod loss;
#[cfg(robit_mutants)]
mod mutant;
mod refresh;
mod release;
mod signals;
mod stats;
mod timed;
mod wake;
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
pub(crate) use self::hold::Installed;
use self::hold::{Ended, Hold, Phase};
#[cfg(robit_mutants)]
pub use self::mutant::Mutant;
pub(crate) use self::refresh::refresh;
pub(crate) use self::release::unlock;
use self::release::{in_background, release};
pub(crate) use self::signals::Signals;
pub use self::stats::Stats;
pub(crate) use self::stats::StatsCells;
use self::watchdog::{Duty, Watched};
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
}

/// The mutable state of a mutex. Never locked across an `.await`.
struct MutexState {
    /// Where the mutex is in its cycle.
    phase: Phase,
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

impl MutexState {
    /// Takes the current hold (hold `id`, if given) and leaves the mutex idle.
    fn take_hold(&mut self, id: Option<u64>) -> Option<Hold> {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(hold) if id.is_none_or(|id| id == hold.id) => Some(hold),
            other => {
                self.phase = other;
                None
            }
        }
    }
}

impl Core {
    pub(crate) fn new(config: Config, stats: Arc<StatsCells>) -> Self {
        Self {
            config,
            stats,
            state: StdMutex::new(MutexState {
                phase: Phase::Idle,
                last: None,
                watchdog: None,
                seen: 0,
                idle_until: None,
                holds_at_idle: 0,
                to_release: Vec::new(),
                closed: false,
            }),
            next_hold: AtomicU64::new(1),
            refreshing: tokio::sync::Mutex::new(()),
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
        let signals = Arc::new(Signals::new());
        let mut state = self.state();
        state.phase = Phase::Held(Hold {
            id,
            lease,
            fence,
            sent,
            acquired_at,
            deadline,
            signals: Arc::clone(&signals),
        });
        // The watchdog need not look at once if it will look by itself before the first
        // renew is due (and before the hold's cap, if that comes sooner), and the lease
        // has no loss signal of its own to listen to: a short hold then ends without the
        // watchdog ever running (see `Duty`).
        let cap = self
            .config
            .max_hold
            .and_then(|max| acquired_at.checked_add(max));
        let looks_in_time = !lease_signals_loss
            && state.idle_until.is_some_and(|until| {
                sent.checked_add(self.config.renew_period) >= Some(until)
                    && cap.is_none_or(|cap| cap >= until)
            });
        match &state.watchdog {
            Some(running) if running.serves(runtime) => {
                if !looks_in_time {
                    running.wake();
                }
            }
            _ => {
                if let Some(stale) = state.watchdog.take() {
                    stale.stop();
                }
                state.watchdog = Some(watchdog::start(self, runtime));
            }
        }
        Installed {
            id,
            acquired_at,
            fence,
            signals,
        }
    }

    /// What the watchdog is to do now: it hands over the leases waiting to be released,
    /// says whether the watchdog should exit, and shows the current hold.
    pub(crate) fn duty(&self) -> Duty {
        // Read before taking the lock: the clock may be the user's, and nothing it does
        // (a look at this mutex, say) must run under the mutex's own lock.
        let now = self.now();
        let mut state = self.state();
        let hold = match &state.phase {
            Phase::Held(hold) => Some(Watched {
                id: hold.id,
                lease: Arc::clone(&hold.lease),
                sent: hold.sent,
                deadline: hold.deadline,
                signals: Arc::clone(&hold.signals),
                // A cap too far off to represent is no cap.
                cap: self
                    .config
                    .max_hold
                    .and_then(|max| hold.acquired_at.checked_add(max)),
            }),
            Phase::Idle | Phase::Acquiring => None,
        };
        state.idle_until = match &hold {
            Some(hold) => {
                state.seen = hold.id;
                None
            }
            None => {
                // Idle: look again a renew period from now, unless this look is that
                // of a period in which no hold started. A mutex used again and again
                // then never has to wake its watchdog for a short hold, and one left
                // unused costs its watchdog one look, not one per period.
                let holds = self.next_hold.load(Ordering::Relaxed);
                let unused = state.holds_at_idle == holds
                    && state.idle_until.is_some_and(|until| now >= until);
                state.holds_at_idle = holds;
                if unused {
                    None
                } else {
                    now.checked_add(self.config.renew_period)
                }
            }
        };
        Duty {
            to_release: std::mem::take(&mut state.to_release),
            exit: state.closed,
            hold,
            idle_until: state.idle_until,
        }
    }

    /// The last of the mutex and its guards is gone: its watchdog exits, once it has
    /// released what it was given to release. Leases left with a watchdog that has
    /// since died (its runtime shut down) are released on the current runtime instead.
    pub(crate) fn close(self: &Arc<Self>) {
        let mut state = self.state();
        state.closed = true;
        match &state.watchdog {
            Some(running) if running.is_alive() => running.wake(),
            _ => {
                let orphans = std::mem::take(&mut state.to_release);
                drop(state);
                for lease in orphans {
                    in_background(release(Arc::clone(self), lease));
                }
            }
        }
    }

    /// Publishes a deadline renewed at `now`, and takes the hold out of jeopardy if the
    /// deadline is far enough off now; false if the hold is no longer current, or its
    /// old deadline passed before `now` (a renewal that came too late does not count).
    pub(crate) fn extend(&self, id: u64, deadline: Instant, now: Instant) -> bool {
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

    /// Has the watchdog look at the mutex again: a refresh moved the deadline, perhaps
    /// earlier than the watchdog's timer.
    pub(crate) fn wake_watchdog(&self) {
        if let Some(running) = &self.state().watchdog {
            running.wake();
        }
    }

    /// Ends the current hold (or hold `id`) voluntarily, or explains why there is none.
    fn end_voluntarily(&self, id: Option<u64>) -> Result<(Hold, Instant), UnlockError> {
        let mut state = self.state();
        if let Some(hold) = state.take_hold(id) {
            state.last = Some(Ended {
                id: hold.id,
                loss: None,
                unreported_loss: None,
            });
            if let Some(running) = &state.watchdog
                && state.seen == hold.id
            {
                running.wake();
            }
            drop(state);
            let now = self.now();
            self.stats
                .released(now.saturating_duration_since(hold.acquired_at));
            return Ok((hold, now));
        }
        match state.last.as_mut() {
            Some(ended) if id.is_none_or(|id| id == ended.id) => match ended.unreported_loss.take()
            {
                Some(reason) => Err(UnlockError::Lost(reason)),
                None => Err(UnlockError::AlreadyReleased),
            },
            _ => Err(UnlockError::AlreadyReleased),
        }
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
        let mut state = self.state();
        match (&state.watchdog, &runtime) {
            (Some(running), Some(runtime)) if running.serves(runtime) => running.wake(),
            (Some(running), None) if running.is_alive() => running.wake(),
            _ => {
                drop(state);
                in_background(release(Arc::clone(self), hold.lease));
                return;
            }
        }
        state.to_release.push(hold.lease);
    }

    /// Whether hold `id` (or any hold) is current and inside its validity deadline.
    pub(crate) fn is_held(&self, id: Option<u64>) -> bool {
        let now = self.now();
        let phase = &self.state().phase;
        #[cfg(robit_mutants)]
        if self.config.planted(mutant::Mutant::NoLossSignal) {
            return matches!(phase, Phase::Held(hold) if id.is_none_or(|id| id == hold.id));
        }
        matches!(phase, Phase::Held(hold) if id.is_none_or(|id| id == hold.id) && now < hold.deadline)
    }

    /// The validity deadline of hold `id`, while it is the current hold (past or not).
    pub(crate) fn deadline(&self, id: u64) -> Option<Instant> {
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
