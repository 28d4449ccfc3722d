//! The Redis drivers' integration tests: against real `redis-server` processes that the
//! tests start themselves (one server, replicas, Sentinel, Cluster, the quorum driver),
//! and the wire format against a fake connection. One test binary, one module per area.

#[cfg(feature = "redis")]
mod api;
#[cfg(feature = "redis")]
mod batching;
#[cfg(feature = "redis")]
mod buckets;
#[cfg(feature = "redis")]
#[allow(clippy::print_stderr)]
mod cluster;
#[cfg(feature = "redis")]
mod driver;
#[cfg(feature = "redis")]
mod errors;
#[cfg(feature = "redis")]
#[allow(clippy::print_stderr)]
mod failover;
#[cfg(feature = "redis")]
mod fair_queue;
#[cfg(feature = "redis")]
mod faults;
#[cfg(feature = "redis")]
mod local_handoff;
#[cfg(feature = "redis")]
mod lock_delay;
#[cfg(feature = "redis")]
mod quarantine;
#[allow(clippy::unwrap_used, clippy::print_stderr)]
mod redlock;
#[allow(clippy::unwrap_used)]
mod redlock_even;
#[allow(clippy::unwrap_used)]
mod redlock_partial;
#[cfg(feature = "redis")]
mod replica_acks;
#[cfg(feature = "redis")]
mod sentinel;
#[cfg(feature = "redis")]
mod slow_replies;
#[cfg(feature = "redis-tls")]
mod tls;
#[cfg(feature = "redis")]
#[allow(clippy::unwrap_used)]
mod topologies;
#[cfg(feature = "redis")]
mod wire;
