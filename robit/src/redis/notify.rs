//! Hand-off notifications: one subscription per driver, fanned out to waiters.
//!
//! A release (or withdrawal, or the expiry of a holder with waiters) reserves the lock
//! for the longest-waiting waiter and publishes that waiter's id on the namespace's
//! channel. The driver keeps one subscription to it — not one per waiter — and wakes the
//! waiter with that id, if it is one of its own. A lost message (the subscription
//! dropped, the subscriber reconnecting) costs the waiter at most its poll interval.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Connector;
use crate::ReleaseWatch;

/// Reconnection delays of the subscriber after a failure.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

#[derive(Default)]
pub(super) struct Dispatcher {
    waiters: StdMutex<HashMap<u128, Watchers>>,
    started: AtomicBool,
    stop: CancellationToken,
}

struct Watchers {
    notify: Arc<Notify>,
    count: usize,
}

impl Dispatcher {
    fn waiters(&self) -> MutexGuard<'_, HashMap<u128, Watchers>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A watch completed by the next hand-off to `waiter`. Starts the subscription on
    /// first use.
    pub(super) fn watch<C: Connector>(
        self: &Arc<Self>,
        waiter: u128,
        connector: &Arc<C>,
        channel: &str,
    ) -> ReleaseWatch {
        self.start(connector, channel);
        let notified = {
            let mut waiters = self.waiters();
            let entry = waiters.entry(waiter).or_insert_with(|| Watchers {
                notify: Arc::new(Notify::new()),
                count: 0,
            });
            entry.count += 1;
            Arc::clone(&entry.notify).notified_owned()
        };
        let unwatch = Unwatch {
            dispatcher: Arc::clone(self),
            waiter,
        };
        ReleaseWatch::new(async move {
            let _unwatch = unwatch;
            notified.await;
        })
    }

    fn deliver(&self, payload: &[u8]) {
        let Some(waiter) = std::str::from_utf8(payload)
            .ok()
            .and_then(|hex| u128::from_str_radix(hex, 16).ok())
        else {
            return;
        };
        if let Some(watchers) = self.waiters().get(&waiter) {
            watchers.notify.notify_waiters();
        }
    }

    fn start<C: Connector>(self: &Arc<Self>, connector: &Arc<C>, channel: &str) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to run the subscriber on: waiters poll.
            self.started.store(false, Ordering::Release);
            return;
        };
        let dispatcher = Arc::clone(self);
        let connector = Arc::clone(connector);
        let channel = channel.to_owned();
        let stop = self.stop.clone();
        runtime.spawn(async move {
            tokio::select! {
                biased;
                () = stop.cancelled() => {}
                () = subscribe(&dispatcher, &*connector, &channel) => {}
            }
        });
    }

    /// Stops the subscriber task: the driver is gone.
    pub(super) fn shutdown(&self) {
        self.stop.cancel();
    }
}

/// Subscribes and delivers, reconnecting with backoff, until cancelled.
async fn subscribe<C: Connector>(dispatcher: &Dispatcher, connector: &C, channel: &str) {
    let mut delay = RETRY_MIN;
    loop {
        match connector.subscriber().await {
            Ok(mut pubsub) => match pubsub.subscribe(channel).await {
                Ok(()) => {
                    tracing::debug!(target: "robit", channel, "subscribed to hand-off notifications");
                    delay = RETRY_MIN;
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        dispatcher.deliver(message.get_payload_bytes());
                    }
                    tracing::debug!(target: "robit", channel, "hand-off subscription ended; reconnecting");
                }
                Err(error) => {
                    tracing::warn!(target: "robit", %error, "could not subscribe to hand-off notifications; waiters poll meanwhile");
                }
            },
            Err(error) => {
                tracing::warn!(target: "robit", %error, "could not open the hand-off subscription; waiters poll meanwhile");
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// Drops one watcher of a waiter id when its watch goes away.
struct Unwatch {
    dispatcher: Arc<Dispatcher>,
    waiter: u128,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        let mut waiters = self.dispatcher.waiters();
        if let Some(watchers) = waiters.get_mut(&self.waiter) {
            watchers.count -= 1;
            if watchers.count == 0 {
                waiters.remove(&self.waiter);
            }
        }
    }
}
