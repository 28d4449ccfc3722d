//! What the tests' own servers share: a free loopback port, and a throwaway certificate
//! authority with a certificate for `localhost`.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The ports handed out so far in this process.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port nothing listens on right now, and never handed out before in this
/// process: tests that share a process (plain `cargo test`) each get servers at
/// addresses of their own, so no driver mistakes one test's server for another's that
/// it has seen (the Redis driver remembers the servers it met, process-wide).
pub(crate) fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
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
