//! The quorum as a [`Driver`]: acquire on every server at once, and the rest.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::{join_all, select_all};

use super::late::finish_late;
use super::lease::{GiveBack, QuorumLease, release_all};
use super::tally::{Tally, majority};
use super::{Connector, RedlockDriver, Won};
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
};
use crate::redis::claim::Claim;

#[async_trait]
impl<C: Connector> Driver for RedlockDriver<C> {
    /// Claims the lock on every server at once, proposing one more than the largest
    /// token this driver has seen, and holds it once a majority granted. Servers that
    /// answer after that join the lease; the grants of an attempt without a majority
    /// are given back at once.
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let inner = &self.inner;
        let servers = inner.servers.len();
        let proposal = inner.proposal()?;
        let mut pending = inner.claims(request, proposal);
        let mut tally = Tally::new(servers);
        let (mut members, mut refused) = (Vec::new(), Vec::new());
        while let Some((index, answer)) = pending.next().await {
            match answer {
                Ok(Claim::Granted(grant)) => {
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
                .map(|server| server.withdraw(request)),
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
        let answers = join_all(
            self.inner
                .servers
                .iter()
                .map(|server| server.force_release(name, holder)),
        )
        .await;
        let answered = answers.iter().filter(|answer| answer.is_ok()).count();
        let freed = answers.iter().any(|answer| matches!(answer, Ok(true)));
        match answers.into_iter().find_map(Result::err) {
            Some(err) if answered < majority(self.inner.servers.len()) => Err(err),
            _ => Ok(freed),
        }
    }
}
