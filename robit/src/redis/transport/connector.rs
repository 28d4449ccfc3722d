//! Where connections come from.

use async_trait::async_trait;
use redis::aio::{ConnectionLike, MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, Client, RedisResult};

use crate::redis::RedisConfigError;

/// Supplies the [`RedisDriver`](crate::redis::RedisDriver)'s connections: one multiplexed
/// connection for commands, and a pub/sub connection for hand-off notifications.
///
/// Production uses [`UrlConnector`]. A test harness or simulator implements this to run
/// the real driver over its own transport — a `redis::aio::MultiplexedConnection` and a
/// `redis::aio::PubSub` can both be built over any async stream.
///
/// The driver asks for a new connection whenever the current one breaks, stops
/// answering, or reaches a server that has become a replica, and readies each new
/// connection (its scripts loaded, its server checked) before it sends anything else on
/// it. So a connection should stay with the server it was opened to: one that reconnects
/// by itself, possibly to another server (redis-rs's `ConnectionManager`), would meet a
/// server without robit's scripts loaded. Failover detection does not depend on it: the
/// acquire script reads the identity of the server it runs on (docs/redis.md).
///
/// # Example
///
/// ```
/// use robit::redis::Connector;
/// use redis::aio::{MultiplexedConnection, PubSub};
///
/// /// Plain multiplexed connections to one server, rebuilt by the driver when broken.
/// struct Direct(redis::Client);
///
/// #[robit::driver::async_trait]
/// impl Connector for Direct {
///     type Connection = MultiplexedConnection;
///
///     async fn connect(&self) -> redis::RedisResult<MultiplexedConnection> {
///         self.0.get_multiplexed_async_connection().await
///     }
///
///     async fn subscriber(&self) -> redis::RedisResult<PubSub> {
///         self.0.get_async_pubsub().await
///     }
///
///     fn describe(&self) -> String {
///         "direct connection".to_owned()
///     }
/// }
/// ```
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// The command connection: cheap to clone, safe to use from many tasks at once.
    ///
    /// Commands from different tasks should reach the server in the order they were
    /// handed to it, as on redis-rs's multiplexed connection: a waiter of the same
    /// driver claims the lock right behind its release (see the [module](crate::redis)
    /// docs). A connection that reorders (a pool, say) stays correct, but such a claim
    /// then often arrives first and costs a wasted round trip.
    type Connection: ConnectionLike + Clone + Send + Sync + 'static;

    /// Opens a command connection.
    async fn connect(&self) -> RedisResult<Self::Connection>;

    /// Opens a connection for subscribing to hand-off notifications.
    async fn subscriber(&self) -> RedisResult<PubSub>;

    /// A description of where this connects, for `Debug` and logs. It must not contain
    /// a password.
    fn describe(&self) -> String;
}

/// Connects to the server named by a `redis://` or `rediss://` URL: one redis-rs
/// `MultiplexedConnection` at a time, replaced by the driver when it fails.
///
/// The URL carries the ACL username and password (`redis://user:pass@host:6379/0`);
/// `rediss://` needs the crate's `redis-tls` feature. Neither `Debug` nor `describe` shows the
/// password.
///
/// # Example
///
/// ```
/// use robit::redis::{Connector, UrlConnector};
///
/// let connector = UrlConnector::new("redis://app:hunter2@localhost:6379/0")?;
/// assert_eq!(connector.describe(), "redis://app:***@localhost:6379/0");
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[derive(Clone)]
pub struct UrlConnector {
    client: Client,
    redacted: String,
}

impl UrlConnector {
    /// Parses `url`; nothing connects until the driver's first operation.
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if the URL cannot be parsed.
    pub fn new(url: &str) -> Result<Self, RedisConfigError> {
        let redacted = redact(url);
        let client = Client::open(url).map_err(|source| RedisConfigError::InvalidUrl {
            url: redacted.clone(),
            source,
        })?;
        Ok(Self { client, redacted })
    }
}

#[cfg(feature = "redis-tls")]
impl UrlConnector {
    /// Like [`new`](Self::new), for a `rediss://` server whose certificate is signed by a
    /// private certificate authority: `ca_pem` is that authority's certificate, in PEM.
    /// (Servers with publicly trusted certificates need only [`new`](Self::new).)
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if the URL cannot be parsed or the certificate
    /// cannot be used.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use robit::redis::{RedisDriver, UrlConnector};
    ///
    /// let ca = std::fs::read("/etc/redis/ca.crt").unwrap();
    /// let connector = UrlConnector::with_root_certificate("rediss://redis.internal:6380", &ca)?;
    /// let driver = RedisDriver::with_connector(connector).build()?;
    /// # Ok::<(), robit::redis::RedisConfigError>(())
    /// ```
    pub fn with_root_certificate(url: &str, ca_pem: &[u8]) -> Result<Self, RedisConfigError> {
        let redacted = redact(url);
        let certificates = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca_pem.to_vec()),
        };
        let client = Client::build_with_tls(url, certificates).map_err(|source| {
            RedisConfigError::InvalidUrl {
                url: redacted.clone(),
                source,
            }
        })?;
        Ok(Self { client, redacted })
    }
}

impl std::fmt::Debug for UrlConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UrlConnector").field(&self.redacted).finish()
    }
}

#[async_trait]
impl Connector for UrlConnector {
    type Connection = MultiplexedConnection;

    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        self.client
            .get_multiplexed_async_connection_with_config(&unbounded())
            .await
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        self.client.get_async_pubsub().await
    }

    fn describe(&self) -> String {
        self.redacted.clone()
    }
}

/// A multiplexed connection's settings without timeouts of their own: the driver bounds
/// every command and connection attempt itself, with the timeouts it was built with.
pub(super) fn unbounded() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(None)
}

/// `url` with the password of its user-info part replaced by `***`.
pub(super) fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &rest[..at];
    let user = userinfo.split_once(':').map_or("", |(user, _)| user);
    if !userinfo.contains(':') {
        // redis://password@host is also accepted as a bare password.
        return format!("{}***{}", &url[..scheme_end], &rest[at..]);
    }
    format!("{}{user}:***{}", &url[..scheme_end], &rest[at..])
}
