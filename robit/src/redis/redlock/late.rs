//! The claims still pending once a quorum attempt was decided: a late grant joins the
//! lease of a won attempt, or is given back (the attempt was lost, or the lease
//! released); after a won attempt, a waiter leaves the queues of the servers that refused
//! it, where it would otherwise be handed the lock later and hold it up for a hand-off
//! window.

use std::sync::Arc;

use futures_util::future::{BoxFuture, join_all};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};

use super::super::acquire::Claim;
use super::super::{Connector, RedisDriver};
use super::acquire::{Answer, Won};
use super::lease::{GiveBack, Member, QuorumLease, release_all};
use crate::driver::AcquireRequest;

/// What the late answers of one attempt call for.
struct Late<C: Connector> {
    /// The won attempt's lease, which late grants join.
    lease: Option<Arc<QuorumLease<C>>>,
    /// The waiter of a won attempt, to take out of the queues it is left in.
    waiter: Option<AcquireRequest>,
    /// Late grants to give back.
    back: Vec<Member<C>>,
    /// The servers whose queues hold the waiter.
    queued: Vec<usize>,
}

impl<C: Connector> Late<C> {
    fn new(won: Option<Won<'_, C>>) -> Self {
        let Some(won) = won else {
            return Self {
                lease: None,
                waiter: None,
                back: Vec::new(),
                queued: Vec::new(),
            };
        };
        let waiter = won.request.waiter.is_some().then(|| won.request.clone());
        Self {
            lease: Some(won.lease),
            queued: if waiter.is_some() {
                won.refused
            } else {
                Vec::new()
            },
            waiter,
            back: Vec::new(),
        }
    }

    /// Takes one late answer into account.
    fn answered(&mut self, (index, answer): Answer<C>) {
        match answer {
            Ok(Claim::Granted(grant)) => {
                let member = (index, Arc::new(grant));
                match &self.lease {
                    Some(lease) => self.back.extend(lease.join(member)),
                    None => self.back.push(member),
                }
            }
            _ if self.waiter.is_some() => self.queued.push(index),
            _ => {}
        }
    }

    /// Nothing to give back, and nobody to withdraw.
    fn is_idle(&self) -> bool {
        self.back.is_empty() && self.queued.is_empty()
    }

    /// Gives the late grants back and withdraws the waiter where it is queued.
    async fn finish(self, servers: &[RedisDriver<C>]) {
        let given_back = release_all(self.back, servers.len(), GiveBack::Quietly(None));
        let withdrawn = join_all(self.waiter.iter().flat_map(|request| {
            self.queued
                .iter()
                .map(|&index| servers[index].withdraw_waiter(request, true))
        }));
        let _ = futures_util::future::join(given_back, withdrawn).await;
    }
}

/// Finishes the claims still `pending` once the quorum was decided (`won`, if it was
/// won). Bounded by the servers' own time limits.
pub(super) fn finish_late<C: Connector>(
    servers: &[RedisDriver<C>],
    mut pending: FuturesUnordered<BoxFuture<'static, Answer<C>>>,
    won: Option<Won<'_, C>>,
) {
    let mut late = Late::new(won);
    // Most late answers are in already: no task for them.
    while let Some(Some(answer)) = pending.next().now_or_never() {
        late.answered(answer);
    }
    if late.is_idle() && pending.is_empty() {
        return;
    }
    let servers = servers.to_vec();
    tokio::spawn(async move {
        while let Some(answer) = pending.next().await {
            late.answered(answer);
        }
        late.finish(&servers).await;
    });
}
