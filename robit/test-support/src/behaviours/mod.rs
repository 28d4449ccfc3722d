//! One set of checks of robit's documented behaviours, run over any topology of any
//! driver: a Redis behind Sentinel, a Redis Cluster, a quorum of Redis servers, etcd.
//!
//! Each check takes a [`Topology`] — a way to build a driver as a client process of its
//! own would, and what the driver promises — and asserts one behaviour through the
//! public API, on a lock name of its own, in real time: deadlines are polled, never
//! slept on, and every margin is hundreds of milliseconds wide, so that a loaded machine
//! cannot break a check that holds. [`healthy`] runs every check that needs no fault at
//! once; [`jeopardy_before_loss`] needs a [`Fault`] that stops a holder's renewals.
//!
//! The checks:
//!
//! - [`renewals_keep_a_healthy_hold`] — P3, no spurious loss over many renewals;
//! - [`fencing_tokens_rise_across_holds_expiries_and_a_force_release`] — P4;
//! - [`a_late_release_leaves_a_later_grant_alone`] — P6, at the driver's own API;
//! - [`a_hold_ends_at_its_cap_and_the_next_holder_gets_the_lock`] — the hold cap;
//! - [`a_refresh_by_hand_extends_the_grant_on_the_backend`] — `Guard::refresh`;
//! - [`a_lock_delay_follows_an_expiry_but_not_an_unlock`] — the lock-delay, or its
//!   refusal by a driver that does not keep one;
//! - [`a_force_release_frees_only_the_named_holder`] — `Driver::force_release`;
//! - [`waiters_are_served_in_arrival_order`] — the fair hand-off;
//! - [`jeopardy_before_loss`] — jeopardy before the loss when renewals stop getting
//!   through, belief intervals recorded and checked for overlap.

#![allow(clippy::print_stderr)]

use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::driver::{
    Acquire, AcquireRequest, DriverError, Lease, LockName, LockState, OwnerToken, Renewal,
};
use robit::{
    ConfigError, Driver, FenceToken, Guard, Jeopardy, LockError, LossReason, Mutex, MutexBuilder,
    UnlockError, Wait,
};
use tokio::time::Instant;

use crate::kit::Beliefs;

mod hand_off;
mod hold;
mod jeopardy;
mod promises;

pub use self::hand_off::{
    a_force_release_frees_only_the_named_holder, waiters_are_served_in_arrival_order,
};
pub use self::hold::{
    a_hold_ends_at_its_cap_and_the_next_holder_gets_the_lock,
    a_lock_delay_follows_an_expiry_but_not_an_unlock,
    a_refresh_by_hand_extends_the_grant_on_the_backend,
};
pub use self::jeopardy::jeopardy_before_loss;
pub use self::promises::{
    a_late_release_leaves_a_later_grant_alone,
    fencing_tokens_rise_across_holds_expiries_and_a_force_release, renewals_keep_a_healthy_hold,
};

/// A future a topology's hook answers.
pub type Hook<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How long any event a check waits for may take: reaching it means it never came.
const LONG: Duration = Duration::from_secs(10);

/// A driver's topology, as the checks see it.
#[derive(Clone)]
pub struct Topology {
    /// What it is, for failure messages.
    pub name: &'static str,
    make: Arc<dyn Fn() -> Arc<dyn Driver> + Send + Sync>,
    /// How long after a grant's TTL the backend may still hold it, abandoned: its expiry
    /// granularity (etcd rounds a lease up to whole seconds and sweeps expired leases
    /// every half second).
    expiry_slack: Duration,
    keeps_lock_delay: bool,
    fair: bool,
    queued: Option<Arc<QueuedProbe>>,
}

/// How many waiters every server of a topology has queued for a lock.
type QueuedProbe = dyn Fn(LockName) -> Hook<'static, usize> + Send + Sync;

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Topology {
    /// A topology whose clients each build their driver with `make`. By default its
    /// grants expire within 100 ms of their TTL, and its driver keeps a lock-delay and
    /// serves its waiters in arrival order.
    pub fn new<D: Driver>(
        name: &'static str,
        make: impl Fn() -> D + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            make: Arc::new(move || Arc::new(make()) as Arc<dyn Driver>),
            expiry_slack: Duration::from_millis(100),
            keeps_lock_delay: true,
            fair: true,
            queued: None,
        }
    }

    /// Grants may outlive their TTL by `slack` on this backend.
    #[must_use]
    pub fn expiry_slack(mut self, slack: Duration) -> Self {
        self.expiry_slack = slack;
        self
    }

    /// The driver does not keep a lock-delay, and says so (a mutex built with one
    /// refuses it).
    #[must_use]
    pub fn without_lock_delay(mut self) -> Self {
        self.keeps_lock_delay = false;
        self
    }

    /// The driver keeps no queue: its waiters are not served in arrival order.
    #[must_use]
    pub fn unfair(mut self) -> Self {
        self.fair = false;
        self
    }

    /// How many waiters *every* server has queued for a lock, where the driver's
    /// `inspect` (which may count the longest queue of several) does not say.
    #[must_use]
    pub fn queued_everywhere(
        mut self,
        probe: impl Fn(LockName) -> Hook<'static, usize> + Send + Sync + 'static,
    ) -> Self {
        self.queued = Some(Arc::new(probe));
        self
    }

    /// A driver of a client of its own.
    pub fn driver(&self) -> Arc<dyn Driver> {
        (self.make)()
    }

    /// A mutex builder for lock `name`, TTL `ttl`, over a driver of its own.
    pub fn mutex(&self, name: &str, ttl: Duration) -> MutexBuilder {
        Mutex::builder(name, self.driver()).ttl(ttl)
    }

    /// A mutex for lock `name`, TTL `ttl`, over a driver of its own.
    fn built(&self, name: &str, ttl: Duration) -> Mutex {
        self.mutex(name, ttl).build().unwrap()
    }

    async fn queued(&self, driver: &dyn Driver, name: &str) -> usize {
        match &self.queued {
            Some(probe) => probe(LockName::from(name)).await,
            None => driver
                .inspect(&LockName::from(name))
                .await
                .map_or(0, |seen| seen.waiters),
        }
    }
}

