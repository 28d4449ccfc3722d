//! `lock()`: attempts until one is granted, the wait between them, and clean-up when
//! `lock()` fails or is cancelled.
//!
//! [`attempt`] makes one acquire attempt and says what came of it; [`wait`] sleeps until
//! the next is due — woken early by a release — or gives up when the wait runs out.

mod attempt;
mod failures;
mod seen;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use self::attempt::Outcome;
use self::seen::Seen;
use super::{Core, Installed, Wait, in_background};
use crate::driver::{AcquireRequest, OwnerToken, ReleaseWatch, Waiter};
use crate::error::LockError;

/// Acquires the lock for `core`'s mutex, waiting as `wait` says.
pub(crate) async fn acquire(core: &Arc<Core>, wait: Wait) -> Result<Installed, LockError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| LockError::NoRuntime)?;
    core.begin_acquire()?;
    let mut pending = Pending {
        core,
        started: core.now(),
        queued: None,
        finished: false,
    };
    let span = tracing::debug_span!(target: "robit", "lock", lock = %core.config.name);
    // An instrumented future costs something on every poll even when no subscriber
    // listens; skip it then.
    let result = if span.is_disabled() {
        attempts(core, &runtime, wait, &mut pending).await
    } else {
        attempts(core, &runtime, wait, &mut pending)
            .instrument(span)
            .await
    };
    pending.finish(&result);
    result
}

/// Puts the mutex back to idle, counts the failure, and withdraws from the driver's
/// queue if `lock()` fails or is dropped.
struct Pending<'a> {
    core: &'a Arc<Core>,
    started: Instant,
    /// The waiter, for a waiting `lock()`: any of its attempts may have queued it, even
    /// one whose answer never came (and a fair driver may then grant it the lock), so it
    /// is withdrawn if `lock()` fails or is cancelled.
    queued: Option<Waiter>,
    finished: bool,
}

impl Pending<'_> {
    fn finish(&mut self, result: &Result<Installed, LockError>) {
        self.finished = true;
        match result {
            Ok(installed) => {
                let waited = installed
                    .acquired_at
                    .saturating_duration_since(self.started);
                self.core.stats.acquired(waited);
            }
            Err(_) => {
                let waited = self.core.now().saturating_duration_since(self.started);
                self.fail(waited);
            }
        }
    }

    fn fail(&mut self, waited: Duration) {
        self.core.abort_acquire();
        self.core.stats.failed(waited);
        let Some(waiter) = self.queued.take() else {
            return;
        };
        let core = Arc::clone(self.core);
        let request = request(&core, Some(waiter));
        in_background(async move {
            let withdraw = core.config.driver.withdraw(&request);
            if let Err(error) = core.within(core.config.renew_timeout, withdraw).await {
                tracing::debug!(target: "robit", %error, "could not withdraw from the wait queue; the entry expires");
            }
        });
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let waited = self.core.now().saturating_duration_since(self.started);
            self.fail(waited);
        }
    }
}

/// What every attempt of one `lock()` call shares.
struct Plan {
    wait: Wait,
    started: Instant,
    /// Who waits, for a driver that queues waiters (`None` for a single try).
    waiter: Option<Waiter>,
    /// The longest a waiter sleeps between attempts: the backoff cap.
    poll_interval: Duration,
    /// When a [`Wait::Timeout`] runs out (`None`: never).
    give_up_at: Option<Instant>,
}

impl Plan {
    fn new(core: &Core, wait: Wait, started: Instant) -> Self {
        let config = &core.config;
        let poll_interval = config.backoff.ceiling(u32::MAX);
        let waiter = (wait != Wait::Try).then(|| {
            Waiter::new(
                OwnerToken::generate(&*config.entropy).as_u128(),
                poll_interval,
            )
        });
        // A wait too long to represent is a wait without end.
        let give_up_at = match wait {
            Wait::Timeout(limit) => started.checked_add(limit),
            Wait::Try | Wait::Forever => None,
        };
        Self {
            wait,
            started,
            waiter,
            poll_interval,
            give_up_at,
        }
    }

    /// The request of the next attempt. A fresh owner per attempt: an abandoned attempt's
    /// late grant is released in the background, and that release must never match the
    /// grant of a later attempt.
    fn request(&self, core: &Core, attempt: u32) -> AcquireRequest {
        request(core, self.waiter.map(|waiter| waiter.on_attempt(attempt)))
    }

    /// A watch on the lock's next release, taken before asking, so that a release
    /// between the answer and the wait is seen. A single try never waits, so it does not
    /// subscribe.
    fn watch(&self, core: &Core, request: &AcquireRequest) -> ReleaseWatch {
        if self.waiter.is_some() {
            core.config.driver.watch_release(request)
        } else {
            ReleaseWatch::never()
        }
    }
}

/// A request for `core`'s lock on behalf of `waiter`, with a fresh owner.
fn request(core: &Core, waiter: Option<Waiter>) -> AcquireRequest {
    let config = &core.config;
    AcquireRequest {
        name: config.name.clone(),
        owner: OwnerToken::generate(&*config.entropy),
        ttl: config.ttl,
        waiter,
        lock_delay: config.lock_delay,
    }
}

async fn attempts(
    core: &Arc<Core>,
    runtime: &tokio::runtime::Handle,
    wait: Wait,
    pending: &mut Pending<'_>,
) -> Result<Installed, LockError> {
    let plan = Plan::new(core, wait, pending.started);
    pending.queued = plan.waiter;
    let mut seen = Seen::default();
    let mut number: u32 = 0;
    // When the last attempt answered held (or quarantined) was sent: a grant handed to
    // this waiter was made after that attempt was answered, so it counts from there.
    // Before any was, from the first attempt, which queued the waiter if anything did.
    let mut queued_at = plan.started;
    loop {
        let request = plan.request(core, number);
        let released = plan.watch(core, &request);
        // The first attempt goes out straight after `lock()` began: the reading taken
        // then serves as its send time (earlier than the send, so it only shortens the
        // validity it counts from), and saves a clock reading per uncontended lock.
        let sent = if number == 0 {
            plan.started
        } else {
            core.now()
        };
        let delay = match attempt::one(core, runtime, &plan, &request, sent, queued_at).await? {
            Outcome::Acquired(installed) => {
                tracing::debug!(target: "robit", fence = installed.fence.get(), attempts = number + 1, "acquired");
                return Ok(installed);
            }
            Outcome::TooLate => Duration::ZERO,
            Outcome::CutShort(error) => {
                seen.cut_short(error);
                Duration::ZERO
            }
            Outcome::Held { expires_in } => {
                seen.held();
                queued_at = sent;
                wait::after_held(core, &plan, &released, number, expires_in)
            }
            // A fair driver queues the waiter during a quarantine too.
            Outcome::Quarantined { left } => {
                seen.quarantined(left);
                queued_at = sent;
                wait::after_quarantine(core, &plan, left)
            }
            Outcome::Failed(error) => {
                seen.failed(core, error, plan.started);
                core.config.backoff.delay(number, &*core.config.entropy)
            }
        };
        wait::until_next(core, &plan, released, sent, delay, &mut seen.last_error).await?;
        number = number.saturating_add(1);
    }
}
