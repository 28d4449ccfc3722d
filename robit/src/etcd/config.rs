//! Building an [`EtcdDriver`]: endpoints, namespace, credentials, TLS, timeouts — all
//! checked by [`EtcdDriverBuilder::build`], none sent anywhere until the first call.

use std::fmt;
use std::time::Duration;

use super::EtcdDriver;
use crate::millis::Millis;

/// The key prefix under which a driver keeps its locks, unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "robit";
/// How long one request to etcd may take before it fails (and the Mutex retries).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long dialling one endpoint may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often an idle connection is pinged, and how long a ping may go unanswered
/// before the connection is dropped and dialled again: a member that froze or a link
/// that went dark is noticed within twice this.
pub const DEFAULT_HEALTH_CHECK: Duration = Duration::from_secs(1);

/// A setting [`EtcdDriverBuilder::build`] refused.
///
/// # Example
///
/// ```
/// use robit::etcd::{EtcdConfigError, EtcdDriver};
///
/// let err = EtcdDriver::builder(Vec::<String>::new()).build().unwrap_err();
/// assert!(matches!(err, EtcdConfigError::NoEndpoints));
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum EtcdConfigError {
    /// No endpoint was given.
    #[error("no etcd endpoint given; name at least one member, e.g. http://127.0.0.1:2379")]
    NoEndpoints,
    /// An endpoint is not `[http://|https://]host:port`.
    #[error(
        "invalid etcd endpoint {endpoint:?}: expected [http://|https://]host:port, \
         e.g. http://127.0.0.1:2379"
    )]
    InvalidEndpoint {
        /// The rejected endpoint.
        endpoint: String,
    },
    /// An `https://` endpoint or TLS settings, in a build without the `etcd-tls` feature.
    #[error(
        "etcd endpoint {endpoint:?} needs TLS, which this build lacks; enable robit's \
         `etcd-tls` feature"
    )]
    TlsNotCompiled {
        /// The endpoint that asked for TLS.
        endpoint: String,
    },
    /// TLS settings given, but an endpoint says `http://`.
    #[error("etcd endpoint {endpoint:?} is plain http:// but TLS is configured; use https://")]
    PlainEndpointWithTls {
        /// The endpoint.
        endpoint: String,
    },
    /// The namespace is empty.
    #[error("the etcd namespace must not be empty")]
    EmptyNamespace,
    /// A user name that is empty.
    #[error("the etcd user name must not be empty")]
    EmptyUser,
    /// A timeout of zero, which would fail every request.
    #[error("the etcd {what} must be longer than zero (got {})", Millis(*.timeout))]
    ZeroTimeout {
        /// Which timeout.
        what: &'static str,
        /// The rejected value.
        timeout: Duration,
    },
}

/// TLS to etcd: the authority that signed the members' certificates, and optionally a
/// certificate for the client (etcd's `--client-cert-auth`). Needs the `etcd-tls` feature.
#[derive(Clone, Default)]
pub(super) struct TlsSettings {
    pub(super) ca_pem: Option<Vec<u8>>,
    pub(super) identity: Option<(Vec<u8>, Vec<u8>)>,
    pub(super) domain: Option<String>,
}

/// What a built driver knows; its `Debug` prints no password and no key.
#[derive(Clone)]
pub(super) struct Settings {
    pub(super) endpoints: Vec<String>,
    pub(super) namespace: String,
    pub(super) user: Option<(String, String)>,
    pub(super) tls: Option<TlsSettings>,
    pub(super) request_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) health_check: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("endpoints", &self.endpoints)
            .field("namespace", &self.namespace)
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .field("password", &self.user.as_ref().map(|_| "<hidden>"))
            .field("tls", &self.tls.is_some())
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("health_check", &self.health_check)
            .finish()
    }
}

