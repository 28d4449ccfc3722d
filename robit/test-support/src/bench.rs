//! What robit's benchmarks share: the runtime their clients run on, the lease TTL every
//! library is given, and robit's Redis driver for a bench's own server.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use robit::redis::{RedisDriver, UrlConnector};

use crate::redis::{CountingConnector, RedisServer};

/// The lease TTL, for robit and every library it is measured against. Long enough that
/// no lease expires during a measurement, so no cycle waits out a TTL.
pub const TTL: Duration = Duration::from_secs(10);

/// The runtime every benchmark runs its clients on: one thread, so that the libraries
/// measured side by side share it turn by turn, and the client's CPU time is that
/// thread's.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// robit's Redis driver for `server`, its command connection counting round trips into
/// `round_trips`, with default settings: its first lock creates the namespace.
/// `ROBIT_BENCH_DETECT_FAILOVER=0` turns failover detection off, to measure its cost.
pub fn robit_driver(
    server: &RedisServer,
    round_trips: &Arc<AtomicU64>,
) -> RedisDriver<CountingConnector> {
    robit_driver_batching(server, round_trips, robit::redis::DEFAULT_MAX_BATCH)
}

/// [`robit_driver`], with at most `max_batch` calls in one batch (1: none batched).
pub fn robit_driver_batching(
    server: &RedisServer,
    round_trips: &Arc<AtomicU64>,
    max_batch: usize,
) -> RedisDriver<CountingConnector> {
    let url = UrlConnector::new(&server.url()).unwrap();
    let detect = std::env::var("ROBIT_BENCH_DETECT_FAILOVER").map_or(true, |value| value != "0");
    RedisDriver::with_connector(CountingConnector::new(url, round_trips))
        .detect_failover(detect)
        .max_batch(max_batch)
        .build()
        .unwrap()
}
