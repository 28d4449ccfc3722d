//! The simulated Redis at explicit times: robit's scripts' outcomes (`scripts`), and
//! the commands that load scripts and those of a connection (`commands`). Here, what
//! they share: the keys and ids robit would use, and a backend to call.

mod commands;
mod failover;
mod lock_keys;
mod lua;
mod scripts;
mod session;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::resp::Frame;
use super::script_cache::RobitScript;
use super::session::{Next, Session};
use super::{EPOCH, LockEvent, LockEventKind, Peer, RedisState};

const LOCK: &str = "{t}:lock:a";
const QUEUE: &str = "{t}:queue:a";
const FENCE: &str = "{t}:fence";
const QUARANTINE: &str = "{t}:quarantine";
const CHANNEL: &str = "t:handoff";
const HANDOFF_MS: &str = "500";

const OWNER_A: &str = "0000000000000000000000000000000a";
const OWNER_B: &str = "0000000000000000000000000000000b";
const WAITER_B: &str = "000000000000000000000000000000b0";
const WAITER_C: &str = "000000000000000000000000000000c0";

fn at(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn int(value: i64) -> Frame {
    Frame::Integer(value)
}

fn pair(status: i64, value: i64) -> Frame {
    Frame::Array(vec![int(status), int(value)])
}

/// A grant's answer: `{1, fence, next in line}`.
fn grant(fence: i64, next: &str) -> Frame {
    Frame::Array(vec![int(1), int(fence), Frame::bulk(next)])
}

/// A grant that created the namespace.
fn grant_creating(fence: i64) -> Frame {
    Frame::Array(vec![int(1), int(fence), Frame::bulk(""), int(1)])
}

/// Who asks, as the acquire script is told it.
#[derive(Debug, Clone, Copy)]
enum First {
    /// A driver that has seen the namespace, on a later attempt.
    Seen,
    /// A driver that has not seen the namespace yet.
    NewDriver,
    /// A driver that has seen the namespace, on a waiter's first attempt.
    WaiterFirstTry,
}

/// A lock key's value: `id`'s, made `made` ms after the simulation's start (as TIME
/// answers it then), for `ms`, and a suffix.
/// A reservation's value: made at `made` (ms), for `ms`.
fn value(id: &str, made: u64, ms: u64, suffix: &str) -> Frame {
    let clock = EPOCH + at(made);
    let (s, us) = (clock.as_secs(), clock.subsec_micros());
    Frame::bulk(format!("{id}:{s}:{us}:{ms}{suffix}"))
}

/// A grant's value: made (or last renewed) at `made`, for `ms`, with the fencing token of
/// a grant made at `granted` (the server's clock then).
fn grant_value(id: &str, made: u64, ms: u64, granted: u64, suffix: &str) -> Frame {
    let clock = EPOCH + at(made);
    let (s, us) = (clock.as_secs(), clock.subsec_micros());
    let token = clock_token(at(granted));
    Frame::bulk(format!("{id}:{s}:{us}:{ms}@{token}{suffix}"))
}

struct Backend {
    state: RedisState,
    peer: Peer,
    events: Arc<Mutex<Vec<LockEvent>>>,
}

impl Backend {
    fn new() -> Self {
        let state = RedisState::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        state.on_event(move |event| seen.lock().unwrap().push(event.clone()));
        let peer = Peer::new("10.0.0.2:5000".parse().unwrap(), Some("client-a".into()));
        Self {
            state,
            peer,
            events,
        }
    }

    fn run(&self, now: Duration, words: &[&str]) -> Frame {
        let command: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        self.state.execute(&self.peer, now, &command)
    }

    fn eval(&self, now: Duration, kind: RobitScript, keys: &[&str], args: &[&str]) -> Frame {
        let numkeys = keys.len().to_string();
        let mut words = vec!["EVAL", kind.source(), &numkeys];
        words.extend_from_slice(keys);
        words.extend_from_slice(args);
        self.run(now, &words)
    }

    /// Acquire with a quarantine of `quarantine` ms and a queue TTL of 4 s; `waiter` is
    /// `(id, poll ms)`, or `None` for a single try. Asked by a driver that has seen the
    /// namespace (a missing counter is lost state), for a waiter that may be queued
    /// already.
    fn acquire(
        &self,
        now: u64,
        owner: &str,
        ttl: &str,
        waiter: Option<(&str, u64)>,
        quarantine: &str,
    ) -> Frame {
        self.acquire_as(now, owner, ttl, waiter, quarantine, First::Seen)
    }

    /// As [`acquire`](Self::acquire), asked as `first` says.
    fn acquire_as(
        &self,
        now: u64,
        owner: &str,
        ttl: &str,
        waiter: Option<(&str, u64)>,
        quarantine: &str,
        first: First,
    ) -> Frame {
        self.acquire_via(now, owner, ttl, waiter, quarantine, first, "")
    }

    /// A single try by a driver that has seen the namespace, over a connection to the
    /// server `server` (its identity as the driver sends it: `/<hex>`).
    fn acquire_on(&self, now: u64, owner: &str, quarantine: &str, server: &str) -> Frame {
        self.acquire_via(now, owner, "10000", None, quarantine, First::Seen, server)
    }

    #[allow(clippy::too_many_arguments)]
    fn acquire_via(
        &self,
        now: u64,
        owner: &str,
        ttl: &str,
        waiter: Option<(&str, u64)>,
        quarantine: &str,
        first: First,
        server: &str,
    ) -> Frame {
        let (id, entry) = waiter.map_or((String::new(), String::new()), |(id, poll)| {
            (id.to_owned(), format!("{id}:{poll}"))
        });
        let keys = [LOCK, QUEUE, FENCE, QUARANTINE];
        let (lost, queued) = match first {
            First::Seen => ("1", "1"),
            First::NewDriver => ("0", "1"),
            First::WaiterFirstTry => ("1", "0"),
        };
        let args = [
            owner, ttl, &id, &entry, "4000", CHANNEL, HANDOFF_MS, quarantine, lost, queued, server,
        ];
        self.eval(at(now), RobitScript::Acquire, &keys, &args)
    }

    fn renew(&self, now: u64, owner: &str, ttl: &str) -> Frame {
        self.eval(at(now), RobitScript::Renew, &[LOCK], &[owner, ttl])
    }

    fn release(&self, now: u64, owner: &str) -> Frame {
        self.eval(
            at(now),
            RobitScript::Release,
            &[LOCK, QUEUE],
            &[owner, CHANNEL, HANDOFF_MS, "0"],
        )
    }

    fn withdraw(&self, now: u64, (id, poll): (&str, u64)) -> Frame {
        let entry = format!("{id}:{poll}");
        self.eval(
            at(now),
            RobitScript::Withdraw,
            &[LOCK, QUEUE],
            &[id, &entry, CHANNEL, HANDOFF_MS],
        )
    }

    fn kinds(&self) -> Vec<LockEventKind> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.kind.clone())
            .collect()
    }

    /// A connection subscribed to the hand-off channel, and its incoming messages.
    fn subscriber(&self) -> (Session, tokio::sync::mpsc::UnboundedReceiver<Frame>) {
        let (mut session, pushes) = Session::new(self.state.clone(), self.peer.clone());
        let mut replies = Vec::new();
        session.handle(
            at(0),
            &[b"SUBSCRIBE".to_vec(), CHANNEL.as_bytes().to_vec()],
            &mut replies,
        );
        (session, pushes)
    }
}

fn published(message: &str) -> Frame {
    Frame::Array(vec![
        Frame::bulk("message"),
        Frame::bulk(CHANNEL),
        Frame::bulk(message),
    ])
}

/// The fencing token a grant at `now` gets from the clock: TIME in microseconds.
fn clock_token(now: Duration) -> i64 {
    i64::try_from((EPOCH + now).as_micros()).unwrap()
}
