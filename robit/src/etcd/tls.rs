//! TLS to etcd (`etcd-tls` feature): the members' authority, the client's own certificate.

use etcd_client::{Certificate, Identity, TlsOptions};

use super::config::TlsSettings;

/// tonic's TLS settings for `etcd-tls`: its authority, or the web's roots without one.
pub(super) fn options(tls: &TlsSettings) -> TlsOptions {
    let mut options = TlsOptions::new();
    options = match &tls.ca_pem {
        Some(pem) => options.ca_certificate(Certificate::from_pem(pem)),
        None => options.with_webpki_roots(),
    };
    if let Some((cert, key)) = &tls.identity {
        options = options.identity(Identity::from_pem(cert, key));
    }
    if let Some(domain) = &tls.domain {
        options = options.domain_name(domain.clone());
    }
    options
}
