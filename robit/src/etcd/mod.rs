//! The etcd driver (cargo feature `etcd`): locks on a linearizable, Raft-replicated
//! store, for users who need the lock to survive a member's failure.
//!
//! # Data model
//!
//! A lock is a queue of keys under one prefix, `{namespace}/{length}:{name}/`, ordered
//! by each key's create revision; the oldest holds the lock (etcd's own lock recipe).
//! A waiting `lock()` call's key is written on its first attempt and keeps its place
//! across attempts, so waiters are served first come, first served; a single try writes
//! a key only when the queue is empty. Every key is attached to the driver's etcd
//! lease for its TTL, so a crashed or cut-off process's keys go when its lease lapses.
//!
//! - **Claims**: the first attempt that finds its key at the head rewrites the key's
//!   value (attempt number, owner) in the same transaction, over an earlier attempt's
//!   value only. A grant is that attempt's alone: an earlier attempt granted late
//!   cannot renew or release it.
//! - **Fencing token**: the revision of that claim, the key's mod revision. A claim is
//!   made at the head, after the last holder's key was deleted, and revisions only grow,
//!   across compaction and restarts, so tokens strictly increase per lock name.
//! - **One round trip per operation.** An acquire is one transaction (queue the key
//!   unless queued, claim it if at the head, read the queue) sent together with a
//!   keepalive of the lease; a renew is a keepalive and a read of the key, sent
//!   together; a release is one transaction that deletes the key if its mod revision is
//!   still the grant's token.
//! - **Waking**: a waiter behind another key watches that one key's deletion, from the
//!   revision it read the queue at: a release wakes only the next in line.
//! - **Sweeping**: a key whose caller went away without deleting it (a failed withdraw
//!   or release, an attempt that wrote after the withdraw) is deleted by the driver's
//!   next acquire or renew, under a guard that spares a grant made meanwhile (see
//!   docs/etcd.md).
//!
//! # Leases
//!
//! One etcd lease per driver and whole number of seconds of TTL, shared by its holds
//! and waiters. It is kept alive by their own acquires and renewals, never by a
//! background task, so a grant is never kept alive by anything but the Mutex that holds
//! it and its neighbours on the same driver. A lease per hold would cost a round trip
//! more per acquire (the grant of the lease, before the key can be written) and
//! promise nothing more: validity is counted from each call's send time either way.
//! etcd counts a lease's TTL in whole seconds (at least 1, and at least its own minimum,
//! one and a half election timeouts), so a lease can outlive a TTL that is not whole
//! seconds: the grant lives longer than asked, never shorter.
//!
//! docs/etcd.md has the guarantees, the failure behaviour and the figures.
//!
//! # Example
//!
//! ```no_run
//! use robit::Mutex;
//! use robit::etcd::EtcdDriver;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let driver = EtcdDriver::builder(["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"])
//!     .build()?;
//! let mutex = Mutex::builder("nightly-report", driver)
//!     .ttl(Duration::from_secs(10))
//!     .build()?;
//! let guard = mutex.lock().await?;
//! println!("fencing token {}", guard.fence());
//! guard.unlock().await?;
//! # Ok(()) }
//! ```

mod acquire;
mod config;
mod error;
mod force_release;
mod inspect;
mod keys;
mod lease;
mod session;
#[cfg(feature = "etcd-tls")]
mod tls;
mod unsettled;
mod watch;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};

use self::config::Settings;
pub use self::config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_HEALTH_CHECK, DEFAULT_NAMESPACE, DEFAULT_REQUEST_TIMEOUT,
    EtcdConfigError, EtcdDriverBuilder,
};
use self::session::{Link, Session};
use self::unsettled::Unsettled;
use self::watch::Waiting;
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
};

/// A [`Driver`] on an etcd cluster. Cheap to clone; clones share one connection and
/// one set of leases.
///
/// # Example
///
/// ```
/// use robit::etcd::EtcdDriver;
///
/// let driver = EtcdDriver::builder(["http://127.0.0.1:2379"]).build()?;
/// let shared = driver.clone(); // one connection, one lease
/// # let _ = shared;
/// # Ok::<(), robit::etcd::EtcdConfigError>(())
/// ```
#[derive(Clone)]
pub struct EtcdDriver {
    shared: Arc<Shared>,
}

