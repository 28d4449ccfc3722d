//! robit's four scripts, run natively: a line-by-line transliteration of the Lua in
//! `robit/src/redis/scripts/`, calling the same commands in the same order.
//!
//! Each `redis.call` goes through the command table exactly as a client's command does,
//! so argument checks and errors are Redis's. A `redis.call` that fails ends the script
//! with that error, suffixed as Redis 7 suffixes it (` script: <sha>, on
//! @user_script:<line>.`, the line found in the script's text); `redis.pcall` does not.
//! Writes made before a failure stay, as in Redis (scripts do not roll back).
//!
//! Lua's numbers are doubles: `tonumber` arguments, comparisons and returned numbers are
//! computed as doubles here too. A Lua *runtime* error (comparing nil, when an argument
//! that should be a number is not) ends the script at the same point, with the
//! simulator's own wording rather than Lua's.

use std::time::Duration;

use super::lua::{Raised, Script, Site, argument, number, pair, string, tonumber};
use crate::redis::events::LockEventKind;
use crate::redis::exec::Exec;
use crate::redis::resp::Frame;
use crate::redis::scripts::RobitScript;
use crate::redis::store::parse_integer;

const GET_LOCK: Site = ("redis.call('GET', lock)", 0);
const LINDEX_QUEUE: Site = ("redis.call('LINDEX', queue, 0)", 0);
const LPOS_QUEUE: Site = ("redis.call('LPOS', queue, entry)", 0);
const RPUSH_QUEUE: Site = ("redis.call('RPUSH', queue, entry)", 0);
const PTTL_QUEUE: Site = ("redis.call('PTTL', queue)", 0);
const PEXPIRE_QUEUE: Site = ("redis.call('PEXPIRE', queue, queue_ttl)", 0);
const PTTL_QUARANTINE: Site = ("redis.call('PTTL', quarantine)", 0);
const PTTL_LOCK: Site = ("redis.call('PTTL', lock)", 0);
const TIME: Site = ("redis.call('TIME')", 0);
const INCR_FENCE: Site = ("redis.call('INCR', fence)", 0);
const SET_QUARANTINE: Site = ("redis.call('SET', quarantine, '1', 'PX', quarantine_ms)", 0);
const SET_FENCE_FIRST: Site = ("redis.call('SET', fence, clock)", 0);
const SET_FENCE_CLOCK: Site = ("redis.call('SET', fence, clock)", 1);
const LPOP_GRANTED: Site = ("\n  redis.call('LPOP', queue)", 0);
// The first occurrence is in `local head = ...` at the top.
const LINDEX_NEXT: Site = ("head = redis.call('LINDEX', queue, 0)", 1);
const SET_LOCK: Site = ("redis.call('SET', lock, owner, 'PX', ttl)", 0);
const LPOP_HAND_OFF: Site = ("local head = redis.call('LPOP', queue)", 0);
const DEL_LOCK: Site = ("redis.call('DEL', lock)", 0);
const SET_RESERVED: Site = ("redis.call('SET', lock, 'W' .. waiter, 'PX', window)", 0);
const PUBLISH: Site = ("redis.call('PUBLISH', channel, waiter)", 0);
const PEXPIRE_RENEWED: Site = ("redis.call('PEXPIRE', KEYS[1], ARGV[2])", 0);
/// Runs `kind` with `keys` and `argv`; the script's reply.
pub(crate) fn run(
    exec: &mut Exec<'_>,
    kind: RobitScript,
    keys: &[Vec<u8>],
    argv: &[Vec<u8>],
) -> Frame {
    let (need_keys, need_args) = match kind {
        RobitScript::Acquire => (4, 8),
        RobitScript::Renew => (1, 2),
        RobitScript::Release => (2, 3),
        RobitScript::Withdraw => (2, 4),
    };
    if keys.len() < need_keys || argv.len() < need_args {
        return Frame::error(format!(
            "ERR the simulated Redis runs robit's {} script with at least {need_keys} keys and \
             {need_args} arguments, as robit calls it; this call has {} and {}",
            kind.name(),
            keys.len(),
            argv.len()
        ));
    }
    let mut script = Script { exec, kind };
    let result = match kind {
        RobitScript::Acquire => acquire(&mut script, keys, argv),
        RobitScript::Renew => renew(&mut script, keys, argv),
        RobitScript::Release => release(&mut script, keys, argv),
        RobitScript::Withdraw => withdraw(&mut script, keys, argv),
    };
    result.unwrap_or_else(|raised| raised)
}

