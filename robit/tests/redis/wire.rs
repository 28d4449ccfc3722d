//! The Redis driver's wire format, byte for byte: every command the driver sends is
//! compared with what `redis::Script` sends for the same script, keys and arguments.
//!
//! The keys and arguments are spelled out here from the on-server format (see the
//! driver's `keys` module and the scripts' headers), so a change to their encoding fails
//! these tests; and the expected commands come from redis-rs's own script invocation, so
//! the driver's NOSCRIPT handling (SCRIPT LOAD, then EVALSHA once more) must match it too.
//! No server: a fake connection records each packed command and answers from a script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use redis::aio::{ConnectionLike, PubSub};
use redis::{Cmd, ErrorKind, Pipeline, RedisFuture, RedisResult, Script, Value};
use robit::Driver;
use robit::driver::{
    Acquire, AcquireRequest, DriverError, Lease, LockName, OwnerToken, Renewal, Waiter,
};
use robit::redis::{Connector, RedisDriver, script_sources};

/// Records every packed command, and answers each with the next scripted reply (RESP).
#[derive(Clone, Default)]
struct Wire(Arc<StdMutex<WireState>>);

#[derive(Default)]
struct WireState {
    sent: Vec<Vec<u8>>,
    replies: VecDeque<Vec<u8>>,
    /// Which wire this is: each is a server of its own, which no driver of this process
    /// has seen (the driver remembers the namespaces it saw per server, process-wide).
    serial: u64,
}

impl Wire {
    fn answering(replies: &[Vec<u8>]) -> Self {
        static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let wire = Self::default();
        let mut state = wire.0.lock().unwrap();
        state.replies = replies.iter().cloned().collect();
        state.serial = SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        drop(state);
        wire
    }

    fn sent(&self) -> Vec<Vec<u8>> {
        let state = self.0.lock().unwrap();
        assert!(
            state.replies.is_empty(),
            "{} scripted replies were never asked for",
            state.replies.len()
        );
        state.sent.clone()
    }
}

impl ConnectionLike for Wire {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut state = self.0.lock().unwrap();
        let packed = cmd.get_packed_command();
        if packed == INFO_ASKED {
            // A new connection's first command: answered here, not from the scripted
            // replies.
            let value = redis::parse_redis_value(INFO_REPLY.as_bytes());
            return Box::pin(async move { value });
        }
        state.sent.push(packed);
        let reply = state
            .replies
            .pop_front()
            .expect("no scripted reply left for a command");
        let value = redis::parse_redis_value(&reply);
        Box::pin(async move { value })
    }

    /// The one pipeline the driver sends (without replica acknowledgements): a new
    /// connection's second round trip, which loads every script. Answered here, not from
    /// the scripted replies, and checked.
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let loads: Vec<Vec<u8>> = pipeline.cmd_iter().map(Cmd::get_packed_command).collect();
        let sources = [
            script_sources::ACQUIRE,
            script_sources::RENEW,
            script_sources::RELEASE,
            script_sources::WITHDRAW,
            script_sources::INSPECT,
            script_sources::ACQUIRE_MANY,
            script_sources::RENEW_MANY,
            script_sources::RELEASE_MANY,
        ];
        let expected: Vec<Vec<u8>> = sources
            .iter()
            .map(|source| {
                redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(*source)
                    .get_packed_command()
            })
            .collect();
        assert_eq!(loads, expected, "a new connection loads every script");
        assert_eq!((offset, count), (0, sources.len()));
        let replies: Vec<_> = sources
            .iter()
            .map(|source| Ok(Value::BulkString(Script::new(source).get_hash().into())))
            .collect();
        Box::pin(async move { replies.into_iter().collect() })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

struct WireConnector(Wire);

#[robit::driver::async_trait]
impl Connector for WireConnector {
    type Connection = Wire;

    async fn connect(&self) -> RedisResult<Wire> {
        Ok(self.0.clone())
    }

    async fn subscriber(&self) -> RedisResult<PubSub> {
        Err((ErrorKind::Client, "no subscriptions in this test").into())
    }

    fn describe(&self) -> String {
        format!("recording fake {}", self.0.0.lock().unwrap().serial)
    }
}

