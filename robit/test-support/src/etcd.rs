//! A real etcd cluster for tests: its own members, each its own `etcd` process on free
//! loopback ports with a data directory in a temp dir.
//!
//! The binary is `$ROBIT_ETCD`, or `etcd` from `PATH` (Debian: `etcd-server`). Members
//! are killed when the handle drops; if the test is failing at that moment, their logs
//! are printed. Elections are quick (heartbeat 50 ms, election timeout 500 ms), so a
//! lost leader is replaced within about a second, and etcd's shortest lease is 1 s.

#![allow(clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::host::{Certificates, free_port};

/// One member: its ports and, while it runs, its process.
#[derive(Debug)]
struct Member {
    client: u16,
    peer: u16,
    /// Plain HTTP `/health` and `/metrics`, whether clients speak TLS or not.
    metrics: u16,
    child: Option<Child>,
}

/// Client TLS: the members' certificate and key files.
#[derive(Debug)]
struct Tls {
    cert: PathBuf,
    key: PathBuf,
}

/// An etcd cluster of the test's own; killed on drop, its logs printed if the test is
/// failing.
#[derive(Debug)]
pub struct EtcdCluster {
    binary: PathBuf,
    dir: TempDir,
    members: Vec<Member>,
    tls: Option<Tls>,
}

impl EtcdCluster {
    /// A cluster of `size` members, started and with a leader.
    pub fn start(size: usize) -> Self {
        Self::start_with(size, false).0
    }

    /// A cluster whose members speak only TLS to clients, with a certificate for
    /// `localhost` signed by a throwaway authority; returns the authority's PEM too.
    pub fn start_tls(size: usize) -> (Self, Vec<u8>) {
        let (cluster, ca) = Self::start_with(size, true);
        (cluster, ca.expect("an authority"))
    }

    fn start_with(size: usize, tls: bool) -> (Self, Option<Vec<u8>>) {
        // A port found free can be taken (by another test's outgoing connection, say)
        // before etcd binds it: then the cluster starts again, on fresh ports.
        for _ in 0..4 {
            let (mut cluster, ca) = Self::spawn_all(size, tls);
            if !cluster.lost_a_port() {
                cluster.wait_healthy();
                return (cluster, ca);
            }
        }
        let (cluster, ca) = Self::spawn_all(size, tls);
        cluster.wait_healthy();
        (cluster, ca)
    }

