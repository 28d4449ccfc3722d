//! One driver's connection to etcd, made on first use, and its leases: one per whole
//! number of seconds of TTL asked for, shared by every entry of that TTL.
//!
//! A lease is kept alive only by the acquires and renewals of the holds on it, never by
//! a task of its own: when nothing on this driver renews any more (its holders crashed,
//! froze, or lost their leases), the lease lapses and takes every entry on it along,
//! waiters' entries that a failed withdraw left behind included.

use std::collections::BTreeMap;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use tokio::sync::{Mutex as AsyncMutex, OnceCell};

use super::config::Settings;
use super::error::{classify, is_lease_gone};
use crate::driver::DriverError;

pub(super) struct Session {
    settings: Settings,
    client: OnceCell<Client>,
    /// Live lease ids by TTL in seconds.
    leases: AsyncMutex<BTreeMap<u64, i64>>,
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
            settings,
            client: OnceCell::new(),
            leases: AsyncMutex::default(),
        }
    }

    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The connection, made (and authenticated) on first use.
    pub(super) async fn client(&self) -> Result<Client, DriverError> {
        self.client
            .get_or_try_init(|| async {
                Client::connect(&self.settings.endpoints, Some(self.connect_options()?))
                    .await
                    .map_err(|err| classify("connecting to etcd", err))
            })
            .await
            .cloned()
    }

    fn connect_options(&self) -> Result<ConnectOptions, DriverError> {
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
        #[cfg(feature = "tls")]
        if let Some(tls) = &settings.tls {
            options = options.with_tls(super::tls::options(tls));
        }
        Ok(options)
    }

    /// The lease for entries of `seconds`, granted if there is none yet.
    pub(super) async fn lease(&self, seconds: u64) -> Result<i64, DriverError> {
        let mut leases = self.leases.lock().await;
        if let Some(&id) = leases.get(&seconds) {
            return Ok(id);
        }
        let ttl = i64::try_from(seconds).unwrap_or(i64::MAX);
        let granted = self
            .client()
            .await?
            .lease_grant(ttl, None)
            .await
            .map_err(|err| classify("granting an etcd lease", err))?;
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
        let mut client = self.client().await?;
        match client.lease_keep_alive(id).await {
            Ok(_) => Ok(Kept::Alive),
            Err(err) if is_lease_gone(&err) => Ok(Kept::Gone),
            Err(err) => Err(classify("renewing the etcd lease", err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_the_ttl_rounded_up_to_whole_seconds() {
        assert_eq!(lease_seconds(Duration::from_secs(2)), 2);
        assert_eq!(lease_seconds(Duration::from_millis(2001)), 3);
        assert_eq!(lease_seconds(Duration::from_millis(400)), 1);
        assert_eq!(lease_seconds(Duration::ZERO), 1);
    }
}
