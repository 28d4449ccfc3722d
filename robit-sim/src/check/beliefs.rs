//! Who believed what, when: the intervals the checkers reason about, derived from events.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::history::host_of;
use crate::{Event, EventKind};

/// How a belief interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `unlock()` was called.
    Unlock,
    /// Loss was signalled.
    Lost,
    /// The client saw the guard no longer held and dropped it.
    Dropped,
    /// The client crashed.
    Crash,
    /// The run ended with the lease still believed in.
    StillHeld,
}

/// One lease, as its client saw it.
#[derive(Debug, Clone)]
pub(crate) struct Belief {
    pub(crate) client: String,
    pub(crate) lease: u64,
    pub(crate) token: u64,
    /// When the `lock()` call that produced the lease began.
    pub(crate) called: Duration,
    /// When `lock()` returned it.
    pub(crate) start: Duration,
    pub(crate) end: Duration,
    pub(crate) how: End,
}

impl Belief {
    pub(crate) fn overlaps(&self, other: &Belief) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// A `lock()` call, from its start until it returned or its client crashed.
#[derive(Debug, Clone)]
pub(crate) struct Wait {
    pub(crate) start: Duration,
    pub(crate) end: Duration,
}

/// Every belief and every wait of a run.
#[derive(Debug, Default)]
pub(crate) struct Beliefs {
    pub(crate) beliefs: Vec<Belief>,
    pub(crate) waits: Vec<Wait>,
}

#[derive(Default)]
struct ClientState {
    called: Option<Duration>,
    open: Option<usize>,
}

impl Beliefs {
    pub(crate) fn from_events(events: &[Event], end: Duration) -> Self {
        let mut out = Self::default();
        let mut clients: BTreeMap<&str, ClientState> = BTreeMap::new();
        for event in events {
            if let EventKind::Crashed = event.kind {
                // The host's every mutex goes with it.
                for (who, state) in clients.iter_mut() {
                    if host_of(who) == event.who {
                        out.crashed(state, event.at);
                    }
                }
                continue;
            }
            let state = clients.entry(&event.who).or_default();
            match &event.kind {
                // A waiter that gave up and asks again is still waiting: the wait runs
                // from its first lock() until it acquires.
                EventKind::LockCalled => {
                    state.called.get_or_insert(event.at);
                }
                EventKind::Acquired { lease, token } => {
                    let called = state.called.take().unwrap_or(event.at);
                    out.waits.push(Wait {
                        start: called,
                        end: event.at,
                    });
                    out.close(state, event.at, End::Lost);
                    state.open = Some(out.beliefs.len());
                    out.beliefs.push(Belief {
                        client: event.who.clone(),
                        lease: *lease,
                        token: *token,
                        called,
                        start: event.at,
                        end,
                        how: End::StillHeld,
                    });
                }
                EventKind::UnlockCalled { lease } => {
                    out.close_lease(state, *lease, event.at, End::Unlock)
                }
                EventKind::Dropped { lease } => {
                    out.close_lease(state, *lease, event.at, End::Dropped)
                }
                EventKind::Lost { lease, .. } => {
                    out.close_lease(state, *lease, event.at, End::Lost)
                }
                _ => {}
            }
        }
        for state in clients.values() {
            if let Some(called) = state.called {
                out.waits.push(Wait { start: called, end });
            }
        }
        out
    }

    /// A crash ends the client's wait, if it was waiting, and its belief.
    fn crashed(&mut self, state: &mut ClientState, at: Duration) {
        if let Some(called) = state.called.take() {
            self.waits.push(Wait {
                start: called,
                end: at,
            });
        }
        self.close(state, at, End::Crash);
    }

    fn close_lease(&mut self, state: &mut ClientState, lease: u64, at: Duration, how: End) {
        if let Some(index) = state.open
            && self.beliefs[index].lease == lease
        {
            self.close(state, at, how);
        }
    }

    fn close(&mut self, state: &mut ClientState, at: Duration, how: End) {
        if let Some(index) = state.open.take() {
            let belief = &mut self.beliefs[index];
            belief.end = at;
            belief.how = how;
        }
    }
}