/// Stops a holder's renewals from getting through, and lets them through again: a frozen
/// link, a paused server.
pub trait Fault: Send + Sync {
    /// Strikes.
    fn cut(&self) -> Hook<'_, ()>;
    /// Heals.
    fn heal(&self) -> Hook<'_, ()>;
}

/// The holder's link to its server, through a proxy of the test's own, frozen while the
/// fault lasts (new connections included).
#[derive(Debug)]
pub struct FrozenLink<'a>(pub &'a crate::redis::FreezingProxy);

impl Fault for FrozenLink<'_> {
    fn cut(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0.freeze() })
    }

    fn heal(&self) -> Hook<'_, ()> {
        Box::pin(async { self.0.thaw() })
    }
}

/// Runs every check that needs no fault, at once, each on a lock of its own.
pub async fn healthy(topology: &Topology) {
    tokio::join!(
        renewals_keep_a_healthy_hold(topology),
        fencing_tokens_rise_across_holds_expiries_and_a_force_release(topology),
        a_late_release_leaves_a_later_grant_alone(topology),
        a_hold_ends_at_its_cap_and_the_next_holder_gets_the_lock(topology),
        a_refresh_by_hand_extends_the_grant_on_the_backend(topology),
        a_lock_delay_follows_an_expiry_but_not_an_unlock(topology),
        a_force_release_frees_only_the_named_holder(topology),
        waiters_are_served_in_arrival_order(topology),
    );
}

/// Fails the check, rather than hanging it, if `future` does not finish within `limit`.
async fn within<T>(
    topology: &Topology,
    limit: Duration,
    what: &str,
    future: impl Future<Output = T>,
) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("{}: {what} did not happen within {limit:?}", topology.name),
    }
}

/// Polls `ready` every 10 ms until it answers `Some`; fails the check after `limit`.
async fn eventually<T, F: Future<Output = Option<T>>>(
    topology: &Topology,
    limit: Duration,
    what: &str,
    ready: impl Fn() -> F,
) -> T {
    let give_up = Instant::now() + limit;
    loop {
        if let Some(done) = ready().await {
            return done;
        }
        assert!(
            Instant::now() < give_up,
            "{}: {what} did not happen within {limit:?}",
            topology.name
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The first answer to `operation` that is not a transient error, within `LONG`. A
/// connection can break while idle (on a busy machine, a keepalive of the etcd
/// client's goes unanswered in time), and a transient error is no answer: the driver's
/// callers, the watchdog and the mutex, try again too. Any other error fails the check.
async fn answered<T, F: Future<Output = Result<T, DriverError>>>(
    topology: &Topology,
    what: &str,
    operation: impl Fn() -> F,
) -> T {
    eventually(topology, LONG, what, || async {
        match operation().await {
            Ok(answer) => Some(answer),
            Err(err) if err.is_transient() => {
                eprintln!("{}: {what}: {err}; trying again", topology.name);
                None
            }
            Err(err) => panic!("{}: {what}: {err}", topology.name),
        }
    })
    .await
}

/// Whether a single try for `mutex` is refused because the lock is held (not an error).
async fn refused(topology: &Topology, mutex: &Mutex, what: &str) -> bool {
    match mutex.try_lock().await {
        Ok(guard) => {
            eprintln!(
                "{}: {what}: granted, fence {}",
                topology.name,
                guard.fence()
            );
            let _ = guard.unlock().await;
            false
        }
        Err(LockError::Contended { .. }) => true,
        Err(err) => panic!("{}: {what}: {err}", topology.name),
    }
}

/// A driver-level request for lock `name` by `owner`.
fn request(name: &str, owner: u128, ttl: Duration) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(owner), ttl)
}
