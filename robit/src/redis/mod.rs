//! The Redis driver (cargo feature `redis`, on by default).
//!
//! One key per lock holds the owner's random token and when its grant ends. Acquire,
//! renew and release are each one round trip: a server-side script, called with EVALSHA.
//! Calls of one kind made while another is in flight go out together, as one script call
//! ([`RedisDriverBuilder::max_batch`]).
//! Uncontended, a lock + unlock runs six commands on the server, scripts' calls
//! included: the acquire's `TIME`, `SET … NX PX … GET` on the lock and `SET … GET` on
//! the fencing counter, and the release's `GETDEL`. Waiters queue fairly, and a release
//! hands the lock to the longest-waiting one and wakes it through one shared pub/sub
//! subscription per driver — or, when that waiter shares the releaser's driver,
//! directly, as soon as the release is sent: its claim then follows the release on the
//! same connection (docs/redis.md, "Hand-off inside one process").
//!
//! # Fencing tokens and their lifecycle
//!
//! A namespace has **one** fencing counter (`{ns}:fence`), shared by all its lock names,
//! so a million distinct names leave no trace once released: no key is ever created per
//! name except the lock (and, while someone waits, its queue), and both expire.
//!
//! Every grant's token is the larger of the last token plus one and the server's clock in
//! microseconds, so tokens keep increasing across any restart — without persistence, or
//! from an older snapshot — as long as the server's clock has not gone back.
//!
//! A loss erases the lock keys too, and a client may still be holding a lease it has no
//! way of knowing is gone. So when a process whose drivers have seen the namespace finds
//! the counter missing, the namespace is **quarantined**: no grants for
//! [`RedisDriverBuilder::quarantine`] (default 30 s — set it to at least your longest
//! TTL). Every holder from before the loss fails to renew and signals its loss inside
//! that window, before anyone else can hold the lock. A process that has never seen the
//! namespace cannot tell a loss from a new namespace; by default it creates it
//! ([`FirstUse`] weighs the two). Run Redis with `maxmemory-policy noeviction`: other
//! policies can evict the counter (a quarantine) or the lock keys and the quarantine
//! itself (no protection).
//!
//! # Failover and restarts from older data
//!
//! A failover to a replica that lagged, or a restart from a snapshot or an AOF, brings
//! back the counter but not the last grants. The counter records the server that
//! granted in it, every grant reads which server it runs on, and an acquire on a
//! server other than the namespace's (or another life of it) quarantines the namespace
//! as after a loss ([`RedisDriverBuilder::detect_failover`], on by default). A grant or
//! renewal can also be made to wait for replicas
//! ([`RedisDriverBuilder::replica_acks`]). docs/redis.md has the measurements.
//!
//! # Sentinel and Redis Cluster
//!
//! [`RedisDriver::sentinel`] follows the primary a set of sentinels name.
//! [`RedisDriver::cluster`] talks to a Redis Cluster in cluster mode: a namespace is cut
//! into 1,024 buckets by lock name, each with its own fencing counter and quarantine, so
//! that its locks spread over every master (docs/redis.md, "Redis Cluster").
//!
//! # A quorum of servers
//!
//! [`RedlockDriver`] holds a lock on a majority of N independent servers, each a
//! `RedisDriver` of its own (docs/redlock.md).
//!
//! # Example
//!
//! ```no_run
//! use robit::Mutex;
//! use robit::redis::RedisDriver;
//! use std::time::Duration;
//!
//! # #[tokio::main] async fn main() -> Result<(), robit::BoxError> {
//! let driver = RedisDriver::builder("redis://127.0.0.1:6379")
//!     .namespace("billing")
//!     .build()?;
//! let mutex = Mutex::builder("invoice-run", driver.clone())
//!     .ttl(Duration::from_secs(10))
//!     .build()?;
//! let guard = mutex.lock().await?;
//! guard.unlock().await?;
//! # Ok(()) }
//! ```

mod acquire;
mod config;
mod error;
mod force_release;
mod inspect;
mod keys;
mod lease;
mod redlock;
mod scripts;
mod state_loss;
mod transport;
mod watch;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use async_trait::async_trait;

pub use self::config::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_HANDOFF_WINDOW, DEFAULT_MAX_BATCH,
    DEFAULT_NAMESPACE, DEFAULT_QUARANTINE, RedisConfigError, RedisDriverBuilder,
};
pub use self::redlock::{MIN_QUORUM_SERVERS, QuorumStats, RedlockDriver, RedlockDriverBuilder};
#[doc(hidden)]
pub use self::scripts::sources as script_sources;
pub use self::state_loss::FirstUse;
pub use self::transport::{ClusterConnector, Connector, SentinelConnector, UrlConnector};

use self::config::Settings;
use self::state_loss::namespace::Namespace;
use self::watch::Dispatcher;
use crate::driver::QuarantineLog;
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
};

