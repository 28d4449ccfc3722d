//! A connector that follows the primary: what Sentinel, a virtual IP or a DNS name does
//! for a client after a failover, under the test's control.

use std::sync::{Arc, Mutex as StdMutex};

use redis::aio::{MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, RedisResult};
use robit::redis::Connector;

/// Connects to whichever server the test last pointed it at; clones share the target.
/// Connections already open stay where they are: the driver opens new ones when they
/// break (a stopped server breaks them).
#[derive(Debug, Clone)]
pub struct FollowingConnector {
    target: Arc<StdMutex<String>>,
}

impl FollowingConnector {
    /// A connector to the server at `url`.
    pub fn new(url: &str) -> Self {
        Self {
            target: Arc::new(StdMutex::new(url.to_owned())),
        }
    }

    /// From now on, new connections go to the server at `url`.
    pub fn point_at(&self, url: &str) {
        url.clone_into(&mut self.target.lock().unwrap());
    }

    fn client(&self) -> RedisResult<redis::Client> {
        redis::Client::open(self.target.lock().unwrap().as_str())
    }
}

#[robit::driver::async_trait]
impl Connector for FollowingConnector {
    type Connection = MultiplexedConnection;

    async fn connect(&self) -> RedisResult<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        self.client()?
            .get_multiplexed_async_connection_with_config(&config)
            .await
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        self.client()?.get_async_pubsub().await
    }

    fn describe(&self) -> String {
        format!("the primary, now {}", self.target.lock().unwrap())
    }
}