/// What the driver asks a new connection: `INFO server replication`.
const INFO_ASKED: &[u8] = b"*3\r\n$4\r\nINFO\r\n$6\r\nserver\r\n$11\r\nreplication\r\n";
/// The fake server's answer: its run id and replication id, which a connection checks
/// are there.
const INFO_REPLY: &str = "$130\r\n# Server\r\nrun_id:0123456789ABCDEF0123456789abcdef01234567\r\n\
                          # Replication\r\nmaster_replid:fedcba9876543210fedcba9876543210fedcba98\r\n\r\n";
/// What the acquire script is sent for the server's identity: "read it here, from INFO",
/// on every call that grants, since a connection can outlive its server's role.
const SERVER: &str = "*";

const NAMESPACE: &str = "ns-1";
/// Braces, a NUL and a byte that is not UTF-8: names are arbitrary bytes.
const NAME: &[u8] = b"orders/{42}\x00\xff";
/// Leading zero digits, which must be kept.
const OWNER: u128 = 0x0000_00ab_cdef_0123_4567_89ab_cdef_0001;
const WAITER: u128 = 0x0f;
/// Not whole milliseconds, so every duration is rounded up.
const TTL: Duration = Duration::from_nanos(1_500_000_001);
const RETRY_WITHIN: Duration = Duration::from_micros(333_300);
const HANDOFF_WINDOW: Duration = Duration::from_micros(250_500);
const QUARANTINE: Duration = Duration::from_millis(2_500);

fn driver(wire: &Wire, quarantine: Duration) -> RedisDriver<WireConnector> {
    RedisDriver::with_connector(WireConnector(wire.clone()))
        .namespace(NAMESPACE)
        .handoff_window(HANDOFF_WINDOW)
        .quarantine(quarantine)
        .build()
        .unwrap()
}

fn request(waiter: bool) -> AcquireRequest {
    request_for(NAME, waiter)
}

fn request_for(name: &[u8], waiter: bool) -> AcquireRequest {
    let request = AcquireRequest::new(LockName::from(name), OwnerToken::from_u128(OWNER), TTL);
    if waiter {
        request.with_waiter(Waiter::new(WAITER, RETRY_WITHIN))
    } else {
        request
    }
}

fn key(kind: &str) -> Vec<u8> {
    key_for(NAME, kind)
}

fn key_for(name: &[u8], kind: &str) -> Vec<u8> {
    let mut key = format!("{{{NAMESPACE}}}:{kind}").into_bytes();
    if kind == "lock:" || kind == "queue:" {
        key.extend_from_slice(name);
    }
    key
}

const OWNER_HEX: &str = "000000abcdef0123456789abcdef0001";
const WAITER_HEX: &str = "0000000000000000000000000000000f";
const CHANNEL: &str = "ns-1:handoff";

/// What `redis::Script` sends for `script` with these keys and arguments, given the
/// same replies.
async fn expected(
    source: &str,
    keys: &[Vec<u8>],
    args: &[Vec<u8>],
    replies: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let script = Script::new(source);
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(key);
    }
    for arg in args {
        invocation.arg(arg);
    }
    let mut wire = Wire::answering(replies);
    let _: RedisResult<Value> = invocation.invoke_async(&mut wire).await;
    wire.sent()
}

fn acquire_keys() -> Vec<Vec<u8>> {
    vec![key("lock:"), key("queue:"), key("fence"), key("quarantine")]
}

fn acquire_args(waiter: bool, quarantine: &str) -> Vec<Vec<u8>> {
    let (id, entry, queue_ttl) = if waiter {
        // The queue entry lives four poll intervals, at least a second.
        // A release may grant it the lock outright, for the TTL its entry names.
        (
            WAITER_HEX.to_owned(),
            format!("{WAITER_HEX}:334:1501"),
            "1334",
        )
    } else {
        (String::new(), String::new(), "0")
    };
    // A driver's first acquire: it has not seen the namespace, and a waiter's first
    // attempt is not queued yet.
    [
        OWNER_HEX, "1501", &id, &entry, queue_ttl, CHANNEL, "251", quarantine, "0", "0", SERVER,
    ]
    .map(|arg| arg.as_bytes().to_vec())
    .to_vec()
}

