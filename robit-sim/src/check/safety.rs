//! The safety checkers: P1, P2, P4 and P6.

use std::collections::BTreeMap;
use std::time::Duration;

use super::beliefs::{Beliefs, End};
use super::{Promise, Violation};
use crate::history::host_of;
use crate::{Event, EventKind};

fn secs(at: Duration) -> String {
    format!("{:.3}s", at.as_secs_f64())
}

/// P1: no two belief intervals overlap.
pub(super) fn mutual_exclusion(beliefs: &Beliefs) -> Vec<Violation> {
    let mut sorted: Vec<_> = beliefs.beliefs.iter().collect();
    sorted.sort_by_key(|belief| belief.start);
    let mut found = Vec::new();
    for (i, a) in sorted.iter().enumerate() {
        for b in sorted[i + 1..].iter().take_while(|b| b.start < a.end) {
            if a.overlaps(b) {
                found.push(Violation {
                    promise: Promise::MutualExclusion,
                    clients: vec![a.client.clone(), b.client.clone()],
                    instants: vec![b.start, a.end.min(b.end)],
                    message: format!(
                        "{} (token {}) believed it held the lock from {} to {}, and {} (token {}) from {}",
                        a.client,
                        a.token,
                        secs(a.start),
                        secs(a.end),
                        b.client,
                        b.token,
                        secs(b.start)
                    ),
                });
            }
        }
    }
    found
}

/// The backend's view of the grants: who got which token when, and the expiries it
/// promised. Tokens may repeat (a backend that lost its state), so grants are told apart
/// by their position in time, not by token alone.
struct Grants {
    /// Every grant in order: (when, token, to whom).
    order: Vec<(Duration, u64, String)>,
    /// Every promised expiry: (when promised, token, until).
    untils: Vec<(Duration, u64, Duration)>,
}

impl Grants {
    fn from_events(events: &[Event]) -> Self {
        let mut grants = Self {
            order: Vec::new(),
            untils: Vec::new(),
        };
        for event in events {
            match &event.kind {
                EventKind::BackendGranted { to, token, until } => {
                    grants.order.push((event.at, *token, to.clone()));
                    grants.untils.push((event.at, *token, *until));
                }
                EventKind::BackendRenewed { token, until, .. } => {
                    grants.untils.push((event.at, *token, *until));
                }
                _ => {}
            }
        }
        grants
    }

    /// The instant the backend could first grant the lock to someone other than the
    /// holder of `token` (whose lease began at `start`), judging by what it had promised
    /// that holder before `at`.
    fn free_after(
        &self,
        client: &str,
        token: u64,
        start: Duration,
        at: Duration,
    ) -> Option<Duration> {
        let index = self.order.iter().rposition(|(when, granted, to)| {
            // The backend knows hosts, not the mutexes inside them.
            *granted == token && to == host_of(client) && *when <= start
        })?;
        let granted_at = self.order[index].0;
        let next = self.order.get(index + 1).map(|(when, _, _)| *when);
        let mut promises: Vec<(Duration, Duration)> = self
            .untils
            .iter()
            .filter(|(when, promised, _)| {
                *promised == token
                    && *when >= granted_at
                    && *when <= at
                    && next.is_none_or(|next| *when < next)
            })
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
        Some(next.map_or(until, |next| next.min(until)))
    }
}

