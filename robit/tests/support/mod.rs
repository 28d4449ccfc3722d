//! A real `redis-server` for tests: its own process, on a free port, in a temp dir.
//!
//! The binary is `$ROBIT_REDIS_SERVER`, or `redis-server` from `PATH`. The server is
//! killed when the handle drops; if the test is failing at that moment, its log is
//! printed, so a failure shows what the server saw.
//!
//! Also the few helpers the Redis driver's test files share: a driver for a server, a
//! request for a name, and their TTL and time limit.

#![allow(dead_code, unreachable_pub, missing_docs, clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use robit::redis::RedisDriver;
use robit::{AcquireRequest, LockName, OwnerToken};
use tempfile::TempDir;

/// The lease TTL that [`request`] asks for.
pub const TTL: Duration = Duration::from_secs(2);
/// The time limit for an event a test waits for: reaching it means the event never came.
pub const LONG: Duration = Duration::from_secs(20);

/// A driver for `server`, without the quarantine, so a fresh server grants at once.
pub fn driver(server: &RedisServer) -> RedisDriver {
    RedisDriver::builder(&server.url())
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

/// A request for the lock `name`, by owner `who`, for [`TTL`].
pub fn request(name: &str, who: u128) -> AcquireRequest {
    AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(who), TTL)
}

pub struct RedisServer {
    binary: PathBuf,
    dir: TempDir,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    tls_port: Option<u16>,
    tls_dir: Option<TempDir>,
}

impl RedisServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server with extra command-line arguments (`--requirepass secret`, …).
    pub fn start_with(args: &[&str]) -> Self {
        let binary = std::env::var_os("ROBIT_REDIS_SERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("redis-server"));
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("no free port")
            .port();
        let mut server = Self {
            binary,
            dir: tempfile::tempdir().expect("no temp dir"),
            port,
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            child: None,
            tls_port: None,
            tls_dir: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = self.dir.path().join("redis.log");
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
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the server answers on its port (it may ask for a password: any
    /// answer will do). Readiness polling, not a timing assertion.
    fn wait_ready(&self) {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let mut reply = [0_u8; 1];
                if stream.write_all(b"PING\r\n").is_ok() && stream.read(&mut reply).is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < give_up,
                "redis-server did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A server that speaks only TLS, with a certificate for `localhost` signed by a
    /// throwaway certificate authority. Returns the server and the authority's PEM.
    pub fn start_tls(args: &[&str]) -> (Self, Vec<u8>) {
        let dir = tempfile::tempdir().expect("no temp dir");
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("ca");
        let server_key = rcgen::KeyPair::generate().expect("key");
        let server_cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .expect("params")
            .signed_by(&server_key, &ca)
            .expect("certificate");
        let write = |name: &str, pem: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, pem).expect("write");
            path.display().to_string()
        };
        let ca_file = write("ca.crt", &ca.pem());
        let cert_file = write("server.crt", &server_cert.pem());
        let key_file = write("server.key", &server_key.serialize_pem());
        let tls_port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("no free port")
            .port()
            .to_string();
        let mut all = vec![
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
        all.extend_from_slice(args);
        let mut server = Self::start_with(&all);
        server.tls_port = tls_port.parse().ok();
        server.tls_dir = Some(dir);
        (server, ca.pem().into_bytes())
    }

    /// The `rediss://` URL of a server started with [`start_tls`](Self::start_tls).
    pub fn tls_url(&self, userinfo: &str) -> String {
        format!(
            "rediss://{userinfo}localhost:{}",
            self.tls_port.expect("not a TLS server")
        )
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("not running").id()
    }

    /// Kills the server and starts a new one on the same port: without persistence,
    /// every key is gone.
    pub fn restart(&mut self) {
        self.kill();
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
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }

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

    /// A connection for the test's own commands (CLIENT KILL, FLUSHALL, …).
    pub async fn admin(&self) -> redis::aio::MultiplexedConnection {
        self.admin_as(&self.url()).await
    }

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

/// A TCP proxy in front of a server that can freeze its existing connections — keep them
/// open but stop forwarding, like a half-open connection after a network failure — while
/// still serving new ones.
pub struct FreezingProxy {
    port: u16,
    epoch: std::sync::Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl FreezingProxy {
    pub async fn start(upstream_port: u16) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let epoch = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let shared = std::sync::Arc::clone(&epoch);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream_port)).await
                else {
                    continue;
                };
                let born = shared.load(Ordering::SeqCst);
                let epoch = std::sync::Arc::clone(&shared);
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let live = move || epoch.load(Ordering::SeqCst) == born;
                    let live_too = live.clone();
                    let up = forward(&mut client_read, &mut server_write, live);
                    let down = forward(&mut server_read, &mut client_write, live_too);
                    tokio::join!(up, down);
                });
            }
        });
        Self { port, epoch, task }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// From now on, connections opened before this call forward nothing (and never close).
    pub fn freeze_existing(&self) {
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for FreezingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    live: impl Fn() -> bool,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = [0_u8; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buffer).await else {
            return;
        };
        if read == 0 {
            return;
        }
        if !live() {
            // Frozen: swallow everything, keep the socket open.
            std::future::pending::<()>().await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