struct Shared {
    session: Session,
    waiting: Waiting,
    unsettled: Unsettled,
    /// Whether the last sweep failed, so that a run of failures is logged once.
    sweep_failing: AtomicBool,
}

impl Shared {
    /// Deletes a batch of the entries whose callers went away (see `unsettled`), through
    /// `link`: each only if its value is not larger than the one recorded, so that an
    /// attempt granted meanwhile keeps its grant.
    async fn sweep(&self, link: &Link) {
        let stale = self.unsettled.stale();
        if stale.is_empty() {
            return;
        }
        let guarded: Vec<_> = stale
            .iter()
            .map(|(key, value)| {
                let newer = Compare::value(key.clone(), CompareOp::Greater, value.clone());
                let delete = TxnOp::delete(key.clone(), None);
                TxnOp::txn(Txn::new().when([newer]).or_else([delete]))
            })
            .collect();
        let mut kv = link.client.kv_client();
        match kv.txn(Txn::new().and_then(guarded)).await {
            Ok(_) => {
                if self.sweep_failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(target: "robit", "etcd: forgotten lock entries are swept again");
                }
                self.unsettled.swept(&stale);
            }
            Err(error) => {
                if !self.sweep_failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(target: "robit", %error, keys = stale.len(), "etcd: could not delete lock entries whose callers went away; they hold up their queues until a later call deletes them or the driver's lease lapses");
                }
            }
        }
    }
}

impl EtcdDriver {
    /// A builder for a driver on the cluster whose members are `endpoints`
    /// (`http://host:port`, or `https://` with the `etcd-tls` feature). Every member may be
    /// named: requests go to any that answers, and members forward to the leader.
    pub fn builder<E: Into<String>>(endpoints: impl IntoIterator<Item = E>) -> EtcdDriverBuilder {
        EtcdDriverBuilder::new(endpoints.into_iter().map(Into::into).collect())
    }

    /// Connects (and authenticates) if not yet connected, and reads the namespace once:
    /// at start-up, to find a wrong endpoint, password or permission at once rather than
    /// at the first lock.
    ///
    /// # Errors
    ///
    /// The [`DriverError`] the first lock would meet.
    pub async fn ping(&self) -> Result<(), DriverError> {
        let session = &self.shared.session;
        let namespace = format!("{}/", session.settings().namespace);
        let options = GetOptions::new()
            .with_range(keys::range_end(namespace.as_bytes()))
            .with_count_only();
        session
            .twice("reading the etcd namespace", |mut client| {
                let (key, options) = (namespace.clone(), options.clone());
                async move { client.get(key, Some(options)).await }
            })
            .await
            .map(drop)
    }

    fn from_settings(settings: Settings) -> Self {
        Self {
            shared: Arc::new(Shared {
                session: Session::new(settings),
                waiting: Waiting::default(),
                unsettled: Unsettled::default(),
                sweep_failing: AtomicBool::new(false),
            }),
        }
    }
}

impl fmt::Debug for EtcdDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdDriver")
            .field("settings", self.shared.session.settings())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Driver for EtcdDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        acquire::acquire(&self.shared, request).await
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        watch::watch_release(&self.shared, request)
    }

    /// Deletes the waiter's key, wherever it is in the queue (at its head, it may hold
    /// the lock without knowing: the next in line wakes).
    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        self.shared.waiting.served(request);
        if request.waiter.is_none() {
            return Ok(());
        }
        let prefix = keys::prefix(&self.shared.session.settings().namespace, &request.name);
        let key = keys::entry(&prefix, request);
        let queued = Compare::create_revision(key.clone(), CompareOp::Greater, 0);
        let txn = Txn::new()
            .when([queued])
            .and_then([TxnOp::delete(key.clone(), None)]);
        self.shared
            .session
            .twice("withdrawing an etcd waiter", |client| {
                let txn = txn.clone();
                async move { client.kv_client().txn(txn).await }
            })
            .await?;
        let timeout = self.shared.session.settings().request_timeout;
        self.shared.unsettled.withdrawn(&key, timeout);
        Ok(())
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
