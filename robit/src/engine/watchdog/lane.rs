//! One runtime's share of a watchdog: the schedule of its holds, and the task that
//! sleeps until the soonest entry and asks each due hold what to do.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::grid::Grid;
use super::wake::Wake;
use crate::engine::Core;
use crate::engine::hold::HoldId;
use crate::sources::Clock;

/// Where a hold stands in its lane's schedule: when it is due, and a number that tells
/// entries due at the same instant apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Slot {
    at: Instant,
    seq: u64,
}

/// A hold in the schedule. The mutex is held weakly: a mutex that is gone has nothing
/// left to watch.
struct Entry {
    core: Weak<Core>,
    id: HoldId,
    /// Where it stood: the hold's entry only while the hold still says so.
    slot: Slot,
}

/// The schedule, behind the lane's lock. Never locked across an `.await`, and never
/// while taking a mutex's own lock: a mutex locks its state first, then this.
#[derive(Default)]
struct Schedule {
    entries: BTreeMap<Slot, Entry>,
    next_seq: u64,
    /// The renewals placed in each step of the grid still to come.
    grid: Grid,
    /// What the task's timer is set for (`None`: no timer, it waits to be woken). An
    /// entry due sooner wakes the task; a later one waits for the task's next look.
    sleeping_until: Option<Instant>,
}

/// One runtime's lane of a watchdog.
pub(crate) struct Lane {
    runtime: Handle,
    /// Where the renewal grid starts.
    epoch: Instant,
    /// The lane's task, once spawned.
    task: OnceLock<AbortHandle>,
    wake: Wake,
    schedule: StdMutex<Schedule>,
}

/// Work the lane's task waits on.
type Work<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A renewal the lane runs: it reschedules its hold itself when it ends.
pub(super) type Running = Work<'static>;

impl Lane {
    /// Starts a lane on `runtime`, sleeping on `clock`.
    pub(super) fn start(runtime: &Handle, clock: Arc<dyn Clock>, epoch: Instant) -> Arc<Self> {
        let lane = Arc::new(Self {
            runtime: runtime.clone(),
            epoch,
            task: OnceLock::new(),
            wake: Wake::default(),
            schedule: StdMutex::new(Schedule::default()),
        });
        let task = runtime.spawn(run(Arc::clone(&lane), clock));
        let _ = lane.task.set(task.abort_handle());
        lane
    }

    fn schedule(&self) -> MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the lane's task runs (a runtime that shuts down drops its tasks).
    pub(super) fn is_alive(&self) -> bool {
        self.task.get().is_some_and(|task| !task.is_finished())
    }

    /// Whether this lane watches holds acquired on `runtime`.
    pub(super) fn serves(&self, runtime: &Handle) -> bool {
        self.runtime.id() == runtime.id()
    }

