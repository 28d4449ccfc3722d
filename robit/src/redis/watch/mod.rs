//! Watching for a release ([`Driver::watch_release`](crate::Driver::watch_release)):
//! hand-off notifications, one subscription per driver fanned out to its waiters.
//!
//! A release grants the lock to the longest-waiting waiter and publishes
//! `<waiter id>@<token>` on the namespace's channel; a withdrawal, the expiry of a holder
//! with waiters, or a release to a quorum's waiter reserves the lock for it to claim
//! instead, and publishes its id. The driver keeps one subscription to the channel — not
//! one per waiter — and wakes the waiter with that id, if it is one of its own (keeping
//! the wake for it if its watch has not registered yet: see `waiters.rs`). A grant the
//! answer of this driver's own release names is kept for its waiter's next acquire to
//! take up (`handoffs.rs`); a published one is not. A lost message (the
//! subscription dropped, the subscriber reconnecting) costs the waiter at most its poll
//! interval.
//!
//! A release or withdrawal made through this driver does not wait for its own
//! notification to come back: [`Dispatcher::freeing`] wakes the waiter its answer names
//! directly, if it is this driver's.

pub(super) mod handoffs;
mod waiters;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use self::handoffs::Handoffs;
use self::waiters::Waiters;
use super::Connector;
use super::scripts::answers::{Freed, Handoff, parse_waiter};
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
    /// Grants made straight to this driver's waiters by releases.
    pub(super) handoffs: Handoffs,
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

    /// A published hand-off wakes its waiter; a grant it names is not kept (it may be
    /// stale: see `handoffs.rs`), so the waiter's next acquire asks the server.
    fn deliver(&self, payload: &[u8]) {
        let waiter = match Handoff::parse(payload) {
            Some(handoff) => Some(handoff.waiter),
            None => parse_waiter(payload),
        };
        if let Some(waiter) = waiter {
            self.waiters.wake(waiter);
        }
    }

    /// A release of this driver's answered that it granted the lock to `handoff`'s
    /// waiter: kept for its next acquire if the waiter is this driver's, and the waiter
    /// woken. Answers whether it was.
    fn handed(&self, handoff: Handoff) -> bool {
        self.handoffs.granted(handoff.waiter, handoff.fence);
        self.waiters.wake(handoff.waiter)
    }

    /// Runs `call`, which frees a lock (a release or a withdrawal), and wakes the waiter
    /// its answer names, if it is one of this driver's, without waiting for the
    /// published notification to come back from the server: with the grant the release
    /// made it, which its next acquire takes up with no round trip, or the reservation
    /// it is to claim. The releasing task then yields, so that the waiter goes on before
    /// whatever the releaser does next (another `lock()` of the same name, typically).
    pub(super) async fn freeing<E>(
        &self,
        call: impl Future<Output = Result<Freed, E>>,
    ) -> Result<Freed, E> {
        let answer = call.await;
        let woke = match &answer {
            Ok(Freed::ReservedFor(Some(waiter))) => self.waiters.wake(*waiter).then_some(*waiter),
            Ok(Freed::GrantedTo(handoff)) => self.handed(*handoff).then_some(handoff.waiter),
            _ => None,
        };
        if let Some(waiter) = woke {
            tracing::trace!(target: "robit", waiter, "woke the waiter the lock was handed to");
            tokio::task::yield_now().await;
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
    async fn nobody_is_woken_for_a_release_that_found_nothing_of_the_callers() {
        let dispatcher = Dispatcher::default();
        let watch = dispatcher.waiters.watch(WAITER);
        let freed = dispatcher
            .freeing(async { Ok::<_, ()>(Freed::Nothing) })
            .await;
        assert_eq!(freed, Ok(Freed::Nothing));
        assert!(watch.now_or_never().is_none());
    }

    #[tokio::test]
    async fn a_releaser_yields_once_to_the_waiter_its_answer_woke() {
        let dispatcher = Dispatcher::default();
        // A watch registers when first polled.
        let mut watch = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut watch).now_or_never().is_none());
        let answer = Ok::<_, ()>(Freed::ReservedFor(Some(WAITER)));
        let mut freeing = Box::pin(dispatcher.freeing(async { answer }));
        assert!((&mut freeing).now_or_never().is_none(), "no yield");
        assert_eq!(freeing.await, answer);
        assert!(watch.now_or_never().is_some());
    }

    /// `WAITER`, answered held, and its watch, registered.
    fn queued_and_watching(dispatcher: &Dispatcher) -> std::pin::Pin<Box<ReleaseWatch>> {
        dispatcher
            .handoffs
            .queued(WAITER, tokio::time::Instant::now());
        let mut watch = Box::pin(dispatcher.waiters.watch(WAITER));
        assert!((&mut watch).now_or_never().is_none());
        watch
    }

    #[tokio::test]
    async fn a_grant_a_release_made_a_waiter_of_this_driver_is_kept_for_it_and_wakes_it() {
        let dispatcher = Dispatcher::default();
        let watch = queued_and_watching(&dispatcher);
        let handoff = Handoff {
            waiter: WAITER,
            fence: crate::driver::FenceToken::new(9),
        };
        let answer = Ok::<_, ()>(Freed::GrantedTo(handoff));
        assert_eq!(dispatcher.freeing(async { answer }).await, answer);
        assert!(watch.now_or_never().is_some(), "not woken");
        let kept = dispatcher
            .handoffs
            .take_granted(WAITER)
            .map(|(_, fence)| fence);
        assert_eq!(kept, Some(handoff.fence));
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

    #[test]
    fn a_published_grant_wakes_its_waiter_but_is_not_kept() {
        let dispatcher = Dispatcher::default();
        let mut watch = queued_and_watching(&dispatcher);
        dispatcher.deliver(b"c@7");
        assert!((&mut watch).now_or_never().is_none());
        dispatcher.deliver(b"b@7");
        assert!(watch.now_or_never().is_some());
        assert_eq!(dispatcher.handoffs.take_granted(WAITER), None);
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