/// The queue of waiters, as `wait_in_line` in acquire.lua uses it.
struct Line<'a> {
    queue: &'a [u8],
    waiter: &'a [u8],
    entry: &'a [u8],
    ttl: Option<f64>,
}

fn acquire(
    script: &mut Script<'_, '_>,
    keys: &[Vec<u8>],
    argv: &[Vec<u8>],
) -> Result<Frame, Raised> {
    let (lock, queue, fence, quarantine) = (&keys[0], &keys[1], &keys[2], &keys[3]);
    let (owner, ttl, waiter, entry) = (&argv[0], &argv[1], &argv[2], &argv[3]);
    let (channel, handoff) = (&argv[5], &argv[6]);
    let quarantine_ms = tonumber(&argv[7]);
    let line = Line {
        queue,
        waiter,
        entry,
        ttl: tonumber(&argv[4]),
    };

    // Reads first: a key of the wrong type fails the script before anything is written.
    let current = string(script.call(GET_LOCK, &[b"GET", lock])?);
    let mut head = string(script.call(LINDEX_QUEUE, &[b"LINDEX", queue, b"0"])?);

    let left = number(&script.call(PTTL_QUARANTINE, &[b"PTTL", quarantine])?);
    if left > 0.0 {
        wait_in_line(script, &line)?;
        return Ok(pair(2, left));
    }

    let reservation = [b"W".as_slice(), waiter].concat();
    let reserved_for_me = !waiter.is_empty() && current.as_ref() == Some(&reservation);
    if current.is_some() && !reserved_for_me {
        wait_in_line(script, &line)?;
        let pttl = number(&script.call(PTTL_LOCK, &[b"PTTL", lock])?);
        return Ok(pair(0, pttl));
    }
    if !reserved_for_me && head.as_ref().is_some_and(|head| head != entry) {
        let window = hand_off(script, lock, queue, channel, handoff)?.map(|(_, window)| window);
        wait_in_line(script, &line)?;
        return Ok(pair(0, window.unwrap_or(0.0)));
    }

    let now = script.call(TIME, &[b"TIME"])?;
    let Frame::Array(parts) = now else {
        return Err(script.lua_error("attempt to index a non-table TIME reply"));
    };
    let (Some(Frame::Bulk(seconds)), Some(Frame::Bulk(micros))) = (parts.first(), parts.get(1))
    else {
        return Err(script.lua_error("attempt to index a malformed TIME reply"));
    };
    let mut clock = seconds.clone();
    #[allow(clippy::cast_possible_truncation)]
    let micros = tonumber(micros).unwrap_or_default() as i64;
    clock.extend_from_slice(format!("{micros:06}").as_bytes());

    let mut token = number(&script.call(INCR_FENCE, &[b"INCR", fence])?);
    if token == 1.0 {
        let Some(quarantine_ms) = quarantine_ms else {
            return Err(script.lua_error("attempt to compare number with nil"));
        };
        if quarantine_ms > 0.0 {
            let ms = argument(quarantine_ms);
            script.call(SET_QUARANTINE, &[b"SET", quarantine, b"1", b"PX", &ms])?;
            script.call(SET_FENCE_FIRST, &[b"SET", fence, &clock])?;
            wait_in_line(script, &line)?;
            return Ok(pair(2, quarantine_ms));
        }
    }
    let clock_value = tonumber(&clock).unwrap_or(f64::NAN);
    if token < clock_value {
        script.call(SET_FENCE_CLOCK, &[b"SET", fence, &clock])?;
        token = clock_value;
    }
    if !waiter.is_empty() && head.as_ref() == Some(entry) {
        script.call(LPOP_GRANTED, &[b"LPOP", queue])?;
        head = string(script.call(LINDEX_NEXT, &[b"LINDEX", queue, b"0"])?);
    }
    script.call(SET_LOCK, &[b"SET", lock, owner, b"PX", ttl])?;
    #[allow(clippy::cast_possible_truncation)]
    script.event(LockEventKind::Granted {
        key: lock.clone(),
        owner: owner.clone(),
        fence: token as i64,
        ttl: millis(ttl),
    });
    #[allow(clippy::cast_possible_truncation)]
    let granted = vec![
        Frame::Integer(1),
        Frame::Integer(token as i64),
        Frame::Bulk(next_in_line(head.as_deref())),
    ];
    Ok(Frame::Array(granted))
}

