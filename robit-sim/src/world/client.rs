//! A client host's software: think, lock, hold while writing to the storage, unlock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use robit::{Clock, Driver, SeededEntropy};

use super::storage;
use crate::scenario::{Client, LockSettings};
use crate::{EventKind, History, SimClock};

/// Everything a client host's software needs; it survives a restart of the host.
#[derive(Clone)]
pub(crate) struct ClientHost {
    pub(crate) client: Client,
    pub(crate) lock: LockSettings,
    pub(crate) clock: SimClock,
    pub(crate) history: History,
    pub(crate) seed: u64,
    /// The number of the latest lease, across restarts.
    pub(crate) lease: Arc<AtomicU64>,
    pub(crate) incarnation: Arc<AtomicU64>,
    pub(crate) writes_to_storage: bool,
}

impl ClientHost {
    pub(crate) async fn run(self, driver: impl Driver) -> Result<(), robit::BoxError> {
        let incarnation = self.incarnation.fetch_add(1, Ordering::Relaxed);
        let seed = self.seed ^ incarnation.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = StdRng::seed_from_u64(seed);
        let name = self.client.name.clone();
        let (history, lease) = (self.history.clone(), Arc::clone(&self.lease));
        let mutex = self
            .lock
            .builder(driver)
            .clock(Arc::new(self.clock.clone()))
            .entropy(Arc::new(SeededEntropy::new(seed.rotate_left(17))))
            .on_lost(move |event| {
                history.record(
                    &name,
                    EventKind::Lost {
                        lease: lease.load(Ordering::Relaxed),
                        reason: event.reason.to_string(),
                    },
                );
            })
            .build()?;
        let name = self.client.name.as_str();
        if incarnation == 0 {
            self.sleep(self.client.start).await;
        }
        loop {
            let (low, high) = self.client.think;
            self.sleep(between(&mut rng, low, high)).await;
            self.history.record(name, EventKind::LockCalled);
            let guard = match mutex.lock().await {
                Ok(guard) => guard,
                Err(error) => {
                    self.history.record(
                        name,
                        EventKind::LockFailed {
                            error: error.to_string(),
                        },
                    );
                    continue;
                }
            };
            let lease = self.lease.fetch_add(1, Ordering::Relaxed) + 1;
            let token = guard.fence().get();
            self.history
                .record(name, EventKind::Acquired { lease, token });
            let (low, high) = self.client.hold;
            let hold = between(&mut rng, low, high);
            let steps = self.client.writes.max(1);
            for _ in 0..steps {
                if !guard.is_held() {
                    break;
                }
                // The write below was decided on while the lease was held: a pause or a
                // loss during this sleep makes it stale, which fencing must catch.
                self.sleep(hold / steps).await;
                if self.writes_to_storage && self.client.writes > 0 {
                    self.history
                        .record(name, EventKind::WriteSent { lease, token });
                    storage::write(token, Duration::from_secs(1)).await;
                }
            }
            if guard.is_held() {
                self.history.record(name, EventKind::UnlockCalled { lease });
                let outcome = match guard.unlock().await {
                    Ok(()) => "ok".to_owned(),
                    Err(error) => error.to_string(),
                };
                self.history
                    .record(name, EventKind::Unlocked { lease, outcome });
            }
        }
    }

    async fn sleep(&self, length: Duration) {
        let deadline = self.clock.now() + length;
        self.clock.sleep_until(deadline).await;
    }
}

fn between(rng: &mut StdRng, low: Duration, high: Duration) -> Duration {
    if high <= low {
        return low;
    }
    let nanos = rng.random_range(low.as_nanos() as u64..=high.as_nanos() as u64);
    Duration::from_nanos(nanos)
}
