//! Redlock: one lock over N independent Redis servers, held by a majority of them.
//! The design and its argument are on [`RedlockDriver`].

mod builder;
mod driver;
mod inspect;
mod late;
mod lease;
mod tally;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, join_all};
use futures_util::stream::FuturesUnordered;

pub use self::builder::{MIN_QUORUM_SERVERS, QuorumStats, RedlockDriverBuilder};

use self::lease::{Member, QuorumLease};
use self::tally::majority;
use super::claim::Claim;
use super::{Connector, RedisDriver, UrlConnector};
use crate::driver::{AcquireRequest, DriverError, FenceToken};

/// The largest token a Lua number (a double) holds exactly; the scripts compare tokens
/// as numbers.
const LARGEST_TOKEN: u64 = (1 << 53) - 1;

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
    stats: builder::StatsCells,
}

type Answer<C> = (usize, Result<Claim<C>, DriverError>);

/// A won attempt, as [`late::finish_late`] takes it.
struct Won<'a, C: Connector> {
    lease: Arc<QuorumLease<C>>,
    request: &'a AcquireRequest,
    /// The servers that refused the claim.
    refused: Vec<usize>,
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
        builder::validate(&servers)?;
        Ok(Self {
            inner: Arc::new(Inner {
                servers,
                last_token: AtomicU64::new(0),
                stats: builder::StatsCells::default(),
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

impl<C: Connector> Inner<C> {
    fn proposal(&self) -> Result<u64, DriverError> {
        let next = self.last_token.load(Ordering::Relaxed).saturating_add(1);
        if next > LARGEST_TOKEN {
            return Err(DriverError::rejected(
                "fencing tokens have reached 2^53, the largest the servers' scripts compare \
                 exactly; start a new namespace",
            ));
        }
        Ok(next)
    }

    /// Every server's claim of `request`, each on its own, so that the ones still
    /// pending when the quorum is decided can be finished in the background.
    fn claims(
        &self,
        request: &AcquireRequest,
        proposal: u64,
    ) -> FuturesUnordered<BoxFuture<'static, Answer<C>>> {
        self.servers
            .iter()
            .enumerate()
            .map(|(index, server)| {
                let (server, request) = (server.clone(), request.clone());
                async move { (index, server.claim(&request, Some(proposal)).await) }.boxed()
            })
            .collect()
    }

    /// The quorum's token for `members`, a majority's grants: the largest they issued,
    /// raised to on the others while their grants are live. Fails, giving the grants
    /// back, when fewer than a majority end at it.
    async fn seal(&self, members: &[Member<C>]) -> Result<FenceToken, DriverError> {
        let top = members
            .iter()
            .map(|(_, lease)| crate::driver::Lease::fence(&**lease))
            .max()
            .unwrap_or(FenceToken::new(1));
        let low: Vec<_> = members
            .iter()
            .filter(|(_, lease)| crate::driver::Lease::fence(&**lease) < top)
            .collect();
        if low.is_empty() {
            return Ok(top);
        }
        self.stats.raised();
        let raised = join_all(low.iter().map(|(_, lease)| lease.raise(top.get()))).await;
        let at_top = members.len() - low.len()
            + raised
                .iter()
                .filter(|raised| matches!(raised, Ok(true)))
                .count();
        if at_top >= majority(self.servers.len()) {
            return Ok(top);
        }
        let why = raised
            .into_iter()
            .find_map(Result::err)
            .map_or_else(|| "a grant ended first".to_owned(), |err| err.to_string());
        Err(DriverError::unavailable(format!(
            "the quorum's fencing token {top} reached only {at_top} of {} servers, short of \
             a majority; the grants were given back: {why}",
            self.servers.len()
        )))
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

    #[test]
    fn a_proposal_is_one_past_the_last_token_and_never_past_what_lua_compares_exactly() {
        let driver =
            RedlockDriver::builder(["redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"])
                .build()
                .unwrap();
        let inner = &driver.inner;
        assert_eq!(inner.proposal().unwrap(), 1);
        inner.last_token.store(41, Ordering::Relaxed);
        assert_eq!(inner.proposal().unwrap(), 42);
        inner.last_token.store((1 << 53) - 2, Ordering::Relaxed);
        assert_eq!(inner.proposal().unwrap(), (1 << 53) - 1);
        for last in [(1 << 53) - 1, u64::MAX] {
            inner.last_token.store(last, Ordering::Relaxed);
            let err = inner.proposal().unwrap_err();
            assert!(
                !err.is_transient() && err.to_string().contains("2^53"),
                "{err}"
            );
        }
    }
}
