//! Hand-off notifications: one subscription per driver, fanned out to waiters.
//!
//! A release (or withdrawal, or the expiry of a holder with waiters) reserves the lock
//! for the longest-waiting waiter and publishes that waiter's id on the namespace's
//! channel. The driver keeps one subscription to it — not one per waiter — and wakes the
//! waiter with that id, if it is one of its own. A lost message (the subscription
//! dropped, the subscriber reconnecting) costs the waiter at most its poll interval.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Connector;
use super::answers::{Freed, parse_waiter};
use crate::ReleaseWatch;
use crate::watch::IdRegistry;

/// Reconnection delays of the subscriber after a failure.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);
/// How long a quiet subscription goes before the subscriber checks it still answers: a
/// half-open connection never errors, it just stops delivering.
const PING_EVERY: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(super) struct Dispatcher {
    waiters: Arc<IdRegistry>,
    started: AtomicBool,
    stop: CancellationToken,
}

impl Dispatcher {
    /// A watch completed by the next hand-off to `waiter`. Starts the subscription on
    /// first use.
    pub(super) fn watch<C: Connector>(
        self: &Arc<Self>,
        waiter: u128,
        connector: &Arc<C>,
        channel: &str,
        limit: Duration,
    ) -> ReleaseWatch {
        self.start(connector, channel, limit);
        self.waiters.watch(waiter)
    }

    fn deliver(&self, payload: &[u8]) {
        if let Some(waiter) = parse_waiter(payload) {
            self.waiters.notify(&waiter);
        }
    }

    /// Runs `call`, which frees a lock (a release or a withdrawal), and wakes the waiters
    /// of this driver's own that it concerns, without waiting for the published
    /// notification to come back from the server.
    ///
    /// - `next` was first in line behind the grant being released, when it was granted.
    ///   If it is one of this driver's waiters, it is woken as soon as the call has been
    ///   handed to the connection (polled once, and pending): its claim then follows the
    ///   release on the same connection, and the server runs the two back to back, so
    ///   the hand-off costs one round trip instead of two. The claim is an ordinary
    ///   acquire, its validity counted from its own sending. If it overtakes the release
    ///   after all (the connection was still being made), or `next` is no longer first
    ///   in line, it is told the lock is held, and the waiter waits on.
    /// - The waiter the answer names, if it is one of this driver's, is woken once the
    ///   answer is in — again if it was woken early, in case its claim overtook the
    ///   release. If it was not woken early, the releasing task then yields, so that the
    ///   claim goes out before whatever the releaser sends next (another `lock()` of the
    ///   same name, typically, which would otherwise delay the claim by a script's run).
    pub(super) async fn freeing<E>(
        &self,
        call: impl Future<Output = Result<Freed, E>>,
        next: Option<u128>,
    ) -> Result<Freed, E> {
        let mut call = std::pin::pin!(call);
        let mut next = next;
        let mut woken = None;
        let answer = std::future::poll_fn(|cx| {
            let poll = call.as_mut().poll(cx);
            if let Some(waiter) = next.take() {
                if poll.is_pending() && self.waiters.notify(&waiter) {
                    woken = Some(waiter);
                }
            }
            poll
        })
        .await;
        if let Ok(Freed::ReservedFor(waiter)) = answer {
            if self.waiters.notify(&waiter) && woken != Some(waiter) {
                tokio::task::yield_now().await;
            }
        }
        answer
    }

    fn start<C: Connector>(self: &Arc<Self>, connector: &Arc<C>, channel: &str, limit: Duration) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to run the subscriber on: waiters poll.
            self.started.store(false, Ordering::Release);
            return;
        };
        // If the task ends for any reason — its runtime shut down, say — the next watch
        // starts a new one.
        let running = Running(Arc::clone(self));
        let connector = Arc::clone(connector);
        let channel = channel.to_owned();
        let stop = self.stop.clone();
        runtime.spawn(async move {
            let running = running;
            tokio::select! {
                biased;
                () = stop.cancelled() => {}
                () = subscribe(&running.0, &*connector, &channel, limit) => {}
            }
        });
    }

    /// Stops the subscriber task: the driver is gone.
    pub(super) fn shutdown(&self) {
        self.stop.cancel();
    }
}

/// Clears the dispatcher's `started` flag when the subscriber task ends.
struct Running(Arc<Dispatcher>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.started.store(false, Ordering::Release);
    }
}

/// Subscribes and delivers, reconnecting with backoff, until cancelled.
async fn subscribe<C: Connector>(
    dispatcher: &Dispatcher,
    connector: &C,
    channel: &str,
    limit: Duration,
) {
    let mut delay = RETRY_MIN;
    loop {
        match session(dispatcher, connector, channel, limit).await {
            Ok(()) => {
                tracing::debug!(target: "robit", channel, "hand-off subscription ended; reconnecting");
                delay = RETRY_MIN;
            }
            Err(error) => {
                tracing::warn!(target: "robit", %error, "hand-off subscription failed; waiters poll meanwhile");
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// One subscription, from connecting until it ends or stops answering.
async fn session<C: Connector>(
    dispatcher: &Dispatcher,
    connector: &C,
    channel: &str,
    limit: Duration,
) -> Result<(), String> {
    let bounded = |what: &'static str| move |_| format!("{what} took longer than {limit:?}");
    let pubsub = tokio::time::timeout(limit, connector.subscriber())
        .await
        .map_err(bounded("connecting"))?
        .map_err(|err| err.to_string())?;
    let (mut sink, mut stream) = pubsub.split();
    tokio::time::timeout(limit, sink.subscribe(channel))
        .await
        .map_err(bounded("subscribing"))?
        .map_err(|err| err.to_string())?;
    tracing::debug!(target: "robit", channel, "subscribed to hand-off notifications");
    loop {
        tokio::select! {
            biased;
            message = stream.next() => match message {
                Some(message) => dispatcher.deliver(message.get_payload_bytes()),
                None => return Ok(()),
            },
            () = tokio::time::sleep(PING_EVERY) => {
                tokio::time::timeout(limit, sink.ping::<redis::Value>())
                    .await
                    .map_err(bounded("a ping of the quiet subscription"))?
                    .map_err(|err| err.to_string())?;
            }
        }
    }
}
