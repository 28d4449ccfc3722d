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
/// use robit::ReleaseWatch;
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
