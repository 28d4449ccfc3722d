//! Building a quorum: from URLs with shared settings, its validation, and its counters.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::super::{Connector, RedisConfigError, RedisDriver, RedisDriverBuilder, UrlConnector};
use super::RedlockDriver;

/// The fewest servers a quorum takes: with two, either one's loss stops every lock.
pub const MIN_QUORUM_SERVERS: usize = 3;

/// Builds a [`RedlockDriver`] over servers given by URL, each with the same settings;
/// start with [`RedlockDriver::builder`].
///
/// # Example
///
/// ```
/// use robit::redis::RedlockDriver;
/// use std::time::Duration;
///
/// let driver = RedlockDriver::builder(["redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"])
///     .configure(|server| {
///         server
///             .namespace("billing")
///             .command_timeout(Duration::from_millis(250))
///             .quarantine(Duration::from_secs(60)) // the longest TTL any client uses
///     })
///     .build()?;
/// assert_eq!(format!("{driver:?}").matches("RedisDriver").count(), 3);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[must_use = "a builder does nothing until build() is called"]
pub struct RedlockDriverBuilder {
    urls: Vec<String>,
    configure: Box<dyn Fn(RedisDriverBuilder) -> RedisDriverBuilder + Send + Sync>,
}

impl RedlockDriverBuilder {
    pub(super) fn new(urls: impl Iterator<Item = String>) -> Self {
        Self {
            urls: urls.collect(),
            configure: Box::new(|server| server),
        }
    }

    /// Settings for every server's [`RedisDriverBuilder`]: the namespace, timeouts, the
    /// quarantine, failover detection. Each server's driver is built from its URL and
    /// then passed through `configure`.
    pub fn configure(
        mut self,
        configure: impl Fn(RedisDriverBuilder) -> RedisDriverBuilder + Send + Sync + 'static,
    ) -> Self {
        self.configure = Box::new(configure);
        self
    }

    /// Builds every server's driver and the quorum over them. It connects lazily.
    ///
    /// # Errors
    ///
    /// The first server's [`RedisConfigError`], or the quorum's: fewer than
    /// [`MIN_QUORUM_SERVERS`] servers, one named twice, one in cluster mode.
    pub fn build(self) -> Result<RedlockDriver<UrlConnector>, RedisConfigError> {
        let servers = self
            .urls
            .iter()
            .map(|url| (self.configure)(RedisDriver::builder(url)).build())
            .collect::<Result<Vec<_>, _>>()?;
        RedlockDriver::new(servers)
    }
}

impl fmt::Debug for RedlockDriverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URLs may carry passwords: count them only.
        f.debug_struct("RedlockDriverBuilder")
            .field("servers", &self.urls.len())
            .finish_non_exhaustive()
    }
}

/// The checks of [`RedlockDriver::new`].
pub(super) fn validate<C: Connector>(servers: &[RedisDriver<C>]) -> Result<(), RedisConfigError> {
    if servers.len() < MIN_QUORUM_SERVERS {
        return Err(RedisConfigError::QuorumTooSmall {
            servers: servers.len(),
        });
    }
    let first = &servers[0].inner.settings.namespace;
    let mut seen = BTreeSet::new();
    for server in servers {
        let (settings, name) = (&server.inner.settings, server.inner.connector.describe());
        if settings.spread {
            return Err(RedisConfigError::QuorumOfCluster { server: name });
        }
        if &settings.namespace != first {
            return Err(RedisConfigError::QuorumNamespaces {
                first: first.clone(),
                other: settings.namespace.clone(),
            });
        }
        if !seen.insert(name.clone()) {
            return Err(RedisConfigError::QuorumServerTwice { server: name });
        }
    }
    Ok(())
}

impl<C: Connector> fmt::Debug for RedlockDriver<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedlockDriver")
            .field("servers", &self.inner.servers)
            .finish()
    }
}

impl<C: Connector> Clone for RedlockDriver<C> {
    fn clone(&self) -> Self {
        Self {
            inner: std::sync::Arc::clone(&self.inner),
        }
    }
}

