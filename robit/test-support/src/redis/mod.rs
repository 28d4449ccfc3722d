//! Testing against a real Redis: a server of the test's own, a primary with a replica
//! whose link can freeze, sentinels watching them, a Redis Cluster of masters and
//! replicas that can fail over and move slots, clients that record their beliefs
//! under a fault, a connector that follows the primary, a proxy that freezes a
//! link, a connection that counts round trips, and the helpers the Redis driver's test
//! files share — a driver for a server, a request for a name, their TTL and time limit.

mod clients;
mod cluster;
mod counting;
mod following;
mod proxy;
mod replicated;
mod sentinel;
mod server;

use std::time::Duration;

use robit::driver::{AcquireRequest, LockName, OwnerToken};
use robit::redis::RedisDriver;

pub use clients::{FAULT_TTL, FaultClients};
pub use cluster::RedisCluster;
pub use counting::{Counted, CountingConnector};
pub use following::FollowingConnector;
pub use proxy::FreezingProxy;
pub use replicated::ReplicatedPair;
pub use sentinel::{MASTER_NAME, Sentinels};
pub use server::RedisServer;

/// The lease TTL that [`request`] asks for.
pub const TTL: Duration = Duration::from_secs(2);
/// The time limit for an event a test waits for: reaching it means the event never came.
pub const LONG: Duration = Duration::from_secs(20);

/// A driver for `server`, without the quarantine: a loss of state is not waited out.
pub fn driver(server: &RedisServer) -> RedisDriver {
    RedisDriver::builder(&server.url())
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

/// A driver for `server` with a quarantine of `quarantine`, whose commands time out after
/// 250 ms, so that a fault test sees a dead connection quickly.
pub fn quarantined_driver(server: &RedisServer, quarantine: Duration) -> RedisDriver {
    RedisDriver::builder(&server.url())
        .quarantine(quarantine)
        .command_timeout(Duration::from_millis(250))
        .build()
        .unwrap()
}

/// A request for the lock `name`, by owner `who`, for [`TTL`].
pub fn request(name: &str, who: u128) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(who), TTL)
}
