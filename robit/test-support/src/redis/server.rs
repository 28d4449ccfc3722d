//! A real `redis-server` for tests: its own process, on a free port, in a temp dir.
//!
//! The binary is `$ROBIT_REDIS_SERVER`, or `redis-server` from `PATH`. The server is
//! killed when the handle drops; if the test is failing at that moment, its log is
//! printed, so a failure shows what the server saw.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use crate::host::{Certificates, PortTaken, free_port, on_free_ports, wait_started};

/// What `redis-server` logs once it listens on every port it was given.
const READY: &str = "Ready to accept connections";

/// A `redis-server` of the test's own; killed on drop, its log printed if the test is failing.
#[derive(Debug)]
pub struct RedisServer {
    binary: PathBuf,
    dir: TempDir,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    tls_dir: Option<TempDir>,
}

impl RedisServer {
    /// A server with default settings.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A node with Redis Cluster enabled and no slots yet. Its cluster bus gets a free
    /// port of its own (by default it would be the client port plus 10000, which may be
    /// past the last port).
    pub fn start_cluster_node() -> Self {
        Self::start_cluster_node_with(&[])
    }

    /// A node as [`start_cluster_node`](Self::start_cluster_node) starts it, with extra
    /// command-line arguments (`--cluster-node-timeout 1000`, …).
    pub fn start_cluster_node_with(args: &[&str]) -> Self {
        Self::start_on_free_ports(|| {
            let bus = free_port().to_string();
            let all = ["--cluster-enabled", "yes", "--cluster-port", &bus];
            all.iter()
                .chain(args)
                .map(|arg| (*arg).to_owned())
                .collect()
        })
    }

    /// The cluster bus port of a node from [`start_cluster_node`](Self::start_cluster_node),
    /// for `CLUSTER MEET`.
    pub fn cluster_bus_port(&self) -> Option<u16> {
        self.port_after("--cluster-port")
    }

    /// A server with extra command-line arguments (`--requirepass secret`, …).
    pub fn start_with(args: &[&str]) -> Self {
        Self::start_on_free_ports(|| args.iter().map(|arg| (*arg).to_owned()).collect())
    }

