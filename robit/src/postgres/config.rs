//! Building a [`PostgresDriver`]: where the server is (a URL, or the application's own
//! pool), the schema and namespace, timeouts, and whether a pooler sits in between —
//! all checked by [`PostgresDriverBuilder::build`], none sent anywhere until the first
//! call.

use std::fmt;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use super::PostgresDriver;
use super::pool::Own;
use super::url::{connect_options, hide_password};
use crate::millis::Millis;

/// The schema that holds robit's tables and functions, unless told otherwise.
pub const DEFAULT_SCHEMA: &str = "robit";
/// The namespace a driver's locks live in, unless told otherwise: drivers share a lock
/// only if they share a schema and a namespace.
pub const DEFAULT_NAMESPACE: &str = "robit";
/// How long one statement may take before it fails (and the Mutex retries).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How many connections a driver built from a URL opens at most.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;
/// How long grants are suspended after a failover: at least the longest TTL any client
/// of the namespace uses, so that every grant the old primary made has lapsed before
/// the new one makes another.
pub const DEFAULT_QUARANTINE: Duration = crate::engine::DEFAULT_TTL;

/// A setting [`PostgresDriverBuilder::build`] refused.
///
/// # Example
///
/// ```
/// use robit::postgres::{PostgresConfigError, PostgresDriver};
///
/// let err = PostgresDriver::builder("mysql://localhost/app").build().unwrap_err();
/// assert!(matches!(err, PostgresConfigError::InvalidUrl { .. }));
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum PostgresConfigError {
    /// The connection URL could not be parsed.
    #[error(
        "invalid Postgres URL {url}: {reason}; expected \
         postgres://[user[:password]@]host[:port][/database][?options]"
    )]
    InvalidUrl {
        /// The URL, with any password hidden.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// The schema is not a plain lower-case SQL identifier, which the driver writes into
    /// its statements unquoted.
    #[error(
        "schema {schema:?} must be a lower-case SQL identifier: a letter or '_', then \
         letters, digits or '_', at most 63 bytes"
    )]
    InvalidSchema {
        /// The rejected schema.
        schema: String,
    },
    /// The namespace is empty or holds a NUL character, which Postgres text cannot.
    #[error("the Postgres namespace {namespace:?} must be non-empty and hold no NUL character")]
    InvalidNamespace {
        /// The rejected namespace.
        namespace: String,
    },
    /// A timeout of zero, which would fail every statement.
    #[error("the Postgres {what} must be longer than zero (got {})", Millis(*.timeout))]
    ZeroTimeout {
        /// Which timeout.
        what: &'static str,
        /// The rejected value.
        timeout: Duration,
    },
    /// The quarantine is longer than [`MAX_TTL`](crate::defaults::MAX_TTL).
    #[error(
        "a quarantine of {} is longer than a year; set it to the longest TTL in use",
        Millis(*.quarantine)
    )]
    QuarantineTooLong {
        /// The rejected quarantine.
        quarantine: Duration,
    },
    /// A pool of no connections.
    #[error("the Postgres driver needs at least one connection")]
    NoConnections,
    /// TLS asked for (`sslmode=require` or stricter) in a build without it.
    #[error(
        "the Postgres URL asks for TLS (sslmode={mode}), which this build lacks; enable \
         robit's `postgres-tls` feature"
    )]
    TlsNotCompiled {
        /// The URL's `sslmode`.
        mode: String,
    },
}

/// Where the driver's connections come from.
#[derive(Clone)]
pub(super) enum Source {
    /// A URL: the driver keeps a pool of its own.
    Url(String),
    /// The application's pool, shared.
    Pool(PgPool),
}

