//! Grants a release made straight to this driver's waiters, until they take them up.
//!
//! A release that finds waiters grants the lock to the first of them (release_rest.lua)
//! and names it, with the grant's fencing token, in its answer and on the channel. When
//! the release went through this driver and the waiter is one of its own, the waiter
//! needs no claim: its next acquire takes the grant from here, with no round trip.
//! Otherwise — the release came from elsewhere, the answer was lost — its next acquire
//! finds the grant on the server (answered as handed, acquire_rest.lua).
//!
//! Only a release's *answer* is kept, never a published message. Answers come back on
//! the driver's command connection in the order the server ran the commands, so an
//! attempt of the waiter answered held after the grant's answer ran after the grant,
//! and found it gone (released late, or expired): that answer drops the grant kept here.
//! A message comes on another connection, in no order with the answers: a stale one
//! (a second copy of an answer already taken up, or one slow enough to come after the
//! grant expired) would be taken for a fresh grant. A message only wakes the waiter.
//!
//! Only waiters that this driver saw queued are kept. Each is kept with when its last
//! attempt answered held was sent — the grant was made after that — which the lease
//! counts its key's life from.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::waiters::IdHasher;
use crate::driver::FenceToken;

/// At most this many waiters are kept. A waiter past it is not kept: its grant is
/// found on the server by its next acquire, and its lease reads before it releases.
pub(super) const MAX_WAITERS: usize = 1 << 16;

/// A waiter not heard of for this long is forgotten when the map is full: its wait has
/// ended (an abandoned attempt's late answer can record a waiter after its `lock()` was
/// over). A live waiter is answered held at least once per poll interval.
const STALE_AFTER: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(in crate::redis) struct Handoffs {
    state: Mutex<HashMap<u128, Queued, BuildHasherDefault<IdHasher>>>,
}

/// One waiter of this driver's, queued on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::redis) struct Queued {
    /// When its last attempt answered held was sent.
    pub(in crate::redis) since: Instant,
    /// The fencing token of the grant a release made it, once one has.
    pub(in crate::redis) granted: Option<FenceToken>,
}

impl Handoffs {
    fn state(&self) -> MutexGuard<'_, HashMap<u128, Queued, BuildHasherDefault<IdHasher>>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `waiter`'s attempt sent at `since` was answered held: a grant to it is made
    /// after `since`, and one kept already is gone (see the module's documentation).
    pub(in crate::redis) fn queued(&self, waiter: u128, since: Instant) {
        let mut state = self.state();
        if state.len() >= MAX_WAITERS && !state.contains_key(&waiter) {
            state.retain(|_, queued| since.saturating_duration_since(queued.since) < STALE_AFTER);
        }
        if state.len() < MAX_WAITERS || state.contains_key(&waiter) {
            let granted = None;
            state.insert(waiter, Queued { since, granted });
        }
    }

    /// A release of this driver's answered that it granted the lock to `waiter`, with
    /// `fence`: kept if the waiter is this driver's. Answers whether it was.
    pub(in crate::redis) fn granted(&self, waiter: u128, fence: FenceToken) -> bool {
        match self.state().get_mut(&waiter) {
            Some(queued) => {
                queued.granted = Some(fence);
                true
            }
            None => false,
        }
    }

    /// Forgets `waiter` (its wait ended), answering what was kept of it.
    pub(in crate::redis) fn take(&self, waiter: u128) -> Option<Queued> {
        self.state().remove(&waiter)
    }

    /// The grant made to `waiter`, if one was: taken up, and `waiter` forgotten.
    pub(in crate::redis) fn take_granted(&self, waiter: u128) -> Option<(Queued, FenceToken)> {
        let mut state = self.state();
        let fence = state.get(&waiter)?.granted?;
        state.remove(&waiter).map(|queued| (queued, fence))
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.state().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_kept_only_for_a_waiter_this_driver_saw_queued() {
        let handoffs = Handoffs::default();
        let since = Instant::now();
        assert!(!handoffs.granted(7, FenceToken::new(3)));
        assert_eq!(handoffs.take_granted(7), None);
        handoffs.queued(7, since);
        assert_eq!(handoffs.take_granted(7), None, "queued, not granted yet");
        assert!(handoffs.granted(7, FenceToken::new(3)));
        let queued = Queued {
            since,
            granted: Some(FenceToken::new(3)),
        };
        assert_eq!(handoffs.take_granted(7), Some((queued, FenceToken::new(3))));
        assert_eq!(handoffs.len(), 0, "taken up, and forgotten");
    }

    #[test]
    fn past_the_cap_a_new_waiter_is_not_kept_but_a_known_one_is_updated() {
        let handoffs = Handoffs::default();
        let start = Instant::now();
        for waiter in 0..MAX_WAITERS as u128 {
            handoffs.queued(waiter, start);
        }
        handoffs.queued(u128::MAX, start);
        assert_eq!(handoffs.take(u128::MAX), None);
        let later = start + Duration::from_millis(5);
        handoffs.queued(0, later);
        assert_eq!(handoffs.take(0).map(|queued| queued.since), Some(later));
    }

    #[test]
    fn a_held_answer_after_the_grant_s_drops_the_grant() {
        let handoffs = Handoffs::default();
        let start = Instant::now();
        handoffs.queued(7, start);
        assert!(handoffs.granted(7, FenceToken::new(3)));
        handoffs.queued(7, start + Duration::from_millis(5));
        assert_eq!(handoffs.take_granted(7), None);
    }

    #[test]
    fn a_full_map_forgets_the_waiters_not_heard_of_for_a_minute() {
        let handoffs = Handoffs::default();
        let start = Instant::now();
        handoffs.queued(u128::MAX, start);
        let later = start + STALE_AFTER;
        for waiter in 1..MAX_WAITERS as u128 {
            handoffs.queued(waiter, later);
        }
        handoffs.queued(0, later);
        assert_eq!(handoffs.take(u128::MAX), None, "stale, forgotten");
        assert_eq!(handoffs.take(0).map(|queued| queued.since), Some(later));
        assert!(handoffs.take(1).is_some(), "a recent waiter forgotten");
    }

    #[test]
    fn a_map_with_room_forgets_nobody() {
        let handoffs = Handoffs::default();
        let start = Instant::now();
        handoffs.queued(1, start);
        handoffs.queued(2, start + 2 * STALE_AFTER);
        assert!(handoffs.take(1).is_some());
    }
}
