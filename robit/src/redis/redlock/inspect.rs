//! What a quorum holds for a lock, for an operator: the majority's view.

use std::time::Duration;

use futures_util::future::join_all;

use super::tally::majority;
use super::{Connector, RedlockDriver};
use crate::driver::{DriverError, Inspection, LockName, LockState};

impl<C: Connector> RedlockDriver<C> {
    /// Asks every server, and answers what a majority agrees on: free, or held (or in
    /// its lock-delay) by one owner, with the quorum's fencing token and the time until
    /// fewer than a majority hold it. `waiters` is the longest queue.
    pub(super) async fn inspect_quorum(&self, name: &LockName) -> Result<Inspection, DriverError> {
        let servers = &self.inner.servers;
        let need = majority(servers.len());
        let answers = join_all(servers.iter().map(|server| server.inspect_lock(name))).await;
        let mut seen = Vec::new();
        let mut last_error = None;
        for answer in answers {
            match answer {
                Ok(inspection) => seen.push(inspection),
                Err(err) => last_error = Some(err),
            }
        }
        let waiters = seen.iter().map(|seen| seen.waiters).max().unwrap_or(0);
        let free = seen
            .iter()
            .filter(|seen| seen.state == LockState::Free)
            .count();
        if free >= need {
            return Ok(Inspection {
                waiters,
                ..Inspection::free()
            });
        }
        for candidate in &seen {
            let Some(holder) = candidate.holder else {
                continue;
            };
            let same: Vec<&Inspection> = seen
                .iter()
                .filter(|seen| seen.holder == Some(holder) && seen.state == candidate.state)
                .collect();
            if same.len() >= need {
                let mut ends: Vec<Option<Duration>> =
                    same.iter().map(|seen| seen.expires_in).collect();
                // Longest first, no expiry first of all: the majority-th is when fewer
                // than a majority hold it.
                ends.sort_by_key(|end| std::cmp::Reverse((end.is_none(), *end)));
                return Ok(Inspection {
                    state: candidate.state,
                    holder: Some(holder),
                    fence: quorum_fence(&same, need),
                    expires_in: ends[need - 1],
                    waiters,
                });
            }
        }
        let views: Vec<String> = seen
            .iter()
            .map(|seen| format!("{:?}", seen.state))
            .collect();
        Err(match last_error {
            Some(err) if seen.len() < need => err,
            _ => DriverError::rejected(format!(
                "no majority of the {} servers agrees on lock {name:?}: {} answered ({}); \
                 inspect each of RedlockDriver::servers()",
                servers.len(),
                seen.len(),
                views.join(", ")
            )),
        })
    }
}

/// The quorum's token among the grants of one holder: a majority records it (the server
/// that issued it, and those raised to it), and fewer than a majority record a larger one
/// (servers that joined late), so it is the majority-th largest.
fn quorum_fence(grants: &[&Inspection], need: usize) -> Option<crate::driver::FenceToken> {
    let mut fences: Vec<_> = grants.iter().filter_map(|grant| grant.fence).collect();
    fences.sort_unstable_by(|a, b| b.cmp(a));
    fences.get(need - 1).copied()
}
