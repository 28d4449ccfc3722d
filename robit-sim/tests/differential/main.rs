//! The simulated Redis against a real redis-server: the same random command sequences,
//! the same replies.
//!
//! Each seed drives a sequence of what robit's driver sends — its four scripts, by
//! EVALSHA with redis-rs's NOSCRIPT fallback (SCRIPT LOAD, then EVALSHA again) or by
//! EVAL, with arguments from small domains (two lock names, three owners, three
//! waiters, a few TTLs, with and without a quarantine) — mixed with other scripts
//! (other locks' scripts, every kind of value a script can return, errors raised every
//! way a script can raise them, the sandbox, Lua's libraries), inspection (GET, PTTL,
//! LRANGE, LLEN, TYPE, EXISTS), expiries, FLUSHALL, SCRIPT FLUSH, keys overwritten with
//! the wrong type, a counter set ahead of the clock or to a non-number, and bad
//! commands. Both servers get every command, and their replies must agree.
//!
//! # What is compared, and what is normalised
//!
//! The simulated store is driven with the real elapsed time, read just before each
//! command is sent to the real server, so both see the same durations pass.
//!
//! - Everything is compared exactly — statuses, integers, bulk strings, arrays, and
//!   error replies to the byte (scripts' errors include their SHA1 and line) — except:
//! - **Remaining times** (PTTL, and the second element of acquire's `{0, pttl}` and
//!   `{2, quarantine left}`) agree within [`TOLERANCE`]: the two servers read their
//!   clocks at slightly different instants. Every TTL in the domains is at least 30 s
//!   and they differ by far more than the tolerance, so a wrong TTL still shows. -1
//!   and -2 are compared exactly.
//! - **Fencing tokens** (acquire's `{1, token, next}`, GET and INCR of the counter) follow
//!   each server's own clock — the real one's wall clock, the simulator's epoch plus
//!   elapsed time — so their values differ. (The counter's value may go on after the
//!   token: a quarantine mark and the identity of the server that issued it, compared
//!   exactly.) Each side's tokens are replaced by the order
//!   in which distinct values first appeared on that side, which must match: the same
//!   token re-read is the same label, a new token a new one. Values from a counter set
//!   ahead of any clock (above 8·10¹⁵) are compared exactly.
//! - **TIME** is compared by shape: two decimal strings.
//!
//! Nothing waits on the wall clock to check timing; a test step that expires a key
//! sets a 1 ms TTL on both servers and sleeps a few milliseconds so that it has gone on
//! both by the next command.

use robit_test_support::redis as support;

mod other_scripts;
mod surface;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use robit_sim::redis::resp::{Frame, decode};
use robit_sim::redis::{Peer, RedisState, RobitScript};

const SEEDS: std::ops::Range<u64> = 0..8;
const STEPS: usize = 300;
/// How far apart two remaining times may be (see the module documentation).
const TOLERANCE: i64 = 1_000;
/// Counter values above this cannot have come from a clock.
const AHEAD_OF_ANY_CLOCK: i64 = 8_000_000_000_000_000;

const NAMES: [&str; 2] = ["a", "b"];
const OWNERS: [&str; 3] = [
    "0123456789abcdef0123456789abcdef",
    "fedcba9876543210fedcba9876543210",
    "00000000000000000000000000000001",
];
const WAITERS: [&str; 3] = [
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    "0000000000000000000000000000000c",
];
const FENCE: &str = "{d}:fence";
const QUARANTINE: &str = "{d}:quarantine";
const CHANNEL: &str = "d:handoff";
/// The key of scripts that are not robit's.
const OTHER: &str = "{d}:other";

