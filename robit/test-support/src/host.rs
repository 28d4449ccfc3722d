//! What the tests' own servers share: a free loopback port, and a throwaway certificate
//! authority with a certificate for `localhost`.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The ports handed out so far in this process.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port nothing listens on right now, and never handed out before in this
/// process: tests that share a process (plain `cargo test`) each get servers at
/// addresses of their own, so no driver mistakes one test's server for another's that
/// it has seen (the Redis driver remembers the servers it met, process-wide).
///
/// It is picked at random below the kernel's range of ephemeral ports: a port from that
/// range may be taken, between the check here and the server's own bind, as the local
/// port of any outgoing connection on the machine (another test's client). Another
/// process may still pick the same port at the same moment; a server that then finds
/// its port taken is started again on others ([`wait_started`]).
pub(crate) fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let below = ephemeral_start().max(FIRST_PORT + 1000);
    let mut state = seed();
    for _ in 0..10_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let port = FIRST_PORT + u16::try_from(state % u64::from(below - FIRST_PORT)).unwrap_or(0);
        if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.insert(port);
            return port;
        }
    }
    // Every port tried is busy: take one from the kernel, ephemeral as it is.
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("no free port")
            .port();
        if handed_out.insert(port) {
            return port;
        }
    }
}

/// The lowest port a test server is given: below it are the well-known and commonly
/// configured ports.
const FIRST_PORT: u16 = 10_000;

/// The first port of the kernel's range for ephemeral (outgoing) ports.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A seed that differs between processes and calls: the tests' ports are spread, not
/// reproduced.
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    hasher.finish() | 1
}

/// A server process that could not listen: another process holds one of its ports.
#[derive(Debug)]
pub(crate) struct PortTaken;

/// How many sets of free ports a fresh server is tried on before the test fails.
const ATTEMPTS: usize = 5;

/// Starts the server `what` with `start`, which picks free ports of its own; if another
/// process took one of them first, again on others, and fails the test after a few.
pub(crate) fn on_free_ports<T>(what: &str, mut start: impl FnMut() -> Result<T, PortTaken>) -> T {
    for _ in 0..ATTEMPTS {
        if let Ok(started) = start() {
            return started;
        }
    }
    panic!("{what} could not listen: every set of free ports tried ({ATTEMPTS}) was taken")
}

/// Kills a server's process (SIGKILL), as a crash does, and reaps it: thawed first, so
/// that a frozen one (SIGSTOP) dies too.
pub(crate) fn kill(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .args(["-CONT", &child.id().to_string()])
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits until the server `what`, just spawned as `child`, is ready: `ready` holds for
/// its log, as `log()` reads it. Readiness polling, not a timing assertion: the log,
/// not a connection to the port, because another process may answer on a port this
/// server failed to take. Fails the test, with the log, if the server exits for another
/// reason or is not ready within 10 s.
pub(crate) fn wait_started(
    child: &mut Child,
    what: &str,
    log: impl Fn() -> String,
    ready: impl Fn(&str) -> bool,
) -> Result<(), PortTaken> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let text = log();
        if ready(&text) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            // What the log says now, written before the exit.
            let text = log();
            if text.contains("Address already in use") {
                return Err(PortTaken);
            }
            panic!("{what} exited ({status}) before it was ready:\n{text}");
        }
        assert!(Instant::now() < give_up, "{what} did not start:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A certificate for `localhost` and `127.0.0.1` signed by a throwaway authority, written
/// to a directory: the files' paths, and the authority's PEM for the client.
pub(crate) struct Certificates {
    pub(crate) ca: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) ca_pem: Vec<u8>,
}

impl Certificates {
    /// Generates them and writes `ca.crt`, `server.crt` and `server.key` to `dir`.
    pub(crate) fn write_to(dir: &Path) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("ca");
        let key = rcgen::KeyPair::generate().expect("key");
        let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let cert = rcgen::CertificateParams::new(names)
            .expect("params")
            .signed_by(&key, &ca)
            .expect("certificate");
        let write = |name: &str, pem: &str| {
            let path = dir.join(name);
            std::fs::write(&path, pem).expect("write");
            path
        };
        Self {
            ca: write("ca.crt", &ca.pem()),
            cert: write("server.crt", &cert.pem()),
            key: write("server.key", &key.serialize_pem()),
            ca_pem: ca.pem().into_bytes(),
        }
    }
}
