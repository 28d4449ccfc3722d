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

mod bookkeeping;
mod hold_watch;
mod wake;

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

pub(crate) use self::bookkeeping::{Bookkeeping, Started};
use self::hold_watch::watch;
use self::wake::Wake;
use super::Core;
use super::hold::HoldId;
use super::release::release;
use super::signals::Signals;
use super::timing::Timing;
use crate::driver::Lease;

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
    pub(super) id: HoldId,
    pub(super) lease: Arc<dyn Lease>,
    pub(super) signals: Arc<Signals>,
    pub(super) timing: Timing,
}

impl Duty {
    /// Whether the watchdog keeps watching hold `id`: it is current, and the mutex is
    /// not gone.
    fn keeps(&self, id: HoldId) -> bool {
        !self.exit && self.hold.as_ref().is_some_and(|hold| hold.id == id)
    }
}

/// Looks at the mutex, and starts the releases it was handed.
fn look(core: &Arc<Core>) -> Duty {
    let mut duty = core.duty();
    for lease in std::mem::take(&mut duty.to_release) {
        tokio::spawn(release(Arc::clone(core), lease));
    }
    duty
}

async fn run(core: Arc<Core>, wake: Arc<Wake>) {
    // The hold watched last: once its watch ends, it is never watched again, even if it
    // is still installed (a loss the mutex declined to signal).
    let mut watched = None;
    loop {
        let duty = look(&core);
        if duty.exit {
            return;
        }
        match duty.hold.filter(|hold| Some(hold.id) != watched) {
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
            None => match duty.idle_until {
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
