//! Connecting to a Redis Cluster: redis-rs's cluster client, which routes each script call
//! to the master serving its keys' slot and follows the cluster's redirections.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::PubSub;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo, RedisResult};

use super::connector::{Connector, redact};
use crate::redis::{RedisConfigError, RedisDriver, RedisDriverBuilder};

/// Connects to a Redis Cluster through any of its nodes: commands go to the master that
/// serves their slot, and follow the cluster as slots move and replicas take over.
///
/// Built by [`RedisDriver::cluster`], which also spreads the namespace over the
/// cluster's masters (docs/redis.md, "Redis Cluster"). The node URLs carry the ACL
/// username and password (`redis://user:pass@host:7000`, the same in each);
/// `rediss://` needs the crate's `redis-tls` feature. Neither `Debug` nor
/// [`describe`](Connector::describe) shows a password.
///
/// Hand-off notifications are published with `PUBLISH`, which a cluster delivers to the
/// subscribers of every node: the driver subscribes on one seed node, the next one
/// along each time it subscribes again.
///
/// # Example
///
/// ```
/// use robit::redis::{ClusterConnector, Connector};
///
/// let connector = ClusterConnector::new(&[
///     "redis://app:s3cret@10.0.0.1:7000",
///     "redis://app:s3cret@10.0.0.2:7000",
/// ])?;
/// assert!(!connector.describe().contains("s3cret"));
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[derive(Clone)]
pub struct ClusterConnector {
    client: ClusterClient,
    /// The seed nodes, each as a client of its own, for the subscription.
    nodes: Vec<redis::Client>,
    /// The seed node the next subscription tries first: each attempt starts one further,
    /// so that a node that hangs is not tried first every time.
    next_subscriber: Arc<AtomicUsize>,
    described: String,
}

impl ClusterConnector {
    /// The cluster that `nodes` (any of its nodes: one is enough, more survive one being
    /// down) belong to. Nothing connects until the driver's first operation.
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if a URL cannot be parsed, or none is given.
    pub fn new(nodes: &[&str]) -> Result<Self, RedisConfigError> {
        Self::build(nodes, None)
    }

    /// As [`new`](Self::new), reaching every node with `node`'s credentials, database and
    /// protocol rather than the URLs' own: both the commands and the hand-off
    /// subscription. TLS comes from the URLs (`rediss://`, the crate's `redis-tls` feature).
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if a URL cannot be parsed, or none is given.
    ///
    /// # Example
    ///
    /// ```
    /// use redis::RedisConnectionInfo;
    /// use robit::redis::ClusterConnector;
    ///
    /// let node = RedisConnectionInfo::default()
    ///     .set_username("locker")
    ///     .set_password("s3cret");
    /// let connector = ClusterConnector::with_node_info(&["redis://10.0.0.1:7000"], node)?;
    /// assert!(!format!("{connector:?}").contains("s3cret"));
    /// # Ok::<(), robit::redis::RedisConfigError>(())
    /// ```
    pub fn with_node_info(
        nodes: &[&str],
        node: RedisConnectionInfo,
    ) -> Result<Self, RedisConfigError> {
        Self::build(nodes, Some(node))
    }

    fn build(nodes: &[&str], node: Option<RedisConnectionInfo>) -> Result<Self, RedisConfigError> {
        let redacted: Vec<String> = nodes.iter().map(|url| redact(url)).collect();
        let invalid = |source| RedisConfigError::InvalidUrl {
            url: redacted.join(", "),
            source,
        };
        if nodes.is_empty() {
            return Err(invalid(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no cluster node given",
            ))));
        }
        let infos = nodes
            .iter()
            .map(|url| {
                let info = url.into_connection_info()?;
                Ok(match &node {
                    Some(node) => info.set_redis_settings(node.clone()),
                    None => info,
                })
            })
            .collect::<RedisResult<Vec<ConnectionInfo>>>()
            .map_err(invalid)?;
        let client = ClusterClient::builder(infos.clone())
            .tcp_settings(tcp_settings())
            .build()
            .map_err(invalid)?;
        let nodes = infos
            .into_iter()
            .map(redis::Client::open)
            .collect::<RedisResult<Vec<_>>>()
            .map_err(invalid)?;
        Ok(Self {
            client,
            nodes,
            next_subscriber: Arc::new(AtomicUsize::new(0)),
            described: format!("the cluster of {}", redacted.join(", ")),
        })
    }
}

/// The TCP settings of the cluster client's connections. A connection to one node that
/// stops answering does not retire the whole cluster connection, as it would one node's
/// (the other masters' locks go on over it: see `connection.rs`); so on Linux a
/// connection whose sent data goes unacknowledged for [`UNACKNOWLEDGED`] — the node's
/// host gone, a half-open connection — is closed by the kernel, and the client opens a
/// new one to that node. A stopped server process is not a dead connection: its kernel
/// still acknowledges.
fn tcp_settings() -> redis::io::tcp::TcpSettings {
    let settings = redis::io::tcp::TcpSettings::default();
    #[cfg(target_os = "linux")]
    let settings = settings.set_user_timeout(UNACKNOWLEDGED);
    settings
}

