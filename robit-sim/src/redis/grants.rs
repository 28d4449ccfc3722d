//! The lock events, derived from what each command does to a lock's key — whether a
//! client sent it or a script called it, whatever the script.
//!
//! This is the one place that knows robit's on-server format (robit's `redis/keys.rs`):
//! a lock lives at `{<namespace>}:lock:<name>`, holding its owner's token while granted
//! or `W<waiter id>` while reserved for a waiter, and the namespace's fencing counter
//! at `{<namespace>}:fence`. A command that writes a lock's key is looked at before and
//! after it runs:
//!
//! - an owner's token written where there was none (or another) is a grant, with the
//!   counter's value as its fencing token and the key's time to live;
//! - the same owner's token with a new expiry is a renewal;
//! - an owner's token gone or replaced (deleted, expired at once, handed to a waiter,
//!   overwritten, flushed) is a release.
//!
//! An expiry that simply runs out is not an event: it follows from the last TTL.
//!
//! The namespace's quarantine key, `{<namespace>}:quarantine`, written with a TTL is a
//! quarantine: no grants in the namespace until it expires.

use std::time::Duration;

use super::events::{LockEvent, LockEventKind};
use super::exec::Exec;
use super::store::parse_integer;

/// The time to live reported for a grant written without an expiry.
const NO_EXPIRY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// A lock's key as it was before a command ran.
#[derive(Debug)]
pub(crate) struct Watched {
    key: Vec<u8>,
    before: Option<Grant>,
}

/// An owner's token in a lock's key, and the key's expiry (Unix ms).
#[derive(Debug, PartialEq, Eq)]
struct Grant {
    owner: Vec<u8>,
    expires_at: Option<i64>,
}

/// Whether `key` is a lock's key: `{<namespace>}:lock:<name>`.
fn is_lock(key: &[u8]) -> bool {
    key.first() == Some(&b'{')
        && key
            .iter()
            .position(|&b| b == b'}')
            .is_some_and(|close| key[close + 1..].starts_with(b":lock:"))
}

/// Whether `key` is a namespace's quarantine key: `{<namespace>}:quarantine`.
fn is_quarantine(key: &[u8]) -> bool {
    key.first() == Some(&b'{')
        && key
            .iter()
            .position(|&b| b == b'}')
            .is_some_and(|close| &key[close + 1..] == b":quarantine")
}

/// `{<namespace>}:fence`, the counter of the namespace of the lock at `key`.
fn fence_key(key: &[u8]) -> Vec<u8> {
    let close = key.iter().position(|&b| b == b'}').unwrap_or(0);
    [&key[..=close], b":fence"].concat()
}

/// The grant in the lock's key at `key`, if an owner holds it.
fn grant(exec: &mut Exec<'_>, key: &[u8]) -> Option<Grant> {
    let now = exec.ms();
    let owner = exec.data.get(key, now).ok()??;
    if owner.first() == Some(&b'W') {
        return None; // reserved for a waiter
    }
    let expires_at = exec.data.expiry(key, now)?;
    Some(Grant { owner, expires_at })
}

/// A quarantine `name` (a SET, with its arguments `args`) has just written, if any.
pub(crate) fn quarantine(exec: &mut Exec<'_>, name: &str, args: &[Vec<u8>]) {
    let Some(key) = args
        .get(1)
        .filter(|key| name == "set" && is_quarantine(key))
    else {
        return;
    };
    let now = exec.ms();
    if let Some(Some(expires_at)) = exec.data.expiry(key, now) {
        let ttl = remaining(exec, Some(expires_at));
        push(
            exec,
            LockEventKind::Quarantined {
                key: key.clone(),
                ttl,
            },
        );
    }
}

/// The locks' keys `name` may write, and their grants before it runs.
pub(crate) fn watch(exec: &mut Exec<'_>, name: &str, args: &[Vec<u8>]) -> Vec<Watched> {
    let keys: Vec<Vec<u8>> = match name {
        "set" | "pexpire" | "incr" => args.get(1).into_iter().cloned().collect(),
        "del" => {
            let mut keys = args[1..].to_vec();
            keys.sort();
            keys.dedup();
            keys
        }
        "flushall" => exec.data.keys(exec.ms()),
        _ => return Vec::new(),
    };
    keys.into_iter()
        .filter(|key| is_lock(key))
        .map(|key| {
            let before = grant(exec, &key);
            Watched { key, before }
        })
        .collect()
}

/// Reports what the command did to the watched keys.
pub(crate) fn report(exec: &mut Exec<'_>, watched: Vec<Watched>) {
    for Watched { key, before } in watched {
        let after = grant(exec, &key);
        if before == after {
            continue;
        }
        let kind = match (before, after) {
            (Some(before), Some(after)) if before.owner == after.owner => LockEventKind::Renewed {
                key,
                owner: after.owner,
                ttl: remaining(exec, after.expires_at),
            },
            (before, after) => {
                if let Some(before) = before {
                    let owner = before.owner;
                    push(
                        exec,
                        LockEventKind::Released {
                            key: key.clone(),
                            owner,
                        },
                    );
                }
                let Some(after) = after else { continue };
                LockEventKind::Granted {
                    fence: fence(exec, &key),
                    ttl: remaining(exec, after.expires_at),
                    key,
                    owner: after.owner,
                }
            }
        };
        push(exec, kind);
    }
}

fn push(exec: &mut Exec<'_>, kind: LockEventKind) {
    exec.events.push(LockEvent {
        at: exec.now,
        peer: exec.peer.clone(),
        kind,
    });
}

/// The time left until `expires_at`.
fn remaining(exec: &Exec<'_>, expires_at: Option<i64>) -> Duration {
    expires_at.map_or(NO_EXPIRY, |when| {
        Duration::from_millis(u64::try_from(when - exec.ms()).unwrap_or_default())
    })
}

/// The value of the counter of the lock's namespace (0 if it is not a number).
fn fence(exec: &mut Exec<'_>, key: &[u8]) -> i64 {
    let now = exec.ms();
    let value = exec.data.get(&fence_key(key), now).ok().flatten();
    value
        .and_then(|value| parse_integer(&value))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_key_is_a_hash_tag_then_lock_and_its_counter_shares_the_tag() {
        assert!(is_lock(b"{ns}:lock:job"));
        assert!(is_lock(b"{ns}:lock:{odd}:name"));
        assert!(!is_lock(b"{ns}:queue:job"));
        assert!(!is_lock(b"ns:lock:job"));
        assert!(!is_lock(b"{ns}:fence"));
        assert!(is_quarantine(b"{ns}:quarantine"));
        assert!(!is_quarantine(b"{ns}:quarantine:x"));
        assert!(!is_quarantine(b"{ns}:lock:quarantine"));
        assert_eq!(fence_key(b"{ns}:lock:{odd}:name"), b"{ns}:fence");
    }
}
