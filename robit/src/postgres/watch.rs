//! Waking waiters: one connection per driver listens on the schema's channel, where a
//! release (or a withdraw, or a force release) names the first waiter of the lock it
//! freed; the waiter with that id wakes and claims the lock.
//!
//! Behind a transaction-mode pooler, a notification cannot find its way back, and the
//! waiters poll instead (said once, at INFO), unless a direct URL was given to listen on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::task::AbortHandle;

use super::Shared;
use super::config::Settings;
use super::url::connect_options;
use crate::driver::{AcquireRequest, ReleaseWatch, WatchRegistry};

/// How long the listener waits before it connects again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The driver's listening connection, run by a task of its own from the first wait on,
/// and stopped when the driver goes.
pub(super) struct Listener {
    /// The waiters of this driver that wait now, by id.
    registry: Arc<WatchRegistry<u128>>,
    /// Where the listening connection comes from: a pool of one, outside the driver's.
    pool: Option<PgPool>,
    task: StdMutex<Option<AbortHandle>>,
    /// Whether the waiters' polling has been logged.
    polling_said: AtomicBool,
}

impl Listener {
    /// A listener on `settings.listen_url` if given, else on the server `pool` reaches,
    /// over a connection of its own, outside `pool`: a listening connection is never
    /// given back, and would leave the pool one short for good.
    pub(super) fn new(settings: &Settings, pool: &PgPool) -> Self {
        let options = match settings.listen_url.as_deref() {
            Some(url) => connect_options(url).ok(),
            None => Some((*pool.connect_options()).clone()),
        };
        let pool = options.map(|options| {
            PgPoolOptions::new()
                .max_connections(1)
                .min_connections(0)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_lazy_with(options)
        });
        Self {
            registry: Arc::default(),
            pool,
            task: StdMutex::new(None),
            polling_said: AtomicBool::new(false),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// A watch that completes when a release names `request`'s waiter; none for a single
/// try, or when the waiters poll.
pub(super) fn watch_release(shared: &Arc<Shared>, request: &AcquireRequest) -> ReleaseWatch {
    let Some(waiter) = request.waiter else {
        return ReleaseWatch::never();
    };
    let listener = &shared.listener;
    let settings = &shared.settings;
    let pool = match (
        &listener.pool,
        settings.transaction_pooler && settings.listen_url.is_none(),
    ) {
        (Some(pool), false) => pool.clone(),
        _ => {
            if !listener.polling_said.swap(true, Ordering::Relaxed) {
                tracing::info!(target: "robit", "postgres: waiters poll for releases, since notifications cannot come back through a transaction-mode pooler; give the driver a listen_url that reaches the server directly to wake them at once");
            }
            return ReleaseWatch::never();
        }
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return ReleaseWatch::never();
    };
    {
        let mut task = listener.task.lock().unwrap_or_else(PoisonError::into_inner);
        if task.as_ref().is_none_or(AbortHandle::is_finished) {
            let (registry, channel) = (
                Arc::clone(&listener.registry),
                shared.settings.schema.clone(),
            );
            *task = Some(
                runtime
                    .spawn(listen(pool, channel, registry))
                    .abort_handle(),
            );
        }
    }
    listener.registry.watch(waiter.id)
}

/// Listens on `channel` and wakes the waiter each notification names; after a lost
/// connection, wakes every waiter, since a notification may have been lost with it.
async fn listen(pool: PgPool, channel: String, registry: Arc<WatchRegistry<u128>>) {
    let mut failing = false;
    loop {
        match listen_once(&pool, &channel, &registry, &mut failing).await {
            Ok(()) => {}
            Err(error) => {
                if !failing {
                    failing = true;
                    tracing::warn!(target: "robit", %error, retry_in = ?RECONNECT_AFTER, "postgres: the connection that listens for releases failed; waiters poll until it is back");
                }
            }
        }
        registry.notify_all();
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

/// One listening connection, for as long as it lasts.
async fn listen_once(
    pool: &PgPool,
    channel: &str,
    registry: &WatchRegistry<u128>,
    failing: &mut bool,
) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener.listen(channel).await?;
    if std::mem::take(failing) {
        tracing::info!(target: "robit", "postgres: the connection that listens for releases is back");
    }
    // Anything released while nobody listened: every waiter asks again.
    registry.notify_all();
    while let Some(notification) = listener.try_recv().await? {
        if let Ok(waiter) = u128::from_str_radix(notification.payload(), 16) {
            registry.notify(&waiter);
        }
    }
    Ok(())
}
