//! `lock()`: acquire attempts, waiting, backoff and cancellation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::config::{MAX_TTL, MIN_RETRY_DELAY, half_jitter};
use crate::core::{Core, Installed, in_background};
use crate::mutant::Mutant;
use crate::{
    Acquire, AcquireRequest, DriverError, LockError, OwnerToken, ReleaseWatch, Wait, Waiter,
};

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
    /// Set once an attempt was told `Held` on behalf of a waiter: a fair driver may have
    /// queued it.
    queued: Option<AcquireRequest>,
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
        let Some(request) = self.queued.take() else {
            return;
        };
        let core = Arc::clone(self.core);
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

async fn attempts(
    core: &Arc<Core>,
    runtime: &tokio::runtime::Handle,
    wait: Wait,
    pending: &mut Pending<'_>,
) -> Result<Installed, LockError> {
    let config = &core.config;
    let clock = &*config.clock;
    let started = pending.started;
    // The longest a waiter sleeps between attempts: the backoff cap.
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
    let mut last_error = None;
    let mut attempt: u32 = 0;

    loop {
        // A fresh owner per attempt: an abandoned attempt's late grant is released in the
        // background (see `InFlight`), and that release must never match the grant of a
        // later attempt.
        let request = AcquireRequest {
            name: config.name.clone(),
            owner: OwnerToken::generate(&*config.entropy),
            ttl: config.ttl,
            waiter,
        };
        // Subscribe before asking, so a release between the answer and the wait is seen.
        // A single try never waits, so it does not subscribe.
        let released = if waiter.is_some() {
            config.driver.watch_release(&request)
        } else {
            ReleaseWatch::never()
        };
        // The first attempt goes out straight after `lock()` began: the reading taken
        // then serves as its send time (earlier than the send, so it only shortens the
        // validity it counts from), and saves a clock reading per uncontended lock.
        let sent = if attempt == 0 { started } else { clock.now() };
        // An attempt may take the renew timeout, but never past the end of the wait.
        let limit = give_up_at.map_or(config.renew_timeout, |at| {
            config
                .renew_timeout
                .min(at.saturating_duration_since(sent))
                .max(MIN_RETRY_DELAY)
        });
        let answer = core
            .within_from(sent, limit, InFlight::start(core, request.clone()))
            .await;
        let delay = match answer {
            Ok(Acquire::Granted(lease)) => {
                let now = clock.now();
                let from = if config.has(Mutant::ValidityFromReceive) {
                    now
                } else {
                    sent
                };
                let deadline = from + config.validity;
                if now < deadline {
                    let installed = core.install(runtime, lease, sent, now, deadline);
                    tracing::debug!(target: "robit", fence = installed.fence.get(), attempts = attempt + 1, "acquired");
                    return Ok(installed);
                }
                // The answer came back after the lease it granted had stopped being
                // safe to believe in: give it back and try again.
                tracing::warn!(target: "robit", "grant arrived after its validity deadline; releasing it");
                let _ = core.within(config.renew_timeout, lease.release()).await;
                Duration::ZERO
            }
            Ok(Acquire::Held { expires_in }) => {
                if wait == Wait::Try {
                    return Err(LockError::Contended { expires_in });
                }
                pending.queued.get_or_insert(request);
                let delay = if released.is_live() {
                    // The driver will wake us; poll only as a fallback, at the longest
                    // interval, jittered so that waiters do not poll in step.
                    half_jitter(poll_interval, &*config.entropy)
                } else {
                    config.backoff.delay(attempt, &*config.entropy)
                };
                expires_in.map_or(delay, |left| delay.min(left))
            }
            Err(error) if wait == Wait::Try || !error.is_transient() => {
                return Err(LockError::Backend(error));
            }
            Err(error) => {
                tracing::debug!(target: "robit", %error, "acquire attempt failed; retrying");
                last_error = Some(error);
                config.backoff.delay(attempt, &*config.entropy)
            }
        };

        let now = clock.now();
        // The backoff cap is at most a year (validated), so this cannot overflow; be
        // careful anyway rather than panic inside lock().
        let mut wake_at = now
            .checked_add(delay.max(MIN_RETRY_DELAY))
            .unwrap_or(now + MAX_TTL);
        if let Some(give_up_at) = give_up_at {
            if now >= give_up_at {
                return Err(LockError::Timeout {
                    waited: now.saturating_duration_since(started),
                    last_error,
                });
            }
            wake_at = wake_at.min(give_up_at);
        }
        tokio::select! {
            biased;
            () = released => {
                tracing::trace!(target: "robit", "woken by a release");
                // Even a release wakes no sooner than the floor after the last attempt:
                // a watch that completes spuriously, again and again, must not spin.
                clock.sleep_until(sent + MIN_RETRY_DELAY).await;
            }
            () = clock.sleep_until(wake_at) => {}
        }
        attempt = attempt.saturating_add(1);
    }
}

type AcquireCall = Pin<Box<dyn Future<Output = Result<Acquire, DriverError>> + Send>>;

/// One acquire call in flight. If it is dropped before completing (the attempt timed out
/// or `lock()` was cancelled), the call is finished in the background and any grant it
/// returns is released, so an abandoned attempt never leaves the lock held until its TTL.
struct InFlight {
    call: Option<AcquireCall>,
    core: Arc<Core>,
}

impl InFlight {
    fn start(core: &Arc<Core>, request: AcquireRequest) -> Self {
        let driver = Arc::clone(&core.config.driver);
        Self {
            call: Some(Box::pin(async move { driver.acquire(&request).await })),
            core: Arc::clone(core),
        }
    }
}

impl Future for InFlight {
    type Output = Result<Acquire, DriverError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(Err(DriverError::rejected(
                "acquire polled after completion",
            )));
        };
        let result = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(result)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        let core = Arc::clone(&self.core);
        in_background(async move {
            // The grant, if any, is worthless after its TTL; stop waiting by then.
            let limit = core.config.ttl;
            if let Ok(Acquire::Granted(lease)) = core.within(limit, call).await {
                let _ = core
                    .within(core.config.renew_timeout, lease.release())
                    .await;
            }
        });
    }
}
