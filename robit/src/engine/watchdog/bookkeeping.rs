//! The watchdog's bookkeeping, kept in the mutex's state under its lock: the task, and
//! what decides whether a hold's start or end needs to wake it.

use std::sync::Arc;

use tokio::time::Instant;

use super::Running;
use crate::engine::Core;
use crate::engine::hold::HoldId;

/// A mutex's watchdog, as the mutex keeps it. Never locked across an `.await`.
#[derive(Default)]
pub(crate) struct Bookkeeping {
    /// The watchdog task, once a hold has started it.
    running: Option<Running>,
    /// The last hold the watchdog has seen. A hold that ends before its watchdog saw it
    /// needs no wake at its end: the watchdog has yet to look.
    seen: Option<HoldId>,
    /// When the watchdog, idle, looks at the mutex again by itself (`None`: only when
    /// woken). A hold whose first renew is due no sooner needs no wake at its start.
    idle_until: Option<Instant>,
    /// The mutex's count of holds when the watchdog last went idle: unchanged at its
    /// next look, the mutex went unused for a whole renew period, and the watchdog stops
    /// looking by itself until it is woken again.
    holds_at_idle: u64,
}

/// A hold that has just started, as the watchdog's wake-up needs it.
pub(crate) struct Started {
    /// When its first renewal is due (`None`: too far off to represent).
    pub(crate) first_renew: Option<Instant>,
    /// When it reaches its cap, if it has one.
    pub(crate) cap: Option<Instant>,
    /// Whether its lease has a loss signal of its own, which the watchdog listens to.
    pub(crate) lease_signals_loss: bool,
}

impl Bookkeeping {
    /// The watchdog task, if one has been started.
    pub(crate) fn running(&self) -> Option<&Running> {
        self.running.as_ref()
    }

    /// Has the watchdog look at the mutex again, if it runs.
    pub(crate) fn wake(&self) {
        if let Some(running) = &self.running {
            running.wake();
        }
    }

    /// A hold has started on `runtime`: wakes the mutex's watchdog there, or starts one
    /// (stopping a watchdog left on another runtime). The watchdog need not look at
    /// once if it will look by itself before the first renew is due (and before the
    /// hold's cap, if that comes sooner), and the lease has no loss signal of its own to
    /// listen to: a short hold then ends without the watchdog ever running.
    pub(crate) fn hold_started(
        &mut self,
        core: &Arc<Core>,
        runtime: &tokio::runtime::Handle,
        hold: &Started,
    ) {
        let looks_in_time = !hold.lease_signals_loss
            && self.idle_until.is_some_and(|until| {
                hold.first_renew >= Some(until) && hold.cap.is_none_or(|cap| cap >= until)
            });
        match &self.running {
            Some(running) if running.serves(runtime) => {
                if !looks_in_time {
                    running.wake();
                }
            }
            _ => {
                if let Some(stale) = self.running.take() {
                    stale.stop();
                }
                self.running = Some(super::start(core, runtime));
            }
        }
    }

    /// Hold `id` has ended: wakes the watchdog if it has seen the hold.
    pub(crate) fn hold_ended(&self, id: HoldId) {
        if let Some(running) = &self.running
            && self.seen == Some(id)
        {
            running.wake();
        }
    }

    /// The watchdog looks at the mutex at `now`, finding hold `current` (or none) after
    /// `holds` holds in all: returns when it is to look again by itself, with no hold.
    ///
    /// Idle, it looks again a renew period from now, unless this look is that of a
    /// period in which no hold started. A mutex used again and again then never has to
    /// wake its watchdog for a short hold, and one left unused costs its watchdog one
    /// look, not one per period.
    pub(crate) fn looked(
        &mut self,
        current: Option<HoldId>,
        now: Instant,
        holds: u64,
        renew_period: std::time::Duration,
    ) -> Option<Instant> {
        self.idle_until = match current {
            Some(id) => {
                self.seen = Some(id);
                None
            }
            None => {
                let unused = self.holds_at_idle == holds
                    && self.idle_until.is_some_and(|until| now >= until);
                self.holds_at_idle = holds;
                if unused {
                    None
                } else {
                    now.checked_add(renew_period)
                }
            }
        };
        self.idle_until
    }
}