/// What a built driver knows; its `Debug` prints no password.
#[derive(Clone)]
pub(super) struct Settings {
    pub(super) source: Source,
    /// A URL for the connection that listens for releases, when the calls go through a
    /// transaction-mode pooler but a direct connection can be had.
    pub(super) listen_url: Option<String>,
    pub(super) schema: String,
    pub(super) namespace: String,
    pub(super) request_timeout: Duration,
    pub(super) max_connections: u32,
    pub(super) transaction_pooler: bool,
    pub(super) create_schema: bool,
    pub(super) detect_failover: bool,
    pub(super) quarantine: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::Url(url) => hide_password(url),
            Source::Pool(_) => "the application's pool".to_owned(),
        };
        f.debug_struct("Settings")
            .field("source", &source)
            .field("listen_url", &self.listen_url.as_deref().map(hide_password))
            .field("schema", &self.schema)
            .field("namespace", &self.namespace)
            .field("request_timeout", &self.request_timeout)
            .field("max_connections", &self.max_connections)
            .field("transaction_pooler", &self.transaction_pooler)
            .field("create_schema", &self.create_schema)
            .field("detect_failover", &self.detect_failover)
            .field("quarantine", &self.quarantine)
            .finish()
    }
}

/// Builds a [`PostgresDriver`]; start with [`PostgresDriver::builder`] or
/// [`PostgresDriver::builder_with_pool`].
///
/// # Example
///
/// ```
/// use robit::postgres::PostgresDriver;
/// use std::time::Duration;
///
/// let driver = PostgresDriver::builder("postgres://app:s3cret@db.internal:5432/app")
///     .namespace("billing")
///     .request_timeout(Duration::from_millis(500))
///     .build()?;
/// assert!(!format!("{driver:?}").contains("s3cret"));
/// # Ok::<(), robit::postgres::PostgresConfigError>(())
/// ```
#[must_use]
pub struct PostgresDriverBuilder {
    settings: Settings,
}

impl PostgresDriverBuilder {
    pub(super) fn new(source: Source) -> Self {
        Self {
            settings: Settings {
                source,
                listen_url: None,
                schema: DEFAULT_SCHEMA.to_owned(),
                namespace: DEFAULT_NAMESPACE.to_owned(),
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                max_connections: DEFAULT_MAX_CONNECTIONS,
                transaction_pooler: false,
                create_schema: true,
                detect_failover: true,
                quarantine: DEFAULT_QUARANTINE,
            },
        }
    }

