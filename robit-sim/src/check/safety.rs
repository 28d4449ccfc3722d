//! The safety checkers: P1, P2, P4 and P6.

use std::collections::BTreeMap;
use std::time::Duration;

use super::backend_grants::Backend;
use super::beliefs::{Beliefs, End};
use super::{Promise, Violation};
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

/// P2: every loss is signalled once, never after an unlock, and no later than the
/// backend could grant the lock to someone else.
pub(super) fn early_loss(events: &[Event], beliefs: &Beliefs, servers: usize) -> Vec<Violation> {
    let backend = Backend::from_events(events, servers);
    let mut found = loss_signals(events);
    found.extend(late_ends(beliefs, &backend));
    found
}

/// A P2 violation by `client`.
fn early_loss_violation(client: &str, instants: Vec<Duration>, message: String) -> Violation {
    Violation {
        promise: Promise::EarlyLoss,
        clients: vec![client.to_owned()],
        instants,
        message,
    }
}

/// P2's signals: a lease signalled lost twice, or after its unlock.
fn loss_signals(events: &[Event]) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut signalled: BTreeMap<(&str, u64), Duration> = BTreeMap::new();
    let mut unlocked: BTreeMap<(&str, u64), Duration> = BTreeMap::new();
    for event in events {
        match &event.kind {
            EventKind::UnlockCalled { lease } | EventKind::Dropped { lease } => {
                unlocked.insert((&event.who, *lease), event.at);
            }
            EventKind::Lost { lease, .. } => {
                let key = (event.who.as_str(), *lease);
                if let Some(first) = signalled.insert(key, event.at) {
                    found.push(early_loss_violation(
                        &event.who,
                        vec![first, event.at],
                        format!("lease {lease} was signalled lost twice"),
                    ));
                }
                if let Some(&unlock) = unlocked.get(&key) {
                    found.push(early_loss_violation(
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
    found
}

/// P2's deadline: whatever ended a belief (a loss signal, an unlock, a dropped guard, or
/// the end of the run), it must not outlast the instant the backend could let someone
/// else in: the holder must have been told before then.
fn late_ends(beliefs: &Beliefs, backend: &Backend) -> Vec<Violation> {
    let mut found = Vec::new();
    for belief in &beliefs.beliefs {
        if belief.how == End::Crash {
            continue;
        }
        let Some(free) = backend.free_after(belief) else {
            continue;
        };
        if belief.end > free {
            let how = match belief.how {
                End::Lost => "was signalled lost",
                End::Unlock => "was still believed in, and unlocked,",
                End::Dropped => "was still believed in, until its guard was dropped,",
                _ => "was still believed in",
            };
            found.push(early_loss_violation(
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
    let mut found = server_tokens(events);
    found.extend(held_tokens(beliefs));
    found.extend(stale_writes(events));
    found
}

/// A P4 violation.
fn fencing_violation(clients: Vec<String>, instants: Vec<Duration>, message: String) -> Violation {
    Violation {
        promise: Promise::Fencing,
        clients,
        instants,
        message,
    }
}

/// P4 at each server: its own tokens increase (a quorum's, as its clients hold them, in
/// [`held_tokens`]).
fn server_tokens(events: &[Event]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (server, grants) in &Backend::from_events(events, 1).servers {
        let server = if server == "backend" {
            "the backend".to_owned()
        } else {
            server.clone()
        };
        for pair in grants.order.windows(2) {
            let ((t1, k1, c1), (t2, k2, c2)) = (&pair[0], &pair[1]);
            if k2 <= k1 {
                found.push(fencing_violation(
                    vec![c1.clone(), c2.clone()],
                    vec![*t1, *t2],
                    format!("{server} granted token {k2} to {c2} after token {k1} to {c1}"),
                ));
            }
        }
    }
    found
}

/// P4 as the clients hold them: no two grants share a token, and a grant asked for
/// after another was made has a higher one.
fn held_tokens(beliefs: &Beliefs) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut sorted: Vec<_> = beliefs.beliefs.iter().collect();
    sorted.sort_by_key(|belief| belief.start);
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            let same = a.token == b.token;
            if same || (a.start < b.called && b.token < a.token) {
                found.push(fencing_violation(
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
    found
}

/// P4 at the resource: no write accepted with a token below one accepted before it.
fn stale_writes(events: &[Event]) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut highest: Option<(u64, &str, Duration)> = None;
    for event in events {
        if let EventKind::WriteAccepted { from, token } = &event.kind {
            match highest {
                Some((top, by, when)) if *token < top => found.push(fencing_violation(
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
    // Each server's tokens are its own.
    let mut holders: BTreeMap<(&str, u64), &str> = BTreeMap::new();
    let mut found = Vec::new();
    for event in events {
        let (by, token, what) = match &event.kind {
            EventKind::BackendGranted { to, token, .. } => {
                holders.insert((&event.who, *token), to);
                continue;
            }
            EventKind::BackendRenewed { by, token, .. } => (by, token, "renewed"),
            EventKind::BackendReleased { by, token } => (by, token, "released"),
            _ => continue,
        };
        if let Some(&holder) = holders.get(&(event.who.as_str(), *token))
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
