//! A client host's software: the scenario's workload (think, lock, hold while writing
//! to the storage, unlock), or commands from a model-checking test, one at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use robit::sources::{Clock, SeededEntropy};
use robit::{Driver, Guard, Mutex};
use tokio::sync::mpsc::UnboundedReceiver;

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
    /// The number of each mutex's latest lease, across restarts.
    pub(crate) leases: Arc<[AtomicU64]>,
    pub(crate) incarnation: Arc<AtomicU64>,
    pub(crate) software: Software,
    /// The host's mutexes in the middle of a hold, between the lock and the next write
    /// (where a fault aimed at the holder is meant to land): when each hold ends.
    pub(crate) poised: PoisedHolds,
}

/// When the holds in progress end (true time), one entry per poised mutex.
pub(crate) type PoisedHolds = Arc<StdMutex<Vec<Duration>>>;

/// Registers a mutex as poised (see [`ClientHost::poised`]) until dropped — also when
/// the host crashes and its tasks are dropped.
struct Poised<'a> {
    holds: &'a StdMutex<Vec<Duration>>,
    ends: Duration,
}

impl<'a> Poised<'a> {
    fn new(holds: &'a StdMutex<Vec<Duration>>, ends: Duration) -> Self {
        holds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(ends);
        Self { holds, ends }
    }
}

impl Drop for Poised<'_> {
    fn drop(&mut self) {
        let mut holds = self.holds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = holds.iter().position(|ends| *ends == self.ends) {
            holds.swap_remove(at);
        }
    }
}

/// What a client host runs.
#[derive(Clone)]
pub(crate) enum Software {
    /// The scenario's workload, forever.
    Workload,
    /// Commands, in order, from the test driving the world: one receiver for each of
    /// the host's mutexes. The receivers outlive the host's restarts.
    Commands(Vec<Receiver>),
}

/// Where one mutex of a host under test receives its commands.
pub(crate) type Receiver = Arc<tokio::sync::Mutex<UnboundedReceiver<Command>>>;

/// A command for a client host under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    /// `lock()`, waiting up to three TTLs; or `try_lock()`.
    Lock { try_only: bool },
    /// `unlock()` the guard held, if it is still held.
    Unlock,
    /// Send a fenced write with the latest guard's token, held or not.
    Write,
}

impl ClientHost {
    /// Runs the host's software over `driver`: the workload on each of its mutexes (all
    /// sharing the driver), or the test's commands on one.
    pub(crate) async fn run(self, driver: Arc<dyn Driver>) -> Result<(), robit::BoxError> {
        let incarnation = self.incarnation.fetch_add(1, Ordering::Relaxed);
        let seed = self.seed ^ incarnation.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        match &self.software {
            Software::Commands(receivers) if receivers.len() == 1 => {
                let mutex = self.mutex(0, driver, seed)?;
                self.obey(0, &mutex, &receivers[0]).await
            }
            Software::Commands(receivers) => {
                // Each mutex obeys its own commands in its own task, over the one driver.
                let mut tasks = tokio::task::JoinSet::new();
                for (n, commands) in receivers.iter().enumerate() {
                    let seed = seed ^ (n as u64).wrapping_mul(0xe703_7ed1_a0b4_28db);
                    let mutex = self.mutex(n, Arc::clone(&driver), seed)?;
                    let (host, commands) = (self.clone(), Arc::clone(commands));
                    tasks.spawn(async move { host.obey(n, &mutex, &commands).await });
                }
                while let Some(done) = tasks.join_next().await {
                    done??;
                }
                Ok(())
            }
            Software::Workload if self.client.mutexes == 1 => {
                let mutex = self.mutex(0, driver, seed)?;
                let mut rng = StdRng::seed_from_u64(seed);
                self.workload(0, &mutex, &mut rng, incarnation).await
            }
            Software::Workload => {
                // Each mutex in its own task, as an application's tasks would be; a
                // crash of the host ends them all.
                let mut tasks = tokio::task::JoinSet::new();
                for n in 0..self.client.mutexes as usize {
                    let seed = seed ^ (n as u64).wrapping_mul(0xe703_7ed1_a0b4_28db);
                    let mutex = self.mutex(n, Arc::clone(&driver), seed)?;
                    let host = self.clone();
                    tasks.spawn(async move {
                        let mut rng = StdRng::seed_from_u64(seed);
                        host.workload(n, &mutex, &mut rng, incarnation).await
                    });
                }
                while let Some(done) = tasks.join_next().await {
                    done??;
                }
                Ok(())
            }
        }
    }

