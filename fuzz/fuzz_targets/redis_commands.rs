//! Runs a fuzzed sequence of commands against the simulated Redis's state,
//! `robit_sim::redis::RedisState::execute`, at times that never go back. The commands
//! come from a small vocabulary: the ones robit's Redis driver and its scripts send —
//! robit's four scripts by EVALSHA (their SHA1), by EVAL (their text) and SCRIPT LOAD,
//! with keys, owners, waiters and numbers of the shapes robit uses, and odd ones — the
//! data commands on those same keys, a few connection commands, and raw words.
//!
//! It must never panic, and after every command it checks that:
//!
//! - the reply encodes, and decodes back to itself (a CR or LF inside an error line is
//!   sent as a space), nesting no deeper than the decoder accepts;
//! - the scripts answer in the shapes robit's driver parses: acquire `[0 or 2, value]`
//!   or `[1, fence, next in line]`; renew 0 or 1; release and withdraw 0, 1 or the hex
//!   id of the waiter the lock was handed to; or an error;
//! - a grant carries a fencing token above every earlier one of its namespace (unless a
//!   command other than acquire wrote the fence key since the last FLUSHALL), and is
//!   reported as a `Granted` event with that token, for that key and owner;
//! - lock events come only from commands that write a string key (in a script or
//!   not), stamped with the command's time and peer; a script's name the lock key the
//!   script was given;
//! - SCRIPT LOAD answers the script's SHA1; once a script is loaded (by SCRIPT LOAD or
//!   EVAL) and not flushed, EVALSHA never answers NOSCRIPT and SCRIPT EXISTS answers 1;
//! - TIME answers `EPOCH` plus the command's time; PING, ECHO, PTTL and DBSIZE answer
//!   what they must.
#![no_main]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "frames.rs"]
mod frames;
use frames::{depth, normalised};
use robit_sim::redis::resp::{Frame, MAX_DEPTH, decode};
use robit_sim::redis::{EPOCH, LockEvent, LockEventKind, Peer, RedisState, RobitScript};

const MAX_STEPS: usize = 256;
const MAX_RAW_WORDS: usize = 8;
const MAX_WORD_LEN: usize = 64;
const NAMESPACES: [&str; 2] = ["robit", "other"];
const NAMES: [&str; 2] = ["job", "{x}"];
const OWNERS: u8 = 4;
const WAITERS: u8 = 4;
const PEERS: u8 = 3;
const ODD_NUMBERS: [&str; 14] = [
    "",
    "0",
    "-1",
    "-2",
    "1.5",
    "abc",
    " 7",
    "+5",
    "1e3",
    "nan",
    "inf",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
];

// ---------------------------------------------------------------------------------------
// The vocabulary.

#[derive(Arbitrary, Debug)]
struct Step {
    advance: Advance,
    peer: u8,
    command: Command,
}

/// How far the backend's clock moves before the command: never back.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Advance {
    None,
    Millis(u16),
    Seconds(u16),
}

/// A number argument: mostly of the size robit sends, sometimes anything or not one.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Num {
    Small(u16),
    Any(i64),
    Odd(u8),
}

impl Num {
    fn word(self) -> Vec<u8> {
        match self {
            Self::Small(n) => n.to_string().into_bytes(),
            Self::Any(n) => n.to_string().into_bytes(),
            Self::Odd(i) => ODD_NUMBERS[usize::from(i) % ODD_NUMBERS.len()]
                .as_bytes()
                .to_vec(),
        }
    }
}

/// One of the keys robit uses, in one of two namespaces, or a key of no namespace.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Key {
    Lock { ns: u8, name: u8 },
    Queue { ns: u8, name: u8 },
    Fence { ns: u8 },
    Quarantine { ns: u8 },
    Plain,
}

impl Key {
    fn word(self) -> Vec<u8> {
        match self {
            Self::Lock { ns, name } => lock_key(ns, name),
            Self::Queue { ns, name } => queue_key(ns, name),
            Self::Fence { ns } => fence_key(ns),
            Self::Quarantine { ns } => format!("{{{}}}:quarantine", namespace(ns)).into_bytes(),
            Self::Plain => b"k".to_vec(),
        }
    }

