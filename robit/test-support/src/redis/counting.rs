//! A connection that counts its round trips: how tests and benchmarks check that each
//! driver operation costs the one round trip it promises.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::{ConnectionLike, MultiplexedConnection, PubSub};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use robit::redis::{Connector, UrlConnector};

/// A command connection that adds one to a shared counter per round trip: a command, or
/// a pipeline (one round trip, however many commands it carries).
///
/// # Example
///
/// ```no_run
/// use std::sync::Arc;
/// use std::sync::atomic::AtomicU64;
/// use robit::redis::{RedisDriver, UrlConnector};
/// use robit_test_support::redis::CountingConnector;
///
/// let round_trips = Arc::new(AtomicU64::new(0));
/// let url = UrlConnector::new("redis://127.0.0.1:7000").unwrap();
/// let driver = RedisDriver::with_connector(CountingConnector::new(url, &round_trips))
///     .build()
///     .unwrap();
/// # drop(driver);
/// ```
#[derive(Clone)]
pub struct Counted {
    inner: MultiplexedConnection,
    round_trips: Arc<AtomicU64>,
}

impl Counted {
    /// `inner`, counting its round trips into `round_trips`.
    pub fn new(inner: MultiplexedConnection, round_trips: &Arc<AtomicU64>) -> Self {
        Self {
            inner,
            round_trips: Arc::clone(round_trips),
        }
    }
}

impl std::fmt::Debug for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counted")
            .field("round_trips", &self.round_trips)
            .finish_non_exhaustive()
    }
}

impl ConnectionLike for Counted {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

/// Connects robit's Redis driver through [`Counted`] connections to one URL.
#[derive(Debug)]
pub struct CountingConnector {
    url: UrlConnector,
    round_trips: Arc<AtomicU64>,
}

impl CountingConnector {
    /// Connections to `url`, each counting its round trips into `round_trips`.
    pub fn new(url: UrlConnector, round_trips: &Arc<AtomicU64>) -> Self {
        Self {
            url,
            round_trips: Arc::clone(round_trips),
        }
    }
}

#[robit::driver::async_trait]
impl Connector for CountingConnector {
    type Connection = Counted;

    async fn connect(&self) -> redis::RedisResult<Counted> {
        Ok(Counted::new(self.url.connect().await?, &self.round_trips))
    }

    async fn subscriber(&self) -> redis::RedisResult<PubSub> {
        self.url.subscriber().await
    }

    fn describe(&self) -> String {
        self.url.describe()
    }
}
