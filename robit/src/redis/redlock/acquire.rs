//! A quorum's acquire: every server's claim at once, proposing one more than the largest
//! token this driver has seen; held once a majority granted, at the largest token they
//! issued, raised to on the others (the argument is on [`RedlockDriver`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::{BoxFuture, join_all};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};

use super::late::finish_late;
use super::lease::{GiveBack, Member, QuorumLease, release_all};
use super::tally::{Tally, majority};
use super::{Connector, Inner, RedlockDriver};
use crate::driver::{Acquire, AcquireRequest, DriverError, FenceToken};
use crate::redis::acquire::Claim;

/// The largest token a Lua number (a double) holds exactly; the scripts compare tokens
/// as numbers.
const LARGEST_TOKEN: u64 = (1 << 53) - 1;

pub(super) type Answer<C> = (usize, Result<Claim<C>, DriverError>);

/// A won attempt, as [`finish_late`] takes it.
pub(super) struct Won<'a, C: Connector> {
    pub(super) lease: Arc<QuorumLease<C>>,
    pub(super) request: &'a AcquireRequest,
    /// The servers that refused the claim.
    pub(super) refused: Vec<usize>,
}

impl<C: Connector> RedlockDriver<C> {
    /// See [`Driver::acquire`](crate::Driver::acquire) on [`RedlockDriver`].
    pub(super) async fn acquire_quorum(
        &self,
        request: &AcquireRequest,
    ) -> Result<Acquire, DriverError> {
        let inner = &self.inner;
        let servers = inner.servers.len();
        let proposal = inner.proposal()?;
        let mut pending = inner.claims(request, proposal);
        let mut tally = Tally::new(servers);
        let (mut members, mut refused) = (Vec::new(), Vec::new());
        while let Some((index, answer)) = pending.next().await {
            match answer {
                // A member is never handed a grant: its claim refuses one.
                Ok(Claim::Granted(grant) | Claim::Handed(grant)) => {
                    tally.granted();
                    members.push((index, Arc::new(grant)));
                }
                Ok(Claim::Refused(answer)) => {
                    tally.refused(&answer);
                    refused.push(index);
                }
                Err(err) => {
                    tally.failed(err);
                    // It may have queued the waiter before its answer was lost.
                    refused.push(index);
                }
            }
            if tally.decided(pending.len()) {
                break;
            }
        }
        inner.stats.attempt(tally.won(), tally.split());
        if !tally.won() {
            let unanswered = pending.len();
            finish_late(&inner.servers, pending, None);
            let _ = release_all(members, servers, GiveBack::Quietly(request.waiter)).await;
            return tally.verdict(unanswered);
        }
        match inner.seal(&members).await {
            Ok(fence) => {
                inner
                    .last_token
                    .fetch_max(fence.get(), std::sync::atomic::Ordering::Relaxed);
                let lease = Arc::new(QuorumLease::new(fence, servers, members));
                let won = Won {
                    lease: Arc::clone(&lease),
                    request,
                    refused,
                };
                finish_late(&inner.servers, pending, Some(won));
                Ok(Acquire::Granted(lease))
            }
            Err(err) => {
                finish_late(&inner.servers, pending, None);
                let _ = release_all(members, servers, GiveBack::Quietly(request.waiter)).await;
                Err(err)
            }
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
