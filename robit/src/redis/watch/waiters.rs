//! This driver's waiters, by id: what a hand-off notification wakes.
//!
//! A waiter's watch registers itself when it is first polled, not when it is made.
//! `lock()` makes a watch before every attempt, so that a release between the answer
//! and the wait cannot be missed, but an attempt that is granted never waits: registering
//! up front cost every uncontended `lock()` a locked map insertion and removal and two
//! allocations, for nothing. A wake that finds a waiter not yet registered is kept
//! instead, and its watch completes at once when it registers. Waiter ids are random
//! and never reused, so a kept wake can only ever complete the watch of the waiter it
//! names.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::driver::ReleaseWatch;

/// How many wakes are kept for waiters not (yet) registered. Most are for waiters of
/// other processes, which share the namespace's channel; the oldest is forgotten first.
/// A waiter registers within a scheduling delay of its attempt's answer, so only a burst
/// of this many hand-offs in that delay could push its wake out — and then it polls, as
/// it does when a notification is lost.
pub(super) const KEPT: usize = 256;

#[derive(Default)]
pub(super) struct Waiters {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Registered watches: shared by all watches on one id, with their number.
    watched: HashMap<u128, (Arc<Notify>, usize), BuildHasherDefault<IdHasher>>,
    /// Wakes for ids with no registered watch, oldest first, each id at most once.
    kept: VecDeque<u128>,
}

impl Waiters {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A watch completed by the next wake of `waiter`, or by a wake that came since
    /// the last watch of `waiter` ended. It registers when first polled; until then it
    /// costs nothing but its own allocation.
    pub(super) fn watch(self: &Arc<Self>, waiter: u128) -> ReleaseWatch {
        let waiters = Arc::clone(self);
        ReleaseWatch::new(async move {
            if let Some(registered) = waiters.register(waiter) {
                registered.notified.await;
            }
        })
    }

    /// Registers a watch on `waiter`, or consumes a wake kept for it (`None`).
    fn register(self: Arc<Self>, waiter: u128) -> Option<Registered> {
        let notified = {
            let mut state = self.state();
            if let Some(at) = state.kept.iter().position(|&kept| kept == waiter) {
                state.kept.remove(at);
                return None;
            }
            let (notify, count) = state.watched.entry(waiter).or_default();
            *count += 1;
            Arc::clone(notify).notified_owned()
        };
        Some(Registered {
            notified,
            _unregister: Unregister {
                waiters: self,
                waiter,
            },
        })
    }

    /// Wakes `waiter`'s registered watches; whether there was any. A wake that finds
    /// none is kept for the next watch of `waiter` to register.
    pub(super) fn wake(&self, waiter: u128) -> bool {
        let mut state = self.state();
        if let Some((notify, _)) = state.watched.get(&waiter) {
            notify.notify_waiters();
            return true;
        }
        if !state.kept.contains(&waiter) {
            if state.kept.len() == KEPT {
                state.kept.pop_front();
            }
            state.kept.push_back(waiter);
        }
        false
    }

    /// How many ids have registered watches, and how many wakes are kept.
    #[cfg(test)]
    pub(super) fn sizes(&self) -> (usize, usize) {
        let state = self.state();
        (state.watched.len(), state.kept.len())
    }
}

/// A registered watch: completed by a wake, unregistered when dropped.
struct Registered {
    notified: tokio::sync::futures::OwnedNotified,
    /// Held until the watch ends.
    _unregister: Unregister,
}

struct Unregister {
    waiters: Arc<Waiters>,
    waiter: u128,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        let mut state = self.waiters.state();
        if let Some((_, count)) = state.watched.get_mut(&self.waiter) {
            *count -= 1;
            if *count == 0 {
                state.watched.remove(&self.waiter);
            }
        }
    }
}

