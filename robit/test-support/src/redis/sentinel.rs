//! Redis Sentinels of the test's own, watching a [`ReplicatedPair`]: the topology a
//! sentinel-driven failover runs on.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::ReplicatedPair;
use crate::host::{PortTaken, free_port, on_free_ports, wait_started};

/// The name the sentinels know the primary by.
pub const MASTER_NAME: &str = "locks";

/// Three sentinels (`redis-server --sentinel`) watching a primary and its replica; each
/// killed on drop, their logs printed if the test is failing.
#[derive(Debug)]
pub struct Sentinels {
    /// The primary and replica they watch.
    pub pair: ReplicatedPair,
    sentinels: Vec<Sentinel>,
}

#[derive(Debug)]
struct Sentinel {
    port: u16,
    dir: TempDir,
    child: Child,
}

impl Sentinels {
    /// A primary, its replica, and three sentinels that all know both and each other,
    /// and take a primary silent for 1 s for down.
    pub async fn start() -> Self {
        Self::start_with_down_after(Duration::from_secs(1)).await
    }

    /// [`start`](Self::start), with sentinels that take a primary silent for
    /// `down_after` for down: a primary paused for less than that is not failed over.
    pub async fn start_with_down_after(down_after: Duration) -> Self {
        let pair = ReplicatedPair::start().await;
        let sentinels = (0..3)
            .map(|_| Sentinel::start(pair.primary.port(), down_after))
            .collect();
        let set = Self { pair, sentinels };
        set.wait_until(|| async {
            for sentinel in &set.sentinels {
                let replicas = sentinel.list("REPLICAS").await;
                let others = sentinel.list("SENTINELS").await;
                if replicas != Some(1) || others != Some(2) {
                    return false;
                }
            }
            true
        })
        .await;
        set
    }

    /// The sentinels' URLs.
    pub fn urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|sentinel| format!("redis://127.0.0.1:{}", sentinel.port))
            .collect()
    }

    /// The port of the server every sentinel now names as the primary in `SENTINEL
    /// MASTER` (what clients read, through `SENTINEL MASTERS`), if they agree. During a
    /// failover they name the old primary until it completes, whatever
    /// `GET-MASTER-ADDR-BY-NAME` answers.
    pub async fn master_port(&self) -> Option<u16> {
        let mut ports = Vec::new();
        for sentinel in &self.sentinels {
            let master: std::collections::HashMap<String, String> = redis::cmd("SENTINEL")
                .arg("MASTER")
                .arg(MASTER_NAME)
                .query_async(&mut sentinel.admin().await?)
                .await
                .ok()?;
            ports.push(master.get("port")?.parse::<u16>().ok()?);
        }
        ports.dedup();
        match ports.as_slice() {
            [port] => Some(*port),
            _ => None,
        }
    }

    /// Has the sentinels fail the primary over to the replica (`SENTINEL FAILOVER`), and
    /// waits until every one of them names the replica as the primary. The old primary
    /// stays up, a primary too until the sentinels turn it into a replica.
    pub async fn fail_over(&self) {
        let mut connection = self.sentinels[0].admin().await.expect("sentinel");
        let _: () = redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg(MASTER_NAME)
            .query_async(&mut connection)
            .await
            .expect("SENTINEL FAILOVER");
        let replica = self.pair.replica.port();
        self.wait_until(|| async { self.master_port().await == Some(replica) })
            .await;
    }

    /// Polls `ready` until it holds. Readiness polling, not a timing assertion.
    async fn wait_until<F: Future<Output = bool>>(&self, ready: impl Fn() -> F) {
        let give_up = Instant::now() + Duration::from_secs(30);
        while !ready().await {
            if Instant::now() > give_up {
                for sentinel in &self.sentinels {
                    eprintln!("--- sentinel {} ---\n{}", sentinel.port, sentinel.log());
                }
                panic!("the sentinels did not get there");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Sentinel {
    /// A sentinel on a free port; if another process took the port first, on another.
    fn start(master_port: u16, down_after: Duration) -> Self {
        on_free_ports("the sentinel", || Self::try_start(master_port, down_after))
    }

    fn try_start(master_port: u16, down_after: Duration) -> Result<Self, PortTaken> {
        let dir = tempfile::tempdir().expect("no temp dir");
        let port = free_port();
        let config = dir.path().join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
             sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} {down_after}\n\
             sentinel failover-timeout {MASTER_NAME} 10000\n",
            dir = dir.path().display(),
            down_after = down_after.as_millis()
        );
        std::fs::write(&config, text).expect("sentinel.conf");
        let binary = std::env::var_os("ROBIT_REDIS_SERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("redis-server"));
        let child = Command::new(binary)
            .arg(&config)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("could not start redis-server --sentinel");
        let mut sentinel = Self { port, dir, child };
        let log = sentinel.dir.path().join("sentinel.log");
        let log = || std::fs::read_to_string(&log).unwrap_or_default();
        // A sentinel logs the master it monitors once it listens.
        let ready = |log: &str| log.contains("+monitor master");
        wait_started(&mut sentinel.child, "the sentinel", log, ready)?;
        Ok(sentinel)
    }

    async fn admin(&self) -> Option<redis::aio::MultiplexedConnection> {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.port))
            .ok()?
            .get_multiplexed_async_connection()
            .await
            .ok()
    }

    /// How many entries `SENTINEL <what> locks` lists.
    async fn list(&self, what: &str) -> Option<usize> {
        let entries: Vec<redis::Value> = redis::cmd("SENTINEL")
            .arg(what)
            .arg(MASTER_NAME)
            .query_async(&mut self.admin().await?)
            .await
            .ok()?;
        Some(entries.len())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- sentinel log (port {}) ---\n{}", self.port, self.log());
        }
    }
}
