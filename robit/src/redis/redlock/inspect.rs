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
        if let Some(agreed) = agreed(&seen, need) {
            return Ok(agreed);
        }
        Err(disagreement(name, servers.len(), &seen, last_error))
    }
}

/// What a majority (`need`) of the servers' answers `seen` agree on: free, or held (or
/// in its lock-delay) by one owner; `None` if no majority agrees.
fn agreed(seen: &[Inspection], need: usize) -> Option<Inspection> {
    let waiters = seen.iter().map(|seen| seen.waiters).max().unwrap_or(0);
    let free = seen
        .iter()
        .filter(|seen| seen.state == LockState::Free)
        .count();
    if free >= need {
        return Some(Inspection {
            waiters,
            ..Inspection::free()
        });
    }
    for candidate in seen {
        let Some(holder) = candidate.holder else {
            continue;
        };
        let same: Vec<&Inspection> = seen
            .iter()
            .filter(|seen| seen.holder == Some(holder) && seen.state == candidate.state)
            .collect();
        if same.len() >= need {
            let mut ends: Vec<Option<Duration>> = same.iter().map(|seen| seen.expires_in).collect();
            // Longest first, no expiry first of all: the majority-th is when fewer
            // than a majority hold it.
            ends.sort_by_key(|end| std::cmp::Reverse((end.is_none(), *end)));
            return Some(Inspection {
                state: candidate.state,
                holder: Some(holder),
                fence: quorum_fence(&same, need),
                expires_in: ends[need - 1],
                waiters,
            });
        }
    }
    None
}

/// Why no majority of `servers` agrees on `name`, given the answers `seen`: the last
/// error when too few answered, else what each answer said.
fn disagreement(
    name: &LockName,
    servers: usize,
    seen: &[Inspection],
    last_error: Option<DriverError>,
) -> DriverError {
    match last_error {
        Some(err) if seen.len() < majority(servers) => err,
        _ => {
            let views: Vec<String> = seen
                .iter()
                .map(|seen| format!("{:?}", seen.state))
                .collect();
            DriverError::rejected(format!(
                "no majority of the {servers} servers agrees on lock {name:?}: {} answered ({}); \
                 inspect each of RedlockDriver::servers()",
                seen.len(),
                views.join(", ")
            ))
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{FenceToken, OwnerToken};

    fn held(by: u128, fence: u64, left: Option<u64>, waiters: usize) -> Inspection {
        Inspection {
            state: LockState::Held,
            holder: Some(OwnerToken::from_u128(by)),
            fence: Some(FenceToken::new(fence)),
            expires_in: left.map(Duration::from_secs),
            waiters,
        }
    }

    fn free(waiters: usize) -> Inspection {
        Inspection {
            waiters,
            ..Inspection::free()
        }
    }

    #[test]
    fn a_lock_free_on_a_majority_is_free_with_the_longest_queue() {
        let seen = [free(0), held(1, 5, Some(9), 4), free(2)];
        assert_eq!(agreed(&seen, 2), Some(free(4)));
        assert_eq!(agreed(&seen[..2], 2), None);
    }

    /// Of five servers, four record the grant, with their own times left: fewer than
    /// three hold it once the third longest runs out; a server with no expiry counts as
    /// the longest. The token is the third largest: the issuing server's, and those
    /// raised to it, not one a late server issued higher.
    #[test]
    fn a_grant_on_a_majority_ends_when_its_majority_th_longest_hold_ends() {
        let seen = [
            held(1, 7, Some(4), 0),
            held(1, 7, None, 1),
            free(3),
            held(1, 9, Some(10), 0),
            held(1, 7, Some(6), 0),
        ];
        let agreed = agreed(&seen, 3).unwrap();
        assert_eq!(
            agreed,
            Inspection {
                expires_in: Some(Duration::from_secs(6)),
                ..held(1, 7, None, 3)
            }
        );
    }

    #[test]
    fn the_quorum_s_token_is_the_majority_th_largest_of_its_grants() {
        let grants = [
            held(1, 4, None, 0),
            held(1, 9, None, 0),
            held(1, 5, None, 0),
        ];
        let grants: Vec<&Inspection> = grants.iter().collect();
        assert_eq!(quorum_fence(&grants, 2), Some(FenceToken::new(5)));
        assert_eq!(quorum_fence(&grants, 3), Some(FenceToken::new(4)));
    }

    #[test]
    fn one_owner_held_on_one_server_and_in_its_lock_delay_on_another_is_no_majority() {
        let mut delayed = held(1, 5, Some(3), 0);
        delayed.state = LockState::LockDelay;
        let seen = [held(1, 5, Some(9), 0), delayed, held(2, 6, Some(9), 0)];
        assert_eq!(agreed(&seen, 2), None);
        // Two servers in the same state for the same owner are.
        let seen = [seen[1].clone(), seen[1].clone(), seen[2].clone()];
        assert_eq!(
            agreed(&seen, 2).map(|seen| seen.state),
            Some(LockState::LockDelay)
        );
    }

    #[test]
    fn too_few_answers_are_the_servers_error_and_enough_that_disagree_are_named() {
        let name = LockName::from("job");
        let down = || Some(DriverError::unavailable("connection refused"));
        let err = disagreement(&name, 3, &[free(0)], down());
        assert!(
            err.is_transient() && err.to_string().contains("refused"),
            "{err}"
        );
        let seen = [free(0), held(1, 5, Some(9), 0)];
        let err = disagreement(&name, 3, &seen, down());
        let said = err.to_string();
        assert!(!err.is_transient(), "{said}");
        assert!(said.contains("no majority of the 3 servers"), "{said}");
        assert!(said.contains("2 answered (Free, Held)"), "{said}");
    }
}
