//! The watchdog: it keeps leases alive, and signals their loss.
//!
//! One watchdog serves every mutex of a [`Locker`](crate::Locker); a mutex built on its
//! own has one of its own. It runs one task per runtime that its holds were acquired on
//! (a [`Lane`]), and that task keeps a schedule: for each hold, the next instant
//! something is due — its renewal, jeopardy, its cap, its validity deadline — in one
//! ordered map. A hold costs an entry in that map, not a task and a timer of its own,
//! and holds that fall due together are renewed together: their renewals reach the
//! driver at once, and go out as one batch where the driver batches. Renewals are placed
//! on a grid ([`grid`]), and a crowd of them spread over the quarter period before they
//! are due, so that holds taken together do not renew in one burst.
//!
//! For each hold it renews the lease every renew period (measured from the *send* time
//! of the last successful acquire or renew; a mutex built with `watchdog(false)` leaves
//! renewing to `refresh`), retries failed renews, signals jeopardy and the hold's cap,
//! and owns the validity deadline: the instant the deadline passes without a successful
//! renew, it signals loss — which is before the backend can grant the lock to anyone
//! else, because the deadline is `send time + TTL × (1 − drift) − margin` and the backend
//! keeps the grant until at least `send time + TTL`.
//!
//! A lease with a loss signal of its own ([`Lease::signals_loss`](crate::driver::Lease))
//! gets a listener task for the length of its hold; one without (Redis's, etcd's) costs
//! nothing beyond its entry. The tasks end with the watchdog: when the last mutex,
//! locker and guard that share it are gone.

mod grid;
mod lane;
mod renewal;
mod wake;

use std::sync::{Arc, Mutex as StdMutex, PoisonError};

use tokio::time::Instant;

pub(crate) use self::grid::window;
pub(crate) use self::lane::{Lane, Slot};
pub(crate) use self::renewal::NextRenew;
pub(crate) use self::wake::Wake;
use crate::sources::Clock;

/// The watchdog of one locker, or of one mutex built on its own.
pub(crate) struct Watchdog {
    /// The clock its schedule runs on: the mutexes' own.
    clock: Arc<dyn Clock>,
    /// When it was made: its renewal grid counts from here.
    epoch: Instant,
    /// One lane per runtime that holds were acquired on, while its runtime runs.
    lanes: StdMutex<Vec<Arc<Lane>>>,
}

impl Watchdog {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            epoch: clock.now(),
            clock,
            lanes: StdMutex::new(Vec::new()),
        }
    }

    /// The lane that watches holds acquired on `runtime`, started now if there is none
    /// (lanes of runtimes that have shut down are dropped).
    pub(crate) fn lane(&self, runtime: &tokio::runtime::Handle) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        // A running runtime's lane is alive: only a new lane needs the dead ones pruned.
        if let Some(lane) = lanes.iter().find(|lane| lane.serves(runtime)) {
            return Arc::clone(lane);
        }
        lanes.retain(|lane| lane.is_alive());
        let lane = Lane::start(runtime, Arc::clone(&self.clock), self.epoch);
        lanes.push(Arc::clone(&lane));
        lane
    }
}

impl Drop for Watchdog {
    /// Nothing is left to watch: the last mutex sharing the watchdog is gone.
    fn drop(&mut self) {
        let lanes = self.lanes.get_mut().unwrap_or_else(PoisonError::into_inner);
        for lane in lanes.drain(..) {
            lane.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, PoisonError};

    use super::Watchdog;
    use crate::sources::TokioClock;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_lane_whose_runtime_shut_down_is_dropped_when_another_starts() {
        let watchdog = Watchdog::new(Arc::new(TokioClock));
        let first = runtime();
        let lane = watchdog.lane(first.handle());
        drop(first);
        assert!(!lane.is_alive());
        let second = runtime();
        let _ = watchdog.lane(second.handle());
        let lanes = watchdog
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(lanes.len(), 1, "the dead lane was kept");
    }
}