    /// The runtime the lane runs on: where work for its holds goes when the code that
    /// starts it runs outside any runtime (a guard dropped in a plain thread).
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }

    pub(super) fn stop(&self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }

    /// Puts hold `id` of `core` into the schedule at `at`, and wakes the task if it
    /// sleeps past it. Returns the entry's slot, for [`remove`](Self::remove).
    pub(crate) fn insert(&self, core: &Arc<Core>, id: HoldId, at: Instant) -> Slot {
        let mut schedule = self.schedule();
        let slot = Slot {
            at,
            seq: schedule.next_seq,
        };
        schedule.next_seq += 1;
        let entry = Entry {
            core: Arc::downgrade(core),
            id,
            slot,
        };
        schedule.entries.insert(slot, entry);
        if schedule.sleeping_until.is_none_or(|until| at < until) {
            schedule.sleeping_until = Some(at);
            drop(schedule);
            self.wake.wake();
        }
        slot
    }

    /// When a renewal that is due at `target` goes out, on the grid: `target`'s step if
    /// fewer renewals than a crowd are placed there, or else the latest step before it,
    /// down to `earliest`, that has room (or `earliest`'s, if none has).
    pub(crate) fn place_renewal(
        &self,
        target: Instant,
        earliest: Instant,
        period: Duration,
    ) -> Instant {
        let mut schedule = self.schedule();
        let holds = schedule.entries.len();
        schedule
            .grid
            .place(self.epoch, target, earliest, period, holds)
    }

    /// Takes an entry out of the schedule: its hold ended, or is due at another time.
    pub(crate) fn remove(&self, slot: Slot) {
        self.schedule().entries.remove(&slot);
    }

    /// Forgets a hold that ended: its entry, if it has one, and the renewal it had
    /// placed on the grid, if any.
    pub(crate) fn forget(&self, slot: Option<Slot>, placed: Option<Instant>) {
        let mut schedule = self.schedule();
        if let Some(slot) = slot {
            schedule.entries.remove(&slot);
        }
        if let Some(at) = placed {
            schedule.grid.unplace(at);
        }
    }

    /// Takes out the entries due at `now`. Until the task next sets its timer, any new
    /// entry wakes it.
    fn take_due(&self, now: Instant) -> Vec<Entry> {
        let mut schedule = self.schedule();
        schedule.sleeping_until = None;
        schedule.grid.passed(now);
        let later = schedule.entries.split_off(&Slot {
            at: now,
            seq: u64::MAX,
        });
        let due = std::mem::replace(&mut schedule.entries, later);
        due.into_values().collect()
    }

    /// When the soonest entry is due, which the task now sets its timer for.
    fn set_timer(&self) -> Option<Instant> {
        let mut schedule = self.schedule();
        let next = schedule.entries.keys().next().map(|slot| slot.at);
        schedule.sleeping_until = next;
        next
    }
}

/// The lane's task: sleeps until the soonest entry is due (or a sooner one is put in),
/// asks each due hold what is to be done, and runs the renewals it is given.
async fn run(lane: Arc<Lane>, clock: Arc<dyn Clock>) {
    let mut renewals = FuturesUnordered::<Running>::new();
    // The timer, and what it is set for.
    let mut timer: Option<(Instant, Work<'_>)> = None;
    loop {
        let now = clock.now();
        for entry in lane.take_due(now) {
            if let Some(core) = entry.core.upgrade()
                && let Some(renewal) = core.due(entry.id, entry.slot, now)
            {
                renewals.push(renewal);
            }
        }
        let next = lane.set_timer();
        if timer.as_ref().map(|(at, _)| *at) != next {
            timer = next.map(|at| (at, clock.sleep_until(at)));
        }
        tokio::select! {
            biased;
            () = lane.wake.woken() => {}
            Some(()) = renewals.next(), if !renewals.is_empty() => {}
            () = async { if let Some((_, sleep)) = timer.as_mut() { sleep.await } }, if timer.is_some() => {
                timer = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Lane;
    use crate::LocalDriver;
    use crate::driver::LockName;
    use crate::engine::hold::HoldId;
    use crate::engine::{Core, Settings, Watchdog};
    use crate::sources::TokioClock;

    #[test]
    fn an_entry_taken_out_is_never_due() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let clock = Arc::new(TokioClock);
        let lane = Lane::start(
            runtime.handle(),
            Arc::clone(&clock) as Arc<dyn crate::sources::Clock>,
            Instant::now(),
        );
        let config = Settings::new(LockName::from("lane"), Arc::new(LocalDriver::new()))
            .validate()
            .unwrap();
        let watchdog = Arc::new(Watchdog::new(clock));
        let core = Arc::new(Core::new(config, Arc::default(), watchdog));
        let at = Instant::now();
        let first = lane.insert(&core, HoldId::nth(1), at);
        lane.insert(&core, HoldId::nth(2), at + Duration::from_millis(1));
        lane.remove(first);
        let due = lane.take_due(at + Duration::from_secs(1));
        let ids: Vec<HoldId> = due.iter().map(|entry| entry.id).collect();
        assert_eq!(ids, [HoldId::nth(2)]);
    }
}
