//! The lock events, derived from what each command a client sends does to a lock's key —
//! a plain command, or a script as a whole, whatever the script.
//!
//! This is the one place that knows robit's on-server format (robit's `redis/keys.rs`
//! and `scripts/common.lua`): a lock lives at `{<namespace>}:lock:<name>`, holding
//! `<owner>:<s>:<us>:<ms>` while granted or `W<waiter id>:<s>:<us>:<ms>` while reserved
//! for a waiter — made at TIME `<s>.<us>`, for `<ms>`, so ending at `<until>` — either
//! perhaps followed by `:q`, the key then living past `<until>` for the queue,
//! and the namespace's last fencing token at `{<namespace>}:fence` (then perhaps `q`s, and
//! `/<server identity>`). A value of another
//! form is taken as someone's grant until the key expires. A command that writes a lock's
//! key — for a script, any lock key among its keys — is looked at before and after it
//! runs:
//!
//! - an owner written where there was none (or another) is a grant, with the counter's
//!   value as its fencing token, until `<until>`;
//! - the same owner with a new `<until>` is a renewal;
//! - an owner gone or replaced (deleted, expired at once, handed to a waiter,
//!   overwritten, flushed) is a release.
//!
//! An expiry that simply runs out is not an event: it follows from the last TTL.
//!
//! The namespace's quarantine key, `{<namespace>}:quarantine`, written with a TTL is a
//! quarantine: no grants in the namespace until it expires.

use std::collections::BTreeMap;
use std::time::Duration;

use super::commands::Command;
use super::events::{LockEvent, LockEventKind, Peer};
use super::exec::Exec;
use super::store::parse_integer;

/// The time to live reported for a grant written without an expiry.
const NO_EXPIRY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The locks' keys and the queues a command may write, as they were before it ran.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    locks: Vec<(Vec<u8>, Option<Grant>)>,
    queues: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
}

/// The client whose acquire queued each waiter, by waiter id. A release that finds
/// waiters writes the grant of the first of them itself (robit's hand-off, its owner the
/// waiter's id): that grant is the waiter's client's, not the releaser's.
pub(crate) type Waiters = BTreeMap<Vec<u8>, Peer>;

/// An owner in a lock's key, and when its grant ends (Unix ms).
#[derive(Debug, PartialEq, Eq)]
struct Grant {
    owner: Vec<u8>,
    expires_at: Option<i64>,
}

/// What follows a key's hash tag, `{<namespace>}`, if it starts with one.
fn after_tag(key: &[u8]) -> Option<&[u8]> {
    let rest = key.strip_prefix(b"{")?;
    let close = rest.iter().position(|&b| b == b'}')?;
    Some(&rest[close + 1..])
}

/// Whether `key` is a lock's key: `{<namespace>}:lock:<name>`.
fn is_lock(key: &[u8]) -> bool {
    after_tag(key).is_some_and(|rest| rest.starts_with(b":lock:"))
}

/// Whether `key` is a lock's queue: `{<namespace>}:queue:<name>`.
fn is_queue(key: &[u8]) -> bool {
    after_tag(key).is_some_and(|rest| rest.starts_with(b":queue:"))
}

/// The waiter ids of the entries in the queue at `key`: each entry's text up to its
/// first `:`.
fn queued(exec: &mut Exec<'_>, key: &[u8]) -> Vec<Vec<u8>> {
    let now = exec.ms();
    let Ok(Some(list)) = exec.data.list(key, now) else {
        return Vec::new();
    };
    list.iter()
        .map(|entry| {
            entry
                .split(|&b| b == b':')
                .next()
                .unwrap_or_default()
                .to_vec()
        })
        .collect()
}

/// Whether `key` is a namespace's quarantine key: `{<namespace>}:quarantine`.
fn is_quarantine(key: &[u8]) -> bool {
    after_tag(key) == Some(b":quarantine")
}

/// `{<namespace>}:fence`, the counter of the namespace of the lock at `key`.
fn fence_key(key: &[u8]) -> Vec<u8> {
    let close = key.iter().position(|&b| b == b'}').unwrap_or(0);
    [&key[..=close], b":fence"].concat()
}