    /// The namespace whose fence this key is, if it is one.
    fn fence_of(self) -> Option<usize> {
        match self {
            Self::Fence { ns } => Some(usize::from(ns) % NAMESPACES.len()),
            _ => None,
        }
    }
}

fn namespace(ns: u8) -> &'static str {
    NAMESPACES[usize::from(ns) % NAMESPACES.len()]
}

fn lock_key(ns: u8, name: u8) -> Vec<u8> {
    let name = NAMES[usize::from(name) % NAMES.len()];
    format!("{{{}}}:lock:{name}", namespace(ns)).into_bytes()
}

fn queue_key(ns: u8, name: u8) -> Vec<u8> {
    let name = NAMES[usize::from(name) % NAMES.len()];
    format!("{{{}}}:queue:{name}", namespace(ns)).into_bytes()
}

fn fence_key(ns: u8) -> Vec<u8> {
    format!("{{{}}}:fence", namespace(ns)).into_bytes()
}

fn channel(ns: u8) -> Vec<u8> {
    format!("{}:handoff", namespace(ns)).into_bytes()
}

fn owner(owner: u8) -> Vec<u8> {
    format!("{:032x}", 0xabc0 + u32::from(owner % OWNERS)).into_bytes()
}

fn waiter(waiter: u8) -> Vec<u8> {
    format!("{:016x}", 0x5eed + u32::from(waiter % WAITERS)).into_bytes()
}

/// A queue entry as robit writes it, `<waiter id>:<poll ms>`.
fn entry(id: u8, poll: Num) -> Vec<u8> {
    let mut entry = waiter(id);
    entry.push(b':');
    entry.extend(poll.word());
    entry
}

/// A value to store: the shapes robit's keys hold, or anything short.
#[derive(Arbitrary, Debug, Clone)]
enum Value {
    Owner(u8),
    Reservation(u8),
    Entry(u8, Num),
    Number(Num),
    Bytes(Vec<u8>),
}

impl Value {
    fn word(&self) -> Vec<u8> {
        match self {
            Self::Owner(n) => owner(*n),
            Self::Reservation(n) => [b"W".as_slice(), &waiter(*n)].concat(),
            Self::Entry(n, poll) => entry(*n, *poll),
            Self::Number(n) => n.word(),
            Self::Bytes(bytes) => bytes.iter().copied().take(MAX_WORD_LEN).collect(),
        }
    }
}

/// How a script is called.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Via {
    /// EVALSHA with the SHA1 in lower case, as redis-rs sends it.
    Sha,
    /// EVALSHA with the SHA1 in upper case (Redis accepts either).
    ShaUpper,
    /// EVAL with the script's text, which also loads it.
    Text,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Acquire,
    Renew,
    Release,
    Withdraw,
}

impl Script {
    const ALL: [Self; 4] = [Self::Acquire, Self::Renew, Self::Release, Self::Withdraw];

    fn robit(self) -> RobitScript {
        match self {
            Self::Acquire => RobitScript::Acquire,
            Self::Renew => RobitScript::Renew,
            Self::Release => RobitScript::Release,
            Self::Withdraw => RobitScript::Withdraw,
        }
    }

    fn source(self) -> &'static str {
        self.robit().source()
    }

    fn sha(self) -> String {
        self.robit().sha().to_owned()
    }
}

/// A call of one of robit's scripts, with the keys and arguments robit passes.
#[derive(Arbitrary, Debug, Clone)]
enum Call {
    Acquire {
        ns: u8,
        name: u8,
        owner: u8,
        ttl: Num,
        /// A waiter id and its poll interval; none for a single try.
        waiter: Option<(u8, Num)>,
        queue_ttl: Num,
        handoff: Num,
        quarantine: Num,
        /// Whether the caller's driver has seen the namespace (a missing counter is then
        /// lost state).
        lost: bool,
        /// Whether an earlier attempt of this waiter may have queued it.
        queued: bool,
    },
    Renew {
        ns: u8,
        name: u8,
        owner: u8,
        ttl: Num,
    },
    Release {
        ns: u8,
        name: u8,
        owner: u8,
        handoff: Num,
        /// Whether the caller knows its grant is gone (read before deleting).
        careful: bool,
    },
    Withdraw {
        ns: u8,
        name: u8,
        waiter: u8,
        poll: Num,
        handoff: Num,
    },
}