fn lock_and_queue() -> Vec<Vec<u8>> {
    vec![key("lock:"), key("queue:")]
}

fn release_keys() -> Vec<Vec<u8>> {
    vec![key("lock:"), key("queue:"), key("fence")]
}

fn args(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|arg| arg.as_bytes().to_vec()).collect()
}

fn resp(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

fn integer(n: i64) -> Vec<u8> {
    resp(&format!(":{n}\r\n"))
}

fn pair(status: i64, value: i64) -> Vec<u8> {
    resp(&format!("*2\r\n:{status}\r\n:{value}\r\n"))
}

/// A grant's answer, with nobody next in line.
fn grant(fence: i64) -> Vec<u8> {
    resp(&format!("*3\r\n:1\r\n:{fence}\r\n$0\r\n\r\n"))
}

fn noscript() -> Vec<u8> {
    resp("-NOSCRIPT No matching script. Please use EVAL.\r\n")
}

fn loaded(source: &str) -> Vec<u8> {
    let hash = Script::new(source).get_hash().to_owned();
    resp(&format!("${}\r\n{hash}\r\n", hash.len()))
}

/// How a script call's replies go: answered at once, or after a reload.
#[derive(Clone, Copy, Debug)]
enum Replies {
    Direct,
    Reloaded,
    /// NOSCRIPT, and the SCRIPT LOAD fails: no further EVALSHA.
    LoadFails,
    /// NOSCRIPT, SCRIPT LOAD, and NOSCRIPT again: not retried a second time.
    StillMissing,
}

impl Replies {
    fn around(self, source: &str, answer: Vec<u8>) -> Vec<Vec<u8>> {
        match self {
            Self::Direct => vec![answer],
            Self::Reloaded => vec![noscript(), loaded(source), answer],
            Self::LoadFails => vec![noscript(), resp("-ERR no scripts today\r\n")],
            Self::StillMissing => vec![noscript(), loaded(source), noscript()],
        }
    }

    fn succeeds(self) -> bool {
        matches!(self, Self::Direct | Self::Reloaded)
    }
}

const ALL: [Replies; 4] = [
    Replies::Direct,
    Replies::Reloaded,
    Replies::LoadFails,
    Replies::StillMissing,
];

async fn granted(wire: &Wire, quarantine: Duration) -> Arc<dyn Lease> {
    let driver = driver(wire, quarantine);
    match driver.acquire(&request(false)).await.unwrap() {
        Acquire::Granted(lease) => {
            assert_eq!(lease.fence().get(), 7);
            lease
        }
        other => panic!("expected a grant, got {other:?}"),
    }
}

#[tokio::test]
async fn acquire_sends_what_redis_script_sends() {
    for replies in ALL {
        for (waiter, quarantine, quarantine_arg) in [
            (false, Duration::ZERO, "0"),
            (true, Duration::ZERO, "0"),
            (false, QUARANTINE, "2500"),
            // The quarantine is at least the TTL.
            (true, Duration::from_millis(3), "1501"),
        ] {
            let replies_for = replies.around(script_sources::ACQUIRE, pair(0, 1234));
            let wire = Wire::answering(&replies_for);
            let answer = driver(&wire, quarantine).acquire(&request(waiter)).await;
            let expected = expected(
                script_sources::ACQUIRE,
                &acquire_keys(),
                &acquire_args(waiter, quarantine_arg),
                &replies_for,
            )
            .await;
            assert_eq!(
                wire.sent(),
                expected,
                "{replies:?}, waiter {waiter}, quarantine {quarantine:?}"
            );
            match answer {
                Ok(Acquire::Held { expires_in }) if replies.succeeds() => {
                    assert_eq!(expires_in, Some(Duration::from_millis(1234)));
                }
                Err(_) if !replies.succeeds() => {}
                other => panic!("{replies:?}: unexpected answer {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn renew_sends_what_redis_script_sends() {
    for replies in ALL {
        let replies_for = replies.around(script_sources::RENEW, integer(1));
        let mut all = vec![grant(7)];
        all.extend(replies_for.iter().cloned());
        let wire = Wire::answering(&all);
        let lease = granted(&wire, Duration::ZERO).await;
        let renewed = lease.renew(Duration::from_nanos(999_999)).await;
        let mut expected_sent = expected(
            script_sources::ACQUIRE,
            &acquire_keys(),
            &acquire_args(false, "0"),
            &[grant(7)],
        )
        .await;
        expected_sent.extend(
            expected(
                script_sources::RENEW,
                &[key("lock:")],
                &args(&[OWNER_HEX, "1"]),
                &replies_for,
            )
            .await,
        );
        assert_eq!(wire.sent(), expected_sent, "{replies:?}");
        assert_eq!(
            renewed.ok(),
            replies.succeeds().then_some(Renewal::Renewed),
            "{replies:?}"
        );
    }
}

#[tokio::test]
async fn release_sends_what_redis_script_sends() {
    for replies in ALL {
        let replies_for = replies.around(script_sources::RELEASE, integer(1));
        let mut all = vec![grant(7)];
        all.extend(replies_for.iter().cloned());
        let wire = Wire::answering(&all);
        let lease = granted(&wire, QUARANTINE).await;
        let released = lease.release().await;
        let mut expected_sent = expected(
            script_sources::ACQUIRE,
            &acquire_keys(),
            &acquire_args(false, "2500"),
            &[grant(7)],
        )
        .await;
        expected_sent.extend(
            expected(
                script_sources::RELEASE,
                &release_keys(),
                &args(&[OWNER_HEX, CHANNEL, "251", "0", SERVER]),
                &replies_for,
            )
            .await,
        );
        assert_eq!(wire.sent(), expected_sent, "{replies:?}");
        assert_eq!(released.is_ok(), replies.succeeds(), "{replies:?}");
    }
}

#[tokio::test]
async fn withdraw_sends_what_redis_script_sends() {
    for replies in ALL {
        let replies_for = replies.around(script_sources::WITHDRAW, integer(0));
        let wire = Wire::answering(&replies_for);
        let withdrawn: Result<(), DriverError> =
            driver(&wire, Duration::ZERO).withdraw(&request(true)).await;
        let expected = expected(
            script_sources::WITHDRAW,
            &lock_and_queue(),
            &args(&[
                WAITER_HEX,
                &format!("{WAITER_HEX}:334:1501"),
                CHANNEL,
                "251",
            ]),
            &replies_for,
        )
        .await;
        assert_eq!(wire.sent(), expected, "{replies:?}");
        assert_eq!(withdrawn.is_ok(), replies.succeeds(), "{replies:?}");
    }
}

#[tokio::test]
async fn withdraw_without_a_waiter_sends_nothing() {
    let wire = Wire::answering(&[]);
    driver(&wire, Duration::ZERO)
        .withdraw(&request(false))
        .await
        .unwrap();
    assert!(wire.sent().is_empty());
}

#[tokio::test]
async fn names_of_any_length_are_sent_whole() {
    for length in [1, 100, 115, 116, 117, 128, 200, 4096] {
        let name: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
        let replies = [grant(7), integer(1), integer(1)];
        let wire = Wire::answering(&replies);
        let driver = driver(&wire, Duration::ZERO);
        let Acquire::Granted(lease) = driver.acquire(&request_for(&name, false)).await.unwrap()
        else {
            panic!("expected a grant");
        };
        lease.renew(TTL).await.unwrap();
        lease.release().await.unwrap();
        let (lock, queue) = (key_for(&name, "lock:"), key_for(&name, "queue:"));
        let mut expected_sent = expected(
            script_sources::ACQUIRE,
            &[lock.clone(), queue.clone(), key("fence"), key("quarantine")],
            &acquire_args(false, "0"),
            &replies[..1],
        )
        .await;
        expected_sent.extend(
            expected(
                script_sources::RENEW,
                std::slice::from_ref(&lock),
                &args(&[OWNER_HEX, "1501"]),
                &replies[1..2],
            )
            .await,
        );
        expected_sent.extend(
            expected(
                script_sources::RELEASE,
                &[lock, queue, key("fence")],
                &args(&[OWNER_HEX, CHANNEL, "251", "0", SERVER]),
                &replies[2..],
            )
            .await,
        );
        assert_eq!(wire.sent(), expected_sent, "a name of {length} bytes");
    }
}