/// Builds an [`EtcdDriver`]; start with [`EtcdDriver::builder`].
///
/// # Example
///
/// ```
/// use robit::etcd::EtcdDriver;
/// use std::time::Duration;
///
/// let driver = EtcdDriver::builder(["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"])
///     .namespace("billing")
///     .user("robit", "s3cret")
///     .request_timeout(Duration::from_millis(500))
///     .build()?;
/// assert!(!format!("{driver:?}").contains("s3cret"));
/// # Ok::<(), robit::etcd::EtcdConfigError>(())
/// ```
#[must_use]
pub struct EtcdDriverBuilder {
    settings: Settings,
}

impl EtcdDriverBuilder {
    pub(super) fn new(endpoints: Vec<String>) -> Self {
        Self {
            settings: Settings {
                endpoints,
                namespace: DEFAULT_NAMESPACE.to_owned(),
                user: None,
                tls: None,
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                health_check: DEFAULT_HEALTH_CHECK,
            },
        }
    }

    /// The key prefix for this driver's locks (default [`DEFAULT_NAMESPACE`]): drivers
    /// share a lock only if they share a namespace. Grant the user read-write on
    /// `{namespace}/` and nothing more.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.settings.namespace = namespace.into();
        self
    }

    /// Authenticates as `user` (etcd's auth enabled). The password is kept only to
    /// authenticate and never printed.
    pub fn user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.settings.user = Some((user.into(), password.into()));
        self
    }

    /// Trusts the certificate authority in `pem` for the members' certificates, in
    /// place of the platform's roots (`etcd-tls` feature).
    pub fn ca_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.settings
            .tls
            .get_or_insert_with(TlsSettings::default)
            .ca_pem = Some(pem.into());
        self
    }

    /// Presents a client certificate and its private key, both PEM, for members that
    /// check clients' certificates (`etcd-tls` feature). The key is never printed.
    pub fn client_identity(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.settings
            .tls
            .get_or_insert_with(TlsSettings::default)
            .identity = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// The name the members' certificates must carry, when it is not the endpoints'
    /// host (`etcd-tls` feature).
    pub fn tls_domain(mut self, domain: impl Into<String>) -> Self {
        self.settings
            .tls
            .get_or_insert_with(TlsSettings::default)
            .domain = Some(domain.into());
        self
    }

    /// How long one request may take (default [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.settings.request_timeout = timeout;
        self
    }

    /// How long dialling one endpoint may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout;
        self
    }

    /// How often a connection is pinged, and how long a ping may go unanswered (default
    /// [`DEFAULT_HEALTH_CHECK`]).
    pub fn health_check(mut self, interval: Duration) -> Self {
        self.settings.health_check = interval;
        self
    }

    /// Checks the settings and builds the driver. Nothing is dialled yet: the first call
    /// connects (and authenticates), and a failure there is a transient error the
    /// Mutex retries.
    ///
    /// # Errors
    ///
    /// An [`EtcdConfigError`] naming the first setting that cannot work.
    pub fn build(self) -> Result<EtcdDriver, EtcdConfigError> {
        let settings = self.settings;
        validate(&settings)?;
        Ok(EtcdDriver::from_settings(settings))
    }
}

impl fmt::Debug for EtcdDriverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdDriverBuilder")
            .field("settings", &self.settings)
            .finish()
    }
}

fn validate(settings: &Settings) -> Result<(), EtcdConfigError> {
    if settings.endpoints.is_empty() {
        return Err(EtcdConfigError::NoEndpoints);
    }
    for endpoint in &settings.endpoints {
        validate_endpoint(endpoint, settings.tls.is_some())?;
    }
    if settings.tls.is_some() && !cfg!(feature = "etcd-tls") {
        return Err(EtcdConfigError::TlsNotCompiled {
            endpoint: settings.endpoints[0].clone(),
        });
    }
    if settings.namespace.is_empty() {
        return Err(EtcdConfigError::EmptyNamespace);
    }
    if settings
        .user
        .as_ref()
        .is_some_and(|(name, _)| name.is_empty())
    {
        return Err(EtcdConfigError::EmptyUser);
    }
    for (what, timeout) in [
        ("request timeout", settings.request_timeout),
        ("connect timeout", settings.connect_timeout),
        ("health check", settings.health_check),
    ] {
        if timeout.is_zero() {
            return Err(EtcdConfigError::ZeroTimeout { what, timeout });
        }
    }
    Ok(())
}

