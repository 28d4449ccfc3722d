//! robit's Redis driver's connections, over the simulated network.

use async_trait::async_trait;
use redis::aio::{MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, RedisConnectionInfo, RedisResult};
use robit::redis::Connector;
use turmoil::net::TcpStream;

/// Connects robit's real Redis driver to a [`SimRedis`](super::SimRedis) through
/// turmoil's network, so that partitions, latency and crashes reach the driver exactly
/// as they would a real one.
///
/// Connections are redis-rs's own `MultiplexedConnection` and `PubSub`, built over a
/// simulated TCP stream, with the same handshake a real connection makes. They do not
/// reconnect by themselves: the driver replaces a broken one, as it must for any
/// connector that does not.
///
/// # Example
///
/// ```
/// use robit::redis::{Connector, RedisDriver};
/// use robit_sim::redis::{DEFAULT_PORT, SimConnector};
/// use std::time::Duration;
///
/// let connector = SimConnector::new("redis", DEFAULT_PORT);
/// assert_eq!(connector.describe(), "redis:6379");
/// let driver = RedisDriver::with_connector(connector)
///     .quarantine(Duration::ZERO)
///     .build()?;
/// # drop(driver);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimConnector {
    host: String,
    port: u16,
}

impl SimConnector {
    /// Connects to `port` on the simulated host named `host`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }

    async fn stream(&self) -> RedisResult<TcpStream> {
        Ok(TcpStream::connect((self.host.as_str(), self.port)).await?)
    }
}

#[async_trait]
impl Connector for SimConnector {
    type Connection = MultiplexedConnection;

    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        // The driver bounds every command and connection attempt itself.
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        let stream = self.stream().await?;
        let (connection, driver) =
            MultiplexedConnection::new_with_config(&RedisConnectionInfo::default(), stream, config)
                .await?;
        // It ends when the connection breaks or its last clone is dropped, and with the
        // host if that crashes first.
        tokio::spawn(driver);
        Ok(connection)
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        PubSub::new(&RedisConnectionInfo::default(), self.stream().await?).await
    }

    fn describe(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}
