//! robit's Redis driver next to rslock, the Redlock crate, measured in the same run
//! against the same redis-server (started by the bench on a free port).
//!
//! `cargo bench -p robit --bench peer` — a bench binary, not a test: it reports, it does
//! not assert. `ROBIT_BENCH_SCALE=0.2` shortens every phase; `ROBIT_BENCH_PHASES=
//! uncontended,throughput,contention` picks phases; `ROBIT_BENCH_RSLOCK_DELAYS=10,200`
//! sets the retry delays (in ms, at least 2) that rslock runs the contention phase with.
//!
//! Both libraries get the same TTL, and in the contention phase the same wait budget:
//! robit waits with `Wait::Timeout`, rslock retries often enough that its sleeps add up to
//! the budget on average. Redis commands are counted by the server (`INFO commandstats`
//! after `CONFIG RESETSTAT`), so both libraries are counted the same way.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used
)]

#[path = "../common/mod.rs"]
mod common;
mod contention;
mod lockers;
mod meter;
use robit_test_support::redis as support;
mod table;
mod throughput;
mod uncontended;

use std::time::Duration;

use contention::contention;
use meter::Meter;
use robit::redis::RedisDriver;
use support::RedisServer;
use throughput::throughput;
use uncontended::uncontended;

/// The lease TTL, for both libraries.
pub(crate) const TTL: Duration = Duration::from_secs(10);
/// How long a contended lock call may wait before giving up, for both libraries.
pub(crate) const WAIT_BUDGET: Duration = Duration::from_secs(2);

/// The commands robit's driver sends itself: its scripts by hash (and the load that
/// follows a `NOSCRIPT`), and the subscription's own commands. Every other command in
/// the server's stats ran inside one of its scripts.
pub(crate) const ROBIT_SENDS: &[&str] = &["evalsha", "eval", "script|load", "subscribe", "ping"];
/// The commands rslock sends itself: `SET NX PX` to acquire, its unlock script by hash.
/// Its script calls `GET` and `DEL` inside.
pub(crate) const RSLOCK_SENDS: &[&str] = &["set", "evalsha", "eval", "script|load"];

fn main() {
    let server = RedisServer::start();
    let runtime = common::runtime();
    // `ROBIT_BENCH_PHASES=throughput` (comma-separated) runs only some phases.
    let run = common::enabled;
    runtime.block_on(async {
        let mut stats = Meter::new(&server).await;
        // A fresh server has no fencing counter: without this, robit's first grant
        // would wait out the default 30 s quarantine.
        let driver = RedisDriver::builder(&server.url())
            .quarantine(Duration::ZERO)
            .build()
            .unwrap();
        println!("# robit against rslock\n");
        println!(
            "redis-server {} on loopback; both clients on one tokio current-thread runtime,",
            stats.version().await
        );
        println!("one multiplexed command connection each (robit also keeps one pub/sub");
        println!("connection). TTL {TTL:?} for both. Ratios are robit's figure over rslock's:");
        println!("above 1 is more for robit (more cycles/s, or longer latency).");
        if run("uncontended") {
            uncontended(&server, &driver, &mut stats).await;
        }
        if run("throughput") {
            throughput(&server, &driver, &mut stats).await;
        }
        if run("contention") {
            contention(&server, &driver, &mut stats).await;
        }
    });
}