    /// Starts a server on a free port with the arguments `args()` gives (which may name
    /// free ports of their own); if another process took one of them first, again on
    /// others.
    fn start_on_free_ports(args: impl Fn() -> Vec<String>) -> Self {
        let binary = std::env::var_os("ROBIT_REDIS_SERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("redis-server"));
        on_free_ports("redis-server", || {
            let mut server = Self::new(binary.clone(), args());
            server.try_spawn().map(|()| server)
        })
    }

    fn new(binary: PathBuf, args: Vec<String>) -> Self {
        Self {
            binary,
            dir: tempfile::tempdir().expect("no temp dir"),
            port: free_port(),
            args,
            child: None,
            tls_dir: None,
        }
    }

    /// Starts the process on its port, or fails the test with its log.
    fn spawn(&mut self) {
        if self.try_spawn().is_err() {
            panic!(
                "redis-server could not listen: another process holds port {} or one in {:?}\n{}",
                self.port,
                self.args,
                self.log()
            );
        }
    }

    fn try_spawn(&mut self) -> Result<(), PortTaken> {
        let log = self.dir.path().join("redis.log");
        // The log outlives restarts: the new process is ready when it says so once more.
        let ready_before = self.log().matches(READY).count();
        let child = Command::new(&self.binary)
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(&log)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "could not start {}: {err}; install redis-server or point \
                     ROBIT_REDIS_SERVER at one",
                    self.binary.display()
                )
            });
        let child = self.child.insert(child);
        let ready = |log: &str| log.matches(READY).count() > ready_before;
        let log = || std::fs::read_to_string(&log).unwrap_or_default();
        let started = wait_started(child, "redis-server", log, ready);
        if started.is_err() {
            self.child = None;
        }
        started
    }

    /// The port that follows `flag` in its arguments.
    fn port_after(&self, flag: &str) -> Option<u16> {
        let at = self.args.iter().position(|arg| arg == flag)?;
        self.args.get(at + 1)?.parse().ok()
    }

    /// A server that speaks only TLS, with a certificate for `localhost` signed by a
    /// throwaway certificate authority. Returns the server and the authority's PEM.
    pub fn start_tls(args: &[&str]) -> (Self, Vec<u8>) {
        let dir = tempfile::tempdir().expect("no temp dir");
        let certificates = Certificates::write_to(dir.path());
        let path = |path: &std::path::Path| path.display().to_string();
        let (ca_file, cert_file, key_file) = (
            path(&certificates.ca),
            path(&certificates.cert),
            path(&certificates.key),
        );
        let mut server = Self::start_on_free_ports(|| {
            let tls_port = free_port().to_string();
            let all = [
                "--tls-port",
                &tls_port,
                "--tls-cert-file",
                &cert_file,
                "--tls-key-file",
                &key_file,
                "--tls-ca-cert-file",
                &ca_file,
                "--tls-auth-clients",
                "no",
            ];
            all.iter()
                .chain(args)
                .map(|arg| (*arg).to_owned())
                .collect()
        });
        server.tls_dir = Some(dir);
        (server, certificates.ca_pem)
    }

    /// The `rediss://` URL of a server started with [`start_tls`](Self::start_tls).
    pub fn tls_url(&self, userinfo: &str) -> String {
        format!(
            "rediss://{userinfo}localhost:{}",
            self.port_after("--tls-port").expect("not a TLS server")
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its `redis://` URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Whether its process runs: started, and not stopped (or killed) since. A paused
    /// server runs.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("not running").id()
    }

    /// Kills the server and starts a new one on the same port: without persistence,
    /// every key is gone.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Kills the server (SIGKILL), as a crash does: it stays down.
    pub fn stop(&mut self) {
        self.kill();
    }

    /// Starts a stopped server again, on the same port and in the same directory: it
    /// loads the snapshot (`dump.rdb`) there, if a `SAVE` wrote one.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        self.spawn();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} failed");
    }

    fn kill(&mut self) {
        if let Some(child) = self.child.take() {
            crate::host::kill(child);
        }
    }

    /// What it wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// How many connections are subscribed to `channel` (PUBSUB NUMSUB).
    pub async fn subscribers(&self, channel: &str) -> u64 {
        let (_, subscribers): (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(&mut self.admin().await)
            .await
            .expect("PUBSUB NUMSUB");
        subscribers
    }

    /// Kills every client connection of `kind` (`normal`, `pubsub`), as CLIENT KILL TYPE.
    pub async fn kill_clients(&self, kind: &str) {
        let _: () = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg(kind)
            .query_async(&mut self.admin().await)
            .await
            .expect("CLIENT KILL");
    }

    /// Creates the ACL user `name` (password `pa55`) with exactly `permissions`
    /// (`ACL SETUSER` words, separated by whitespace), and answers the URL that
    /// connects as that user.
    pub async fn acl_user(&self, name: &str, permissions: &str) -> String {
        let mut setuser = redis::cmd("ACL");
        setuser.arg("SETUSER").arg(name).arg("on").arg(">pa55");
        for permission in permissions.split_whitespace() {
            setuser.arg(permission);
        }
        let _: () = setuser
            .query_async(&mut self.admin().await)
            .await
            .expect("ACL SETUSER");
        format!("redis://{name}:pa55@127.0.0.1:{}", self.port)
    }

    /// A connection for the test's own commands (CLIENT KILL, FLUSHALL, …).
    pub async fn admin(&self) -> redis::aio::MultiplexedConnection {
        self.admin_as(&self.url()).await
    }

    /// An admin connection to it, as the user and password in `url`.
    pub async fn admin_as(&self, url: &str) -> redis::aio::MultiplexedConnection {
        redis::Client::open(url)
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "--- redis-server log (port {}) ---\n{}",
                self.port,
                self.log()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_server_whose_port_another_process_holds_starts_again_on_other_ports() {
        let holder = TcpListener::bind("127.0.0.1:0").expect("a port");
        let busy = holder.local_addr().expect("its address").port().to_string();
        let attempts = Cell::new(0);
        let server = RedisServer::start_on_free_ports(|| {
            attempts.set(attempts.get() + 1);
            let bus = if attempts.get() == 1 {
                busy.clone()
            } else {
                free_port().to_string()
            };
            ["--cluster-enabled", "yes", "--cluster-port", &bus]
                .map(str::to_owned)
                .to_vec()
        });
        assert_eq!(attempts.get(), 2, "the first attempt's bus port was taken");
        assert!(server.is_running());
        assert_ne!(server.cluster_bus_port(), busy.parse().ok());
        let first = server.log().matches(READY).count();
        assert_eq!(
            first,
            1,
            "the server's own log says it is ready:\n{}",
            server.log()
        );
    }
}