/// `head and string.match(head, '^(%x+):%d+$') or ''`: the waiter id of a well-formed
/// queue entry, as `hand_off` reads them.
fn next_in_line(head: Option<&[u8]>) -> Vec<u8> {
    head.and_then(split_entry)
        .map_or_else(Vec::new, |(waiter, _)| waiter.to_vec())
}

/// A TTL argument that a command has just accepted, as a duration.
fn millis(ttl: &[u8]) -> Duration {
    let ms = parse_integer(ttl).unwrap_or_default();
    Duration::from_millis(u64::try_from(ms).unwrap_or_default())
}

fn wait_in_line(script: &mut Script<'_, '_>, line: &Line<'_>) -> Result<(), Raised> {
    if line.waiter.is_empty() {
        return Ok(());
    }
    if script.call(LPOS_QUEUE, &[b"LPOS", line.queue, line.entry])? == Frame::NullBulk {
        script.call(RPUSH_QUEUE, &[b"RPUSH", line.queue, line.entry])?;
    }
    let pttl = number(&script.call(PTTL_QUEUE, &[b"PTTL", line.queue])?);
    let Some(ttl) = line.ttl else {
        return Err(script.lua_error("attempt to compare number with nil"));
    };
    if pttl < ttl {
        script.call(PEXPIRE_QUEUE, &[b"PEXPIRE", line.queue, &argument(ttl)])?;
    }
    Ok(())
}

/// `hand_off` from handoff.lua: reserves the lock for the first well-formed entry of the
/// queue and publishes its waiter id, or deletes the lock if nobody waits. The waiter
/// and the window reserved for it, if any.
fn hand_off(
    script: &mut Script<'_, '_>,
    lock: &[u8],
    queue: &[u8],
    channel: &[u8],
    window_ms: &[u8],
) -> Result<Option<(Vec<u8>, f64)>, Raised> {
    loop {
        let Some(head) = string(script.call(LPOP_HAND_OFF, &[b"LPOP", queue])?) else {
            script.call(DEL_LOCK, &[b"DEL", lock])?;
            return Ok(None);
        };
        // string.match(head, '^(%x+):(%d+)$'); not an entry this version wrote: skip it.
        let Some((waiter, poll_ms)) = split_entry(&head) else {
            continue;
        };
        let Some(window_ms) = tonumber(window_ms) else {
            return Err(script.lua_error("bad argument #1 to 'max' (number expected, got nil)"));
        };
        let doubled = 2.0 * tonumber(poll_ms).unwrap_or(f64::NAN);
        // math.max as Lua 5.1 computes it: the first, unless a later one is greater.
        let window = if doubled > window_ms {
            doubled
        } else {
            window_ms
        };
        let reservation = [b"W".as_slice(), waiter].concat();
        let px = argument(window);
        script.call(SET_RESERVED, &[b"SET", lock, &reservation, b"PX", &px])?;
        script.call(PUBLISH, &[b"PUBLISH", channel, waiter])?;
        return Ok(Some((waiter.to_vec(), window)));
    }
}

/// `<hex digits>:<decimal digits>`, split; `None` for anything else.
fn split_entry(entry: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = entry.iter().position(|&b| b == b':')?;
    let (waiter, poll) = (&entry[..colon], &entry[colon + 1..]);
    let valid = !waiter.is_empty()
        && waiter.iter().all(u8::is_ascii_hexdigit)
        && !poll.is_empty()
        && poll.iter().all(u8::is_ascii_digit);
    valid.then_some((waiter, poll))
}