/// Hashes a random id by folding it: the id is already uniformly random, so a keyed
/// hash is work for nothing. Ids are only looked up, never iterated, so hash order
/// cannot reach behaviour.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for u128 keys; fold anything else in rather than drop it.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u128(&mut self, id: u128) {
        // Truncation intended: the two halves folded together.
        self.0 ^= (id as u64) ^ ((id >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    const WAITER: u128 = 0xa;

    #[test]
    fn an_id_hashes_to_its_two_halves_folded_together() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let hash = |id: u128| BuildHasherDefault::<IdHasher>::default().hash_one(id);
        assert_eq!(hash(0x1234), 0x1234);
        assert_eq!(hash(0xff << 64 | 0x0f), 0xf0);
        assert_ne!(hash(1), hash(2));
        // Anything but an id (never hashed here) is folded in a byte at a time.
        let mut bytes = IdHasher::default();
        std::hash::Hasher::write(&mut bytes, &[0xff; 9]);
        assert_eq!(std::hash::Hasher::finish(&bytes), 0xffff_ffff_ffff_ff00);
    }

    #[test]
    fn a_watch_that_is_never_polled_registers_nothing() {
        let waiters = Arc::new(Waiters::default());
        drop(waiters.watch(WAITER));
        assert_eq!(waiters.sizes(), (0, 0));
    }

    #[test]
    fn a_registered_watch_is_woken_and_unregisters_when_it_ends() {
        let waiters = Arc::new(Waiters::default());
        let mut watch = waiters.watch(WAITER);
        assert!((&mut watch).now_or_never().is_none());
        assert_eq!(waiters.sizes(), (1, 0));
        assert!(waiters.wake(WAITER), "a registered watch was not found");
        assert!(watch.now_or_never().is_some(), "not woken");
        assert_eq!(waiters.sizes(), (0, 0));
    }

    #[test]
    fn a_wake_before_the_watch_registers_completes_it_once() {
        let waiters = Arc::new(Waiters::default());
        let watch = waiters.watch(WAITER);
        assert!(!waiters.wake(WAITER), "nothing was registered yet");
        assert!(!waiters.wake(WAITER));
        assert_eq!(
            waiters.sizes(),
            (0, 1),
            "two wakes of one waiter kept as one"
        );
        assert!(watch.now_or_never().is_some(), "the kept wake was lost");
        let next = waiters.watch(WAITER);
        assert!(next.now_or_never().is_none(), "a kept wake was used twice");
    }

    #[test]
    fn a_kept_wake_completes_only_the_waiter_it_names() {
        let waiters = Arc::new(Waiters::default());
        waiters.wake(WAITER + 1);
        assert!(waiters.watch(WAITER).now_or_never().is_none());
        assert!(waiters.watch(WAITER + 1).now_or_never().is_some());
    }

    #[test]
    fn the_oldest_kept_wakes_are_forgotten_first() {
        let waiters = Arc::new(Waiters::default());
        for other in 0..KEPT as u128 {
            waiters.wake(WAITER + other);
        }
        assert_eq!(waiters.sizes(), (0, KEPT));
        waiters.wake(WAITER + KEPT as u128);
        assert_eq!(
            waiters.sizes(),
            (0, KEPT),
            "the kept wakes grew past their bound"
        );
        assert!(
            waiters.watch(WAITER).now_or_never().is_none(),
            "the oldest was kept"
        );
        assert!(waiters.watch(WAITER + 1).now_or_never().is_some());
        assert!(
            waiters
                .watch(WAITER + KEPT as u128)
                .now_or_never()
                .is_some()
        );
    }

    #[tokio::test]
    async fn two_watches_on_one_waiter_are_both_woken() {
        let waiters = Arc::new(Waiters::default());
        let mut first = waiters.watch(WAITER);
        let mut second = waiters.watch(WAITER);
        assert!((&mut first).now_or_never().is_none());
        assert!((&mut second).now_or_never().is_none());
        drop(first);
        assert_eq!(
            waiters.sizes(),
            (1, 0),
            "one watch's end removed the other's"
        );
        assert!(waiters.wake(WAITER));
        second.await;
        assert_eq!(waiters.sizes(), (0, 0));
    }
}
