//! The Redis driver's settings, builder and validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Connector, FirstUse, RedisDriver, UrlConnector};
use crate::millis::Millis;

/// Default namespace: the prefix of every key and channel the driver uses.
pub const DEFAULT_NAMESPACE: &str = "robit";
/// Default time limit for one Redis command.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// Default time limit for establishing a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time a lock stays reserved for the waiter it was handed to.
pub const DEFAULT_HANDOFF_WINDOW: Duration = Duration::from_millis(500);
/// Default time grants are suspended after the namespace's state was lost: at least the
/// longest TTL any client uses, so that every grant made before the loss has lapsed
/// before a new one is made.
pub const DEFAULT_QUARANTINE: Duration = crate::engine::DEFAULT_TTL;
/// Default cap on how many calls go out in one batch: enough that a burst of renewals or
/// of locks shares a few script calls, few enough that one batch holds the server for
/// about half a millisecond (a few microseconds a call).
pub const DEFAULT_MAX_BATCH: usize = 128;

/// [`RedisDriverBuilder::build`] rejected the configuration.
///
/// # Example
///
/// ```
/// use robit::redis::{RedisConfigError, RedisDriver};
///
/// let err = RedisDriver::builder("redis://127.0.0.1:6379").namespace("").build().unwrap_err();
/// assert!(matches!(err, RedisConfigError::InvalidNamespace { .. }));
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum RedisConfigError {
    /// The connection URL could not be parsed.
    #[error(
        "invalid Redis URL {url}: {source}; expected redis://[user:password@]host[:port][/db] \
         or rediss:// for TLS"
    )]
    InvalidUrl {
        /// The URL, with any password hidden.
        url: String,
        /// What the parser said.
        #[source]
        source: redis::RedisError,
    },
    /// The namespace is empty or contains `{` or `}`, which would break the hash tag
    /// that keeps a namespace's keys in one Redis Cluster slot.
    #[error("namespace {namespace:?} must be non-empty and free of '{{' and '}}'")]
    InvalidNamespace {
        /// The rejected namespace.
        namespace: String,
    },
    /// The quarantine is longer than [`MAX_TTL`](crate::defaults::MAX_TTL).
    #[error(
        "a quarantine of {} is longer than a year; set it to the longest TTL in use",
        Millis(*.quarantine)
    )]
    QuarantineTooLong {
        /// The rejected quarantine.
        quarantine: Duration,
    },
    /// Replica acknowledgements were asked for with a timeout that is zero, or not
    /// shorter than half the command timeout (a call that meets NOSCRIPT waits twice, and
    /// the command would time out first).
    #[error(
        "a replica acknowledgement timeout of {} must be greater than zero and shorter than \
         half the command timeout ({}): a call that must reload its script waits twice",
        Millis(*.timeout),
        Millis(*.command_timeout)
    )]
    ReplicaAckTimeout {
        /// The rejected timeout.
        timeout: Duration,
        /// The command timeout it must be shorter than.
        command_timeout: Duration,
    },
    /// A timeout, a window or the batch cap is zero.
    #[error("{setting} must be greater than zero")]
    Zero {
        /// Which setting.
        setting: &'static str,
    },
    /// A quorum of fewer than [`MIN_QUORUM_SERVERS`](super::MIN_QUORUM_SERVERS) servers.
    #[error(
        "a quorum of {servers} servers: give at least 3 (an odd number), so that one server's \
         loss leaves a majority"
    )]
    QuorumTooSmall {
        /// How many were given.
        servers: usize,
    },
    /// A quorum that names one server twice: its grant would count twice.
    #[error("the quorum names {server} twice; each server must be a separate Redis")]
    QuorumServerTwice {
        /// The server, as its connector describes it (no password).
        server: String,
    },
    /// A quorum's servers use different namespaces.
    #[error(
        "the quorum's servers use namespaces {first:?} and {other:?}; give them all the same one"
    )]
    QuorumNamespaces {
        /// The first server's.
        first: String,
        /// Another's.
        other: String,
    },
    /// A quorum member in cluster mode.
    #[error(
        "{server} is in cluster mode; a quorum is made of independent servers, each on its own"
    )]
    QuorumOfCluster {
        /// The server, as its connector describes it.
        server: String,
    },
}

/// The validated settings every operation reads.
#[derive(Clone)]
pub(super) struct Settings {
    pub(super) namespace: String,
    /// `{namespace}`: the hash tag all of the namespace's keys start with, unless they
    /// are spread over buckets.
    pub(super) tag: String,
    /// Cluster mode: the namespace is cut into buckets, each with its own hash tag,
    /// counter and quarantine (keys.rs).
    pub(super) spread: bool,
    pub(super) channel: String,
    pub(super) command_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) handoff_window: Duration,
    /// The hand-off window as the scripts take it, in whole milliseconds.
    pub(super) handoff_window_ms: u64,
    pub(super) quarantine: Duration,
    pub(super) first_use: FirstUse,
    pub(super) detect_failover: bool,
    /// How many replicas must acknowledge a grant or renewal, and how long to wait for
    /// them; `None` when none must.
    pub(super) replica_acks: Option<ReplicaAcks>,
    /// At most this many calls go out in one batch (1: none are batched).
    pub(super) max_batch: usize,
}