    /// The host's mutex `n`, recording its losses.
    fn mutex(
        &self,
        n: usize,
        driver: Arc<dyn Driver>,
        seed: u64,
    ) -> Result<Mutex, robit::BoxError> {
        let (history, name) = (self.history.clone(), self.client.mutex_name(n));
        let leases = Arc::clone(&self.leases);
        let (warned, warned_name) = (self.history.clone(), name.clone());
        let warned_leases = Arc::clone(&self.leases);
        Ok(self
            .lock
            .builder(driver)
            .clock(Arc::new(self.clock.clone()))
            .entropy(Arc::new(SeededEntropy::new(seed.rotate_left(17))))
            .on_jeopardy(move |event| {
                warned.record(
                    &warned_name,
                    EventKind::Jeopardy {
                        lease: warned_leases[n].load(Ordering::Relaxed),
                        cleared: event.change == robit::Jeopardy::Cleared,
                    },
                );
            })
            .on_lost(move |event| {
                history.record(
                    &name,
                    EventKind::Lost {
                        lease: leases[n].load(Ordering::Relaxed),
                        reason: event.reason.to_string(),
                    },
                );
            })
            .build()?)
    }

    async fn workload(
        &self,
        n: usize,
        mutex: &Mutex,
        rng: &mut StdRng,
        incarnation: u64,
    ) -> Result<(), robit::BoxError> {
        let name = self.client.mutex_name(n);
        let name = name.as_str();
        if incarnation == 0 {
            self.sleep(self.client.start).await;
        }
        loop {
            let (low, high) = self.client.think;
            self.sleep(between(rng, low, high)).await;
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
            let lease = self.leases[n].fetch_add(1, Ordering::Relaxed) + 1;
            let token = guard.fence().get();
            self.history
                .record(name, EventKind::Acquired { lease, token });
            let (low, high) = self.client.hold;
            let hold = between(rng, low, high);
            let hold_ends = crate::clock::true_now() + hold;
            let steps = self.client.writes.max(1);
            for _ in 0..steps {
                if !guard.is_held() {
                    break;
                }
                // The write below was decided on while the lease was held: a pause or a
                // loss during this sleep makes it stale, which fencing must catch.
                let poised = Poised::new(&self.poised, hold_ends);
                let heed = self.client.heed_jeopardy;
                tokio::select! {
                    biased;
                    () = guard.jeopardy(), if heed => break,
                    () = self.sleep(hold / steps) => {}
                }
                drop(poised);
                if self.client.writes > 0 {
                    self.history
                        .record(name, EventKind::WriteSent { lease, token });
                    storage::write(token, Duration::from_secs(1), &self.clock).await;
                }
            }
            self.unlock(name, guard, lease).await;
        }
    }

    /// Carries out the commands for the host's mutex `n`, in order.
    async fn obey(
        &self,
        n: usize,
        mutex: &Mutex,
        commands: &tokio::sync::Mutex<UnboundedReceiver<Command>>,
    ) -> Result<(), robit::BoxError> {
        let name = self.client.mutex_name(n);
        let name = name.as_str();
        let mut commands = commands.lock().await;
        let mut held: Option<(Guard, u64, u64)> = None;
        while let Some(command) = commands.recv().await {
            match command {
                Command::Lock { try_only } => {
                    self.history.record(name, EventKind::LockCalled);
                    let wait = if try_only {
                        robit::Wait::Try
                    } else {
                        robit::Wait::Timeout(self.lock.ttl * 3)
                    };
                    match mutex.lock_with(wait).await {
                        Ok(guard) => {
                            let lease = self.leases[n].fetch_add(1, Ordering::Relaxed) + 1;
                            let token = guard.fence().get();
                            self.history
                                .record(name, EventKind::Acquired { lease, token });
                            held = Some((guard, lease, token));
                        }
                        Err(error) => self.history.record(
                            name,
                            EventKind::LockFailed {
                                error: error.to_string(),
                            },
                        ),
                    }
                }
                Command::Unlock => {
                    if let Some((guard, lease, _)) = held.take() {
                        self.unlock(name, guard, lease).await;
                    }
                }
                Command::Write => {
                    if let Some((_, lease, token)) = &held {
                        let (lease, token) = (*lease, *token);
                        self.history
                            .record(name, EventKind::WriteSent { lease, token });
                        storage::write(token, Duration::from_secs(1), &self.clock).await;
                    }
                }
            }
        }
        Ok(())
    }

    /// Unlocks `guard` if it is still held; otherwise drops it, recording that the
    /// client stopped believing in it (its loss may not have been signalled yet, if the
    /// watchdog has not run since the deadline passed).
    async fn unlock(&self, name: &str, guard: Guard, lease: u64) {
        if !guard.is_held() {
            self.history.record(name, EventKind::Dropped { lease });
            return;
        }
        {
            self.history.record(name, EventKind::UnlockCalled { lease });
            let outcome = match guard.unlock().await {
                Ok(()) => "ok".to_owned(),
                Err(error) => error.to_string(),
            };
            self.history
                .record(name, EventKind::Unlocked { lease, outcome });
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