/// How a reply is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Exact,
    Remaining,
    Fence,
    Time,
    AcquireReply,
    /// A lock key's value: `<id>:<until>` and perhaps `:q`, `<until>` on the server's
    /// clock.
    LockValue,
}

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Step {
    /// A script call; `eval` sends the text, otherwise EVALSHA with the fallback.
    Script {
        /// The script's name, to show; its text.
        name: &'static str,
        text: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
        eval: bool,
        check: Check,
    },
    Command(Vec<String>, Check),
    /// PEXPIRE key 1, then let that millisecond pass.
    Expire(String),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Script {
                name,
                keys,
                args,
                eval,
                ..
            } => {
                let how = if *eval { "EVAL" } else { "EVALSHA" };
                write!(
                    f,
                    "{how} <{name}> {} {} {:?}",
                    keys.len(),
                    keys.join(" "),
                    args
                )
            }
            Self::Command(words, _) => write!(f, "{}", words.join(" ")),
            Self::Expire(key) => write!(f, "PEXPIRE {key} 1, then wait"),
        }
    }
}

fn pick<T: Copy>(rng: &mut StdRng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// One random step. `arities` as in [`surface::surface`].
fn step(rng: &mut StdRng, arities: &[(&str, i64)]) -> Step {
    let name = pick(rng, &NAMES);
    let lock = format!("{{d}}:lock:{name}");
    let queue = format!("{{d}}:queue:{name}");
    let waiter = pick(rng, &WAITERS);
    let entry = format!("{waiter}:{}", pick(rng, &["100", "40000"]));
    let handoff = pick(rng, &["30000", "60000"]).to_owned();
    // "-5": a grant that ended before it was made (a 0 would end within the millisecond,
    // at an instant the two servers' clocks do not share).
    let ttl = pick(rng, &["60000", "60000", "120000", "120000", "-5"]).to_owned();
    let script = |script: RobitScript, keys, args, rng: &mut StdRng| Step::Script {
        name: script.name(),
        text: script.source(),
        keys,
        args,
        eval: rng.random_bool(0.1),
        check: if script == RobitScript::Acquire {
            Check::AcquireReply
        } else {
            Check::Exact
        },
    };
    if rng.random_bool(0.15) {
        return other_scripts::other_script(rng, lock, queue);
    }
    if rng.random_bool(0.15) {
        return surface::surface(rng, arities, &lock);
    }
    match rng.random_range(0..100) {
        0..30 => {
            let (id, entry) = if rng.random_bool(0.7) {
                (waiter.to_owned(), entry)
            } else {
                (String::new(), String::new())
            };
            let args = vec![
                pick(rng, &OWNERS).to_owned(),
                ttl,
                id,
                entry,
                pick(rng, &["90000", "150000"]).to_owned(),
                CHANNEL.to_owned(),
                handoff,
                pick(rng, &["0", "0", "0", "45000"]).to_owned(),
                pick(rng, &["0", "1"]).to_owned(),
                pick(rng, &["0", "1"]).to_owned(),
                // The server's identity: '' with failover detection off, or as given.
                pick(rng, &["", "", "/5eed"]).to_owned(),
            ];
            let keys = vec![lock, queue, FENCE.to_owned(), QUARANTINE.to_owned()];
            script(RobitScript::Acquire, keys, args, rng)
        }
        30..42 => script(
            RobitScript::Renew,
            vec![lock],
            vec![pick(rng, &OWNERS).to_owned(), ttl],
            rng,
        ),
        42..54 => {
            let careful = pick(rng, &["0", "0", "1"]).to_owned();
            let args = vec![
                pick(rng, &OWNERS).to_owned(),
                CHANNEL.to_owned(),
                handoff,
                careful,
            ];
            script(RobitScript::Release, vec![lock, queue], args, rng)
        }
        54..62 => {
            let args = vec![waiter.to_owned(), entry, CHANNEL.to_owned(), handoff];
            script(RobitScript::Withdraw, vec![lock, queue], args, rng)
        }
        62..78 => inspect(rng, &lock, &queue),
        78..83 => Step::Expire(pick(rng, &[lock.as_str(), &queue, QUARANTINE, FENCE]).to_owned()),
        83..86 => Step::Command(words(&["DEL", &lock, &queue]), Check::Exact),
        86..88 => Step::Command(words(&["FLUSHALL"]), Check::Exact),
        88..91 => Step::Command(words(&["SCRIPT", "FLUSH"]), Check::Exact),
        91..95 => {
            let key = pick(rng, &[lock.as_str(), &queue, FENCE, QUARANTINE]);
            if rng.random_bool(0.5) {
                Step::Command(words(&["RPUSH", key, "x"]), Check::Exact)
            } else {
                Step::Command(words(&["SET", key, "x"]), Check::Exact)
            }
        }
        95..97 => {
            let value = pick(rng, &["9000000000000000", "41", "abc"]);
            Step::Command(words(&["SET", FENCE, value]), Check::Exact)
        }
        _ => mistake(rng, &lock, &queue),
    }
}

fn inspect(rng: &mut StdRng, lock: &str, queue: &str) -> Step {
    let key = pick(rng, &[lock, queue, QUARANTINE]);
    match rng.random_range(0..9) {
        0 => Step::Command(words(&["GET", lock]), Check::LockValue),
        1 => Step::Command(words(&["GET", FENCE]), Check::Fence),
        2 => Step::Command(words(&["GET", QUARANTINE]), Check::Exact),
        3 | 4 => Step::Command(words(&["PTTL", key]), Check::Remaining),
        5 => Step::Command(words(&["LRANGE", queue, "0", "-1"]), Check::Exact),
        6 => Step::Command(words(&["TYPE", key]), Check::Exact),
        7 => Step::Command(words(&["EXISTS", lock, queue, FENCE]), Check::Exact),
        _ => Step::Command(words(&["TIME"]), Check::Time),
    }
}

/// Commands that go wrong, to compare error replies.
fn mistake(rng: &mut StdRng, lock: &str, queue: &str) -> Step {
    let sha = RobitScript::Renew.sha();
    let bad: [Vec<&str>; 10] = [
        vec!["GET"],
        vec!["GET", lock, queue],
        vec!["NOSUCHCOMMAND", lock, "x"],
        vec!["SCRIPT", "NOSUCH"],
        vec!["INCR", lock],
        vec!["LPOP", FENCE],
        vec!["LINDEX", queue, "x"],
        vec!["EVALSHA", &sha, "x"],
        vec!["EVALSHA", &sha, "5", lock],
        vec!["PEXPIRE", lock, "10", "NX", "XX"],
    ];
    Step::Command(words(&bad[rng.random_range(0..bad.len())]), Check::Exact)
}

/// A plain RESP connection to the real server.
struct Real {
    stream: TcpStream,
    input: Vec<u8>,
}

impl Real {
    fn call(&mut self, command: &[Vec<u8>]) -> Frame {
        let frame = Frame::Array(command.iter().map(Frame::bulk).collect());
        self.stream.write_all(&frame.to_bytes()).unwrap();
        loop {
            if let Some((reply, used)) = decode(&self.input).unwrap() {
                self.input.drain(..used);
                return reply;
            }
            let mut chunk = [0_u8; 4096];
            let read = self.stream.read(&mut chunk).unwrap();
            assert!(read > 0, "redis-server closed the connection");
            self.input.extend_from_slice(&chunk[..read]);
        }
    }
}

/// Fencing tokens as the order of first appearance of distinct values, per side.
#[derive(Default)]
struct Labels(Vec<i64>);

impl Labels {
    fn label(&mut self, value: i64) -> String {
        if value > AHEAD_OF_ANY_CLOCK {
            return value.to_string();
        }
        let index = self.0.iter().position(|&v| v == value).unwrap_or_else(|| {
            self.0.push(value);
            self.0.len() - 1
        });
        format!("token #{index}")
    }
}

/// A lock key's value (`<id>:<s>:<us>:<ms>`, then `@<token>` for a grant, perhaps `:q`:
/// made at TIME `<s>.<us>` of the server's clock, for `<ms>`) with when it was made
/// replaced by the time left until it ends (`now_ms`: the server's clock), and its token,
/// or `None` if it is not of that form.
fn lock_value(bytes: &[u8], now_ms: i64) -> Option<(String, i64, Option<i64>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (text, queued) = match text.strip_suffix(":q") {
        Some(text) => (text, ":q"),
        None => (text, ""),
    };
    let [id, s, us, span] = text.split(':').collect::<Vec<_>>().try_into().ok()?;
    let (ms, token) = match span.split_once('@') {
        Some((ms, token)) => (ms, Some(token.parse::<i64>().ok()?)),
        None => (span, None),
    };
    let (s, us, ms): (i64, i64, i64) = (s.parse().ok()?, us.parse().ok()?, ms.parse().ok()?);
    Some((
        format!("{id}:<made>:{ms}{queued}"),
        s * 1000 + us / 1000 + ms - now_ms,
        token,
    ))
}

/// A reply, readable, with fencing tokens labelled and remaining times kept apart.
/// `now_ms` is the server's clock when it ran the command (Unix ms).
fn normalise(
    frame: &Frame,
    check: Check,
    labels: &mut Labels,
    now_ms: i64,
) -> (String, Option<i64>) {
    let number = |frame: &Frame| match frame {
        Frame::Integer(value) => Some(*value),
        Frame::Bulk(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    };
    match (check, frame) {
        (Check::Remaining, Frame::Integer(ms)) if *ms >= 0 => ("remaining".into(), Some(*ms)),
        (Check::Fence, _) if number(frame).is_some() => {
            (labels.label(number(frame).unwrap()), None)
        }
        // A token followed by the identity of the server that issued it, and marked for
        // a quarantine or not: "<token>[q][/<identity>]". The rest is compared exactly.
        (Check::Fence, Frame::Bulk(bytes)) if fence_value(bytes).is_some() => {
            let (token, rest) = fence_value(bytes).unwrap();
            (format!("{} {rest}", labels.label(token)), None)
        }
        (Check::LockValue, Frame::Bulk(bytes)) if lock_value(bytes, now_ms).is_some() => {
            let (shape, left, token) = lock_value(bytes, now_ms).unwrap();
            // The grant's token, labelled as the replies' tokens are.
            let shape = match token {
                Some(token) => format!("{shape} token {}", labels.label(token)),
                None => shape,
            };
            (shape, Some(left))
        }
        (Check::Time, Frame::Array(parts))
            if parts.len() == 2 && parts.iter().all(|p| number(p).is_some()) =>
        {
            ("[seconds, microseconds]".into(), None)
        }
        (Check::AcquireReply, Frame::Array(parts)) => match (parts.first(), parts.get(1)) {
            (Some(Frame::Integer(1)), Some(Frame::Integer(token))) => {
                // The rest (the waiter next in line) is compared exactly.
                let rest: Vec<String> = parts[2..].iter().map(show).collect();
                let label = labels.label(*token);
                (format!("granted {label} {}", rest.join(" ")), None)
            }
            (Some(Frame::Integer(status)), Some(Frame::Integer(ms))) if *ms >= 0 => {
                (format!("[{status}, remaining]"), Some(*ms))
            }
            _ => (show(frame), None),
        },
        _ => (show(frame), None),
    }
}

/// A fencing counter's value, "<token>[q][/<identity>]": its token, and the rest.
fn fence_value(bytes: &[u8]) -> Option<(i64, String)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let token = text[..digits].parse().ok()?;
    let rest = &text[digits..];
    let well_formed =
        rest.is_empty() || rest == "q" || rest.starts_with('/') || rest.starts_with("q/");
    well_formed.then(|| (token, rest.to_owned()))
}

fn unix_ms(at: std::time::SystemTime) -> i64 {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn show(frame: &Frame) -> String {
    match frame {
        Frame::Simple(text) => format!("+{}", String::from_utf8_lossy(text)),
        Frame::Error(text) => format!("(error) {}", String::from_utf8_lossy(text)),
        Frame::Integer(value) => format!(":{value}"),
        Frame::Bulk(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
        Frame::NullBulk => "(nil)".into(),
        Frame::Array(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Frame::NullArray => "(nil array)".into(),
    }
}

/// Runs one seed's sequence on both servers; on the first disagreement, panics with the
/// seed and the whole sequence so far.
fn compare(seed: u64, real: &mut Real, arities: &[(&str, i64)]) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = RedisState::new();
    let peer = Peer::new("127.0.0.1:1".parse().unwrap(), None);
    let (mut real_labels, mut sim_labels) = (Labels::default(), Labels::default());
    let mut done: Vec<String> = Vec::new();
    let mut sent = 0;
    let start = Instant::now();
    let mut both = |command: Vec<String>, check: Check, done: &mut Vec<String>| -> Frame {
        let command: Vec<Vec<u8>> = command.into_iter().map(String::into_bytes).collect();
        let now = start.elapsed();
        let real_now = unix_ms(std::time::SystemTime::now());
        let real_reply = real.call(&command);
        let sim_reply = sim.execute(&peer, now, &command);
        let sim_now = unix_ms(std::time::UNIX_EPOCH + robit_sim::redis::EPOCH + now);
        sent += 1;
        let (real_seen, real_ms) = normalise(&real_reply, check, &mut real_labels, real_now);
        let (sim_seen, sim_ms) = normalise(&sim_reply, check, &mut sim_labels, sim_now);
        let times_agree = match (real_ms, sim_ms) {
            (Some(a), Some(b)) => (a - b).abs() <= TOLERANCE,
            (a, b) => a == b,
        };
        if real_seen != sim_seen || !times_agree {
            panic!(
                "seed {seed}: the simulated Redis disagrees with redis-server at step {}\n\
                 sequence:\n  {}\n\
                 real: {}\n\
                 sim:  {}",
                done.len(),
                done.join("\n  "),
                show(&real_reply),
                show(&sim_reply),
            );
        }
        real_reply
    };
    for _ in 0..STEPS {
        let step = step(&mut rng, arities);
        done.push(step.to_string());
        match step {
            Step::Command(command, check) => {
                both(command, check, &mut done);
            }
            Step::Expire(key) => {
                both(words(&["PEXPIRE", &key, "1"]), Check::Exact, &mut done);
                std::thread::sleep(Duration::from_millis(5));
            }
            Step::Script {
                text,
                keys,
                args,
                eval,
                check,
                ..
            } => {
                let sha = sha1_smol::Sha1::from(text).digest().to_string();
                let numkeys = keys.len().to_string();
                let call = |first: &str, text: String| {
                    let mut command = vec![first.to_owned(), text, numkeys.clone()];
                    command.extend(keys.iter().cloned());
                    command.extend(args.iter().cloned());
                    command
                };
                if eval {
                    both(call("EVAL", text.to_owned()), check, &mut done);
                    continue;
                }
                let reply = both(call("EVALSHA", sha.clone()), check, &mut done);
                if matches!(&reply, Frame::Error(e) if e.starts_with(b"NOSCRIPT")) {
                    let load = words(&["SCRIPT", "LOAD", text]);
                    let loaded = both(load, Check::Exact, &mut done);
                    if !matches!(loaded, Frame::Error(_)) {
                        both(call("EVALSHA", sha.clone()), check, &mut done);
                    }
                }
            }
        }
    }
    sent
}

#[test]
fn the_simulated_redis_answers_robits_commands_as_redis_server_does() {
    let server = support::RedisServer::start();
    let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    let mut real = Real {
        stream,
        input: Vec::new(),
    };
    let arities = arities(&mut real);
    let mut total = 0;
    for seed in SEEDS {
        real.call(&[b"FLUSHALL".to_vec()]);
        real.call(&[b"SCRIPT".to_vec(), b"FLUSH".to_vec()]);
        total += compare(seed, &mut real, &arities);
    }
    assert!(
        total >= 300 * SEEDS.count(),
        "only {total} commands compared"
    );
}

/// The arity of each of [`surface::COMMANDS`], as the real server reports it.
fn arities(real: &mut Real) -> Vec<(&'static str, i64)> {
    surface::COMMANDS
        .iter()
        .map(|&name| {
            let info = real.call(&[b"COMMAND".to_vec(), b"INFO".to_vec(), name.into()]);
            match info {
                Frame::Array(entries) => match entries.first() {
                    Some(Frame::Array(fields)) => match fields.get(1) {
                        Some(Frame::Integer(arity)) => (name, *arity),
                        other => panic!("COMMAND INFO {name}: no arity in {other:?}"),
                    },
                    other => {
                        panic!("COMMAND INFO {name}: redis-server does not know it: {other:?}")
                    }
                },
                other => panic!("COMMAND INFO {name}: {other:?}"),
            }
        })
        .collect()
}