/// The seed nodes' indexes in the order the subscription's attempt number `attempt`
/// tries them: each once, from one further along than the attempt before.
fn seed_order(attempt: usize, nodes: usize) -> impl Iterator<Item = usize> {
    (0..nodes).map(move |at| (attempt % nodes + at) % nodes)
}

/// How long the subscription waits for one seed node before it tries the next.
const SUBSCRIBE_WITHIN: Duration = Duration::from_secs(2);

/// How long data sent to a node may go unacknowledged before its connection is closed:
/// several default command timeouts, so that a slow network is not taken for a dead one.
#[cfg(target_os = "linux")]
const UNACKNOWLEDGED: Duration = Duration::from_secs(10);

impl std::fmt::Debug for ClusterConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ClusterConnector")
            .field(&self.described)
            .finish()
    }
}

#[async_trait]
impl Connector for ClusterConnector {
    type Connection = ClusterConnection;

    async fn connect(&self) -> RedisResult<ClusterConnection> {
        self.client.get_async_connection().await
    }

    /// A subscription on a seed node that accepts one, trying each for at most 2 s,
    /// starting one further at every attempt: a cluster delivers every `PUBLISH` to the
    /// subscribers of all its nodes.
    async fn subscriber(&self) -> RedisResult<PubSub> {
        let first = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        let mut failure = None;
        for at in seed_order(first, self.nodes.len()) {
            let node = &self.nodes[at];
            match tokio::time::timeout(SUBSCRIBE_WITHIN, node.get_async_pubsub()).await {
                Ok(Ok(subscriber)) => return Ok(subscriber),
                Ok(Err(err)) => failure = Some(err),
                Err(_) => {
                    failure = Some((redis::ErrorKind::Io, "a cluster node did not answer").into());
                }
            }
        }
        Err(failure.unwrap_or_else(|| {
            (
                redis::ErrorKind::InvalidClientConfig,
                "no cluster node given",
            )
                .into()
        }))
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

impl RedisDriver<ClusterConnector> {
    /// Starts building a driver for the Redis Cluster that `nodes` belong to (any of its
    /// nodes' URLs, credentials in the URLs), in cluster mode: the namespace is spread
    /// over buckets by lock name, so its locks land on every master, and locks on
    /// different masters never wait for each other. For credentials from elsewhere than
    /// the URLs, build a [`ClusterConnector`] with
    /// [`with_node_info`](ClusterConnector::with_node_info) and use
    /// [`with_connector`](RedisDriver::with_connector) and
    /// [`RedisDriverBuilder::cluster_mode`].
    ///
    /// # Example
    ///
    /// ```
    /// use robit::redis::RedisDriver;
    ///
    /// let driver = RedisDriver::cluster(&["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"])
    ///     .namespace("billing")
    ///     .build()?;
    /// # drop(driver);
    /// # Ok::<(), robit::redis::RedisConfigError>(())
    /// ```
    pub fn cluster(nodes: &[&str]) -> RedisDriverBuilder<ClusterConnector> {
        RedisDriverBuilder::new(ClusterConnector::new(nodes)).cluster_mode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_debug_output_names_the_nodes_but_not_their_password() -> Result<(), RedisConfigError> {
        let connector = ClusterConnector::new(&[
            "redis://app:s3cret@10.0.0.1:7000",
            "redis://app:s3cret@10.0.0.2:7000",
        ])?;
        let debug = format!("{connector:?}");
        assert!(debug.starts_with("ClusterConnector("), "{debug}");
        assert!(debug.contains("10.0.0.1:7000"), "{debug}");
        assert!(debug.contains("10.0.0.2:7000"), "{debug}");
        assert!(!debug.contains("s3cret"), "{debug}");
        // What errors and logs name the cluster by.
        let described = connector.describe();
        assert!(described.starts_with("the cluster of "), "{described}");
        assert!(debug.contains(&described), "{debug}");
        Ok(())
    }

    #[test]
    fn each_subscription_attempt_tries_every_seed_once_from_one_further_along() {
        let order = |attempt| seed_order(attempt, 3).collect::<Vec<_>>();
        assert_eq!(order(0), [0, 1, 2]);
        assert_eq!(order(1), [1, 2, 0]);
        assert_eq!(order(2), [2, 0, 1]);
        assert_eq!(order(3), [0, 1, 2]);
        // The attempt counter wraps around without a panic or a skipped seed.
        assert_eq!(seed_order(usize::MAX, 3).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(seed_order(7, 1).collect::<Vec<_>>(), [0]);
    }

    /// A connection to a node whose host is gone is closed by the kernel: no test here
    /// drops packets, so the setting itself is what is checked.
    #[cfg(target_os = "linux")]
    #[test]
    fn its_connections_are_closed_by_the_kernel_once_data_goes_unacknowledged_for_10_s() {
        assert_eq!(tcp_settings().user_timeout(), Some(UNACKNOWLEDGED));
        assert_eq!(UNACKNOWLEDGED, Duration::from_secs(10));
    }
}
