//! A lease on a quorum: the member grants, renewed and released together.

use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};

use super::super::Connector;
use super::super::lease::RedisLease;
use super::tally::majority;
use crate::driver::{DriverError, FenceToken, Lease, Renewal, Waiter};

/// A member grant, by the index of its server.
pub(super) type Member<C> = (usize, Arc<RedisLease<C>>);

/// The grants of a quorum, one per server that granted (or joined late), and the
/// quorum's token.
pub(super) struct QuorumLease<C: Connector> {
    fence: FenceToken,
    servers: usize,
    members: StdMutex<Members<C>>,
}

struct Members<C: Connector> {
    live: Vec<Member<C>>,
    /// Released: a grant that comes late is given back, not joined.
    released: bool,
}

impl<C: Connector> QuorumLease<C> {
    pub(super) fn new(fence: FenceToken, servers: usize, live: Vec<Member<C>>) -> Self {
        Self {
            fence,
            servers,
            members: StdMutex::new(Members {
                live,
                released: false,
            }),
        }
    }

    fn members(&self) -> MutexGuard<'_, Members<C>> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A grant from a server that answered after the quorum was decided: renewed and
    /// released with the others from now on. Answers it back if the lease was released
    /// meanwhile, for the caller to give back.
    pub(super) fn join(&self, member: Member<C>) -> Option<Member<C>> {
        let mut members = self.members();
        if members.released {
            return Some(member);
        }
        members.live.push(member);
        None
    }

    fn forget(&self, server: usize) {
        self.members().live.retain(|(index, _)| *index != server);
    }
}

#[async_trait]
impl<C: Connector> Lease for QuorumLease<C> {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    /// A server's grant ends silently, as on one server: a loss shows in a renew's
    /// answer.
    fn signals_loss(&self) -> bool {
        false
    }

    /// Renews every member grant at once and answers as soon as a majority of all the
    /// servers renewed. A member that answers lost is dropped; once too few are left
    /// for a majority, the lease is lost. Errors that leave a majority out of reach are
    /// an error: the watchdog retries until the validity deadline.
    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let need = majority(self.servers);
        let live: Vec<Member<C>> = self.members().live.clone();
        if live.len() < need {
            return Ok(Renewal::Lost);
        }
        let mut pending: FuturesUnordered<_> = live
            .iter()
            .map(|(server, lease)| async move { (*server, lease.renew(ttl).await) })
            .collect();
        let (mut renewed, mut lost) = (0, 0);
        let mut failed = None;
        while let Some((server, answer)) = pending.next().await {
            match answer {
                Ok(Renewal::Renewed) => renewed += 1,
                Ok(_) => {
                    lost += 1;
                    self.forget(server);
                }
                Err(err) => failed = Some(err),
            }
            if renewed >= need {
                return Ok(Renewal::Renewed);
            }
            if live.len() - lost < need {
                return Ok(Renewal::Lost);
            }
            if renewed + pending.len() < need {
                break;
            }
        }
        Err(quorum_error(
            "renew",
            renewed,
            self.servers,
            failed.unwrap_or_else(|| DriverError::unavailable("no answer")),
        ))
    }

    /// Releases every member grant at once. Done when a majority of the servers is free
    /// of it: the rest expire on their own.
    async fn release(&self) -> Result<(), DriverError> {
        let live = {
            let mut members = self.members();
            members.released = true;
            members.live.clone()
        };
        // The members stay until they are given back: a release that was cancelled, or
        // failed, and is called again, gives them back again (it is idempotent).
        release_all(live, self.servers, GiveBack::HandOn).await?;
        self.members().live.clear();
        Ok(())
    }
}

/// How grants are given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GiveBack {
    /// A release: each server hands the lock to the first waiter in its queue.
    HandOn,
    /// The grants of an attempt without a majority: handed to nobody now, the waiter
    /// (if any) back at the head of each server's queue ([`RedisLease::give_back`]).
    Quietly(Option<Waiter>),
}

/// Gives back `members` at once. Fine once the servers not holding one of them are a
/// majority of `servers`: the rest are given back in the background, so that a stopped
/// server holds up nobody's unlock (its grant expires if it never answers).
pub(super) async fn release_all<C: Connector>(
    members: Vec<Member<C>>,
    servers: usize,
    how: GiveBack,
) -> Result<(), DriverError> {
    let mut holding = members.len();
    let mut pending: FuturesUnordered<_> = members
        .into_iter()
        .map(|(_, lease)| async move {
            match how {
                GiveBack::HandOn => lease.release().await,
                GiveBack::Quietly(waiter) => lease.give_back(waiter.as_ref()).await,
            }
        })
        .collect();
    let mut failed = None;
    while servers - holding < majority(servers) {
        match pending.next().await {
            Some(Ok(())) => holding -= 1,
            Some(Err(err)) => failed = Some(err),
            None => {
                let err = failed.unwrap_or_else(|| DriverError::unavailable("no answer"));
                return Err(quorum_error("release", servers - holding, servers, err));
            }
        }
    }
    // Most answers are in already: no task for them.
    while let Some(Some(_)) = pending.next().now_or_never() {}
    if !pending.is_empty() {
        tokio::spawn(async move { while pending.next().await.is_some() {} });
    }
    Ok(())
}

/// A quorum operation that a majority could not answer, with the last server's error.
fn quorum_error(what: &str, done: usize, servers: usize, last: DriverError) -> DriverError {
    let summary = format!(
        "the {what} reached only {done} of {servers} servers, short of the majority of {}",
        majority(servers)
    );
    if last.is_transient() {
        DriverError::unavailable(format!("{summary}: {last}"))
    } else {
        DriverError::rejected(format!("{summary}: {last}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::UrlConnector;

    /// No server tells of a grant's end: a quorum's loss shows in a renewal's answer,
    /// so a hold shorter than its first renewal needs no watchdog.
    #[tokio::test(start_paused = true)]
    async fn a_quorum_grant_says_it_never_signals_a_loss_since_it_cannot() {
        let lease = QuorumLease::<UrlConnector>::new(FenceToken::new(7), 3, Vec::new());
        assert!(!lease.signals_loss());
        let heard = tokio::time::timeout(Duration::from_secs(3600), lease.lost()).await;
        assert!(heard.is_err(), "the grant signalled a loss");
    }
}
