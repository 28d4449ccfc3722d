//! One driver's connections to etcd, made on first use, and its leases: one per whole
//! number of seconds of TTL asked for, shared by every entry of that TTL.
//!
//! The driver talks to one member at a time, and moves on to the next when a request
//! to it fails in a way that retrying can help (refused, timed out, no leader): a dead
//! or frozen member costs one failed request, not a share of every later one.
//!
//! A lease is kept alive only by the acquires and renewals of the holds on it, never by
//! a task of its own: when nothing on this driver renews any more (its holders crashed,
//! froze, or lost their leases), the lease lapses and takes every entry on it along,
//! waiters' entries that a failed withdraw left behind included.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock as StdRwLock};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, Error};
use tokio::sync::{Mutex as AsyncMutex, OnceCell};

use super::config::Settings;
use super::error::{classify, is_lease_gone, is_stale_token};
use crate::driver::DriverError;

pub(super) struct Session {
    settings: Settings,
    /// One connection per endpoint, each made on first use (and made again when its
    /// authentication token went stale).
    clients: Vec<StdRwLock<Arc<OnceCell<Client>>>>,
    /// The endpoint requests go to.
    current: AtomicUsize,
    /// Live lease ids by TTL in seconds.
    leases: AsyncMutex<BTreeMap<u64, i64>>,
}

/// A connection to one endpoint, and which: a failure on it moves the driver on.
pub(super) struct Link {
    pub(super) index: usize,
    pub(super) client: Client,
}

/// What a keepalive learned of a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    /// Alive for its full TTL from when etcd received the keepalive.
    Alive,
    /// Expired or revoked: its entries are gone.
    Gone,
}

/// The whole seconds of an etcd lease that lives at least `ttl`.
pub(super) fn lease_seconds(ttl: Duration) -> u64 {
    let whole = ttl.as_secs();
    if ttl.subsec_nanos() > 0 || whole == 0 {
        whole + 1
    } else {
        whole
    }
}

impl Session {
    pub(super) fn new(settings: Settings) -> Self {
        Self {
            clients: settings
                .endpoints
                .iter()
                .map(|_| StdRwLock::default())
                .collect(),
            current: AtomicUsize::new(0),
            settings,
            leases: AsyncMutex::default(),
        }
    }

    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The connection to the current endpoint, made (and authenticated) on first use.
    pub(super) async fn client(&self) -> Result<Link, DriverError> {
        let index = self.index();
        let endpoint = &self.settings.endpoints[index];
        let cell = Arc::clone(
            &self.clients[index]
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let client = cell
            .get_or_try_init(|| async {
                let options = self.connect_options();
                Client::connect([endpoint], Some(options)).await
            })
            .await
            .map_err(|err| self.failed(index, "connecting to etcd", err))?;
        Ok(Link {
            index,
            client: client.clone(),
        })
    }

    /// The endpoint requests go to now.
    fn index(&self) -> usize {
        self.current.load(Ordering::Relaxed) % self.clients.len()
    }

    /// `err`, met on endpoint `index`, as a [`DriverError`]; if retrying can help, the
    /// next request goes to the next endpoint.
    pub(super) fn failed(&self, index: usize, what: &'static str, err: Error) -> DriverError {
        if is_stale_token(&err) {
            // Authenticate again on the next call.
            *self.clients[index]
                .write()
                .unwrap_or_else(PoisonError::into_inner) = Arc::default();
        }
        let err = classify(what, err);
        if err.is_transient() {
            let next = (index + 1) % self.clients.len();
            let _ =
                self.current
                    .compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed);
        }
        err
    }

