//! Measuring what the server and the client did.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::aio::MultiplexedConnection;

use crate::support::RedisServer;

/// What the server and the client did for one library over a measured stretch.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Work {
    /// Commands the client sent: one round trip each.
    requests: u64,
    /// Every command the server ran, those inside scripts included.
    executed: u64,
    /// Time the server spent executing the commands the client sent (scripts included),
    /// in µs, as `INFO commandstats` reports it.
    command_us: u64,
    /// CPU time of the whole server process, in s (`INFO cpu`): command execution plus
    /// reading, parsing and answering requests.
    cpu: f64,
    /// Time the client's runtime thread was busy, in s (tokio's worker busy duration):
    /// the client's own work, plus any time the machine ran something else meanwhile.
    client_busy: f64,
}

impl std::ops::AddAssign for Work {
    fn add_assign(&mut self, other: Self) {
        self.requests += other.requests;
        self.executed += other.executed;
        self.command_us += other.command_us;
        self.cpu += other.cpu;
        self.client_busy += other.client_busy;
    }
}

impl Work {
    /// Requests, commands, command time, server CPU and client busy time per operation.
    pub(crate) fn per(&self, operations: usize) -> [f64; 5] {
        let n = operations.max(1) as f64;
        [
            self.requests as f64 / n,
            self.executed as f64 / n,
            self.command_us as f64 / 1e6 / n,
            self.cpu / n,
            self.client_busy / n,
        ]
    }
}

/// Measures the server's work, from its statistics read over a connection of the
/// bench's own, and the client's busy time.
pub(crate) struct Meter {
    admin: MultiplexedConnection,
    /// The server's CPU time at the last reset.
    cpu_at_reset: f64,
    /// The client's busy time at the last reset.
    busy_at_reset: Duration,
}

/// A field (`name:value` line) of an `INFO` answer.
fn info_field<'a>(info: &'a str, name: &str) -> &'a str {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_default()
        .trim()
}

/// How long the current runtime's threads have been busy.
fn client_busy() -> Duration {
    let metrics = tokio::runtime::Handle::current().metrics();
    (0..metrics.num_workers())
        .map(|worker| metrics.worker_total_busy_duration(worker))
        .sum()
}

impl Meter {
    pub(crate) async fn new(server: &RedisServer) -> Self {
        Self {
            admin: server.admin().await,
            cpu_at_reset: 0.0,
            busy_at_reset: Duration::ZERO,
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
    async fn cpu(&mut self) -> f64 {
        let info = self.info("cpu").await;
        ["used_cpu_sys", "used_cpu_user"]
            .iter()
            .map(|name| info_field(&info, name).parse::<f64>().unwrap())
            .sum()
    }

    pub(crate) async fn reset(&mut self) {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut self.admin)
            .await
            .unwrap();
        self.cpu_at_reset = self.cpu().await;
        self.busy_at_reset = client_busy();
    }

    /// The server's work since the last reset, but for the bench's own `INFO` and
    /// `CONFIG`; `sends` names the commands the library sends itself.
    pub(crate) async fn read(&mut self, sends: &[&str]) -> Work {
        let client_busy = (client_busy() - self.busy_at_reset).as_secs_f64();
        let cpu = self.cpu().await - self.cpu_at_reset;
        let info = self.info("commandstats").await;
        // name → (calls, µs)
        let stats: BTreeMap<&str, (u64, u64)> = info
            .lines()
            .filter_map(|line| {
                let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let field = |key: &str| {
                    fields
                        .split(',')
                        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))?
                        .parse()
                        .ok()
                };
                Some((name, (field("calls")?, field("usec")?)))
            })
            .filter(|(name, _)| *name != "info" && !name.starts_with("config|"))
            .collect();
        let sent = sends.iter().filter_map(|name| stats.get(name));
        Work {
            requests: sent.clone().map(|(calls, _)| calls).sum(),
            executed: stats.values().map(|(calls, _)| calls).sum(),
            command_us: sent.map(|(_, us)| us).sum(),
            cpu,
            client_busy,
        }
    }
}
