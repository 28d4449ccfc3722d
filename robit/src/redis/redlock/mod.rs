//! Redlock: one lock over N independent Redis servers, held by a majority of them.
//! The design and its argument are on [`RedlockDriver`]; its [`Driver`] impl, each
//! operation on every server at once and answered by a majority, is here, as the other
//! drivers' are in their `mod.rs` (the acquire's in `acquire.rs`).

mod acquire;
mod config;
mod force_release;
mod inspect;
mod late;
mod lease;
mod tally;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::{join_all, select_all};

pub use self::config::{MIN_QUORUM_SERVERS, QuorumStats, RedlockDriverBuilder};

use self::tally::majority;
use super::{Connector, RedisDriver, UrlConnector};
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
};

/// A lock backend on N independent Redis servers (N ≥ 3), held by a majority: the
/// Redlock design, with robit's send-time validity and fencing tokens that strictly
/// increase per lock name.
///
/// Each server is a [`RedisDriver`] of its own, with everything it does alone: its
/// connection and subscription, its fair queue, its quarantine after state loss, its
/// failover detection. An acquire claims the lock on every server at once and holds it
/// once a majority granted; the grants it got without a majority are given back at once.
/// Renewals need a majority; a release goes to every server.
///
/// # Validity
///
/// Every server's grant lives at least the TTL from the moment its claim was sent, which
/// is after the quorum's acquire was: so a majority's grants all live at least the TTL
/// from the acquire's send, the moment the [`Mutex`](crate::Mutex) counts validity from.
/// Any two majorities share a server, and a server grants one owner at a time.
///
/// # Fencing tokens
///
/// The servers' counters are independent, so the largest of a majority's tokens is not
/// enough: a grant on servers A and C takes C's token, and the next one, on A and B, may
/// take B's, which is smaller. So the quorum's token is written back: the acquire
/// *proposes* a token (one more than the largest this driver has seen), every server
/// issues the larger of that and its own counter's next, and the quorum's token is the
/// largest issued. A server that issued less has its counter *raised* to the quorum's
/// token, while its grant is still live, before the lease is handed out; a majority must
/// be at the quorum's token by then. Any later majority shares a server with that one,
/// whose next grant comes after this grant ended there, so its token is larger. Raising
/// costs a second round trip, only when the servers disagree (docs/safety.md, "A quorum
/// of Redis servers").
///
/// A cheap handle: clones share the servers' connections.
///
/// # Example
///
/// ```
/// use robit::redis::RedlockDriver;
///
/// let driver = RedlockDriver::builder(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
///     .configure(|server| server.namespace("billing"))
///     .build()?;
/// # drop(driver);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
pub struct RedlockDriver<C: Connector = UrlConnector> {
    inner: Arc<Inner<C>>,
}

struct Inner<C: Connector> {
    servers: Vec<RedisDriver<C>>,
    /// The largest quorum token this driver has issued or seen: the next proposal is one
    /// more.
    last_token: AtomicU64,
    stats: config::StatsCells,
}

impl RedlockDriver<UrlConnector> {
    /// Starts building a driver over the servers at `urls`, one [`RedisDriver`] each.
    pub fn builder<I, S>(urls: I) -> RedlockDriverBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        RedlockDriverBuilder::new(urls.into_iter().map(|url| url.as_ref().to_owned()))
    }
}

impl<C: Connector> RedlockDriver<C> {
    /// A driver over `servers`, built by hand: for connectors or settings of your own per
    /// server (TLS, credentials). They must be at least three, distinct, not in cluster
    /// mode, and share one namespace.
    ///
    /// # Errors
    ///
    /// A [`RedisConfigError`](super::RedisConfigError) naming what is wrong.
    pub fn new(servers: Vec<RedisDriver<C>>) -> Result<Self, super::RedisConfigError> {
        config::validate(&servers)?;
        Ok(Self {
            inner: Arc::new(Inner {
                servers,
                last_token: AtomicU64::new(0),
                stats: config::StatsCells::default(),
            }),
        })
    }

    /// The servers' own drivers, in the order given: to inspect one server's view of a
    /// lock, say, when they disagree.
    pub fn servers(&self) -> &[RedisDriver<C>] {
        &self.inner.servers
    }

    /// What the quorum has done so far: attempts, split votes, raised tokens.
    pub fn stats(&self) -> QuorumStats {
        self.inner.stats.read()
    }

    /// Checks every server, as [`RedisDriver::ping`] does, and answers once a majority
    /// answered.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when no majority answered, with the last server's error.
    pub async fn ping(&self) -> Result<(), DriverError> {
        let answers = join_all(self.inner.servers.iter().map(RedisDriver::ping)).await;
        let ok = answers.iter().filter(|answer| answer.is_ok()).count();
        match answers.into_iter().find_map(Result::err) {
            Some(err) if ok < majority(self.inner.servers.len()) => Err(err),
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl<C: Connector> Driver for RedlockDriver<C> {
    /// Claims the lock on every server at once, proposing one more than the largest
    /// token this driver has seen, and holds it once a majority granted. Servers that
    /// answer after that join the lease; the grants of an attempt without a majority
    /// are given back at once.
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.acquire_quorum(request).await
    }

    /// Wakes on a release notification from any server.
    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        let watches: Vec<ReleaseWatch> = self
            .inner
            .servers
            .iter()
            .map(|server| server.watch_release(request))
            .filter(ReleaseWatch::is_live)
            .collect();
        if watches.is_empty() {
            return ReleaseWatch::never();
        }
        ReleaseWatch::new(async move {
            select_all(watches).await;
        })
    }

    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        let answers = join_all(
            self.inner
                .servers
                .iter()
                .map(|server| server.withdraw_waiter(request, true)),
        )
        .await;
        answers.into_iter().collect::<Result<(), _>>()
    }

    /// Three of a server's own limits: the claims run at once; a raise of the token may
    /// follow, and, if it fails, the giving back of the grants.
    fn call_limit(&self) -> Option<Duration> {
        let one = self
            .inner
            .servers
            .iter()
            .map(|server| server.call_limit())
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max()?;
        Some(one.saturating_mul(3))
    }

    /// Every server keeps it, so a majority refuses the lock for the delay.
    fn supports_lock_delay(&self) -> bool {
        true
    }

    /// What a majority of the servers agrees the lock's state is; an error that lists
    /// each server's view when no majority agrees.
    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        self.inspect_quorum(name).await
    }

    /// Frees `name` by force on every server `holder` holds it on. Answers whether it
    /// freed it anywhere.
    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        self.release_by_force(name, holder).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Driver;

    /// A quorum call is its claims at once, maybe a raise, maybe giving back: three of
    /// the slowest server's own limits.
    #[test]
    fn a_quorum_call_is_bounded_by_three_of_its_slowest_server_s_limits() {
        let servers: Vec<RedisDriver> = [100, 400, 250]
            .into_iter()
            .enumerate()
            .map(|(index, millis)| {
                RedisDriver::builder(&format!("redis://10.0.0.{index}"))
                    .command_timeout(std::time::Duration::from_millis(millis))
                    .build()
                    .unwrap()
            })
            .collect();
        let slowest = servers[1].call_limit().unwrap();
        assert!(slowest > servers[2].call_limit().unwrap());
        let driver = RedlockDriver::new(servers).unwrap();
        assert_eq!(driver.call_limit(), Some(slowest * 3));
    }
}
