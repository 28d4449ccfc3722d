//! Measuring what a library cost the servers and the client over a stretch of a run:
//! round trips, the commands Redis ran (those inside scripts included), the servers' CPU
//! time and the client's. Over several servers (a quorum), each figure is their sum.

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
    /// A stretch's work: round trips, the commands (or statements) the server ran, its
    /// CPU time in s, the client's. (Only the Postgres section counts its own.)
    #[cfg(feature = "postgres")]
    pub(crate) fn new(round_trips: u64, commands: u64, server_cpu: f64, client_cpu: f64) -> Self {
        Self {
            round_trips,
            commands,
            server_cpu,
            client_cpu,
        }
    }

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

/// Measures the servers' work from their statistics, read over connections of the
/// bench's own, and the client's from the system's accounting of this process.
pub(crate) struct Meter {
    /// One per server; every figure is summed over them.
    admin: Vec<MultiplexedConnection>,
    server_cpu_at_reset: f64,
    client_cpu_at_reset: f64,
    trips_at_reset: u64,
    /// The bench's own `INFO` calls to each server since the last reset. They are taken
    /// out of the count of `INFO`, which robit's scripts also call, for failover
    /// detection: leaving out every `INFO` would miss those.
    own_infos: u64,
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
pub(crate) fn client_cpu() -> f64 {
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

/// This process's resident memory, in bytes (Linux `VmRSS` in `/proc/self/status`); NaN
/// elsewhere.
pub(crate) fn client_rss() -> f64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return f64::NAN;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().strip_suffix("kB")?.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb * 1024.0)
}

impl Meter {
    /// A meter summing over `servers`.
    pub(crate) async fn new(servers: impl IntoIterator<Item = &RedisServer>) -> Self {
        let mut admin = Vec::new();
        for server in servers {
            admin.push(server.admin().await);
        }
        Self {
            admin,
            server_cpu_at_reset: 0.0,
            client_cpu_at_reset: 0.0,
            trips_at_reset: 0,
            own_infos: 0,
        }
    }

    /// Every server's answer to `INFO section`.
    async fn info(&mut self, section: &str) -> Vec<String> {
        self.own_infos += 1;
        let mut answers = Vec::with_capacity(self.admin.len());
        for admin in &mut self.admin {
            answers.push(
                redis::cmd("INFO")
                    .arg(section)
                    .query_async(admin)
                    .await
                    .unwrap(),
            );
        }
        answers
    }

    /// The first server's version.
    pub(crate) async fn version(&mut self) -> String {
        info_field(&self.info("server").await[0], "redis_version").to_owned()
    }

    /// The server processes' CPU time so far, in s, summed.
    async fn server_cpu(&mut self) -> f64 {
        let infos = self.info("cpu").await;
        let field = |info: &String, name: &str| info_field(info, name).parse::<f64>().unwrap();
        infos
            .iter()
            .map(|info| field(info, "used_cpu_sys") + field(info, "used_cpu_user"))
            .sum()
    }

    /// Starts a measured stretch of the library whose round trips `trips` counts.
    pub(crate) async fn reset(&mut self, trips: &RoundTrips) {
        for admin in &mut self.admin {
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query_async(admin)
                .await
                .unwrap();
        }
        self.own_infos = 0;
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

    /// Calls per command since the last `CONFIG RESETSTAT` (`INFO commandstats`), summed
    /// over the servers, but for the bench's own: its `CONFIG` calls, and as many `INFO`
    /// calls as it made (the one that reads the answer is not in it).
    async fn calls(&mut self) -> BTreeMap<String, u64> {
        let own_infos = self.own_infos;
        let mut calls = BTreeMap::new();
        for info in self.info("commandstats").await {
            for (name, n) in info.lines().filter_map(command_calls) {
                let n = if name == "info" {
                    n.checked_sub(own_infos)
                        .expect("the bench's own INFO calls counted")
                } else {
                    n
                };
                if n > 0 && !name.starts_with("config|") {
                    *calls.entry(name.to_owned()).or_default() += n;
                }
            }
        }
        calls
    }
}

/// A command's name and calls, from a line of `INFO commandstats`.
fn command_calls(line: &str) -> Option<(&str, u64)> {
    let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
    let calls = fields
        .split(',')
        .find_map(|f| f.strip_prefix("calls="))?
        .parse()
        .ok()?;
    Some((name, calls))
}

/// A measured stretch, whatever measures it: [`contend`](crate::contention::contend)
/// takes one.
pub(crate) trait Measure: Send {
    /// Starts a stretch.
    fn reset(&mut self) -> impl std::future::Future<Output = ()> + Send;
    /// The work since the last [`reset`](Self::reset).
    fn read(&mut self) -> impl std::future::Future<Output = Work> + Send;
}

/// A [`Meter`] measuring the library whose round trips `trips` counts.
pub(crate) struct Metered<'a> {
    pub(crate) meter: &'a mut Meter,
    pub(crate) trips: &'a RoundTrips,
}

impl Measure for Metered<'_> {
    async fn reset(&mut self) {
        self.meter.reset(self.trips).await;
    }

    async fn read(&mut self) -> Work {
        self.meter.read(self.trips).await
    }
}