/// A lock key's value as robit writes it: `W` for a reservation, an id of hex digits,
/// when it was made as TIME answered (seconds, microseconds), for how many milliseconds
/// (and `+<ms>` of lock-delay after that), each after a `:`, then, for a grant, `@` and
/// its fencing token, and perhaps `:q`. Answers
/// whether it is a reservation, the id, and until when it keeps everyone else out (Unix
/// ms): the grant's end, plus its lock-delay — the instant the backend could first grant
/// the lock to another, which is what the checkers hold a loss signal against.
fn parse(value: &[u8]) -> Option<(bool, &[u8], i64)> {
    let value = value.strip_suffix(b":q").unwrap_or(value);
    let (reserved, value) = match value.strip_prefix(b"W") {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let mut parts = value.split(|&b| b == b':');
    let id = parts
        .next()
        .filter(|id| !id.is_empty() && id.iter().all(u8::is_ascii_hexdigit))?;
    let digits = |n: &&[u8]| !n.is_empty() && n.iter().all(u8::is_ascii_digit);
    let mut number = || parts.next().filter(digits).and_then(parse_integer);
    let (s, us) = (number()?, number()?);
    let mut span = parts.next()?;
    if let Some(at) = span.iter().position(|&b| b == b'@') {
        let token = &span[at + 1..];
        if reserved || !digits(&token) {
            return None;
        }
        span = &span[..at];
    }
    let ms = match span.iter().position(|&b| b == b'+') {
        Some(plus) if !reserved => {
            let (ms, delay) = (&span[..plus], &span[plus + 1..]);
            let ms = Some(ms).filter(digits).and_then(parse_integer)?;
            let delay = Some(delay).filter(digits).and_then(parse_integer)?;
            ms.saturating_add(delay)
        }
        _ => Some(span).filter(digits).and_then(parse_integer)?,
    };
    if parts.next().is_some() {
        return None;
    }
    // Saturating: a value no clock wrote (seconds near i64::MAX) ends at the end of time,
    // where the scripts' floating point puts it too.
    let ends = s
        .saturating_mul(1000)
        .saturating_add(us / 1000)
        .saturating_add(ms);
    Some((reserved, id, ends))
}

/// The grant in the lock's key at `key`, if an owner holds it.
fn grant(exec: &mut Exec<'_>, key: &[u8]) -> Option<Grant> {
    let now = exec.ms();
    let value = exec.data.get(key, now).ok()??;
    let key_expiry = exec.data.expiry(key, now)?;
    match parse(&value) {
        // A reservation is nobody's grant; a grant that has ended lives on only for the
        // queue.
        Some((true, ..)) => None,
        Some((false, _, until)) if until <= now => None,
        Some((false, owner, until)) => Some(Grant {
            owner: owner.to_vec(),
            expires_at: Some(until),
        }),
        None if value.first() == Some(&b'W') => None,
        None => Some(Grant {
            owner: value,
            expires_at: key_expiry,
        }),
    }
}

/// A quarantine `command` (a SET, with its arguments `args`) has just written, if any.
pub(crate) fn quarantine(exec: &mut Exec<'_>, command: Command, args: &[Vec<u8>]) {
    let Some(key) = args
        .get(1)
        .filter(|key| command == Command::Set && is_quarantine(key))
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

/// The locks' keys `command` may write, and their grants before it runs.
pub(crate) fn watch(exec: &mut Exec<'_>, command: Command, args: &[Vec<u8>]) -> Watched {
    let keys: Vec<Vec<u8>> = match command {
        Command::Set | Command::Pexpire | Command::Pexpireat | Command::Incr | Command::Getdel => {
            args.get(1).into_iter().cloned().collect()
        }
        Command::Del => distinct(&args[1..]),
        Command::Eval | Command::Evalsha => {
            let count = args.get(2).and_then(|n| parse_integer(n));
            let count = count.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
            distinct(args.get(3..3 + count).unwrap_or_default())
        }
        Command::Flushall => exec.data.keys(exec.ms()),
        _ => return Watched::default(),
    };
    let mut watched = Watched::default();
    for key in keys {
        if is_lock(&key) {
            let before = grant(exec, &key);
            watched.locks.push((key, before));
        } else if is_queue(&key) && exec.waiters.is_some() {
            let before = queued(exec, &key);
            watched.queues.push((key, before));
        }
    }
    watched
}

fn distinct(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut keys = keys.to_vec();
    keys.sort();
    keys.dedup();
    keys
}

/// Reports what the command did to the watched keys.
pub(crate) fn report(exec: &mut Exec<'_>, watched: Watched) {
    for (key, before) in watched.queues {
        let joined: Vec<_> = (queued(exec, &key).into_iter())
            .filter(|id| !before.contains(id))
            .collect();
        if let Some(waiters) = exec.waiters.as_deref_mut() {
            for id in joined {
                waiters.insert(id, exec.peer.clone());
            }
        }
    }
    for (key, before) in watched.locks {
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
                // A grant written for a waiter is its client's: its owner is the
                // waiter's id (32 hex digits) followed by the grant's token.
                let waiter = (after.owner.get(..32).filter(|_| after.owner.len() > 32))
                    .and_then(|id| exec.waiters.as_deref()?.get(id));
                let peer = waiter.unwrap_or(exec.peer).clone();
                let kind = LockEventKind::Granted {
                    fence: fence(exec, &key),
                    ttl: remaining(exec, after.expires_at),
                    key,
                    owner: after.owner,
                };
                push_for(exec, peer, kind);
                continue;
            }
        };
        push(exec, kind);
    }
}

