//! Watching for a release ([`Driver::watch_release`](crate::Driver::watch_release)):
//! hand-off notifications, one subscription per driver fanned out to its waiters.
//!
//! A release (or withdrawal, or the expiry of a holder with waiters) reserves the lock
//! for the longest-waiting waiter and publishes that waiter's id on the namespace's
//! channel. The driver keeps one subscription to it — not one per waiter — and wakes the
//! waiter with that id, if it is one of its own (keeping the wake for it if its watch
//! has not registered yet: see `waiters.rs`). A lost message (the subscription
//! dropped, the subscriber reconnecting) costs the waiter at most its poll interval.
//!
//! A release or withdrawal made through this driver does not wait for its own
//! notification to come back: [`Dispatcher::freeing`] wakes this driver's waiters
//! directly — the one next in line as soon as the release is sent, the one the answer
//! names once it is in.

mod waiters;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use self::waiters::Waiters;
use super::Connector;
use super::scripts::answers::{Freed, parse_waiter};
use crate::driver::ReleaseWatch;
use crate::millis::Millis;

/// Reconnection delays of the subscriber after a failure.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);
/// How long a quiet subscription goes before the subscriber checks it still answers: a
/// half-open connection never errors, it just stops delivering.
const PING_EVERY: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(super) struct Dispatcher {
    waiters: Arc<Waiters>,
    started: AtomicBool,
    stop: CancellationToken,
}

