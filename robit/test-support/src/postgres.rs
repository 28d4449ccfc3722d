//! A real Postgres for tests: a cluster of the test's own, made by `initdb` in a temp
//! dir and run by `postgres` on a free loopback port; never the machine's own server.
//!
//! The binaries come from `$ROBIT_PG_BINDIR`, or from `pg_config --bindir`, or from
//! `PATH`. Postgres refuses to run as root: a test run as root runs the server as the
//! `postgres` user (or `nobody`) instead. The server is killed when the handle drops;
//! if the test is failing at that moment, its log is printed.

#![allow(clippy::print_stderr)]

use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::host::{Certificates, free_port};

/// The superuser of the test's cluster; it trusts every local connection.
pub const SUPERUSER: &str = "robit";

/// A Postgres server of the test's own; killed on drop, its log printed if the test is
/// failing.
#[derive(Debug)]
pub struct PostgresServer {
    bindir: PathBuf,
    dir: TempDir,
    port: u16,
    user: Option<(u32, u32)>,
    /// Settings of its own, `-c name=value` each.
    settings: Vec<String>,
    child: Option<Child>,
}

impl PostgresServer {
    /// A fresh cluster, started, accepting connections.
    pub fn start() -> Self {
        Self::start_with(|_| Vec::new())
    }

    /// A fresh cluster that speaks TLS (and plain TCP), with a certificate for
    /// `localhost` signed by a throwaway authority; returns the path of the authority's
    /// certificate too, for a client's `sslrootcert`.
    pub fn start_tls() -> (Self, PathBuf) {
        let mut authority = PathBuf::new();
        let server = Self::start_with(|dir| {
            let certificates = Certificates::write_to(dir);
            authority = certificates.ca.clone();
            vec![
                "ssl=on".to_owned(),
                format!("ssl_cert_file={}", certificates.cert.display()),
                format!("ssl_key_file={}", certificates.key.display()),
            ]
        });
        (server, authority)
    }