fn push(exec: &mut Exec<'_>, kind: LockEventKind) {
    push_for(exec, exec.peer.clone(), kind);
}

fn push_for(exec: &mut Exec<'_>, peer: Peer, kind: LockEventKind) {
    exec.events.push(LockEvent {
        at: exec.now,
        peer,
        kind,
    });
}

/// The time left until `expires_at`.
fn remaining(exec: &Exec<'_>, expires_at: Option<i64>) -> Duration {
    expires_at.map_or(NO_EXPIRY, |when| {
        Duration::from_millis(u64::try_from(when - exec.ms()).unwrap_or_default())
    })
}

/// The last token of the lock's namespace (0 if it is not a number); `q`s after it mark
/// a quarantine, and `/<identity>` after those names the server that issued it.
fn fence(exec: &mut Exec<'_>, key: &[u8]) -> i64 {
    let now = exec.ms();
    let value = exec.data.get(&fence_key(key), now).ok().flatten();
    value
        .and_then(|value| {
            let value = value.split(|&b| b == b'/').next().unwrap_or_default();
            let digits = value.len() - value.iter().rev().take_while(|&&b| b == b'q').count();
            parse_integer(&value[..digits])
        })
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

    #[test]
    fn a_lock_value_is_parsed_as_robit_writes_it_and_nothing_else_is() {
        assert_eq!(parse(b"0af:1:2500:700"), Some((false, &b"0af"[..], 1702)));
        assert_eq!(parse(b"0af:1:2500:700:q"), Some((false, &b"0af"[..], 1702)));
        assert_eq!(parse(b"W0af:1:2500:700:q"), Some((true, &b"0af"[..], 1702)));
        // The grant's fencing token, after the span.
        assert_eq!(
            parse(b"0af:1:2500:700@12"),
            Some((false, &b"0af"[..], 1702))
        );
        assert_eq!(
            parse(b"0af:1:2500:700+300@12:q"),
            Some((false, &b"0af"[..], 2002))
        );
        // With a lock-delay: nobody else gets the lock until the delay after the TTL.
        assert_eq!(
            parse(b"0af:1:2500:700+300"),
            Some((false, &b"0af"[..], 2002))
        );
        assert_eq!(
            parse(b"0af:1:2500:700+300:q"),
            Some((false, &b"0af"[..], 2002))
        );
        let far = format!("0af:{}:0:0", i64::MAX);
        assert_eq!(parse(far.as_bytes()), Some((false, &b"0af"[..], i64::MAX)));
        for odd in [
            &b"0af"[..],
            b"0af:1:2:",
            b"0af:1:2",
            b":1:2:3",
            b"0ag:1:2:3",
            b"0af:1:2:3x",
            b"0af:1:2:3:r",
            b"0af:1:2:3:4",
            b"W:1:2:3",
            b"0af:1:2:3:q:q",
            b"0af:1:2:3:",
            b"0af:1:2:3q",
            b"0af:-1:2:3",
            b"0af:1:+2:3",
            b"0af:1:2:3+",
            b"0af:1:2:+3",
            b"0af:1:2:3+4+5",
            b"0af:1:2:3+x",
            b"W0af:1:2:3+4",
            b"W0af:1:2:3@4",
            b"0af:1:2:3@",
            b"0af:1:2:3@4@5",
            b"0af:1:2:3@x",
            b"0af:1:2:@4",
        ] {
            assert_eq!(parse(odd), None, "{}", String::from_utf8_lossy(odd));
        }
    }
}
