//! Clients of a Redis under a fault: one holds the lock when the fault strikes, two
//! contend for it from then on, and every belief interval and loss is recorded.

#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::{Driver, LossReason, Mutex, Wait};
use tokio::time::Instant;

use crate::kit::Beliefs;

/// The TTL of the clients' locks.
pub const FAULT_TTL: Duration = Duration::from_secs(2);

type Losses = Arc<StdMutex<Vec<(&'static str, Instant, LossReason)>>>;

/// Clients each with a driver of its own, from `make`, on one lock, `"failover"`.
pub struct FaultClients<D: Driver> {
    make: Arc<dyn Fn() -> D + Send + Sync>,
    /// Who believed they held the lock, when.
    pub beliefs: Beliefs,
    losses: Losses,
    /// What the contenders' tries ended with when they were not granted, and how often.
    errors: Arc<StdMutex<BTreeMap<String, usize>>>,
    ttl: Duration,
}

impl<D: Driver> std::fmt::Debug for FaultClients<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultClients")
            .field("beliefs", &self.beliefs)
            .finish_non_exhaustive()
    }
}

impl<D: Driver> Clone for FaultClients<D> {
    fn clone(&self) -> Self {
        Self {
            make: Arc::clone(&self.make),
            beliefs: self.beliefs.clone(),
            losses: Arc::clone(&self.losses),
            errors: Arc::clone(&self.errors),
            ttl: self.ttl,
        }
    }
}

impl<D: Driver> FaultClients<D> {
    /// Clients whose drivers `make` builds.
    pub fn new(make: impl Fn() -> D + Send + Sync + 'static) -> Self {
        Self {
            make: Arc::new(make),
            beliefs: Beliefs::default(),
            losses: Arc::default(),
            errors: Arc::default(),
            ttl: FAULT_TTL,
        }
    }

