//! What the backend believed: each grant it made, from its grant until it was released,
//! expired, or was lost with the backend's state; and the quarantines in which it made
//! none.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Timeline;
use crate::EventKind;

/// One grant, as the backend kept it.
#[derive(Debug, Clone)]
pub(super) struct ServerGrant {
    pub(super) to: String,
    pub(super) token: u64,
    pub(super) start: Duration,
    pub(super) end: Duration,
    /// How it ended: `released`, `expired`, `lost with the backend's state`, or `still
    /// granted at the end`.
    pub(super) how: &'static str,
}

/// A quarantine: grants suspended from `start` to `end`, after `by`'s request found the
/// backend's state lost.
#[derive(Debug, Clone)]
pub(super) struct Quarantine {
    pub(super) by: String,
    pub(super) start: Duration,
    pub(super) end: Duration,
}

/// A grant still kept: to whom, since when, until when.
type Open = (String, Duration, Duration);

impl Timeline {
    /// The backend's quarantines inside the time shown, in order (one ends early if the
    /// backend loses its state again).
    pub(super) fn quarantines(&self) -> Vec<Quarantine> {
        let mut found: Vec<Quarantine> = Vec::new();
        for event in &self.events {
            match &event.kind {
                EventKind::BackendQuarantined { by, until } => found.push(Quarantine {
                    by: by.clone(),
                    start: event.at,
                    end: *until,
                }),
                EventKind::BackendStateLost => {
                    for quarantine in &mut found {
                        quarantine.end = quarantine.end.min(event.at.max(quarantine.start));
                    }
                }
                _ => {}
            }
        }
        found.retain(|q| q.end >= self.start && q.start <= self.end);
        found
    }

    /// The backend's grants inside the time shown, in order of their start.
    pub(super) fn server_grants(&self) -> Vec<ServerGrant> {
        let mut open: BTreeMap<u64, Open> = BTreeMap::new();
        let mut done = Vec::new();
        for event in &self.events {
            match &event.kind {
                EventKind::BackendGranted { to, token, until } => {
                    open.insert(*token, (to.clone(), event.at, *until));
                }
                EventKind::BackendRenewed { token, until, .. } => {
                    if let Some(grant) = open.get_mut(token) {
                        grant.2 = *until;
                    }
                }
                EventKind::BackendReleased { token, .. } => {
                    if let Some(grant) = open.remove(token) {
                        done.push(close(*token, grant, event.at, "released"));
                    }
                }
                EventKind::BackendStateLost => {
                    for (token, grant) in std::mem::take(&mut open) {
                        let how = "lost with the backend's state";
                        done.push(close(token, grant, event.at, how));
                    }
                }
                _ => {}
            }
        }
        for (token, grant) in open {
            done.push(close(
                token,
                grant,
                self.run_end,
                "still granted at the end",
            ));
        }
        done.retain(|grant| grant.end >= self.start && grant.start <= self.end);
        done.sort_by_key(|grant| (grant.start, grant.token));
        done
    }
}

/// The grant `token`, ended at `at` for the reason `how`, unless it had expired first.
fn close(token: u64, (to, start, until): Open, at: Duration, how: &'static str) -> ServerGrant {
    let (end, how) = if until <= at {
        (until, "expired")
    } else {
        (at, how)
    };
    ServerGrant {
        to,
        token,
        start,
        end,
        how,
    }
}