impl Dispatcher {
    /// A watch completed by the next hand-off to `waiter` (or one since its last watch
    /// ended; see [`Waiters`]). Starts the subscription on first use.
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
            self.waiters.wake(waiter);
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
            if let Some(waiter) = next.take()
                && poll.is_pending()
                && self.waiters.wake(waiter)
            {
                tracing::trace!(target: "robit", waiter, "woke the next in line as the release went out");
                woken = Some(waiter);
            }
            poll
        })
        .await;
        if let Ok(Freed::ReservedFor(Some(waiter))) = answer
            && self.waiters.wake(waiter)
        {
            tracing::trace!(target: "robit", waiter, "woke the waiter the lock was handed to");
            if woken != Some(waiter) {
                tokio::task::yield_now().await;
            }
        }
        answer
    }

    fn start<C: Connector>(self: &Arc<Self>, connector: &Arc<C>, channel: &str, limit: Duration) {
        if self.started.load(Ordering::Acquire) || self.started.swap(true, Ordering::AcqRel) {
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
    let bounded =
        |what: &'static str| move |_| format!("{what} took longer than {}", Millis(limit));
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

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    const WAITER: u128 = 0xb;

    #[tokio::test]
    async fn a_waiter_woken_early_is_woken_again_by_the_answer_in_case_its_claim_overtook() {
        let dispatcher = Dispatcher::default();
        let early = dispatcher.waiters.watch(WAITER);
        let (answer, answered) = tokio::sync::oneshot::channel::<Freed>();
        let mut freeing =
            Box::pin(dispatcher.freeing(async { answered.await.map_err(|_| ()) }, Some(WAITER)));
        // Sent, not yet answered: the waiter next in line is woken already.
        assert!((&mut freeing).now_or_never().is_none());
        assert!(early.now_or_never().is_some(), "not woken early");
        // Its claim registers a fresh watch; the answer names it, so it is woken again.
        let claim = dispatcher.waiters.watch(WAITER);
        answer.send(Freed::ReservedFor(Some(WAITER))).unwrap();
        assert_eq!(freeing.await, Ok(Freed::ReservedFor(Some(WAITER))));
        assert!(claim.now_or_never().is_some(), "not woken by the answer");
    }

    #[tokio::test]
    async fn nobody_is_woken_for_a_release_that_found_nothing_of_the_callers() {
        let dispatcher = Dispatcher::default();
        let watch = dispatcher.waiters.watch(WAITER);
        let freed = dispatcher
            .freeing(async { Ok::<_, ()>(Freed::Nothing) }, None)
            .await;
        assert_eq!(freed, Ok(Freed::Nothing));
        assert!(watch.now_or_never().is_none());
    }

    #[tokio::test]
    async fn a_releaser_yields_once_to_the_waiter_its_answer_woke_unless_it_woke_it_early() {
        let dispatcher = Dispatcher::default();
        // Not woken early (nobody was next in line at the grant): one yield, so that
        // the woken waiter's claim goes out before the releaser's next command.
        // A watch registers when first polled.
        let mut watch = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut watch).now_or_never().is_none());
        let answer = Ok::<_, ()>(Freed::ReservedFor(Some(WAITER)));
        let mut freeing = Box::pin(dispatcher.freeing(async { answer }, None));
        assert!((&mut freeing).now_or_never().is_none(), "no yield");
        assert_eq!(freeing.await, answer);
        assert!(watch.now_or_never().is_some());
        // Woken early: its claim is on the connection already, behind the release.
        let mut early = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut early).now_or_never().is_none());
        let (reply, answered) = tokio::sync::oneshot::channel::<Freed>();
        let mut freeing =
            Box::pin(dispatcher.freeing(async { answered.await.map_err(|_| ()) }, Some(WAITER)));
        assert!((&mut freeing).now_or_never().is_none());
        let mut claim = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut claim).now_or_never().is_none());
        reply.send(Freed::ReservedFor(Some(WAITER))).unwrap();
        assert_eq!(freeing.now_or_never(), Some(answer), "yielded");
    }

    #[test]
    fn a_published_id_wakes_that_waiter_and_anything_else_nobody() {
        let dispatcher = Dispatcher::default();
        let mut watch = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut watch).now_or_never().is_none());
        dispatcher.deliver(b"not a waiter");
        dispatcher.deliver(b"c");
        assert!((&mut watch).now_or_never().is_none());
        dispatcher.deliver(b"b");
        assert!(watch.now_or_never().is_some());
    }

    /// A server that refuses every subscription, and records when each was asked for.
    #[derive(Default)]
    struct Refusing {
        asked: std::sync::Mutex<Vec<tokio::time::Instant>>,
    }

    #[async_trait::async_trait]
    impl Connector for Refusing {
        type Connection = redis::aio::MultiplexedConnection;

        async fn connect(&self) -> redis::RedisResult<Self::Connection> {
            Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into())
        }

        async fn subscriber(&self) -> redis::RedisResult<redis::aio::PubSub> {
            let asked = {
                let mut asked = self.asked.lock().unwrap();
                asked.push(tokio::time::Instant::now());
                asked.len()
            };
            // Enough to see the delays; more would be a subscriber spinning.
            if asked > 20 {
                std::future::pending::<()>().await;
            }
            Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into())
        }

        fn describe(&self) -> String {
            "refusing".to_owned()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_subscription_is_retried_after_doubling_delays_up_to_two_seconds() {
        let dispatcher = Arc::new(Dispatcher::default());
        let connector = Arc::new(Refusing::default());
        let _watch = dispatcher.watch(WAITER, &connector, "ch", Duration::from_secs(1));
        tokio::time::sleep(Duration::from_secs(10)).await;
        dispatcher.shutdown();
        let asked = connector.asked.lock().unwrap().clone();
        let gaps: Vec<u128> = asked
            .windows(2)
            .map(|pair| (pair[1] - pair[0]).as_millis())
            .collect();
        assert_eq!(gaps, [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000]);
    }

    #[test]
    fn a_subscriber_ended_with_its_runtime_is_started_again_on_the_next() {
        let dispatcher = Arc::new(Dispatcher::default());
        let connector = Arc::new(Refusing::default());
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap()
        };
        for runtime in [runtime(), runtime()] {
            runtime.block_on(async {
                let _watch = dispatcher.watch(WAITER, &connector, "ch", Duration::from_secs(1));
                // The subscriber's first attempt.
                tokio::task::yield_now().await;
            });
        }
        assert_eq!(connector.asked.lock().unwrap().len(), 2);
    }
}