    /// Runs `op` on the current endpoint and, if it fails in a way that retrying can
    /// help, once more on the next: for requests that are safe to repeat and that
    /// nobody repeats for us (a release, a withdraw).
    pub(super) async fn twice<T, F, Fut>(&self, what: &'static str, op: F) -> Result<T, DriverError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let link = self.client().await;
            let result = match link {
                Ok(link) => op(link.client)
                    .await
                    .map_err(|err| self.failed(link.index, what, err)),
                Err(err) => Err(err),
            };
            match result {
                Err(err) if err.is_transient() && tries < 2 => continue,
                result => return result,
            }
        }
    }

    fn connect_options(&self) -> ConnectOptions {
        let settings = &self.settings;
        let mut options = ConnectOptions::new()
            .with_timeout(settings.request_timeout)
            .with_connect_timeout(settings.connect_timeout)
            .with_keep_alive(settings.health_check, settings.health_check)
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        if let Some((user, password)) = &settings.user {
            options = options
                .with_user(user.clone(), password.clone())
                .with_auto_token_refresh(true);
        }
        #[cfg(feature = "etcd-tls")]
        if let Some(tls) = &settings.tls {
            options = options.with_tls(super::tls::options(tls));
        }
        options
    }

    /// The lease for entries of `seconds`, granted if there is none yet.
    pub(super) async fn lease(&self, seconds: u64) -> Result<i64, DriverError> {
        let mut leases = self.leases.lock().await;
        if let Some(&id) = leases.get(&seconds) {
            return Ok(id);
        }
        let ttl = i64::try_from(seconds).unwrap_or(i64::MAX);
        let mut link = self.client().await?;
        let granted = link
            .client
            .lease_grant(ttl, None)
            .await
            .map_err(|err| self.failed(link.index, "granting an etcd lease", err))?;
        leases.insert(seconds, granted.id());
        Ok(granted.id())
    }

    /// Forgets lease `id` of `seconds`, found gone, so that the next call grants anew.
    pub(super) async fn forget(&self, seconds: u64, id: i64) {
        let mut leases = self.leases.lock().await;
        if leases.get(&seconds) == Some(&id) {
            leases.remove(&seconds);
        }
    }

    /// Renews lease `id` once: a keepalive, answered by the leader.
    pub(super) async fn keep_alive(&self, id: i64) -> Result<Kept, DriverError> {
        let mut link = self.client().await?;
        match link.client.lease_keep_alive(id).await {
            Ok((keeper, mut stream)) => {
                // End the call cleanly: half-close, then read to the server's trailers,
                // or etcd counts every keepalive as a failed call in its metrics.
                drop(keeper);
                while let Ok(Some(_)) = stream.message().await {}
                Ok(Kept::Alive)
            }
            Err(err) if is_lease_gone(&err) => Ok(Kept::Gone),
            Err(err) => Err(self.failed(link.index, "renewing the etcd lease", err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use tonic::Status;

    use super::*;
    use crate::etcd::EtcdDriver;

    /// A driver on three endpoints nothing listens on: no test here reaches them.
    fn driver() -> EtcdDriver {
        EtcdDriver::builder(["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"])
            .build()
            .unwrap()
    }

    fn unavailable() -> Error {
        Error::GRpcStatus(Status::unavailable("etcd is down"))
    }

    #[test]
    fn each_failure_that_retrying_can_help_moves_on_to_the_next_endpoint_in_turn() {
        let driver = driver();
        let session = &driver.shared.session;
        let mut seen = vec![session.index()];
        for _ in 0..4 {
            let _ = session.failed(session.index(), "testing", unavailable());
            seen.push(session.index());
        }
        assert_eq!(seen, [0, 1, 2, 0, 1]);
        // A failure that retrying cannot help stays where it is.
        let refused = Error::GRpcStatus(Status::permission_denied("no"));
        let _ = session.failed(session.index(), "testing", refused);
        assert_eq!(session.index(), 1);
        // A late failure on an endpoint already left behind does not move the driver,
        // not even to the endpoint after that one.
        let _ = session.failed(2, "testing", unavailable());
        assert_eq!(session.index(), 1);
    }

    #[tokio::test]
    async fn a_request_that_nobody_repeats_is_tried_twice_at_most_once_on_each_endpoint() {
        let driver = driver();
        let session = &driver.shared.session;
        let tries = AtomicU32::new(0);
        let answer: Result<(), _> = session
            .twice("testing", |_| {
                tries.fetch_add(1, Ordering::Relaxed);
                async { Err(unavailable()) }
            })
            .await;
        assert!(answer.unwrap_err().is_transient());
        assert_eq!((tries.load(Ordering::Relaxed), session.index()), (2, 2));
        // Not again when retrying cannot help.
        tries.store(0, Ordering::Relaxed);
        let answer: Result<(), _> = session
            .twice("testing", |_| {
                tries.fetch_add(1, Ordering::Relaxed);
                async { Err(Error::GRpcStatus(Status::permission_denied("no"))) }
            })
            .await;
        assert!(!answer.unwrap_err().is_transient());
        assert_eq!((tries.load(Ordering::Relaxed), session.index()), (1, 2));
    }

    #[test]
    fn a_lease_is_the_ttl_rounded_up_to_whole_seconds() {
        assert_eq!(lease_seconds(Duration::from_secs(2)), 2);
        assert_eq!(lease_seconds(Duration::from_millis(2001)), 3);
        assert_eq!(lease_seconds(Duration::from_millis(400)), 1);
        assert_eq!(lease_seconds(Duration::ZERO), 1);
    }
}