impl Call {
    fn script(&self) -> Script {
        match self {
            Self::Acquire { .. } => Script::Acquire,
            Self::Renew { .. } => Script::Renew,
            Self::Release { .. } => Script::Release,
            Self::Withdraw { .. } => Script::Withdraw,
        }
    }

    fn namespace(&self) -> usize {
        let (Self::Acquire { ns, .. }
        | Self::Renew { ns, .. }
        | Self::Release { ns, .. }
        | Self::Withdraw { ns, .. }) = self;
        usize::from(*ns) % NAMESPACES.len()
    }

    fn lock(&self) -> Vec<u8> {
        let (Self::Acquire { ns, name, .. }
        | Self::Renew { ns, name, .. }
        | Self::Release { ns, name, .. }
        | Self::Withdraw { ns, name, .. }) = self;
        lock_key(*ns, *name)
    }

    /// KEYS and ARGV, in robit's order.
    fn keys_and_args(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        match *self {
            Self::Acquire {
                ns,
                name,
                owner: who,
                ttl,
                waiter: in_line,
                queue_ttl,
                handoff,
                quarantine,
                lost,
                queued,
            } => {
                let (id, entry) = match in_line {
                    Some((id, poll)) => (waiter(id), entry(id, poll)),
                    None => (Vec::new(), Vec::new()),
                };
                let quarantine_key = Key::Quarantine { ns }.word();
                let keys = vec![
                    lock_key(ns, name),
                    queue_key(ns, name),
                    fence_key(ns),
                    quarantine_key,
                ];
                let args = vec![
                    owner(who),
                    ttl.word(),
                    id,
                    entry,
                    queue_ttl.word(),
                    channel(ns),
                    handoff.word(),
                    quarantine.word(),
                    flag(lost),
                    flag(queued),
                    // The server's identity: none, with failover detection off.
                    Vec::new(),
                ];
                (keys, args)
            }
            Self::Renew {
                ns,
                name,
                owner: who,
                ttl,
            } => (vec![lock_key(ns, name)], vec![owner(who), ttl.word()]),
            Self::Release {
                ns,
                name,
                owner: who,
                handoff,
                careful,
            } => (
                vec![lock_key(ns, name), queue_key(ns, name)],
                vec![owner(who), channel(ns), handoff.word(), flag(careful)],
            ),
            Self::Withdraw {
                ns,
                name,
                waiter: id,
                poll,
                handoff,
            } => (
                vec![lock_key(ns, name), queue_key(ns, name)],
                vec![waiter(id), entry(id, poll), channel(ns), handoff.word()],
            ),
        }
    }
}

