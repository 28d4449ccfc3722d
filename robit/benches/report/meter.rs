//! Measuring what a library cost the server and the client over a stretch of a run:
//! round trips, the commands Redis ran (those inside scripts included), the server's CPU
//! time and the client's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::MultiplexedConnection;
use robit_test_support::redis::RedisServer;

/// How a library's round trips are counted.
pub(crate) enum RoundTrips {
    /// On the client, by its command connection (robit's, through `Counted`).
    Client(Arc<AtomicU64>),
    /// By the server: the calls of the commands the library sends itself. rslock takes
    /// a `redis::Client` and makes its own connection, which cannot be wrapped.
    Server(&'static [&'static str]),
}

/// The commands rslock sends itself: `SET NX PX` to acquire, its unlock script (by hash,
/// or in full when the server does not have it). Its script calls `GET` and `DEL` inside.
pub(crate) const RSLOCK_SENDS: &[&str] = &["set", "evalsha", "eval", "script|load"];

/// What the server and the client did for one library over a measured stretch.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Work {
    round_trips: u64,
    /// Every command the server ran, those inside scripts included.
    commands: u64,
    /// CPU time of the whole `redis-server` process, in s (`INFO cpu`): command execution
    /// plus reading, parsing and answering requests.
    server_cpu: f64,
    /// CPU time of the bench process's threads, in s; NaN where the system does not say.
    client_cpu: f64,
}

impl std::ops::AddAssign for Work {
    fn add_assign(&mut self, other: Self) {
        self.round_trips += other.round_trips;
        self.commands += other.commands;
        self.server_cpu += other.server_cpu;
        self.client_cpu += other.client_cpu;
    }
}

impl Work {
    /// Round trips, commands, server CPU and client CPU per operation.
    pub(crate) fn per(&self, operations: usize) -> [f64; 4] {
        let n = operations.max(1) as f64;
        [
            self.round_trips as f64 / n,
            self.commands as f64 / n,
            self.server_cpu / n,
            self.client_cpu / n,
        ]
    }
}

/// Measures the server's work from its statistics, read over a connection of the
/// bench's own, and the client's from the system's accounting of this process.
pub(crate) struct Meter {
    admin: MultiplexedConnection,
    server_cpu_at_reset: f64,
    client_cpu_at_reset: f64,
    trips_at_reset: u64,
}

/// A field (`name:value` line) of an `INFO` answer.
fn info_field<'a>(info: &'a str, name: &str) -> &'a str {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_default()
        .trim()
}

/// The CPU time this process's threads have run, in s, from the scheduler's accounting
/// in nanoseconds (Linux `/proc/self/task/*/schedstat`); NaN elsewhere.
fn client_cpu() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return f64::NAN;
    };
    let mut ns = 0_u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            return f64::NAN;
        };
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|field| field.parse::<u64>().ok())
            .unwrap_or_default();
    }
    ns as f64 / 1e9
}

impl Meter {
    pub(crate) async fn new(server: &RedisServer) -> Self {
        Self {
            admin: server.admin().await,
            server_cpu_at_reset: 0.0,
            client_cpu_at_reset: 0.0,
            trips_at_reset: 0,
        }
    }

    async fn info(&mut self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query_async(&mut self.admin)
            .await
            .unwrap()
    }

    pub(crate) async fn version(&mut self) -> String {
        info_field(&self.info("server").await, "redis_version").to_owned()
    }

    /// The server process's CPU time so far, in s.
    async fn server_cpu(&mut self) -> f64 {
        let info = self.info("cpu").await;
        ["used_cpu_sys", "used_cpu_user"]
            .iter()
            .map(|name| info_field(&info, name).parse::<f64>().unwrap())
            .sum()
    }

    /// Starts a measured stretch of the library whose round trips `trips` counts.
    pub(crate) async fn reset(&mut self, trips: &RoundTrips) {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut self.admin)
            .await
            .unwrap();
        self.server_cpu_at_reset = self.server_cpu().await;
        self.trips_at_reset = match trips {
            RoundTrips::Client(counter) => counter.load(Ordering::Relaxed),
            RoundTrips::Server(_) => 0,
        };
        self.client_cpu_at_reset = client_cpu();
    }

    /// The work since the last [`reset`](Self::reset), but for the bench's own `INFO`
    /// and `CONFIG` commands.
    pub(crate) async fn read(&mut self, trips: &RoundTrips) -> Work {
        let client_cpu = client_cpu() - self.client_cpu_at_reset;
        let server_cpu = self.server_cpu().await - self.server_cpu_at_reset;
        let calls = self.calls().await;
        let round_trips = match trips {
            RoundTrips::Client(counter) => counter.load(Ordering::Relaxed) - self.trips_at_reset,
            RoundTrips::Server(sends) => sends.iter().filter_map(|name| calls.get(*name)).sum(),
        };
        Work {
            round_trips,
            commands: calls.values().sum(),
            server_cpu,
            client_cpu,
        }
    }

    /// Calls per command since the last `CONFIG RESETSTAT` (`INFO commandstats`), but
    /// for the bench's own.
    async fn calls(&mut self) -> BTreeMap<String, u64> {
        self.info("commandstats")
            .await
            .lines()
            .filter_map(|line| {
                let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = fields
                    .split(',')
                    .find_map(|f| f.strip_prefix("calls="))?
                    .parse()
                    .ok()?;
                Some((name.to_owned(), calls))
            })
            .filter(|(name, _)| name != "info" && !name.starts_with("config|"))
            .collect()
    }
}
