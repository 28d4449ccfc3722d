//! The comparison tables: robit's Redis driver next to rslock (Redlock, on one server),
//! measured in the same run, against the same `redis-server` (started by the bench on a
//! free port), with the same TTL, on the same single-threaded runtime; then both on a
//! quorum of three servers of the bench's own.
//!
//! `cargo bench -p robit-bench --bench report` — a bench binary, not a test: it reports, it
//! does not assert. `ROBIT_BENCH_SCALE=0.3` shortens every scenario;
//! `ROBIT_BENCH_ONLY=bf` runs only the sections named by their letters.
//!
//! Four scenarios, one module each: one task locking and unlocking one key
//! ([`uncontended`]), 64 tasks on distinct keys, robit through a `Mutex` per task and
//! through one shared `Locker` ([`throughput`]), 8 tasks on one key
//! ([`contention`]), and the first and last again on three servers: robit's
//! `RedlockDriver` and rslock's `LockManager` over the same three, next to robit's
//! single-server driver ([`quorum`]). Each reports, per lock + unlock cycle, the round
//! trips, the commands Redis ran (those inside scripts included), the servers' CPU time
//! and the client's ([`meter`]), then the wall-clock figures. With the `etcd` feature,
//! a fifth: robit's etcd driver on a cluster of the bench's own, next to its Redis
//! driver (`etcd`). With the `postgres` feature, robit's Postgres driver next to sqlx's
//! advisory lock and a plain lease table, on a Postgres of the bench's own (`postgres`,
//! section g, after f). Before it, robit alone, as rslock renews nothing by itself: 100,000 locks
//! held through one `Locker` while the watchdog renews them ([`many_holds`];
//! `ROBIT_BENCH_HOLDS` changes the number).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used
)]

mod contention;
#[cfg(feature = "etcd")]
mod etcd;
mod lockers;
mod many_holds;
mod meter;
#[cfg(feature = "postgres")]
mod postgres;
mod quorum;
mod table;
mod throughput;
mod uncontended;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use meter::{Meter, RSLOCK_SENDS, RoundTrips};
use robit::redis::RedisDriver;
use robit_test_support::bench::{TTL, robit_driver, runtime};
use robit_test_support::redis::{CountingConnector, RedisServer};

/// What every scenario runs against.
pub(crate) struct Setup {
    pub(crate) server: RedisServer,
    /// robit's driver, shared by all its mutexes: one command connection (counted), one
    /// pub/sub connection.
    pub(crate) driver: RedisDriver<CountingConnector>,
    /// robit's round trips: counted on its command connection.
    pub(crate) robit: RoundTrips,
    /// What [`robit`](Self::robit) counts in: another driver of the bench counts its
    /// round trips there too.
    pub(crate) round_trips: Arc<AtomicU64>,
    pub(crate) meter: Meter,
}

/// rslock's round trips: counted by the server.
pub(crate) const RSLOCK: RoundTrips = RoundTrips::Server(RSLOCK_SENDS);

/// `ROBIT_BENCH_SCALE`: a factor on every scenario's length (default 1).
pub(crate) fn scale() -> f64 {
    std::env::var("ROBIT_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// `n` scaled by [`scale`], at least 1.
pub(crate) fn scaled(n: usize) -> usize {
    ((n as f64) * scale()).max(1.0) as usize
}

/// Whether section `letter` runs: `ROBIT_BENCH_ONLY` names it, or is unset.
fn runs(letter: char) -> bool {
    std::env::var("ROBIT_BENCH_ONLY").map_or(true, |only| only.contains(letter))
}

fn main() {
    let server = RedisServer::start();
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(&server, &round_trips);
    runtime().block_on(async {
        let mut setup = Setup {
            meter: Meter::new([&server]).await,
            server,
            driver,
            robit: RoundTrips::Client(Arc::clone(&round_trips)),
            round_trips,
        };
        let version = setup.meter.version().await;
        let cores = std::thread::available_parallelism().map_or(0, usize::from);
        println!("# robit against rslock\n");
        println!("redis-server {version} on loopback, {cores} cores; both clients on one tokio");
        println!("current-thread runtime, one command connection each (robit also keeps a");
        println!("pub/sub connection); TTL {TTL:?} for both. Ratios are robit's figure over");
        println!("rslock's. robit's round trips are counted on its connection; rslock's are");
        println!("the commands it sent, as the server counted them. Commands include those");
        println!("run inside scripts. CPU is the redis-server process's, and the client's");
        println!("(this process's threads).");
        if runs('a') {
            uncontended::run(&mut setup).await;
        }
        if runs('b') {
            throughput::run(&mut setup).await;
        }
        if runs('c') {
            contention::run(&mut setup).await;
        }
        if runs('d') {
            quorum::run(&mut setup).await;
        }
        #[cfg(feature = "etcd")]
        if runs('e') {
            etcd::run(&mut setup).await;
        }
        if runs('f') {
            many_holds::run(&mut setup).await;
        }
        #[cfg(feature = "postgres")]
        if runs('g') {
            postgres::run().await;
        }
    });
}