/// A flag as the scripts take it.
fn flag(on: bool) -> Vec<u8> {
    if on { b"1".to_vec() } else { b"0".to_vec() }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SetOption {
    Nx,
    Xx,
    Ex(Num),
    Px(Num),
    KeepTtl,
    Get,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ExpireFlag {
    Nx,
    Xx,
    Gt,
    Lt,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Connection {
    Subscribe(u8),
    Unsubscribe,
    Hello,
    ClientSetInfo,
    Select,
    Quit,
}

#[derive(Arbitrary, Debug, Clone)]
enum Command {
    /// One of robit's scripts, called as `via` says; `dropped` trailing arguments are
    /// left out (`dropped % 3`), to reach the scripts' checks of their arguments.
    Script {
        call: Call,
        via: Via,
        dropped: u8,
    },
    ScriptLoad(Script),
    ScriptExists(Vec<Script>),
    ScriptFlush,
    Get(Key),
    Set {
        key: Key,
        value: Value,
        options: Vec<SetOption>,
    },
    Del(Vec<Key>),
    Exists(Key),
    Type(Key),
    Pttl(Key),
    Pexpire {
        key: Key,
        ms: Num,
        flag: Option<ExpireFlag>,
    },
    Incr(Key),
    Push {
        front: bool,
        key: Key,
        values: Vec<Value>,
    },
    Lpop {
        key: Key,
        count: Option<Num>,
    },
    Lindex {
        key: Key,
        index: Num,
    },
    Lpos {
        key: Key,
        value: Value,
        rank: Option<Num>,
        count: Option<Num>,
        maxlen: Option<Num>,
    },
    Lrem {
        key: Key,
        count: Num,
        value: Value,
    },
    Llen(Key),
    Lrange {
        key: Key,
        start: Num,
        stop: Num,
    },
    Dbsize,
    Flushall,
    Time,
    Ping(Option<Value>),
    Echo(Value),
    Publish {
        ns: u8,
        message: Value,
    },
    Connection(Connection),
    /// Any words at all.
    Raw(Vec<Vec<u8>>),
}

fn words(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.to_vec()).collect()
}

impl Command {
    /// The command's words.
    fn words(&self) -> Vec<Vec<u8>> {
        match self {
            Self::Script { call, via, dropped } => {
                let script = call.script();
                let (keys, mut args) = call.keys_and_args();
                args.truncate(args.len().saturating_sub(usize::from(dropped % 3)));
                let (name, first) = match via {
                    Via::Sha => ("EVALSHA", script.sha()),
                    Via::ShaUpper => ("EVALSHA", script.sha().to_ascii_uppercase()),
                    Via::Text => ("EVAL", script.source().to_owned()),
                };
                let mut out = words(&[name.as_bytes(), first.as_bytes()]);
                out.push(keys.len().to_string().into_bytes());
                out.extend(keys);
                out.extend(args);
                out
            }
            Self::ScriptLoad(script) => words(&[b"SCRIPT", b"LOAD", script.source().as_bytes()]),
            Self::ScriptExists(scripts) => {
                let mut out = words(&[b"SCRIPT", b"EXISTS"]);
                out.extend(scripts.iter().map(|script| script.sha().into_bytes()));
                if scripts.is_empty() {
                    out.push(Script::Acquire.sha().into_bytes());
                }
                out
            }
            Self::ScriptFlush => words(&[b"SCRIPT", b"FLUSH"]),
            Self::Get(key) => words(&[b"GET", &key.word()]),
            Self::Set {
                key,
                value,
                options,
            } => {
                let mut out = words(&[b"SET", &key.word(), &value.word()]);
                for option in options.iter().take(4) {
                    match option {
                        SetOption::Nx => out.push(b"NX".to_vec()),
                        SetOption::Xx => out.push(b"XX".to_vec()),
                        SetOption::Ex(n) => out.extend([b"EX".to_vec(), n.word()]),
                        SetOption::Px(n) => out.extend([b"PX".to_vec(), n.word()]),
                        SetOption::KeepTtl => out.push(b"KEEPTTL".to_vec()),
                        SetOption::Get => out.push(b"GET".to_vec()),
                    }
                }
                out
            }
            Self::Del(keys) => {
                let mut out = words(&[b"DEL"]);
                out.extend(keys.iter().take(4).map(|key| key.word()));
                if keys.is_empty() {
                    out.push(Key::Plain.word());
                }
                out
            }
            Self::Exists(key) => words(&[b"EXISTS", &key.word()]),
            Self::Type(key) => words(&[b"TYPE", &key.word()]),
            Self::Pttl(key) => words(&[b"PTTL", &key.word()]),
            Self::Pexpire { key, ms, flag } => {
                let mut out = words(&[b"PEXPIRE", &key.word(), &ms.word()]);
                if let Some(flag) = flag {
                    out.push(
                        match flag {
                            ExpireFlag::Nx => "NX",
                            ExpireFlag::Xx => "XX",
                            ExpireFlag::Gt => "GT",
                            ExpireFlag::Lt => "LT",
                        }
                        .into(),
                    );
                }
                out
            }
            Self::Incr(key) => words(&[b"INCR", &key.word()]),
            Self::Push { front, key, values } => {
                let name: &[u8] = if *front { b"LPUSH" } else { b"RPUSH" };
                let mut out = words(&[name, &key.word()]);
                out.extend(values.iter().take(8).map(Value::word));
                if values.is_empty() {
                    out.push(Value::Entry(0, Num::Small(100)).word());
                }
                out
            }
            Self::Lpop { key, count } => {
                let mut out = words(&[b"LPOP", &key.word()]);
                out.extend(count.map(Num::word));
                out
            }
            Self::Lindex { key, index } => words(&[b"LINDEX", &key.word(), &index.word()]),
            Self::Lpos {
                key,
                value,
                rank,
                count,
                maxlen,
            } => {
                let mut out = words(&[b"LPOS", &key.word(), &value.word()]);
                for (option, n) in [(&b"RANK"[..], rank), (b"COUNT", count), (b"MAXLEN", maxlen)] {
                    if let Some(n) = n {
                        out.extend([option.to_vec(), n.word()]);
                    }
                }
                out
            }
            Self::Lrem { key, count, value } => {
                words(&[b"LREM", &key.word(), &count.word(), &value.word()])
            }
            Self::Llen(key) => words(&[b"LLEN", &key.word()]),
            Self::Lrange { key, start, stop } => {
                words(&[b"LRANGE", &key.word(), &start.word(), &stop.word()])
            }
            Self::Dbsize => words(&[b"DBSIZE"]),
            Self::Flushall => words(&[b"FLUSHALL"]),
            Self::Time => words(&[b"TIME"]),
            Self::Ping(None) => words(&[b"PING"]),
            Self::Ping(Some(message)) => words(&[b"PING", &message.word()]),
            Self::Echo(message) => words(&[b"ECHO", &message.word()]),
            Self::Publish { ns, message } => words(&[b"PUBLISH", &channel(*ns), &message.word()]),
            Self::Connection(connection) => match connection {
                Connection::Subscribe(ns) => words(&[b"SUBSCRIBE", &channel(*ns)]),
                Connection::Unsubscribe => words(&[b"UNSUBSCRIBE"]),
                Connection::Hello => words(&[b"HELLO", b"2"]),
                Connection::ClientSetInfo => {
                    words(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-rs"])
                }
                Connection::Select => words(&[b"SELECT", b"0"]),
                Connection::Quit => words(&[b"QUIT"]),
            },
            Self::Raw(raw) => raw
                .iter()
                .take(MAX_RAW_WORDS)
                .map(|word| word.iter().copied().take(MAX_WORD_LEN).collect())
                .collect(),
        }
    }

    /// Whether the command may write the fence key of namespace `ns` other than through
    /// the acquire script (which is what keeps fences increasing).
    fn tampers_with_fence(&self, ns: usize) -> bool {
        let hits = |key: &Key| key.fence_of() == Some(ns);
        match self {
            Self::Set { key, .. }
            | Self::Pexpire { key, .. }
            | Self::Incr(key)
            | Self::Push { key, .. }
            | Self::Lpop { key, .. }
            | Self::Lrem { key, .. } => hits(key),
            Self::Del(keys) => keys.iter().any(hits),
            Self::Raw(_) => true,
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The checks.

/// What the target knows of the server, to check its answers.
#[derive(Default)]
struct Model {
    /// The highest fencing token granted in each namespace, while it can be relied on.
    max_fence: [Option<i64>; NAMESPACES.len()],
    /// The fence key was written by something other than the acquire script since the
    /// last FLUSHALL: tokens need not increase any more.
    tampered: [bool; NAMESPACES.len()],
    /// Scripts certainly loaded (a Raw command may load or flush without our knowing:
    /// then this forgets everything, which only weakens the check).
    loaded: [bool; Script::ALL.len()],
}

fn check_encoding(reply: &Frame) {
    assert!(
        depth(reply) <= MAX_DEPTH,
        "a reply nested too deep: {reply:?}"
    );
    let bytes = reply.to_bytes();
    assert_eq!(
        decode(&bytes),
        Ok(Some((normalised(reply), bytes.len()))),
        "the reply does not survive encoding: {bytes:?}"
    );
}

fn is_noscript(reply: &Frame) -> bool {
    matches!(reply, Frame::Error(text) if text.starts_with(b"NOSCRIPT"))
}

/// Checks a script's reply and the events it caused.
fn check_script(model: &mut Model, call: &Call, via: Via, reply: &Frame, events: &[LockEvent]) {
    let script = call.script();
    let index = Script::ALL.iter().position(|s| *s == script).unwrap_or(0);
    match via {
        Via::Text => model.loaded[index] = true,
        Via::Sha | Via::ShaUpper => assert!(
            !(model.loaded[index] && is_noscript(reply)),
            "EVALSHA of the loaded {script:?} script answered NOSCRIPT"
        ),
    }
    let lock = call.lock();
    for event in events {
        let key = match &event.kind {
            LockEventKind::Granted { key, .. }
            | LockEventKind::Renewed { key, .. }
            | LockEventKind::Released { key, .. } => key,
            // The namespace's quarantine, not a lock's.
            LockEventKind::Quarantined { .. } => continue,
            other => panic!("an event of an unknown kind: {other:?}"),
        };
        assert_eq!(
            key, &lock,
            "an event for another key than the script's lock"
        );
    }
    if let Frame::Error(_) = reply {
        return;
    }
    match (call, reply) {
        (Call::Acquire { owner: who, .. }, Frame::Array(pair)) => {
            let (status, value) = match pair.as_slice() {
                [Frame::Integer(status @ (0 | 2)), Frame::Integer(value)] => (status, value),
                [Frame::Integer(status @ 1), Frame::Integer(value), Frame::Bulk(next)]
                | [
                    Frame::Integer(status @ 1),
                    Frame::Integer(value),
                    Frame::Bulk(next),
                    Frame::Integer(1),
                ] => {
                    assert!(
                        next.iter().all(u8::is_ascii_hexdigit),
                        "a grant named {next:?} as next in line, not a waiter id"
                    );
                    (status, value)
                }
                _ => panic!(
                    "acquire answered {reply:?}, not [0|2, value] or [1, fence, next(, 1)]"
                ),
            };
            let granted: Vec<_> = events
                .iter()
                .filter_map(|event| match &event.kind {
                    // The event reports the counter exactly; the script returns it as a
                    // Lua number, a double, exact only up to 2^53 (a counter the
                    // fuzzer set higher comes back rounded, as from a real Redis).
                    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                    LockEventKind::Granted { owner, fence, .. } => {
                        Some((owner, *fence as f64 as i64))
                    }
                    _ => None,
                })
                .collect();
            if *status != 1 {
                assert!(granted.is_empty(), "acquire answered {status}, yet granted");
                return;
            }
            assert_eq!(
                granted,
                [(&owner(*who), *value)],
                "a grant of fence {value} reported otherwise"
            );
            let ns = call.namespace();
            if let (false, Some(max)) = (model.tampered[ns], model.max_fence[ns]) {
                assert!(*value > max, "fence {value} granted after fence {max}");
            }
            model.max_fence[ns] = Some(*value);
        }
        (Call::Acquire { .. }, _) => panic!("acquire answered {reply:?}"),
        (_, Frame::Integer(0 | 1)) => {}
        (Call::Release { .. } | Call::Withdraw { .. }, Frame::Bulk(waiter)) => assert!(
            !waiter.is_empty() && waiter.iter().all(u8::is_ascii_hexdigit),
            "a hand-off to {waiter:?}, not a waiter id"
        ),
        _ => panic!("the {script:?} script answered {reply:?}"),
    }
}

fn check_reply(model: &mut Model, command: &Command, now: Duration, reply: &Frame) {
    match (command, reply) {
        (_, Frame::Error(text)) => {
            assert!(!text.is_empty(), "an empty error reply");
            if let Command::ScriptExists(_) | Command::ScriptLoad(_) = command {
                panic!("{command:?} failed: {reply:?}");
            }
        }
        (Command::ScriptLoad(script), _) => {
            assert_eq!(
                reply,
                &Frame::bulk(script.sha()),
                "SCRIPT LOAD of {script:?}"
            );
            let index = Script::ALL.iter().position(|s| s == script).unwrap_or(0);
            model.loaded[index] = true;
        }
        (Command::ScriptExists(scripts), Frame::Array(answers)) => {
            assert_eq!(answers.len(), scripts.len().max(1), "SCRIPT EXISTS answers");
            for (script, answer) in scripts.iter().zip(answers) {
                let index = Script::ALL.iter().position(|s| s == script).unwrap_or(0);
                if model.loaded[index] {
                    assert_eq!(answer, &Frame::Integer(1), "SCRIPT EXISTS of {script:?}");
                }
            }
        }
        (Command::Time, _) => {
            let clock = EPOCH + now;
            let expected = Frame::Array(vec![
                Frame::bulk(clock.as_secs().to_string()),
                Frame::bulk(clock.subsec_micros().to_string()),
            ]);
            assert_eq!(reply, &expected, "TIME at {now:?}");
        }
        (Command::Ping(None), _) => assert_eq!(reply, &Frame::simple("PONG")),
        (Command::Ping(Some(message)) | Command::Echo(message), _) => {
            assert_eq!(reply, &Frame::bulk(message.word()), "PING or ECHO");
        }
        (Command::Pttl(_), Frame::Integer(ms)) => assert!(*ms >= -2, "PTTL answered {ms}"),
        (Command::Dbsize, Frame::Integer(n)) => assert!(*n >= 0, "DBSIZE answered {n}"),
        (Command::Pttl(_) | Command::Dbsize, _) => panic!("{command:?} answered {reply:?}"),
        _ => {}
    }
    if let Command::ScriptFlush = command {
        model.loaded = Default::default();
    }
    if let Command::Raw(_) = command {
        model.loaded = Default::default();
    }
}

fn run(steps: &[Step]) {
    let state = RedisState::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    state.on_event(move |event| seen.lock().expect("the event list").push(event.clone()));
    let peers: Vec<Peer> = (0..PEERS)
        .map(|n| {
            let addr = format!("10.0.0.{}:4000{n}", n + 1)
                .parse()
                .expect("an address");
            Peer::new(addr, Some(format!("c{n}")))
        })
        .collect();
    let mut model = Model::default();
    let mut now = Duration::ZERO;
    for step in steps.iter().take(MAX_STEPS) {
        now += match step.advance {
            Advance::None => Duration::ZERO,
            Advance::Millis(ms) => Duration::from_millis(u64::from(ms)),
            Advance::Seconds(s) => Duration::from_secs(u64::from(s)),
        };
        let peer = &peers[usize::from(step.peer % PEERS)];
        let reply = state.execute(peer, now, &step.command.words());
        check_encoding(&reply);
        let happened = std::mem::take(&mut *events.lock().expect("the event list"));
        for event in &happened {
            assert_eq!(event.at, now, "an event stamped with another time");
            assert_eq!(&event.peer, peer, "an event stamped with another peer");
        }
        if let Command::Script { call, via, .. } = &step.command {
            check_script(&mut model, call, *via, &reply, &happened);
        } else {
            let writes = matches!(
                step.command,
                Command::Raw(_)
                    | Command::Set { .. }
                    | Command::Del(_)
                    | Command::Pexpire { .. }
                    | Command::Incr(_)
                    | Command::Flushall
            );
            assert!(
                happened.is_empty() || writes,
                "{:?} caused lock events: {happened:?}",
                step.command
            );
            check_reply(&mut model, &step.command, now, &reply);
        }
        for ns in 0..NAMESPACES.len() {
            if step.command.tampers_with_fence(ns) {
                model.tampered[ns] = true;
            }
        }
        if matches!(step.command, Command::Flushall) {
            // Every key is gone, the fence keys with them: tokens restart from the clock,
            // which may not have moved since the last grant.
            model.tampered = Default::default();
            model.max_fence = Default::default();
        }
    }
}

fuzz_target!(|steps: Vec<Step>| run(&steps));