    /// A fresh cluster started with the settings `settings` gives, from the temp dir
    /// (where it may write files first), accepting connections.
    fn start_with(settings: impl FnOnce(&Path) -> Vec<String>) -> Self {
        let bindir = bindir();
        let dir = tempfile::tempdir().expect("no temp dir");
        let user = run_as();
        let settings = settings(dir.path());
        if let Some((uid, gid)) = user {
            for entry in std::fs::read_dir(dir.path())
                .expect("the temp dir")
                .flatten()
            {
                chown(entry.path(), Some(uid), Some(gid)).expect("chown a file of the server's");
            }
            chown(dir.path(), Some(uid), Some(gid)).expect("chown the temp dir");
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .expect("chmod the temp dir");
        }
        for entry in std::fs::read_dir(dir.path())
            .expect("the temp dir")
            .flatten()
        {
            // Postgres refuses a private key that others may read.
            if entry.path().extension().is_some_and(|ext| ext == "key") {
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))
                    .expect("chmod the key");
            }
        }
        let mut server = Self {
            bindir,
            dir,
            port: 0,
            user,
            settings,
            child: None,
        };
        server.initdb();
        for _ in 0..4 {
            server.port = free_port();
            server.spawn();
            if server.wait_ready() {
                return server;
            }
        }
        panic!("postgres never started:\n{}", server.log());
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bindir.join(program));
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        command.stdin(Stdio::null());
        command
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    fn initdb(&self) {
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(self.data())
            .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"])
            .args(["--no-instructions", "--locale=C"])
            .output()
            .unwrap_or_else(|err| {
                panic!(
                    "could not run initdb from {}: {err}; install the Postgres server \
                     (Debian: postgresql) or point ROBIT_PG_BINDIR at its binaries",
                    self.bindir.display()
                )
            });
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log file");
        if let Some((uid, gid)) = self.user {
            chown(self.log_path(), Some(uid), Some(gid)).expect("chown the log");
        }
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.dir.path().display()
            ))
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "shared_buffers=32MB", "-c", "max_connections=200"])
            .args(
                self.settings
                    .iter()
                    .flat_map(|setting| ["-c", setting.as_str()]),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("could not start postgres");
        self.child = Some(child);
    }

    /// Waits until the server accepts connections; false if it exited because its port
    /// was taken, or its predecessor's backends still held its data directory.
    fn wait_ready(&mut self) -> bool {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(child) = self.child.as_mut()
                && matches!(child.try_wait(), Ok(Some(_)))
            {
                self.child = None;
                // Its port taken, or, after a kill, the old server's backends not gone
                // yet (they hold its shared memory and lock file a moment longer).
                let log = self.log();
                let retry = ["could not bind", "is still in use", "lock file"]
                    .iter()
                    .any(|cause| log.contains(cause));
                assert!(retry, "postgres exited:\n{log}");
                return false;
            }
            let ready = self
                .command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return true;
            }
            assert!(
                Instant::now() < give_up,
                "postgres never accepted connections:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A streaming replica of `primary`, made by `pg_basebackup` through loopback port
    /// `via` (the primary's own, or a proxy's in front of it, which then carries the
    /// replication too), started on a free port of its own, accepting connections.
    pub fn start_replica(primary: &PostgresServer, via: u16) -> Self {
        let dir = tempfile::tempdir().expect("no temp dir");
        if let Some((uid, gid)) = primary.user {
            chown(dir.path(), Some(uid), Some(gid)).expect("chown the temp dir");
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .expect("chmod the temp dir");
        }
        let mut replica = Self {
            bindir: primary.bindir.clone(),
            dir,
            port: 0,
            user: primary.user,
            settings: primary.settings.clone(),
            child: None,
        };
        let output = replica
            .command("pg_basebackup")
            .arg("-D")
            .arg(replica.data())
            .args(["-h", "127.0.0.1", "-p", &via.to_string(), "-U", SUPERUSER])
            .args(["-R", "-X", "stream", "--no-sync"])
            .output()
            .expect("pg_basebackup");
        assert!(
            output.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        for _ in 0..4 {
            replica.port = free_port();
            replica.spawn();
            if replica.wait_ready() {
                return replica;
            }
        }
        panic!("the replica never started:\n{}", replica.log());
    }

    /// Waits until every standby streaming from this primary has replayed everything it
    /// has written so far.
    pub fn wait_replicas_caught_up(&self) {
        let give_up = Instant::now() + Duration::from_secs(30);
        let target = self.psql("SELECT pg_current_wal_lsn()");
        let query = format!(
            "SELECT count(*) > 0 AND bool_and(replay_lsn >= '{target}') FROM pg_stat_replication"
        );
        while self.psql(&query) != "t" {
            assert!(Instant::now() < give_up, "the replicas never caught up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Promotes this standby to a primary, and waits until it is one.
    pub fn promote(&self) {
        assert_eq!(
            self.psql("SELECT pg_promote(true, 30)"),
            "t",
            "{}",
            self.log()
        );
    }

    /// The URL of database `postgres` as the superuser.
    pub fn url(&self) -> String {
        self.url_as(SUPERUSER)
    }

    /// The URL of database `postgres` as `user` (no password: the cluster trusts
    /// loopback connections).
    pub fn url_as(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }

    /// The server's port, for a proxy in front of it.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id of the server's postmaster (its backends are its children), while
    /// it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Runs `sql` as the superuser with `psql`, and returns what it printed (unaligned,
    /// tuples only); panics if it fails.
    pub fn psql(&self, sql: &str) -> String {
        let output = self
            .command("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", "postgres", "-X", "-A", "-t", "-q"])
            .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("psql");
        assert!(
            output.status.success(),
            "psql failed on {sql:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Kills the server (SIGKILL), as a crash does.
    pub fn kill(&mut self) {
        if let Some(child) = self.child.take() {
            crate::host::kill(child);
            // Its backends outlive the postmaster for a moment; the next start waits
            // for them (the data directory's lock file).
        }
    }

    /// Starts a killed server again on the same port, from its data directory (crash
    /// recovery replays its WAL), and waits until it accepts connections.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "postgres is running");
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            self.spawn();
            if self.wait_ready() {
                return;
            }
            assert!(
                Instant::now() < give_up,
                "postgres never came back:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Freezes the server (SIGSTOP on the postmaster and every backend).
    pub fn pause(&self) {
        self.signal_all("-STOP");
    }

    /// Thaws a paused server.
    pub fn resume(&self) {
        self.signal_all("-CONT");
    }

    fn signal_all(&self, signal: &str) {
        let Some(child) = &self.child else { return };
        let pid = child.id().to_string();
        let _ = Command::new("pkill").args([signal, "-P", &pid]).status();
        let _ = Command::new("kill").args([signal, &pid]).status();
    }

    /// What the server wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The data directory, for a test that reads or writes the server's files.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("--- postgres log (port {}) ---\n{}", self.port, self.log());
        }
    }
}

/// Where the Postgres binaries are.
fn bindir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ROBIT_PG_BINDIR") {
        return PathBuf::from(dir);
    }
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    match from_pg_config {
        Some(dir) if dir.join("initdb").exists() => dir,
        _ => PathBuf::new(),
    }
}

/// The user and group to run the server as: none unless the tests run as root, which
/// Postgres refuses; then `postgres`, or `nobody`.
fn run_as() -> Option<(u32, u32)> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    if uid.as_deref() != Some("0") {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    ["postgres", "nobody"].iter().find_map(|name| {
        let line = passwd
            .lines()
            .find(|line| line.starts_with(&format!("{name}:")))?;
        let fields: Vec<&str> = line.split(':').collect();
        Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
    })
}

/// A pgbouncer of the test's own in front of a [`PostgresServer`], in transaction mode:
/// each transaction (each statement outside one) may run on another server connection.
/// The binary is `$ROBIT_PGBOUNCER`, or `pgbouncer` from `PATH` or `/usr/sbin`
/// (Debian: `pgbouncer`). Killed on drop, its log printed if the test is failing.
#[derive(Debug)]
pub struct Pgbouncer {
    dir: TempDir,
    port: u16,
    child: Option<Child>,
}

impl Pgbouncer {
    /// A pgbouncer in transaction mode with at most `server_connections` connections to
    /// `server`, accepting connections.
    pub fn start(server: &PostgresServer, server_connections: u32) -> Self {
        let dir = tempfile::tempdir().expect("no temp dir");
        if let Some((uid, gid)) = server.user {
            chown(dir.path(), Some(uid), Some(gid)).expect("chown the temp dir");
        }
        let mut bouncer = Self {
            dir,
            port: 0,
            child: None,
        };
        for _ in 0..4 {
            bouncer.port = free_port();
            bouncer.spawn(server, server_connections);
            if bouncer.wait_ready() {
                return bouncer;
            }
        }
        panic!("pgbouncer never started:\n{}", bouncer.log());
    }

    fn spawn(&mut self, server: &PostgresServer, server_connections: u32) {
        let dir = self.dir.path();
        std::fs::write(dir.join("users.txt"), format!("\"{SUPERUSER}\" \"\"\n")).expect("users");
        let ini = format!(
            "[databases]\npostgres = host=127.0.0.1 port={} dbname=postgres\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {}\npool_mode = transaction\n\
             default_pool_size = {server_connections}\nmax_client_conn = 200\n\
             logfile = {}\npidfile = {}\n",
            server.port,
            self.port,
            dir.join("users.txt").display(),
            dir.join("pgbouncer.log").display(),
            dir.join("pgbouncer.pid").display(),
        );
        std::fs::write(dir.join("pgbouncer.ini"), ini).expect("ini");
        if let Some((uid, gid)) = server.user {
            for file in ["users.txt", "pgbouncer.ini"] {
                chown(dir.join(file), Some(uid), Some(gid)).expect("chown");
            }
        }
        let binary = std::env::var_os("ROBIT_PGBOUNCER")
            .map(PathBuf::from)
            .or_else(|| {
                let sbin = PathBuf::from("/usr/sbin/pgbouncer");
                sbin.exists().then_some(sbin)
            })
            .unwrap_or_else(|| PathBuf::from("pgbouncer"));
        let mut command = Command::new(&binary);
        if let Some((uid, gid)) = server.user {
            command.uid(uid).gid(gid);
        }
        let child = command
            .arg(dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "could not start {}: {err}; install pgbouncer or point ROBIT_PGBOUNCER at \
                     its binary",
                    binary.display()
                )
            });
        self.child = Some(child);
    }

    fn wait_ready(&mut self) -> bool {
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(child) = self.child.as_mut()
                && matches!(child.try_wait(), Ok(Some(_)))
            {
                self.child = None;
                assert!(
                    self.log().contains("Address already in use"),
                    "pgbouncer exited:\n{}",
                    self.log()
                );
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            assert!(
                Instant::now() < give_up,
                "pgbouncer never listened:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The URL of database `postgres` through the pooler.
    pub fn url(&self) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/postgres", self.port)
    }

    /// What it wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for Pgbouncer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- pgbouncer log (port {}) ---\n{}", self.port, self.log());
        }
    }
}

/// A TCP proxy a test owns in front of a server, that it can point at another: as a
/// virtual address moves to a promoted standby. Moving it closes the connections open
/// to the old server, as that server's death would.
#[derive(Debug)]
pub struct Switch {
    port: u16,
    upstream: std::sync::Arc<std::sync::atomic::AtomicU16>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Switch {
    /// A proxy on a free loopback port, forwarding to `upstream`.
    pub async fn start(upstream: u16) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let target = std::sync::Arc::new(std::sync::atomic::AtomicU16::new(upstream));
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (to, open) = (
            std::sync::Arc::clone(&target),
            std::sync::Arc::clone(&connections),
        );
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = to.load(Ordering::SeqCst);
                let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    continue;
                };
                let forward = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                open.lock().unwrap().push(forward.abort_handle());
            }
        });
        Self {
            port,
            upstream: target,
            connections,
            task,
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Closes every connection open now, and sends new ones to `upstream`.
    pub fn switch_to(&self, upstream: u16) {
        self.upstream
            .store(upstream, std::sync::atomic::Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.task.abort();
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }
}
