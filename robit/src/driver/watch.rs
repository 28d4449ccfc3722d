//! Release notifications: how a driver wakes waiters.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A subscription to releases of one lock name; see [`Driver::watch_release`](crate::Driver::watch_release).
///
/// # Example
///
/// ```
/// use robit::driver::ReleaseWatch;
/// use std::sync::Arc;
/// use tokio::sync::Notify;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let released = Arc::new(Notify::new());
/// // Created before the release happens, so it cannot miss it.
/// let watch = ReleaseWatch::new(released.clone().notified_owned());
/// released.notify_waiters();
/// watch.await;
/// # }
/// ```
#[must_use = "a watch does nothing unless awaited"]
pub struct ReleaseWatch {
    future: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl ReleaseWatch {
    /// A watch that completes when `future` does.
    pub fn new(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            future: Some(Box::pin(future)),
        }
    }

    /// A watch that never completes: the driver has no release notifications.
    pub fn never() -> Self {
        Self { future: None }
    }

    /// Whether this watch can complete at all. A waiter with a live watch polls only as
    /// a fallback, at its longest interval; one without polls with exponential backoff.
    pub fn is_live(&self) -> bool {
        self.future.is_some()
    }
}

impl Future for ReleaseWatch {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.future.as_mut() {
            Some(future) => future.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

impl fmt::Debug for ReleaseWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReleaseWatch")
            .field("notifies", &self.future.is_some())
            .finish()
    }
}

/// Watches keyed by what they wait for (the local driver's lock names), each completed
/// by [`notify`](Self::notify) on its key. An entry lives while a watch on it does.
///
/// Keys are only ever looked up, or all notified at once, so hash order cannot reach
/// behaviour.
pub(crate) struct WatchRegistry<K> {
    entries: std::sync::Mutex<std::collections::HashMap<K, Watchers>>,
}

struct Watchers {
    notify: std::sync::Arc<tokio::sync::Notify>,
    count: usize,
}

impl<K> Default for WatchRegistry<K> {
    fn default() -> Self {
        Self {
            entries: std::sync::Mutex::default(),
        }
    }
}

impl<K> WatchRegistry<K>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    fn entries(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<K, Watchers>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A watch completed by the next [`notify`](Self::notify) of `key`. It is registered
    /// at once, so a notification before it is first polled still completes it.
    pub(crate) fn watch(self: &std::sync::Arc<Self>, key: K) -> ReleaseWatch {
        let notified = {
            let mut entries = self.entries();
            let entry = entries.entry(key.clone()).or_insert_with(|| Watchers {
                notify: std::sync::Arc::default(),
                count: 0,
            });
            entry.count += 1;
            std::sync::Arc::clone(&entry.notify).notified_owned()
        };
        let unwatch = Unwatch {
            registry: std::sync::Arc::clone(self),
            key: Some(key),
        };
        ReleaseWatch::new(async move {
            let _unwatch = unwatch;
            notified.await;
        })
    }

    /// Completes every watch on `key`; whether there was any.
    pub(crate) fn notify(&self, key: &K) -> bool {
        let entries = self.entries();
        let Some(watchers) = entries.get(key) else {
            return false;
        };
        watchers.notify.notify_waiters();
        true
    }

    /// Completes every watch: after notifications may have been lost.
    #[cfg(feature = "postgres")]
    pub(crate) fn notify_all(&self) {
        for watchers in self.entries().values() {
            watchers.notify.notify_waiters();
        }
    }

    /// How many keys are watched.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }
}

/// Drops one watch's share of its key's entry.
struct Unwatch<K>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    registry: std::sync::Arc<WatchRegistry<K>>,
    key: Option<K>,
}

impl<K> Drop for Unwatch<K>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut entries = self.registry.entries();
        if let Some(watchers) = entries.get_mut(&key) {
            watchers.count -= 1;
            if watchers.count == 0 {
                entries.remove(&key);
            }
        }
    }
}