    /// Waits until every member is healthy or one has exited; whether one exited
    /// because another process had taken one of its ports.
    fn lost_a_port(&mut self) -> bool {
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            let mut healthy = true;
            for index in 0..self.members.len() {
                let exited = self.members[index]
                    .child
                    .as_mut()
                    .is_some_and(|child| matches!(child.try_wait(), Ok(Some(_))));
                if exited {
                    return std::fs::read_to_string(self.log_path(index))
                        .unwrap_or_default()
                        .contains("address already in use");
                }
                healthy &= http_get(self.members[index].metrics, "/health")
                    .contains("\"health\":\"true\"");
            }
            if healthy || Instant::now() >= give_up {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A cluster of `size` fresh members on ports found free, spawned, not waited for.
    fn spawn_all(size: usize, tls: bool) -> (Self, Option<Vec<u8>>) {
        let binary = std::env::var_os("ROBIT_ETCD")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("etcd"));
        let members = (0..size)
            .map(|_| Member {
                client: free_port(),
                peer: free_port(),
                metrics: free_port(),
                child: None,
            })
            .collect();
        let dir = tempfile::tempdir().expect("no temp dir");
        let (tls, ca) = if tls {
            let certificates = Certificates::write_to(dir.path());
            let tls = Tls {
                cert: certificates.cert,
                key: certificates.key,
            };
            (Some(tls), Some(certificates.ca_pem))
        } else {
            (None, None)
        };
        let mut cluster = Self {
            binary,
            dir,
            members,
            tls,
        };
        for index in 0..size {
            cluster.spawn(index);
        }
        (cluster, ca)
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    fn spawn(&mut self, index: usize) {
        let initial: Vec<String> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| format!("m{i}=http://127.0.0.1:{}", m.peer))
            .collect();
        let member = &self.members[index];
        let client = format!("{}://127.0.0.1:{}", self.scheme(), member.client);
        let peer = format!("http://127.0.0.1:{}", member.peer);
        let metrics = format!("http://127.0.0.1:{}", member.metrics);
        let mut tls_args = Vec::new();
        if let Some(tls) = &self.tls {
            tls_args.push("--cert-file".to_owned());
            tls_args.push(tls.cert.display().to_string());
            tls_args.push("--key-file".to_owned());
            tls_args.push(tls.key.display().to_string());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(index))
            .expect("log file");
        let child = Command::new(&self.binary)
            .args(["--name", &format!("m{index}")])
            .arg("--data-dir")
            .arg(self.dir.path().join(format!("m{index}")))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--listen-metrics-urls", &metrics])
            .args(&tls_args)
            .args(["--initial-cluster", &initial.join(",")])
            .args([
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "robit-test",
            ])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "could not start {}: {err}; install etcd-server or point ROBIT_ETCD at an \
                     etcd binary",
                    self.binary.display()
                )
            });
        self.members[index].child = Some(child);
    }

    fn log_path(&self, index: usize) -> PathBuf {
        self.dir.path().join(format!("m{index}.log"))
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.members.len()).map(|i| self.endpoint(i)).collect()
    }

    /// Member `index`'s client URL (`https://localhost:…` for a TLS cluster, the name
    /// its certificate carries).
    pub fn endpoint(&self, index: usize) -> String {
        let port = self.members[index].client;
        match self.tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        }
    }

    /// Member `index`'s client port, for a proxy in front of it.
    pub fn client_port(&self, index: usize) -> u16 {
        self.members[index].client
    }

    /// Waits until every running member answers its health check (which needs a leader).
    /// Readiness polling, not a timing assertion.
    pub fn wait_healthy(&self) {
        let give_up = Instant::now() + Duration::from_secs(20);
        for (index, member) in self.members.iter().enumerate() {
            if member.child.is_none() {
                continue;
            }
            while !http_get(member.metrics, "/health").contains("\"health\":\"true\"") {
                assert!(
                    Instant::now() < give_up,
                    "etcd member m{index} never became healthy:\n{}",
                    self.logs()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The index of the current leader, once a running member says it leads.
    pub fn leader(&self) -> usize {
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            for (index, member) in self.members.iter().enumerate() {
                if member.child.is_some()
                    && http_get(member.metrics, "/metrics").contains("\netcd_server_is_leader 1")
                {
                    return index;
                }
            }
            assert!(Instant::now() < give_up, "no etcd leader:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills member `index` (SIGKILL), as a crash does: it stays down.
    pub fn kill(&mut self, index: usize) {
        if let Some(child) = self.members[index].child.take() {
            crate::host::kill(child);
        }
    }

    /// Starts a killed member again, from its data directory.
    pub fn start_again(&mut self, index: usize) {
        assert!(self.members[index].child.is_none(), "m{index} is running");
        self.spawn(index);
    }

    /// Kills every member, then starts them all again from their data directories, and
    /// waits for a leader: a whole-cluster restart.
    pub fn restart_all(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index);
        }
        for index in 0..self.members.len() {
            self.spawn(index);
        }
        self.wait_healthy();
    }

    /// Freezes member `index` (SIGSTOP): its connections stay open, nothing answers.
    pub fn pause(&self, index: usize) {
        self.signal(index, "-STOP");
    }

    /// Thaws a paused member (SIGCONT).
    pub fn resume(&self, index: usize) {
        self.signal(index, "-CONT");
    }

    fn signal(&self, index: usize, signal: &str) {
        let pid = self.members[index]
            .child
            .as_ref()
            .expect("not running")
            .id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Every member's log so far.
    pub fn logs(&self) -> String {
        (0..self.members.len())
            .map(|index| {
                let log = std::fs::read_to_string(self.log_path(index)).unwrap_or_default();
                format!("--- etcd m{index} log ---\n{log}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index);
        }
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

/// The body of `GET path` on loopback `port`, or "" if it does not answer within 1 s.
fn http_get(port: u16, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}
