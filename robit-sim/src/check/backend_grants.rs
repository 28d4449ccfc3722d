//! The backend's view of the grants, server by server, and when the lock was free again
//! after a holder's grant: on its one server, or on a majority of a quorum's.

use std::collections::BTreeMap;
use std::time::Duration;

use super::beliefs::Belief;
use crate::history::host_of;
use crate::{Event, EventKind};

/// One server's grants. Tokens may repeat (a server that lost its state), so grants are
/// told apart by their position in time, not by token alone.
#[derive(Default)]
pub(super) struct Grants {
    /// Every grant in order: (when, token, to whom).
    pub(super) order: Vec<(Duration, u64, String)>,
    /// Every promised expiry: (when promised, token, until).
    untils: Vec<(Duration, u64, Duration)>,
    /// Every release: (when, token).
    releases: Vec<(Duration, u64)>,
}

/// Every server's grants, by host name, and how many servers there are.
pub(super) struct Backend {
    pub(super) servers: BTreeMap<String, Grants>,
    count: usize,
}

impl Backend {
    /// The grants in `events` of a backend of `count` servers.
    pub(super) fn from_events(events: &[Event], count: usize) -> Self {
        let mut servers: BTreeMap<String, Grants> = BTreeMap::new();
        for event in events {
            if !matches!(
                event.kind,
                EventKind::BackendGranted { .. }
                    | EventKind::BackendRenewed { .. }
                    | EventKind::BackendReleased { .. }
            ) {
                continue;
            }
            let grants = servers.entry(event.who.clone()).or_default();
            match &event.kind {
                EventKind::BackendGranted { to, token, until } => {
                    grants.order.push((event.at, *token, to.clone()));
                    grants.untils.push((event.at, *token, *until));
                }
                EventKind::BackendRenewed { token, until, .. } => {
                    grants.untils.push((event.at, *token, *until));
                }
                EventKind::BackendReleased { token, .. } => {
                    grants.releases.push((event.at, *token));
                }
                _ => {}
            }
        }
        Self {
            servers,
            count: count.max(1),
        }
    }

    /// The instant the backend could first grant the lock to someone other than the
    /// holder of `belief`, judging by what it had promised that holder before the
    /// belief ended: its one server's promise, or for a quorum the instant a majority
    /// of the servers were free of the holder (a server that never granted it counts as
    /// free throughout).
    pub(super) fn free_after(&self, belief: &Belief) -> Option<Duration> {
        if self.count == 1 {
            let grants = self.servers.values().next()?;
            let index = grants.order.iter().rposition(|(when, granted, to)| {
                // The backend knows hosts, not the mutexes inside them.
                *granted == belief.token && to == host_of(&belief.client) && *when <= belief.start
            })?;
            return grants.held_until(index, belief.end, false);
        }
        let mut frees: Vec<Duration> = self
            .servers
            .values()
            .filter_map(|grants| grants.quorum_member(belief))
            .collect();
        // The others never granted it: free all along.
        frees.resize(self.count, Duration::ZERO);
        frees.sort_unstable();
        let majority = self.count / 2 + 1;
        // Free once `count - majority + 1` servers are: no majority is left to the holder.
        frees.get(self.count - majority).copied()
    }
}

impl Grants {
    /// Until when the server kept the quorum grant of `belief`: the latest grant to its
    /// host before the belief ended that came after its lock() was called (the winning
    /// attempt's, or one that joined the lease late). A quorum's servers issue tokens
    /// of their own before the quorum's is written back, so the token cannot tell it.
    fn quorum_member(&self, belief: &Belief) -> Option<Duration> {
        let index = self.order.iter().rposition(|(when, _, to)| {
            to == host_of(&belief.client) && *when <= belief.end && *when >= belief.called
        })?;
        self.held_until(index, belief.end, true)
    }

    /// Until when the server kept grant `index`, judging by what it had promised before
    /// `at`: its promised expiries, chained while they overlap, cut short by the next
    /// grant and (with `releases`) by a release.
    fn held_until(&self, index: usize, at: Duration, releases: bool) -> Option<Duration> {
        let (granted_at, token, _) = self.order[index];
        let next = self.order.get(index + 1).map(|(when, _, _)| *when);
        let current = |when: Duration| {
            when >= granted_at && when <= at && next.is_none_or(|next| when < next)
        };
        let mut promises: Vec<(Duration, Duration)> = self
            .untils
            .iter()
            .filter(|(when, promised, _)| *promised == token && current(*when))
            .map(|(when, _, until)| (*when, *until))
            .collect();
        promises.sort();
        // A grant that lapsed stays lapsed: a later "renewal" cannot fill the gap.
        let mut until = promises.first()?.1;
        for &(when, promised) in &promises[1..] {
            if when > until {
                break;
            }
            until = until.max(promised);
        }
        let released = releases
            .then(|| {
                self.releases
                    .iter()
                    .find(|(when, released)| *released == token && current(*when))
                    .map(|(when, _)| *when)
            })
            .flatten();
        let until = released.map_or(until, |released| released.min(until));
        Some(next.map_or(until, |next| next.min(until)))
    }
}
