//! The Postgres driver (cargo feature `postgres`): leases in a table of the database a
//! service already has, through any pool or transaction-mode pooler.
//!
//! # Data model
//!
//! Three tables in the driver's schema (`robit` by default; `schema.sql` creates them):
//!
//! - **`locks`**: one row per held lock — namespace, name, owner, fencing token, when
//!   the lease ends and any lock-delay after it. A release deletes the row.
//! - **`fences`**: a namespace's fencing counters, one per bucket of lock names (1,024
//!   at most, whatever the number of names). A grant's token is the larger of its
//!   bucket's last token plus one and the server's clock in microseconds: tokens
//!   strictly increase per name across releases, expiries and restarts, and locks of
//!   different names rarely wait for the same counter row.
//! - **`waiters`**: waiting `lock()` calls, oldest first. A lock that comes free goes to
//!   the first waiter still asking; a release notifies it (`NOTIFY` on a channel named
//!   after the schema, with the waiter's id), and the driver's listening connection wakes
//!   it.
//!
//! Every operation is one statement and one round trip, timed by the server's clock
//! (`clock_timestamp()`): an acquire is a call of `acquire_v1`, a renewal one of
//! `renew_v1` (an `UPDATE` that extends the row only while it is the caller's and live),
//! a release one of `release_v1`; grants and renewals commit synchronously. Nothing is kept in a session, so the calls can go through any pool, or
//! through a pooler in transaction mode ([`PostgresDriverBuilder::transaction_pooler`]).
//!
//! docs/postgres.md has the guarantees, the failure behaviour, poolers, permissions and
//! the figures.
//!
//! # Example
//!
//! ```no_run
//! use robit::Mutex;
//! use robit::postgres::PostgresDriver;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let driver = PostgresDriver::builder("postgres://app@db.internal/app").build()?;
//! driver.ping().await?; // creates robit's tables on first use, if the role may
//! let mutex = Mutex::builder("nightly-report", driver)
//!     .ttl(Duration::from_secs(10))
//!     .build()?;
//! let guard = mutex.lock().await?;
//! println!("fencing token {}", guard.fence());
//! guard.unlock().await?;
//! # Ok(()) }
//! ```

mod acquire;
mod call;
mod config;
mod error;
mod force_release;
mod guarded;
mod inspect;
mod lease;
mod pool;
mod statements;
mod url;
mod watch;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::PgPool;

use self::call::{Arg, column};
pub use self::config::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_NAMESPACE, DEFAULT_QUARANTINE, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SCHEMA, PostgresConfigError, PostgresDriverBuilder,
};
use self::config::{Settings, Source};
pub use self::guarded::{GuardedError, GuardedTransaction};
use self::pool::Own;
use self::statements::Statements;
use self::watch::Listener;
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, QuarantineLog,
    ReleaseWatch,
};

/// A [`Driver`] on a Postgres database. Cheap to clone; clones share one pool and one
/// listening connection.
///
/// # Example
///
/// ```
/// use robit::postgres::PostgresDriver;
///
/// let driver = PostgresDriver::builder("postgres://app@127.0.0.1/app").build()?;
/// let shared = driver.clone(); // one pool
/// # let _ = shared;
/// # Ok::<(), robit::postgres::PostgresConfigError>(())
/// ```
#[derive(Clone)]
pub struct PostgresDriver {
    shared: Arc<Shared>,
}

struct Shared {
    settings: Settings,
    /// The application's pool, or one of the driver's for guarded transactions, the
    /// listener and the schema's creation.
    pool: PgPool,
    /// The connections of the driver's lock calls, when it was built from a URL: without
    /// the ping sqlx's pool sends with every connection it takes back.
    own: Option<Own>,
    statements: Statements,
    /// Set once the schema is known to be installed.
    installed: tokio::sync::OnceCell<()>,
    listener: Listener,
    quarantine_log: QuarantineLog,
}

impl Shared {
    /// Runs `call` (one statement) within the request timeout, once the schema is known
    /// to be there; sqlx's error classified as what failed while doing `what`.
    async fn call<T>(
        &self,
        what: &'static str,
        call: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DriverError> {
        self.ensure_installed().await?;
        self.bounded(what, call).await
    }

    /// `call` within the request timeout, its error classified.
    async fn bounded<T>(
        &self,
        what: &'static str,
        call: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DriverError> {
        let limit = self.settings.request_timeout;
        match tokio::time::timeout(limit, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(error::classify(what, &self.settings.schema, err)),
            Err(_) => Err(DriverError::Timeout(limit)),
        }
    }

    /// Checks once that the schema file has run, and runs it if not and the driver may.
    async fn ensure_installed(&self) -> Result<(), DriverError> {
        self.installed
            .get_or_try_init(|| async {
                if self.is_installed().await? {
                    return Ok(());
                }
                if !self.settings.create_schema {
                    return Err(DriverError::rejected(format!(
                        "robit's tables and functions are missing from schema {}, and the \
                         driver was told not to create them; have an owner run the schema \
                         file in docs/postgres.md",
                        self.settings.schema
                    )));
                }
                self.create_schema().await
            })
            .await
            .copied()
    }

    async fn is_installed(&self) -> Result<bool, DriverError> {
        let what = "checking robit's schema";
        let sql = &self.statements.installed;
        let row = if self.settings.transaction_pooler {
            self.bounded(what, sqlx::raw_sql(sql).fetch_one(&self.pool))
                .await?
        } else {
            self.bounded(what, sqlx::query(sql).fetch_one(&self.pool))
                .await?
        };
        column(self, what, &row, 0)
    }

    /// Runs the schema file in one transaction (one simple query of many statements is
    /// one transaction), under a transaction-scoped advisory lock, so that drivers
    /// starting together do not create the same objects at once.
    async fn create_schema(&self) -> Result<(), DriverError> {
        let what = "creating robit's schema";
        let created = sqlx::raw_sql(&self.statements.create).execute(&self.pool);
        match self.bounded(what, created).await {
            Ok(_) => {
                tracing::info!(target: "robit", schema = %self.settings.schema, "postgres: created robit's tables and functions");
                Ok(())
            }
            Err(err) if err.is_transient() => Err(err),
            Err(err) => Err(DriverError::rejected(format!(
                "robit's tables and functions are missing from schema {} and could not be \
                 created ({err}); have an owner run the SQL of PostgresDriver::schema_sql \
                 (docs/postgres.md), or grant this role CREATE on the database",
                self.settings.schema
            ))),
        }
    }

    fn namespace(&self) -> &str {
        &self.settings.namespace
    }
}

/// A duration in whole milliseconds, rounded up, as Postgres takes it (`bigint`).
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros().div_ceil(1000)).unwrap_or(i64::MAX)
}

