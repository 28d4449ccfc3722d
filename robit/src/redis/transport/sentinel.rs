//! Connecting through Redis Sentinel: every new connection asks the sentinels where the
//! master is, so the driver follows a failover as soon as its connection to the old
//! master breaks (Sentinel closes clients' connections when it reconfigures a server).

use async_trait::async_trait;
use redis::RedisResult;
use redis::aio::{MultiplexedConnection, PubSub};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};

use super::connector::{Connector, redact, unbounded};
use crate::redis::{RedisConfigError, RedisDriver, RedisDriverBuilder};

/// Connects to the master that a set of Redis Sentinels know by name, asking them anew
/// for every connection, so that the driver follows failovers.
///
/// The sentinels' URLs carry their own credentials (`redis://:password@host:26379`); the
/// master's credentials, database and TLS come from a
/// [`SentinelNodeConnectionInfo`](redis::sentinel::SentinelNodeConnectionInfo). Neither
/// `Debug` nor [`describe`](Connector::describe) shows a password.
///
/// A failover is detected by the driver, which quarantines the namespace on the new
/// master (see [`RedisDriverBuilder::detect_failover`]).
///
/// # Example
///
/// ```
/// use robit::redis::RedisDriver;
///
/// let driver = RedisDriver::sentinel(
///     "locks",
///     &["redis://10.0.0.1:26379", "redis://10.0.0.2:26379", "redis://10.0.0.3:26379"],
/// )
/// .namespace("billing")
/// .build()?;
/// # drop(driver);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
pub struct SentinelConnector {
    client: tokio::sync::Mutex<SentinelClient>,
    described: String,
}

impl SentinelConnector {
    /// The master named `master` by the sentinels at `sentinels`, reached without
    /// credentials or TLS.
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if a sentinel URL cannot be parsed, or none is
    /// given.
    pub fn new(master: &str, sentinels: &[&str]) -> Result<Self, RedisConfigError> {
        Self::with_node_info(master, sentinels, SentinelNodeConnectionInfo::default())
    }

    /// As [`new`](Self::new), reaching the master with `node`'s credentials, database
    /// and TLS mode.
    ///
    /// # Errors
    ///
    /// [`RedisConfigError::InvalidUrl`] if a sentinel URL cannot be parsed, or none is
    /// given.
    ///
    /// # Example
    ///
    /// ```
    /// use redis::RedisConnectionInfo;
    /// use redis::sentinel::SentinelNodeConnectionInfo;
    /// use robit::redis::SentinelConnector;
    ///
    /// let master = RedisConnectionInfo::default()
    ///     .set_username("locker")
    ///     .set_password("s3cret");
    /// let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(master);
    /// let connector = SentinelConnector::with_node_info("locks", &["redis://10.0.0.1:26379"], node)?;
    /// assert!(!format!("{connector:?}").contains("s3cret"));
    /// # Ok::<(), robit::redis::RedisConfigError>(())
    /// ```
    pub fn with_node_info(
        master: &str,
        sentinels: &[&str],
        node: SentinelNodeConnectionInfo,
    ) -> Result<Self, RedisConfigError> {
        let redacted: Vec<String> = sentinels.iter().map(|url| redact(url)).collect();
        let described = format!("the master {master:?} of the sentinels {redacted:?}");
        let invalid = |source| RedisConfigError::InvalidUrl {
            url: redacted.join(", "),
            source,
        };
        if sentinels.is_empty() {
            return Err(invalid(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no sentinel given",
            ))));
        }
        // redis-rs takes the name as a `String`, or as `impl AsRef<str>` with its TLS
        // feature: a `String` serves both.
        let service = String::from(master);
        let client = SentinelClient::build(
            sentinels.to_vec(),
            service,
            Some(node),
            SentinelServerType::Master,
        )
        .map_err(invalid)?;
        Ok(Self {
            client: tokio::sync::Mutex::new(client),
            described,
        })
    }
}

impl std::fmt::Debug for SentinelConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SentinelConnector")
            .field(&self.described)
            .finish()
    }
}

#[async_trait]
impl Connector for SentinelConnector {
    type Connection = MultiplexedConnection;

    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        self.client
            .lock()
            .await
            .get_async_connection_with_config(&unbounded())
            .await
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        let master = self.client.lock().await.async_get_client().await?;
        master.get_async_pubsub().await
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

impl RedisDriver<SentinelConnector> {
    /// Starts building a driver for the master that the Redis Sentinels at `sentinels`
    /// (`redis://[:password@]host:port` each) know as `master`: each new connection asks
    /// them where it is, so the driver follows failovers. For the master's credentials
    /// or TLS, build a [`SentinelConnector`] and use
    /// [`with_connector`](RedisDriver::with_connector).
    pub fn sentinel(master: &str, sentinels: &[&str]) -> RedisDriverBuilder<SentinelConnector> {
        RedisDriverBuilder::new(SentinelConnector::new(master, sentinels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_described_by_its_master_and_sentinels_without_their_password()
    -> Result<(), RedisConfigError> {
        let connector = SentinelConnector::new(
            "locks",
            &["redis://:s3cret@10.0.0.1:26379", "redis://10.0.0.2:26379"],
        )?;
        // What errors and logs name the master by, and the Debug output.
        let described = connector.describe();
        let debug = format!("{connector:?}");
        for text in [&described, &debug] {
            assert!(text.contains("locks"), "{text}");
            assert!(text.contains("10.0.0.1:26379"), "{text}");
            assert!(text.contains("10.0.0.2:26379"), "{text}");
            assert!(!text.contains("s3cret"), "{text}");
        }
        assert!(debug.starts_with("SentinelConnector("), "{debug}");
        Ok(())
    }
}