    /// The same clients with locks of `ttl` rather than [`FAULT_TTL`]: a holder whose
    /// validity outlasts a slow fault (a failover that takes seconds).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    fn mutex(&self, who: &'static str) -> Mutex {
        self.mutex_on(who, (self.make)())
    }

    fn mutex_on(&self, who: &'static str, driver: D) -> Mutex {
        let (beliefs, losses) = (self.beliefs.clone(), Arc::clone(&self.losses));
        Mutex::builder("failover", driver)
            .ttl(self.ttl)
            .on_lost(move |event| {
                let at = beliefs.end(who);
                losses.lock().unwrap().push((who, at, event.reason));
            })
            .build()
            .unwrap()
    }

    /// Creates the namespace on the server, as earlier use would have.
    pub async fn warm_up(&self) {
        let mutex = Mutex::builder("warm-up", (self.make)()).build().unwrap();
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }

    /// `who` locks and holds the lock: the grant whose fate the fault decides.
    pub async fn holder(&self, who: &'static str) -> robit::Guard {
        self.holder_on(who, (self.make)()).await
    }

    /// `who` locks and holds the lock through a driver of its own, not `make`'s: one
    /// whose links the fault cuts, say.
    pub async fn holder_on(&self, who: &'static str, driver: D) -> robit::Guard {
        let guard = self.mutex_on(who, driver).lock().await.unwrap();
        self.beliefs.begin(who);
        guard
    }

    /// Two clients, `b` and `c`, contend for the lock for `time`, each holding it 100 ms
    /// at a time.
    pub async fn contend(&self, time: Duration) {
        self.contend_while(Instant::now() + time, |_| true).await;
    }

    /// `b` and `c` contend as in [`contend`](Self::contend) until one of them has been
    /// granted the lock since `since`, or for `limit` at most: a test that needs a grant
    /// after a fault waits for it, not for a guess at how long a busy machine takes.
    pub async fn contend_until_granted(&self, since: Instant, limit: Duration) {
        self.contend_while(Instant::now() + limit, move |beliefs| {
            beliefs.first_begun_after(since).is_none()
        })
        .await;
    }

    /// `b` and `c`, each through one mutex (and one driver) of its own for the whole
    /// time, try for the lock 500 ms at a time while `until` has not passed and `go_on`
    /// holds. Every error a try ends with is counted, for a failing test to show.
    async fn contend_while(
        &self,
        until: Instant,
        go_on: impl Fn(&Beliefs) -> bool + Clone + Send + 'static,
    ) {
        let tasks: Vec<_> = ["b", "c"]
            .into_iter()
            .map(|who| {
                let (mutex, beliefs) = (self.mutex(who), self.beliefs.clone());
                let (errors, go_on) = (Arc::clone(&self.errors), go_on.clone());
                tokio::spawn(async move {
                    while Instant::now() < until && go_on(&beliefs) {
                        let wait = Wait::Timeout(Duration::from_millis(500));
                        match mutex.lock_with(wait).await {
                            Ok(guard) => {
                                beliefs.begin(who);
                                tokio::time::sleep(Duration::from_millis(100)).await;
                                beliefs.end(who);
                                let _ = guard.unlock().await;
                            }
                            Err(error) => {
                                let mut errors = errors.lock().unwrap();
                                *errors.entry(error.to_string()).or_default() += 1;
                            }
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// When `who` was told of a loss, and why, if it was.
    pub fn loss_of(&self, who: &str) -> Option<(Instant, LossReason)> {
        let losses = self.losses.lock().unwrap();
        losses
            .iter()
            .find(|(w, ..)| *w == who)
            .map(|(_, at, reason)| (*at, *reason))
    }

    /// Nobody else held the lock while `a` believed it did, and the lock was granted
    /// again after the fault. Prints the figures: when `a` learned of its loss, when the
    /// lock was granted again, and the lead between the two.
    pub fn assert_safe_and_live(&self, case: &str, fault: Instant) {
        self.beliefs.assert_never_two_holders();
        let regranted = self.beliefs.first_begun_after(fault).unwrap_or_else(|| {
            panic!(
                "{case}: nobody was granted the lock after the fault; the contenders' \
                     tries failed with {:?}",
                self.errors.lock().unwrap()
            )
        });
        let since = |at: Instant| at.saturating_duration_since(fault).as_millis();
        match self.loss_of("a") {
            Some((lost, reason)) => eprintln!(
                "{case}: a told of its loss ({reason:?}) {} ms after the fault; the lock \
                 granted again {} ms after it: a lead of {} ms",
                since(lost),
                since(regranted),
                regranted.saturating_duration_since(lost).as_millis()
            ),
            None => eprintln!(
                "{case}: a kept its lease; the lock granted again {} ms after the fault",
                since(regranted)
            ),
        }
    }

    /// Two clients believed they held the lock at once. Prints for how long `a` still
    /// believed in its lease after another client was first granted the lock.
    pub fn assert_two_holders(&self, case: &str) {
        let overlaps = self.beliefs.overlaps();
        assert!(
            !overlaps.is_empty(),
            "{case}: no overlap: {:?}; the contenders' tries failed with {:?}",
            self.beliefs.intervals(),
            self.errors.lock().unwrap()
        );
        let intervals = self.beliefs.intervals();
        let a = intervals.iter().find(|(who, ..)| *who == "a");
        let overlap = a.and_then(|&(_, start, end)| {
            let end = end.unwrap_or_else(Instant::now);
            let other = intervals
                .iter()
                .filter(|(who, begun, _)| *who != "a" && *begun >= start && *begun < end)
                .map(|(_, begun, _)| *begun)
                .min()?;
            Some(end - other)
        });
        eprintln!(
            "{case}: a believed it held the lock for {} ms after another client was granted \
             it ({} overlapping pairs of belief intervals)",
            overlap.unwrap_or_default().as_millis(),
            overlaps.len()
        );
    }
}