impl PostgresDriver {
    /// A builder for a driver with a pool of its own, on the database at `url`
    /// (`postgres://user:password@host:port/database?options`).
    pub fn builder(url: impl Into<String>) -> PostgresDriverBuilder {
        PostgresDriverBuilder::new(Source::Url(url.into()))
    }

    /// A builder for a driver on the application's own pool: its connections, limits and
    /// TLS settings. The driver holds a connection of it only for one statement at a
    /// time (or a guarded transaction), and opens one more for listening, from the pool's
    /// settings, outside the pool.
    pub fn builder_with_pool(pool: PgPool) -> PostgresDriverBuilder {
        PostgresDriverBuilder::new(Source::Pool(pool))
    }

    /// Connects, creates robit's tables and functions if they are missing (and the
    /// driver may), and checks that the role may use them and that the server is a
    /// primary: at start-up, to find a wrong URL, password or permission at once rather
    /// than at the first lock.
    ///
    /// # Errors
    ///
    /// The [`DriverError`] the first lock would meet, or one naming every privilege the
    /// role lacks.
    pub async fn ping(&self) -> Result<(), DriverError> {
        let shared = &self.shared;
        let what = "checking robit's privileges";
        let row = shared
            .fetch_one(what, &shared.statements.missing, &[])
            .await?;
        let missing: String = column(shared, what, &row, 0)?;
        let standby: bool = column(shared, what, &row, 1)?;
        if !missing.is_empty() {
            return Err(DriverError::rejected(format!(
                "the role lacks {}; grant them (docs/postgres.md lists what robit needs)",
                missing
            )));
        }
        if standby {
            return Err(DriverError::rejected(
                "the server is a standby, which grants nothing; point the driver at the primary",
            ));
        }
        Ok(())
    }

    /// The SQL that creates robit's tables and functions in this driver's schema, for an
    /// owner to run when the driver's role may not create them (or to review before it
    /// does): the same file the driver runs on first use. Idempotent.
    ///
    /// ```
    /// use robit::postgres::PostgresDriver;
    ///
    /// let driver = PostgresDriver::builder("postgres://app@db.internal/app")
    ///     .schema("locks")
    ///     .create_schema(false)
    ///     .build()?;
    /// assert!(driver.schema_sql().contains("CREATE TABLE IF NOT EXISTS locks.locks"));
    /// # Ok::<(), robit::postgres::PostgresConfigError>(())
    /// ```
    pub fn schema_sql(&self) -> String {
        Statements::schema_sql(&self.shared.settings.schema)
    }

    fn from_settings(settings: Settings, pool: PgPool, own: Option<Own>) -> Self {
        let statements = Statements::new(&settings.schema);
        let listener = Listener::new(&settings, &pool);
        Self {
            shared: Arc::new(Shared {
                settings,
                pool,
                own,
                statements,
                installed: tokio::sync::OnceCell::new(),
                listener,
                quarantine_log: QuarantineLog::default(),
            }),
        }
    }
}

impl fmt::Debug for PostgresDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresDriver")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Driver for PostgresDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        acquire::acquire(&self.shared, request).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        watch::watch_release(&self.shared, request)
    }

    /// Takes the waiter out of its queue; if the lock is free, the next waiter wakes.
    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        let Some(waiter) = request.waiter else {
            return Ok(());
        };
        let shared = &self.shared;
        let args = [
            Arg::Text(shared.namespace()),
            Arg::Bytes(request.name.as_bytes()),
            Arg::Uuid(Some(waiter.id)),
        ];
        shared
            .fetch_one(
                "withdrawing a Postgres waiter",
                &shared.statements.withdraw,
                &args,
            )
            .await
            .map(drop)
    }

    fn supports_lock_delay(&self) -> bool {
        true
    }

    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        inspect::inspect(&self.shared, name).await
    }

    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        force_release::force_release(&self.shared, name, holder).await
    }
}
