//! The Redis driver's performance, each figure next to a hand-written baseline that sends
//! the same commands with the redis crate directly, measured in the same run against the
//! same redis-server (started by the bench on a free port).
//!
//! `cargo bench -p robit --bench redis` — a bench binary, not a test: it reports, it does
//! not assert. `ROBIT_BENCH_SCALE=0.2` shortens every phase; `ROBIT_BENCH_PHASES=
//! uncontended,segments,own,throughput,contention` picks phases; `ROBIT_BENCH_ONLY=
//! robit|baseline|lean` runs only one contender of the uncontended, own-work and
//! throughput phases (the uncontended phase's shared warm-up aside), to profile it alone.
//!
//! One module per phase; `contenders` holds robit's counted driver and the baselines.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used
)]

#[path = "../common/mod.rs"]
mod common;
mod contenders;
mod contention;
mod own;
mod segments;
use robit_test_support::redis as support;
mod throughput;
mod uncontended;

use contention::contention;
use own::own;
use segments::segments;
use support::RedisServer;
use throughput::throughput;
use uncontended::uncontended;

fn main() {
    let server = RedisServer::start();
    let runtime = common::runtime();
    println!("# robit Redis driver benchmark\n");
    println!("redis-server on loopback; client on one tokio current-thread runtime.");
    // `ROBIT_BENCH_PHASES=throughput` (comma-separated) runs only some phases.
    let run = common::enabled;
    runtime.block_on(async {
        if run("uncontended") {
            uncontended(&server).await;
        }
        if run("segments") {
            segments(&server).await;
        }
        if run("own") {
            own(&server).await;
        }
        if run("throughput") {
            throughput(&server).await;
        }
        if run("contention") {
            contention(&server).await;
        }
    });
}
