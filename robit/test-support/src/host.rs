//! What the tests' own servers share: a free loopback port, and a throwaway certificate
//! authority with a certificate for `localhost`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// A loopback port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("no free port")
        .port()
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