/// Replica acknowledgements a grant or renewal needs before the mutex counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ReplicaAcks {
    pub(super) replicas: u32,
    pub(super) timeout: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("namespace", &self.namespace)
            .field("cluster", &self.spread)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("handoff_window", &self.handoff_window)
            .field("quarantine", &self.quarantine)
            .field("first_use", &self.first_use)
            .field("detect_failover", &self.detect_failover)
            .field("replica_acks", &self.replica_acks)
            .field("max_batch", &self.max_batch)
            .finish()
    }
}

/// Builds a [`RedisDriver`]; start with [`RedisDriver::builder`] or
/// [`RedisDriver::with_connector`].
///
/// # Example
///
/// ```
/// use robit::redis::RedisDriver;
/// use std::time::Duration;
///
/// let driver = RedisDriver::builder("redis://app:s3cret@127.0.0.1:6379/0")
///     .namespace("billing")
///     .command_timeout(Duration::from_millis(500))
///     .quarantine(Duration::from_secs(60)) // the longest TTL any client uses
///     .build()?;
/// assert!(!format!("{driver:?}").contains("s3cret"));
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
pub struct RedisDriverBuilder<C: Connector = UrlConnector> {
    connector: Result<C, RedisConfigError>,
    namespace: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    handoff_window: Duration,
    quarantine: Duration,
    first_use: FirstUse,
    detect_failover: bool,
    replica_acks: Option<ReplicaAcks>,
    spread: bool,
    max_batch: usize,
}

