//! One acquire attempt: the call, bounded in time, and what its answer means.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use super::Plan;
use crate::driver::{Acquire, AcquireRequest, DriverError, Lease};
use crate::engine::backoff::MIN_RETRY_DELAY;
use crate::engine::{Core, Installed, Wait, in_background};
use crate::error::LockError;

/// What one attempt came to, when it does not end `lock()`.
pub(super) enum Outcome {
    /// Granted, in time: the mutex holds the lock.
    Acquired(Installed),
    /// Granted, but the answer arrived after the grant had stopped being safe to
    /// believe in; it was given back.
    TooLate,
    /// Someone else holds the lock (and a fair driver may have queued this waiter).
    Held {
        /// When the holder's grant expires, if the driver said.
        expires_in: Option<Duration>,
    },
    /// The backend grants nothing for `left` (see [`Acquire::Quarantined`]).
    Quarantined { left: Duration },
    /// The backend failed in a way that a later attempt may not.
    Failed(DriverError),
    /// The attempt ran out of time because the wait itself ended: the backend was given
    /// less than an attempt's time. Its silence explains the wait only if nothing else
    /// does (no holder seen, no earlier failure).
    CutShort(DriverError),
}

/// Makes one attempt, sent at `sent`. An attempt may take the renew timeout, but never
/// past the end of the wait. `queued_at`: when the waiter's last attempt answered held
/// (or quarantined) was sent, or the first attempt if none was: a grant handed to the
/// waiter before this attempt counts from there.
///
/// # Errors
///
/// What ends `lock()` at once: [`LockError::Contended`] for a single try that found the
/// lock held, [`LockError::Quarantined`] for one that found the backend quarantined, and
/// [`LockError::Backend`] for a failure no retry can mend (or any, for a single try).
pub(super) async fn one(
    core: &Arc<Core>,
    runtime: &tokio::runtime::Handle,
    plan: &Plan,
    request: &AcquireRequest,
    sent: Instant,
    queued_at: Instant,
) -> Result<Outcome, LockError> {
    let config = &core.config;
    let limit = plan.give_up_at.map_or(config.renew_timeout, |at| {
        config
            .renew_timeout
            .min(at.saturating_duration_since(sent))
            .max(MIN_RETRY_DELAY)
    });
    let answer = core
        .within_from(sent, limit, InFlight::start(core, request.clone()))
        .await;
    match answer {
        Ok(Acquire::Granted(lease)) => granted(core, runtime, lease, sent).await,
        // Granted before this attempt was sent, after the last one answered held.
        Ok(Acquire::Handed(lease)) => granted(core, runtime, lease, queued_at).await,
        Ok(Acquire::Held { expires_in }) if plan.wait == Wait::Try => {
            Err(LockError::Contended { expires_in })
        }
        Ok(Acquire::Held { expires_in }) => Ok(Outcome::Held { expires_in }),
        Ok(Acquire::Quarantined { left }) if plan.wait == Wait::Try => {
            Err(LockError::Quarantined { left })
        }
        Ok(Acquire::Quarantined { left }) => Ok(Outcome::Quarantined { left }),
        Err(error) if plan.wait == Wait::Try || !error.is_transient() => {
            Err(LockError::Backend(error))
        }
        Err(error @ DriverError::Timeout(waited))
            if limit < config.renew_timeout && waited >= limit =>
        {
            Ok(Outcome::CutShort(error))
        }
        Err(error) => Ok(Outcome::Failed(error)),
    }
}

/// A grant whose validity counts from `sent`: installed, or given back if its answer
/// came after it stopped being safe to believe in.
async fn granted(
    core: &Arc<Core>,
    runtime: &tokio::runtime::Handle,
    lease: Arc<dyn Lease>,
    sent: Instant,
) -> Result<Outcome, LockError> {
    let config = &core.config;
    let now = core.now();
    let from = sent;
    #[cfg(robit_mutants)]
    let from = crate::engine::mutant::validity_from(config, from, || now);
    let deadline = from + config.validity;
    if now < deadline {
        return Ok(Outcome::Acquired(
            core.install(runtime, lease, sent, now, deadline),
        ));
    }
    tracing::warn!(target: "robit", "grant arrived after its validity deadline; releasing it");
    let _ = core.within(config.renew_timeout, lease.release()).await;
    Ok(Outcome::TooLate)
}

type AcquireCall = Pin<Box<dyn Future<Output = Result<Acquire, DriverError>> + Send>>;

/// One acquire call in flight. If it is dropped before completing (the attempt timed out
/// or `lock()` was cancelled), the call is finished in the background and any grant it
/// returns is released, so an abandoned attempt never leaves the lock held until its TTL
/// — but for a grant handed to the waiter, which is not the attempt's own.
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
            // A grant handed to the waiter is left alone: it is the waiter's, whichever
            // attempt learns of it, and a later attempt of the same `lock()` takes it
            // up (or, if `lock()` ends without it, the withdrawal frees it).
            if let Ok(Acquire::Granted(lease)) = core.within(limit, call).await {
                let _ = core
                    .within(core.config.renew_timeout, lease.release())
                    .await;
            }
        });
    }
}