fn renew(script: &mut Script<'_, '_>, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Result<Frame, Raised> {
    let (lock, owner, ttl) = (&keys[0], &argv[0], &argv[1]);
    if script.pcall(&[b"GET", lock]) != Frame::Bulk(owner.clone()) {
        return Ok(Frame::Integer(0));
    }
    script.call(PEXPIRE_RENEWED, &[b"PEXPIRE", lock, ttl])?;
    let (key, owner) = (lock.clone(), owner.clone());
    script.event(if parse_integer(ttl).is_some_and(|ms| ms > 0) {
        LockEventKind::Renewed {
            key,
            owner,
            ttl: millis(ttl),
        }
    } else {
        LockEventKind::Released { key, owner }
    });
    Ok(Frame::Integer(1))
}

fn release(
    script: &mut Script<'_, '_>,
    keys: &[Vec<u8>],
    argv: &[Vec<u8>],
) -> Result<Frame, Raised> {
    let (lock, queue) = (&keys[0], &keys[1]);
    let (owner, channel, handoff) = (&argv[0], &argv[1], &argv[2]);
    if script.pcall(&[b"GET", lock]) != Frame::Bulk(owner.clone()) {
        return Ok(Frame::Integer(0));
    }
    let reserved = hand_off(script, lock, queue, channel, handoff)?;
    script.event(LockEventKind::Released {
        key: lock.clone(),
        owner: owner.clone(),
    });
    Ok(freed(reserved))
}

fn withdraw(
    script: &mut Script<'_, '_>,
    keys: &[Vec<u8>],
    argv: &[Vec<u8>],
) -> Result<Frame, Raised> {
    let (lock, queue) = (&keys[0], &keys[1]);
    let (waiter, entry, channel, handoff) = (&argv[0], &argv[1], &argv[2], &argv[3]);
    script.pcall(&[b"LREM", queue, b"0", entry]);
    let reservation = [b"W".as_slice(), waiter].concat();
    if script.pcall(&[b"GET", lock]) != Frame::Bulk(reservation) {
        return Ok(Frame::Integer(0));
    }
    let reserved = hand_off(script, lock, queue, channel, handoff)?;
    Ok(freed(reserved))
}

/// `return hand_off(...) or 1`: the waiter the lock is reserved for, or 1 if nobody waits.
fn freed(reserved: Option<(Vec<u8>, f64)>) -> Frame {
    reserved.map_or(Frame::Integer(1), |(waiter, _)| Frame::Bulk(waiter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::commands::lua::line_of;

    #[test]
    fn every_call_site_is_found_in_the_scripts_that_use_it() {
        let acquire = [
            GET_LOCK,
            LINDEX_QUEUE,
            LPOS_QUEUE,
            RPUSH_QUEUE,
            PTTL_QUEUE,
            PEXPIRE_QUEUE,
            PTTL_QUARANTINE,
            PTTL_LOCK,
            TIME,
            INCR_FENCE,
            SET_QUARANTINE,
            SET_FENCE_FIRST,
            SET_FENCE_CLOCK,
            LPOP_GRANTED,
            LINDEX_NEXT,
            SET_LOCK,
        ];
        let hand_off = [LPOP_HAND_OFF, DEL_LOCK, SET_RESERVED, PUBLISH];
        let uses = [
            (RobitScript::Acquire, [&acquire[..], &hand_off[..]].concat()),
            (RobitScript::Renew, vec![PEXPIRE_RENEWED]),
            (RobitScript::Release, hand_off.to_vec()),
            (RobitScript::Withdraw, hand_off.to_vec()),
        ];
        for (kind, sites) in uses {
            for site in sites {
                assert_ne!(line_of(kind.source(), site), 0, "{site:?} in {kind:?}");
            }
        }
        // The two LPOPs of acquire are told apart.
        let source = RobitScript::Acquire.source();
        assert!(line_of(source, LPOP_GRANTED) > line_of(source, LPOP_HAND_OFF));
        // So are the two LINDEXes.
        assert!(line_of(source, LINDEX_NEXT) > line_of(source, LINDEX_QUEUE));
        assert!(line_of(source, SET_FENCE_CLOCK) > line_of(source, SET_FENCE_FIRST));
    }

    #[test]
    fn a_queue_entry_is_hex_digits_a_colon_and_decimal_digits() {
        assert_eq!(split_entry(b"a1:250"), Some((&b"a1"[..], &b"250"[..])));
        for bad in [&b"a1:"[..], b":250", b"g1:250", b"a1:2:5", b"a1-250"] {
            assert_eq!(split_entry(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
