//! A record of every loss a mutex signals.

use std::sync::{Arc, Mutex as StdMutex};

use robit::{LossEvent, LossReason, MutexBuilder};
use tokio::time::Instant;

/// Records every loss event with the instant it was signalled.
#[derive(Debug, Clone, Default)]
pub struct LossLog(Arc<StdMutex<Vec<(Instant, LossEvent)>>>);

impl LossLog {
    /// `builder`, with a callback that records into this log.
    pub fn attach(&self, builder: MutexBuilder) -> MutexBuilder {
        let log = self.clone();
        builder.on_lost(move |event| log.0.lock().unwrap().push((Instant::now(), event.clone())))
    }

    /// How many losses were signalled.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// The reason of each loss, in order.
    pub fn reasons(&self) -> Vec<LossReason> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.reason)
            .collect()
    }

    /// When the first loss was signalled.
    pub fn first_at(&self) -> Option<Instant> {
        self.0.lock().unwrap().first().map(|(at, _)| *at)
    }
}