    /// The schema of robit's tables and functions (default [`DEFAULT_SCHEMA`]).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.settings.schema = schema.into();
        self
    }

    /// The namespace of this driver's locks (default [`DEFAULT_NAMESPACE`]): one set of
    /// tables can serve several applications, each in a namespace of its own.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.settings.namespace = namespace.into();
        self
    }

    /// How long one statement may take, waiting for a connection included (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]). A statement that overruns fails, and the Mutex
    /// retries while its wait or the lease's validity allows.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.settings.request_timeout = timeout;
        self
    }

    /// How many connections the driver opens at most for its lock calls, and as many
    /// more for guarded transactions (default [`DEFAULT_MAX_CONNECTIONS`]); a driver built
    /// on the application's pool uses that pool, and its limit, for both.
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.settings.max_connections = connections;
        self
    }

    /// Says that the connections go through a pooler in transaction mode (pgbouncer's
    /// `pool_mode = transaction`, say): statements are sent unnamed, since the next one
    /// may land on another server connection; the driver's own connections send no
    /// startup parameter a pooler may refuse (`extra_float_digits`); and waiters poll
    /// instead of listening for releases, since a notification cannot find its way back
    /// through such a pooler — unless [`listen_url`](Self::listen_url) names a direct
    /// connection for it.
    pub fn transaction_pooler(mut self, behind: bool) -> Self {
        self.settings.transaction_pooler = behind;
        self
    }

    /// A URL that reaches the server directly, for the one connection that listens for
    /// releases, when the calls themselves go through a transaction-mode pooler.
    pub fn listen_url(mut self, url: impl Into<String>) -> Self {
        self.settings.listen_url = Some(url.into());
        self
    }

    /// Whether the driver creates its schema, tables and functions when it finds them
    /// missing (default `true`). Turn it off for a role that may not, and have an owner
    /// run the SQL in docs/postgres.md: a missing table is then an error at
    /// [`ping`](PostgresDriver::ping) and at every call, never a silent creation.
    pub fn create_schema(mut self, create: bool) -> Self {
        self.settings.create_schema = create;
        self
    }

    /// Whether every acquire checks that the server is the one the namespace's state was
    /// written on (default `true`): its system identifier and the timeline it writes on,
    /// which a promoted standby and a restore from a backup change. A namespace found
    /// written on another server is quarantined — no grants for
    /// [`quarantine`](Self::quarantine) — so that a grant the old primary acknowledged
    /// and the new one never received cannot meet a second holder. Turn it off only with
    /// synchronous replication (`synchronous_commit = on` or stricter, and a synchronous
    /// standby) or no standby at all: nothing acknowledged can then be lost.
    pub fn detect_failover(mut self, detect: bool) -> Self {
        self.settings.detect_failover = detect;
        self
    }

    /// How long grants are suspended after a failover (default [`DEFAULT_QUARANTINE`]),
    /// and never less than the TTL (plus lock-delay) of the acquire that finds it: set
    /// it to at least the longest TTL any client of the namespace uses.
    pub fn quarantine(mut self, quarantine: Duration) -> Self {
        self.settings.quarantine = quarantine;
        self
    }

    /// Checks the settings and builds the driver. Nothing is dialled yet: the first call
    /// connects, and a failure there is a transient error the Mutex retries.
    ///
    /// # Errors
    ///
    /// A [`PostgresConfigError`] naming the first setting that cannot work.
    pub fn build(self) -> Result<PostgresDriver, PostgresConfigError> {
        let settings = self.settings;
        validate(&settings)?;
        let (pool, own) = match &settings.source {
            Source::Pool(pool) => (pool.clone(), None),
            Source::Url(url) => {
                let mut options = connect_options(url)?;
                if settings.transaction_pooler {
                    // pgbouncer refuses a startup parameter it does not know unless told
                    // to ignore it; robit reads no floats.
                    options = options.extra_float_digits(None);
                }
                let own = Own::new(options.clone(), settings.max_connections);
                (own_pool(&settings).connect_lazy_with(options), Some(own))
            }
        };
        if let Some(url) = &settings.listen_url {
            connect_options(url)?;
        }
        Ok(PostgresDriver::from_settings(settings, pool, own))
    }
}

impl fmt::Debug for PostgresDriverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresDriverBuilder")
            .field("settings", &self.settings)
            .finish()
    }
}

/// The sqlx pool of a driver built from a URL, for its guarded transactions, its
/// listener and its schema's creation (its lock calls have connections of their own,
/// `pool.rs`): connections opened when needed and kept, never tested before use (a dead
/// connection fails its call), and no maintenance task, so that nothing outlives the
/// driver.
fn own_pool(settings: &Settings) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(settings.max_connections)
        .min_connections(0)
        .acquire_timeout(settings.request_timeout)
        .test_before_acquire(false)
        .idle_timeout(None)
        .max_lifetime(None)
}

