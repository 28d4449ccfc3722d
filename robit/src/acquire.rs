//! `lock()`: acquire attempts, waiting, backoff and cancellation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::config::MIN_RETRY_DELAY;
use crate::core::{Core, Installed};
use crate::{Acquire, DriverError, LockError, OwnerToken, Wait};

/// Acquires the lock for `core`'s mutex, waiting as `wait` says.
pub(crate) async fn acquire(core: &Arc<Core>, wait: Wait) -> Result<Installed, LockError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| LockError::NoRuntime)?;
    core.begin_acquire()?;
    let mut pending = Pending {
        core,
        started: core.now(),
        finished: false,
    };
    let span = tracing::debug_span!(target: "robit", "lock", lock = %core.config.name);
    let result = attempts(core, &runtime, wait, pending.started)
        .instrument(span)
        .await;
    pending.finish(&result);
    result
}

/// Puts the mutex back to idle and counts the failure if `lock()` fails or is dropped.
struct Pending<'a> {
    core: &'a Core,
    started: Instant,
    finished: bool,
}

impl Pending<'_> {
    fn finish(&mut self, result: &Result<Installed, LockError>) {
        self.finished = true;
        let waited = self.core.now().saturating_duration_since(self.started);
        match result {
            Ok(_) => self.core.stats.acquired(waited),
            Err(_) => {
                self.core.abort_acquire();
                self.core.stats.failed(waited);
            }
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.core.abort_acquire();
            let waited = self.core.now().saturating_duration_since(self.started);
            self.core.stats.failed(waited);
        }
    }
}

async fn attempts(
    core: &Arc<Core>,
    runtime: &tokio::runtime::Handle,
    wait: Wait,
    started: Instant,
) -> Result<Installed, LockError> {
    let config = &core.config;
    let clock = &*config.clock;
    // A wait too long to represent is a wait without end.
    let give_up_at = match wait {
        Wait::Timeout(limit) => started.checked_add(limit),
        Wait::Try | Wait::Forever => None,
    };
    let mut last_error = None;
    let mut attempt: u32 = 0;

    loop {
        // Subscribe before asking, so a release between the answer and the wait is seen.
        let released = config.driver.watch_release(&config.name);
        // A fresh owner per attempt: an abandoned attempt's late grant is released in the
        // background (see `InFlight`), and that release must never match the grant of a
        // later attempt.
        let owner = OwnerToken::generate(&*config.entropy);
        let sent = clock.now();
        // An attempt may take the renew timeout, but never past the end of the wait.
        let limit = give_up_at.map_or(config.renew_timeout, |at| {
            config
                .renew_timeout
                .min(at.saturating_duration_since(sent))
                .max(MIN_RETRY_DELAY)
        });
        let answer = core.within(limit, InFlight::start(core, owner)).await;
        let delay = match answer {
            Ok(Acquire::Granted(lease)) => {
                let deadline = sent + config.validity;
                if clock.now() < deadline {
                    let installed = core.install(runtime, lease, sent, deadline);
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
                let delay = config.backoff.delay(attempt, &*config.entropy);
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
        let mut wake_at = now + delay.max(MIN_RETRY_DELAY);
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
    fn start(core: &Arc<Core>, owner: OwnerToken) -> Self {
        let driver = Arc::clone(&core.config.driver);
        let name = core.config.name.clone();
        let ttl = core.config.ttl;
        Self {
            call: Some(Box::pin(
                async move { driver.acquire(&name, owner, ttl).await },
            )),
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
        let (Some(call), Ok(runtime)) = (self.call.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let core = Arc::clone(&self.core);
        runtime.spawn(async move {
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