/// A lock backend on one Redis server (or Redis-compatible server, 7.0 or later).
///
/// A cheap handle: clones share one multiplexed connection and one subscription, so give
/// a clone to every [`Mutex`](crate::Mutex). See the [module documentation](self) for the
/// data model, fencing and the quarantine after state loss.
///
/// # Example
///
/// ```
/// use robit::redis::RedisDriver;
///
/// let driver = RedisDriver::builder("redis://127.0.0.1:6379/0").build()?;
/// # drop(driver);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
pub struct RedisDriver<C: Connector = UrlConnector> {
    inner: Arc<Inner<C>>,
}

struct Inner<C: Connector> {
    connector: Arc<C>,
    settings: Settings,
    /// The command connection, once opened.
    connection: StdMutex<Option<transport::connection::Current<C::Connection>>>,
    generations: AtomicU64,
    /// Commands unanswered since the connection was last replaced (cluster mode waits
    /// for a few).
    timeouts: AtomicU32,
    /// Cluster mode: this driver is creating a new namespace's bucket counters.
    sweeping: AtomicBool,
    connecting: tokio::sync::Mutex<()>,
    dispatcher: Arc<Dispatcher>,
    /// Calls that wait to go out with others of their kind.
    batches: transport::batch::Batches,
    quarantine_log: QuarantineLog,
    namespace: Namespace,
}

impl<C: Connector> Drop for Inner<C> {
    fn drop(&mut self) {
        self.dispatcher.shutdown();
    }
}

impl RedisDriver<UrlConnector> {
    /// Starts building a driver for the server at `url` (`redis://` or, with the `redis-tls`
    /// feature, `rediss://`; ACL credentials go in the URL).
    pub fn builder(url: &str) -> RedisDriverBuilder<UrlConnector> {
        RedisDriverBuilder::new(UrlConnector::new(url))
    }
}

impl<C: Connector> RedisDriver<C> {
    /// Starts building a driver whose connections come from `connector`.
    pub fn with_connector(connector: C) -> RedisDriverBuilder<C> {
        RedisDriverBuilder::new(Ok(connector))
    }

    fn from_parts(connector: Arc<C>, settings: Settings) -> Self {
        let namespace = Namespace::new(settings.first_use, &connector.describe(), &settings.tag);
        Self {
            inner: Arc::new(Inner {
                connector,
                settings,
                connection: StdMutex::new(None),
                generations: AtomicU64::new(0),
                timeouts: AtomicU32::new(0),
                sweeping: AtomicBool::new(false),
                connecting: tokio::sync::Mutex::new(()),
                dispatcher: Arc::default(),
                batches: transport::batch::Batches::default(),
                quarantine_log: QuarantineLog::default(),
                namespace,
            }),
        }
    }

    /// Connects if need be and checks that the server serves the namespace, to surface
    /// a wrong address, a wrong or missing password, a user without access to the
    /// namespace's keys, or a Redis Cluster node that does not serve the namespace's
    /// slot at start-up rather than at the first lock.
    ///
    /// It reads the namespace's fencing counter (`GET {ns}:fence`): unlike `PING`, a
    /// command on one of the namespace's keys is answered only by a node that serves its
    /// slot, and only for a user allowed to read it.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] saying what failed.
    pub async fn ping(&self) -> Result<(), DriverError> {
        let keys = self.inner.settings.bucket_keys(0);
        let key = keys.fence();
        self.inner
            .bounded(|mut connection| async move {
                redis::cmd("GET")
                    .arg(key)
                    .query_async::<redis::Value>(&mut connection)
                    .await
                    .map(drop)
            })
            .await
    }
}

impl<C: Connector> Clone for RedisDriver<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: Connector> fmt::Debug for RedisDriver<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisDriver")
            .field("server", &self.inner.connector.describe())
            .field("settings", &self.inner.settings)
            .finish()
    }
}

#[async_trait]
impl<C: Connector> Driver for RedisDriver<C> {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        Ok(self.claim(request, None).await?.into_acquire())
    }

    fn supports_lock_delay(&self) -> bool {
        true
    }

    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        self.inspect_lock(name).await
    }

    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        self.release_by_force(name, holder).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        match request.waiter {
            Some(waiter) => self.inner.dispatcher.watch(
                waiter.id,
                &self.inner.connector,
                &self.inner.settings.channel,
                self.inner.settings.connect_timeout,
            ),
            None => ReleaseWatch::never(),
        }
    }

    /// At most the connect timeout waiting for a connection, then the command timeout
    /// for the script call (its NOSCRIPT retry included); twice that with replica
    /// acknowledgements, where an acquire gives back a grant too few acknowledged; and
    /// in cluster mode one command timeout more, for a new namespace's buckets.
    fn call_limit(&self) -> Option<Duration> {
        let settings = &self.inner.settings;
        let call = settings
            .connect_timeout
            .saturating_add(settings.command_timeout);
        let call = if settings.replica_acks.is_some() {
            call.saturating_mul(2)
        } else {
            call
        };
        // In cluster mode, the grant that creates a namespace waits up to one more
        // command timeout for its buckets' counters.
        Some(if settings.spread {
            call.saturating_add(settings.command_timeout)
        } else {
            call
        })
    }

    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        self.withdraw_waiter(request, false).await
    }
}