/// What a [`RedlockDriver`] has done: how often its attempts split, and how often its
/// servers disagreed on a token.
///
/// # Example
///
/// ```
/// use robit::redis::RedlockDriver;
///
/// let driver = RedlockDriver::builder(["redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"]).build()?;
/// let stats = driver.stats();
/// assert_eq!((stats.attempts, stats.granted, stats.split, stats.raised), (0, 0, 0, 0));
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuorumStats {
    /// Acquire attempts.
    pub attempts: u64,
    /// Attempts a majority granted.
    pub granted: u64,
    /// Attempts that some servers granted but no majority did (a split vote, say, when
    /// waiters' claims reach the servers in different orders): given back at once, and
    /// retried by the waiter after its backoff.
    pub split: u64,
    /// Grants whose servers issued different tokens, so that the quorum's token was
    /// written back to them: a second round trip.
    pub raised: u64,
}

#[derive(Debug, Default)]
pub(super) struct StatsCells {
    attempts: AtomicU64,
    granted: AtomicU64,
    split: AtomicU64,
    raised: AtomicU64,
}

impl StatsCells {
    pub(super) fn attempt(&self, granted: bool, split: bool) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        if granted {
            self.granted.fetch_add(1, Ordering::Relaxed);
        }
        if split {
            self.split.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) fn raised(&self) {
        self.raised.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn read(&self) -> QuorumStats {
        QuorumStats {
            attempts: self.attempts.load(Ordering::Relaxed),
            granted: self.granted.load(Ordering::Relaxed),
            split: self.split.load(Ordering::Relaxed),
            raised: self.raised.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URLS: [&str; 3] = [
        "redis://:s3cret@10.0.0.1",
        "redis://:s3cret@10.0.0.2",
        "redis://:s3cret@10.0.0.3",
    ];

    fn server(url: &str, namespace: &str) -> RedisDriver {
        RedisDriver::builder(url)
            .namespace(namespace)
            .build()
            .unwrap()
    }

    #[test]
    fn every_server_is_built_with_the_shared_settings() {
        let driver = RedlockDriver::builder(URLS)
            .configure(|server| server.namespace("billing"))
            .build()
            .unwrap();
        let namespaces: Vec<&str> = driver
            .inner
            .servers
            .iter()
            .map(|server| server.inner.settings.namespace.as_str())
            .collect();
        assert_eq!(namespaces, ["billing"; 3]);
    }

    #[test]
    fn three_servers_of_one_namespace_are_the_smallest_quorum_and_others_are_refused() {
        let three = URLS.map(|url| server(url, "jobs")).to_vec();
        assert!(RedlockDriver::new(three.clone()).is_ok());
        assert!(matches!(
            RedlockDriver::new(three[..2].to_vec()),
            Err(RedisConfigError::QuorumTooSmall { servers: 2 })
        ));
        let mut other = three.clone();
        other[2] = server(URLS[2], "billing");
        let err = RedlockDriver::new(other).unwrap_err();
        assert!(
            matches!(&err, RedisConfigError::QuorumNamespaces { first, other }
                if first == "jobs" && other == "billing"),
            "{err:?}"
        );
        let mut cluster = three;
        cluster[1] = RedisDriver::builder(URLS[1])
            .namespace("jobs")
            .cluster_mode()
            .build()
            .unwrap();
        let err = RedlockDriver::new(cluster).unwrap_err();
        assert!(
            matches!(&err, RedisConfigError::QuorumOfCluster { server } if server.contains("10.0.0.2")),
            "{err:?}"
        );
    }

    #[test]
    fn a_quorum_and_its_builder_show_their_servers_but_no_password() {
        let builder = RedlockDriver::builder(URLS);
        let shown = format!("{builder:?}");
        assert!(shown.contains("servers: 3"), "{shown}");
        let driver = builder.build().unwrap();
        let shown = format!("{driver:?}");
        for host in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
            assert!(shown.contains(host), "{host} is missing from {shown}");
        }
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn the_counters_count_attempts_grants_splits_and_raised_tokens() {
        let cells = StatsCells::default();
        cells.attempt(true, false);
        cells.attempt(false, true);
        cells.attempt(false, false);
        cells.raised();
        assert_eq!(
            cells.read(),
            QuorumStats {
                attempts: 3,
                granted: 1,
                split: 1,
                raised: 1
            }
        );
    }
}