fn validate(settings: &Settings) -> Result<(), PostgresConfigError> {
    let schema = &settings.schema;
    let mut chars = schema.chars();
    let identifier = chars
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && schema.len() <= 63;
    if !identifier {
        return Err(PostgresConfigError::InvalidSchema {
            schema: schema.clone(),
        });
    }
    if settings.namespace.is_empty() || settings.namespace.contains('\0') {
        return Err(PostgresConfigError::InvalidNamespace {
            namespace: settings.namespace.clone(),
        });
    }
    if settings.request_timeout.is_zero() {
        return Err(PostgresConfigError::ZeroTimeout {
            what: "request timeout",
            timeout: settings.request_timeout,
        });
    }
    if settings.max_connections == 0 {
        return Err(PostgresConfigError::NoConnections);
    }
    if settings.quarantine > crate::defaults::MAX_TTL {
        return Err(PostgresConfigError::QuarantineTooLong {
            quarantine: settings.quarantine,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn robit_max_ttl() -> Duration {
        crate::defaults::MAX_TTL
    }

    fn builder() -> PostgresDriverBuilder {
        PostgresDriver::builder("postgres://robit@127.0.0.1:5999/robit")
    }

    #[test]
    fn a_url_that_is_not_postgres_is_refused_with_its_password_hidden() {
        let err = PostgresDriver::builder("mysql://app:hunter2@localhost/app")
            .build()
            .unwrap_err();
        let said = err.to_string();
        assert!(
            matches!(err, PostgresConfigError::InvalidUrl { .. }),
            "{said}"
        );
        assert!(!said.contains("hunter2"), "{said}");
        assert!(said.contains("app:<hidden>@localhost"), "{said}");
    }

    #[test]
    fn a_schema_must_be_a_plain_identifier() {
        for bad in [
            "",
            "Robit",
            "1robit",
            "robit; drop table x",
            "a-b",
            &"x".repeat(64),
        ] {
            assert!(
                matches!(
                    builder().schema(bad).build(),
                    Err(PostgresConfigError::InvalidSchema { .. })
                ),
                "{bad:?} was accepted"
            );
        }
        for good in ["robit", "_locks", "app_2"] {
            assert!(builder().schema(good).build().is_ok(), "{good:?}");
        }
    }

    #[tokio::test]
    async fn a_bad_namespace_a_zero_timeout_or_no_connections_is_refused() {
        for bad in ["", "a\0b"] {
            assert!(matches!(
                builder().namespace(bad).build(),
                Err(PostgresConfigError::InvalidNamespace { .. })
            ));
        }
        assert!(matches!(
            builder().request_timeout(Duration::ZERO).build(),
            Err(PostgresConfigError::ZeroTimeout { .. })
        ));
        assert!(matches!(
            builder().max_connections(0).build(),
            Err(PostgresConfigError::NoConnections)
        ));
        assert!(matches!(
            builder()
                .quarantine(robit_max_ttl() + Duration::from_millis(1))
                .build(),
            Err(PostgresConfigError::QuarantineTooLong { .. })
        ));
        assert!(builder().quarantine(robit_max_ttl()).build().is_ok());
        assert!(matches!(
            builder().listen_url("redis://localhost").build(),
            Err(PostgresConfigError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn tls_without_the_feature_is_refused_by_name() {
        let built =
            PostgresDriver::builder("postgres://db.internal/app?sslmode=verify-full").build();
        if cfg!(feature = "postgres-tls") {
            assert!(built.is_ok());
        } else {
            assert!(matches!(
                built,
                Err(PostgresConfigError::TlsNotCompiled { mode }) if mode == "verify-full"
            ));
        }
        assert!(
            PostgresDriver::builder("postgres://db.internal/app?sslmode=prefer")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn a_builder_prints_its_settings_but_not_its_password() {
        let printed = format!(
            "{:?}",
            PostgresDriver::builder("postgres://app:hunter2@db.internal/app").namespace("billing")
        );
        assert!(printed.starts_with("PostgresDriverBuilder {"), "{printed}");
        assert!(
            printed.contains("billing") && printed.contains("db.internal"),
            "{printed}"
        );
        assert!(!printed.contains("hunter2"), "{printed}");
    }

    #[test]
    fn the_password_is_never_printed() {
        let driver = PostgresDriver::builder("postgres://app:hunter2@db.internal:5432/app")
            .listen_url("postgres://app:hunter3@db-direct:5432/app")
            .build()
            .unwrap();
        let printed = format!("{driver:?}");
        assert!(
            !printed.contains("hunter2") && !printed.contains("hunter3"),
            "{printed}"
        );
        assert!(
            printed.contains("app:<hidden>@db.internal:5432/app"),
            "{printed}"
        );
        assert_eq!(hide_password("postgres://db/app"), "postgres://db/app");
        assert_eq!(
            hide_password("postgres://app@db/app"),
            "postgres://app@db/app"
        );
        // Unencoded, such a password makes the URL invalid, and the error prints it.
        assert_eq!(
            hide_password("postgres://app:pa/ss?w@rd@db:5432/app"),
            "postgres://app:<hidden>@db:5432/app"
        );
        assert_eq!(
            hide_password("postgres://db/app?user=app&password=hunter2&sslmode=prefer"),
            "postgres://db/app?user=app&password=<hidden>&sslmode=prefer"
        );
    }
}