impl<C: Connector> RedisDriverBuilder<C> {
    pub(super) fn new(connector: Result<C, RedisConfigError>) -> Self {
        Self {
            connector,
            namespace: DEFAULT_NAMESPACE.to_owned(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            handoff_window: DEFAULT_HANDOFF_WINDOW,
            quarantine: DEFAULT_QUARANTINE,
            first_use: FirstUse::default(),
            detect_failover: true,
            replica_acks: None,
            spread: false,
            max_batch: DEFAULT_MAX_BATCH,
        }
    }

    /// Cluster mode, for a connector over a Redis Cluster client: spreads the namespace
    /// over 1,024 buckets by lock name, each with its own hash tag, fencing counter and
    /// quarantine, so that its locks land on every master ([`RedisDriver::cluster`] sets
    /// it). Without it, all of a namespace's keys share one hash tag, hence one slot and
    /// one master. Every client of a namespace must agree: the two lay out their keys
    /// differently (docs/redis.md, "Redis Cluster").
    ///
    /// In cluster mode a node that lacks a script is sent its text, since the cluster
    /// client may redirect a call to another node.
    ///
    /// # Example
    ///
    /// ```
    /// use robit::redis::{ClusterConnector, RedisDriver};
    ///
    /// let node = redis::RedisConnectionInfo::default().set_username("locker").set_password("s3cret");
    /// let connector = ClusterConnector::with_node_info(&["redis://10.0.0.1:7000"], node)?;
    /// let driver = RedisDriver::with_connector(connector).cluster_mode().build()?;
    /// # drop(driver);
    /// # Ok::<(), robit::redis::RedisConfigError>(())
    /// ```
    pub fn cluster_mode(mut self) -> Self {
        self.spread = true;
        self
    }

    /// The prefix of every key and channel. Drivers that should see each other's locks
    /// must use the same namespace. Default [`DEFAULT_NAMESPACE`].
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The time limit for one command; a hung server surfaces as a failed (and retried)
    /// operation instead of a hang. Default [`DEFAULT_COMMAND_TIMEOUT`].
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// The time limit for a call's wait for a connection: its own connection attempt, or
    /// another call's that it waits behind. Default [`DEFAULT_CONNECT_TIMEOUT`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a lock stays reserved for the waiter it was handed to, when it is
    /// reserved rather than granted outright: after its holder's expiry, a withdrawal,
    /// or for a quorum's waiter. A waiter that has died costs the others this long (a
    /// grant a release made it, its TTL). Default [`DEFAULT_HANDOFF_WINDOW`].
    pub fn handoff_window(mut self, window: Duration) -> Self {
        self.handoff_window = window;
        self
    }

    /// How long grants are suspended when the namespace's state is found missing by a
    /// process that had seen it — after a restart without persistence, a FLUSHALL, an
    /// eviction. Set it to at least the longest TTL of any client in the namespace; zero
    /// turns the protection off (a holder from before the loss could then overlap with a
    /// new one). Default [`DEFAULT_QUARANTINE`].
    pub fn quarantine(mut self, quarantine: Duration) -> Self {
        self.quarantine = quarantine;
        self
    }

    /// What to make of the namespace missing on the server before any driver of this
    /// process has seen it there: a new namespace, created at once (the default), or lost
    /// state, quarantined. See [`FirstUse`].
    pub fn first_use(mut self, first_use: FirstUse) -> Self {
        self.first_use = first_use;
        self
    }

    /// Whether to quarantine the namespace when the server answering is not the one whose
    /// state it was written under: a replica promoted by a failover, or the same server
    /// restarted from a snapshot or an AOF. Either may lack the last grants, whose holders
    /// still believe in them. Default on.
    ///
    /// The acquire script reads the server it runs on (`INFO server replication`, so an
    /// ACL user needs `+info`) and compares it with the one the namespace recorded. Every failover and every restart then costs the namespace one quarantine,
    /// even when no write was lost. Turn it off only where nothing can come back older:
    /// every client of a namespace must use the same setting (docs/redis.md).
    pub fn detect_failover(mut self, on: bool) -> Self {
        self.detect_failover = on;
        self
    }

    /// Counts a grant or renewal only once `replicas` replicas have acknowledged it,
    /// waiting up to `timeout` for them; zero replicas (the default) waits for none.
    ///
    /// Each acquire and renew is followed by `WAIT <replicas> <timeout>` in the same
    /// round trip. A grant that too few replicas acknowledged in time is released at
    /// once and the attempt fails with a transient error (a waiting `lock()` retries); a
    /// renewal that too few acknowledged counts as failed, so the watchdog retries it
    /// until the validity deadline. The wait is part of the round trip, so it comes out
    /// of the lease's validity like any other latency: keep `timeout` well under the
    /// TTL, and under the mutex's renew timeout; `build()` refuses one that is not
    /// shorter than half the command timeout.
    ///
    /// What it buys: a failover to a replica that acknowledged keeps every grant the
    /// mutex counted, so holders keep their leases. It does not make replication
    /// synchronous — a failover may still pick a replica that did not acknowledge —
    /// which is why [`detect_failover`](Self::detect_failover) stays on with it
    /// (docs/safety.md).
    pub fn replica_acks(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_acks = (replicas > 0).then_some(ReplicaAcks { replicas, timeout });
        self
    }

    /// At most how many calls of one kind (acquire, renew, release) go out together.
    /// A call that finds none of its kind in flight goes out at once, alone; those that
    /// arrive while one is in flight wait for it and then go out as one script call,
    /// which costs the server far less than as many calls (docs/redis.md, "Batching").
    /// In cluster mode, only calls on one slot go together. 1 sends every call alone.
    /// Default [`DEFAULT_MAX_BATCH`].
    pub fn max_batch(mut self, calls: usize) -> Self {
        self.max_batch = calls;
        self
    }

    /// Validates the settings and builds the driver. It connects lazily, on first use.
    ///
    /// # Errors
    ///
    /// A [`RedisConfigError`] naming what is wrong.
    pub fn build(self) -> Result<RedisDriver<C>, RedisConfigError> {
        let connector = self.connector?;
        if self.namespace.is_empty() || self.namespace.contains(['{', '}']) {
            return Err(RedisConfigError::InvalidNamespace {
                namespace: self.namespace,
            });
        }
        if self.quarantine > crate::engine::MAX_TTL {
            return Err(RedisConfigError::QuarantineTooLong {
                quarantine: self.quarantine,
            });
        }
        for (setting, value) in [
            ("the command timeout", self.command_timeout),
            ("the connect timeout", self.connect_timeout),
            ("the hand-off window", self.handoff_window),
        ] {
            if value.is_zero() {
                return Err(RedisConfigError::Zero { setting });
            }
        }
        if self.max_batch == 0 {
            return Err(RedisConfigError::Zero {
                setting: "the batch cap",
            });
        }
        if let Some(acks) = self.replica_acks
            && (acks.timeout.is_zero() || acks.timeout.saturating_mul(2) >= self.command_timeout)
        {
            return Err(RedisConfigError::ReplicaAckTimeout {
                timeout: acks.timeout,
                command_timeout: self.command_timeout,
            });
        }
        let settings = Settings {
            tag: format!("{{{}}}", self.namespace),
            channel: format!("{}:handoff", self.namespace),
            namespace: self.namespace,
            spread: self.spread,
            command_timeout: self.command_timeout,
            connect_timeout: self.connect_timeout,
            handoff_window: self.handoff_window,
            handoff_window_ms: super::scripts::whole_millis::millis_ceil(self.handoff_window),
            quarantine: self.quarantine,
            first_use: self.first_use,
            detect_failover: self.detect_failover,
            replica_acks: self.replica_acks,
            max_batch: self.max_batch,
        };
        Ok(RedisDriver::from_parts(Arc::new(connector), settings))
    }
}

impl<C: Connector> fmt::Debug for RedisDriverBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisDriverBuilder")
            .field(
                "connector",
                &self.connector.as_ref().map(Connector::describe),
            )
            .field("namespace", &self.namespace)
            .field("command_timeout", &self.command_timeout)
            .field("handoff_window", &self.handoff_window)
            .field("quarantine", &self.quarantine)
            .field("first_use", &self.first_use)
            .field("detect_failover", &self.detect_failover)
            .field("replica_acks", &self.replica_acks)
            .field("cluster", &self.spread)
            .field("max_batch", &self.max_batch)
            .finish_non_exhaustive()
    }
}