fn validate_endpoint(endpoint: &str, tls: bool) -> Result<(), EtcdConfigError> {
    let invalid = || EtcdConfigError::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
    };
    let (secure, address) = if let Some(rest) = endpoint.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = endpoint.strip_prefix("http://") {
        if tls {
            return Err(EtcdConfigError::PlainEndpointWithTls {
                endpoint: endpoint.to_owned(),
            });
        }
        (false, rest)
    } else if endpoint.contains("://") {
        return Err(invalid());
    } else {
        (tls, endpoint)
    };
    let address = address.strip_suffix('/').unwrap_or(address);
    let (host, port) = address.rsplit_once(':').ok_or_else(invalid)?;
    if host.is_empty() || host.contains('/') || port.parse::<u16>().is_err() {
        return Err(invalid());
    }
    if secure && !cfg!(feature = "etcd-tls") {
        return Err(EtcdConfigError::TlsNotCompiled {
            endpoint: endpoint.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(endpoint: &str) -> Result<EtcdDriver, EtcdConfigError> {
        EtcdDriver::builder([endpoint]).build()
    }

    #[test]
    fn an_endpoint_needs_a_host_and_a_port() {
        assert!(build("http://127.0.0.1:2379").is_ok());
        assert!(build("127.0.0.1:2379").is_ok());
        for bad in [
            "",
            "http://127.0.0.1",
            "http://:2379",
            "tcp://127.0.0.1:2379",
            "h:99999",
        ] {
            assert!(
                matches!(build(bad), Err(EtcdConfigError::InvalidEndpoint { .. })),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn tls_settings_refuse_a_plain_endpoint() {
        let err = EtcdDriver::builder(["http://127.0.0.1:2379"])
            .ca_certificate(b"pem".to_vec())
            .build()
            .unwrap_err();
        assert!(matches!(err, EtcdConfigError::PlainEndpointWithTls { .. }));
    }

    #[test]
    fn an_empty_namespace_user_or_timeout_is_refused() {
        let builder = || EtcdDriver::builder(["http://127.0.0.1:2379"]);
        assert!(matches!(
            builder().namespace("").build(),
            Err(EtcdConfigError::EmptyNamespace)
        ));
        assert!(matches!(
            builder().user("", "pw").build(),
            Err(EtcdConfigError::EmptyUser)
        ));
        assert!(matches!(
            builder().request_timeout(Duration::ZERO).build(),
            Err(EtcdConfigError::ZeroTimeout {
                what: "request timeout",
                ..
            })
        ));
    }

    #[test]
    fn the_password_and_the_client_key_are_never_printed() {
        let builder = EtcdDriver::builder(["https://127.0.0.1:2379"])
            .user("robit", "hunter2")
            .client_identity(b"CERT".to_vec(), b"PRIVATE KEY".to_vec());
        let printed = format!("{builder:?}");
        assert!(
            !printed.contains("hunter2") && !printed.contains("PRIVATE"),
            "{printed}"
        );
        assert!(printed.contains("robit"), "{printed}");
    }

    #[test]
    fn a_built_driver_prints_its_settings_but_not_its_password() -> Result<(), EtcdConfigError> {
        let driver = EtcdDriver::builder(["http://127.0.0.1:2379"])
            .user("robit", "hunter2")
            .build()?;
        let printed = format!("{driver:?}");
        assert!(printed.starts_with("EtcdDriver {"), "{printed}");
        assert!(printed.contains("127.0.0.1:2379"), "{printed}");
        assert!(printed.contains("robit"), "{printed}");
        assert!(!printed.contains("hunter2"), "{printed}");
        Ok(())
    }
}