/// P2: every loss is signalled once, never after an unlock, and no later than the
/// backend could grant the lock to someone else.
pub(super) fn early_loss(events: &[Event], beliefs: &Beliefs) -> Vec<Violation> {
    let grants = Grants::from_events(events);
    let mut found = Vec::new();
    let mut signalled: BTreeMap<(&str, u64), Duration> = BTreeMap::new();
    let mut unlocked: BTreeMap<(&str, u64), Duration> = BTreeMap::new();
    let violation = |client: &str, instants: Vec<Duration>, message: String| Violation {
        promise: Promise::EarlyLoss,
        clients: vec![client.to_owned()],
        instants,
        message,
    };
    for event in events {
        match &event.kind {
            EventKind::UnlockCalled { lease } | EventKind::Dropped { lease } => {
                unlocked.insert((&event.who, *lease), event.at);
            }
            EventKind::Lost { lease, .. } => {
                let key = (event.who.as_str(), *lease);
                if let Some(first) = signalled.insert(key, event.at) {
                    found.push(violation(
                        &event.who,
                        vec![first, event.at],
                        format!("lease {lease} was signalled lost twice"),
                    ));
                }
                if let Some(&unlock) = unlocked.get(&key) {
                    found.push(violation(
                        &event.who,
                        vec![unlock, event.at],
                        format!(
                            "lease {lease} was signalled lost at {} after its unlock at {}",
                            secs(event.at),
                            secs(unlock)
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    // Whatever ended a belief (a loss signal, an unlock, a dropped guard, or the end of
    // the run), it must not outlast the instant the backend could let someone else in:
    // the holder must have been told before then.
    for belief in &beliefs.beliefs {
        if belief.how == End::Crash {
            continue;
        }
        let Some(free) = grants.free_after(&belief.client, belief.token, belief.start, belief.end)
        else {
            continue;
        };
        if belief.end > free {
            let how = match belief.how {
                End::Lost => "was signalled lost",
                End::Unlock => "was still believed in, and unlocked,",
                End::Dropped => "was still believed in, until its guard was dropped,",
                _ => "was still believed in",
            };
            found.push(violation(
                &belief.client,
                vec![free, belief.end],
                format!(
                    "lease {} (token {}) {how} at {}, but the backend could grant the lock to another client from {}",
                    belief.lease,
                    belief.token,
                    secs(belief.end),
                    secs(free)
                ),
            ));
        }
    }
    found
}

/// P4: tokens increase across grants, and the fencing resource never accepts a write
/// with a token below one it has already accepted.
pub(super) fn fencing(events: &[Event], beliefs: &Beliefs) -> Vec<Violation> {
    let mut found = Vec::new();
    let violation = |clients: Vec<String>, instants: Vec<Duration>, message: String| Violation {
        promise: Promise::Fencing,
        clients,
        instants,
        message,
    };
    let grants = Grants::from_events(events);
    for pair in grants.order.windows(2) {
        let ((t1, k1, c1), (t2, k2, c2)) = (&pair[0], &pair[1]);
        if k2 <= k1 {
            found.push(violation(
                vec![c1.clone(), c2.clone()],
                vec![*t1, *t2],
                format!("the backend granted token {k2} to {c2} after token {k1} to {c1}"),
            ));
        }
    }
    let mut sorted: Vec<_> = beliefs.beliefs.iter().collect();
    sorted.sort_by_key(|belief| belief.start);
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            let same = a.token == b.token;
            if same || (a.start < b.called && b.token < a.token) {
                found.push(violation(
                    vec![a.client.clone(), b.client.clone()],
                    vec![a.start, b.start],
                    format!(
                        "{} was granted token {} at {}, and {} token {} at {} by a lock() begun at {}",
                        a.client,
                        a.token,
                        secs(a.start),
                        b.client,
                        b.token,
                        secs(b.start),
                        secs(b.called)
                    ),
                ));
            }
        }
    }
    let mut highest: Option<(u64, &str, Duration)> = None;
    for event in events {
        if let EventKind::WriteAccepted { from, token } = &event.kind {
            match highest {
                Some((top, by, when)) if *token < top => found.push(violation(
                    vec![from.clone(), by.to_owned()],
                    vec![when, event.at],
                    format!(
                        "the resource accepted a stale write from {from} (token {token}) at {}, after a write with token {top} from {by} at {}",
                        secs(event.at),
                        secs(when)
                    ),
                )),
                _ => highest = Some((*token, from, event.at)),
            }
        }
    }
    found
}

/// P6: only a grant's holder renews or releases it.
pub(super) fn safe_release(events: &[Event]) -> Vec<Violation> {
    let mut holders: BTreeMap<u64, &str> = BTreeMap::new();
    let mut found = Vec::new();
    for event in events {
        let (by, token, what) = match &event.kind {
            EventKind::BackendGranted { to, token, .. } => {
                holders.insert(*token, to);
                continue;
            }
            EventKind::BackendRenewed { by, token, .. } => (by, token, "renewed"),
            EventKind::BackendReleased { by, token } => (by, token, "released"),
            _ => continue,
        };
        if let Some(&holder) = holders.get(token)
            && holder != by
        {
            found.push(Violation {
                promise: Promise::SafeRelease,
                clients: vec![by.clone(), holder.to_owned()],
                instants: vec![event.at],
                message: format!(
                    "{by} {what} the grant with token {token}, which belongs to {holder}"
                ),
            });
        }
    }
    found
}
