//! What each server-side script is given: one struct per script, which writes its keys
//! and arguments into the call in the order the script's header documents them.
//!
//! Every script begins with a header naming each key and argument it reads, one a line:
//! `-- KEYS[1] lock  …` and `-- ARGV[1] owner  …`. A name ending in `?` is optional: the
//! script reads it as absent (`nil`) when it is not sent. Optional arguments come last,
//! and one is left out only with every one after it, so that none is ever sent as a
//! placeholder. Each struct declares the same names ([`ScriptArgs::KEYS`],
//! [`ScriptArgs::ARGV`]); a test compares them with every script's header, and with the
//! keys and arguments its code reads, so that the two sides cannot drift; and
//! [`ScriptCall::new`] checks, in debug builds, that a struct writes as many as it
//! declares (the test is in `tests.rs`).
//!
//! Here too, the pieces those structs write that are more than a number or bytes: a key
//! ([`Key`]), a grant's span ([`Span`]), a waiter ([`WaiterArgs`]), a flag.

use std::io::Write;
use std::time::Duration;

use redis::{RedisWrite, ToRedisArgs};

use super::whole_millis::millis_ceil;
use super::{ACQUIRE, CREATE, INSPECT, Lua, RAISE, RELEASE, RENEW, ScriptCall, WITHDRAW};
use crate::driver::{Waiter, hex128};

/// The keys and arguments of one script's call.
pub(in crate::redis) trait ScriptArgs {
    /// The script called.
    const SCRIPT: &'static Lua;
    /// The names of its keys, `KEYS[1]` first, as its header gives them.
    const KEYS: &'static [&'static str];
    /// The names of its arguments, `ARGV[1]` first, as its header gives them; an
    /// optional one's ends in `?`, and only optional ones follow it.
    const ARGV: &'static [&'static str];

    /// Writes the keys, then the arguments, each with [`ScriptCall::key`] or
    /// [`ScriptCall::arg`], in the declared order.
    fn write(&self, call: &mut ScriptCall);
}

/// How many of the arguments named `argv` every call sends: those not optional.
pub(in crate::redis) fn required(argv: &[&str]) -> usize {
    argv.iter().filter(|name| !name.ends_with('?')).count()
}

/// Acquire (acquire.lua): grant, queue, or refuse during a quarantine.
pub(in crate::redis) struct AcquireArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) queue: Key<'a>,
    pub(in crate::redis) fence: Key<'a>,
    pub(in crate::redis) quarantine: Key<'a>,
    /// The owner token: 32 lower-case hex digits.
    pub(in crate::redis) owner: &'a [u8],
    /// The key's lifetime: the TTL plus any lock-delay.
    pub(in crate::redis) key_ms: u64,
    /// The waiter's id and its queue entry; both empty for a single try.
    pub(in crate::redis) waiter: &'a [u8],
    pub(in crate::redis) entry: &'a [u8],
    pub(in crate::redis) queue_ttl_ms: u64,
    pub(in crate::redis) channel: &'a str,
    pub(in crate::redis) handoff_ms: u64,
    pub(in crate::redis) quarantine_ms: u64,
    /// A missing counter means lost state (not a new namespace).
    pub(in crate::redis) lost: bool,
    /// An earlier attempt of this waiter may have queued it.
    pub(in crate::redis) queued: bool,
    /// The server's identity as the connection gives it (`Identity`).
    pub(in crate::redis) server: &'a [u8],
    /// With a lock-delay: the grant's span, `<ttl ms>+<delay ms>`.
    pub(in crate::redis) span: Option<&'a str>,
    /// A quorum's member: the quorum's proposed token.
    pub(in crate::redis) proposal: Option<u64>,
}

impl ScriptArgs for AcquireArgs<'_> {
    const SCRIPT: &'static Lua = &ACQUIRE;
    const KEYS: &'static [&'static str] = &["lock", "queue", "fence", "quarantine"];
    const ARGV: &'static [&'static str] = &[
        "owner",
        "key_ms",
        "waiter",
        "entry",
        "queue_ttl_ms",
        "channel",
        "handoff_ms",
        "quarantine_ms",
        "lost",
        "queued",
        "server",
        "extras?",
    ];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock)
            .key(self.queue)
            .key(self.fence)
            .key(self.quarantine)
            .arg(self.owner)
            .arg(self.key_ms)
            .arg(self.waiter)
            .arg(self.entry)
            .arg(self.queue_ttl_ms)
            .arg(self.channel)
            .arg(self.handoff_ms)
            .arg(self.quarantine_ms)
            .arg(flag(self.lost))
            .arg(flag(self.queued))
            .arg(self.server);
        if self.span.is_some() || self.proposal.is_some() {
            call.arg(Extras {
                span: self.span,
                proposal: self.proposal,
            });
        }
    }
}

/// Acquire's `extras`, one argument: `<span>`, `@<proposal>`, or `<span>@<proposal>`,
/// as the grant's value ends (common.lua). Written in place, no allocation.
struct Extras<'a> {
    span: Option<&'a str>,
    proposal: Option<u64>,
}

impl ToRedisArgs for Extras<'_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        let mut digits = itoa::Buffer::new();
        let mut arg = out.writer_for_next_arg();
        // Writing into a command cannot fail (see `Key`'s).
        if let Some(span) = self.span {
            let _ = arg.write_all(span.as_bytes());
        }
        if let Some(proposal) = self.proposal {
            let _ = arg.write_all(b"@");
            let _ = arg.write_all(digits.format(proposal).as_bytes());
        }
    }
}

/// Renew (renew.lua): extend the caller's own grant.
pub(in crate::redis) struct RenewArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) owner: &'a [u8],
    pub(in crate::redis) ttl_ms: u64,
    /// With a lock-delay: the grant's span (`<ttl ms>+<delay ms>`) and the key's
    /// lifetime in ms (the TTL plus the delay), sent both or neither.
    pub(in crate::redis) lock_delay: Option<(&'a str, u64)>,
}

impl ScriptArgs for RenewArgs<'_> {
    const SCRIPT: &'static Lua = &RENEW;
    const KEYS: &'static [&'static str] = &["lock"];
    const ARGV: &'static [&'static str] = &["owner", "ttl_ms", "span?", "key_ms?"];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock).arg(self.owner).arg(self.ttl_ms);
        if let Some((span, key_ms)) = self.lock_delay {
            call.arg(span).arg(key_ms);
        }
    }
}

/// Release (release.lua): free the caller's own grant, handing the lock on.
pub(in crate::redis) struct ReleaseArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) queue: Key<'a>,
    pub(in crate::redis) fence: Key<'a>,
    pub(in crate::redis) owner: &'a [u8],
    pub(in crate::redis) channel: &'a str,
    pub(in crate::redis) handoff_ms: u64,
    /// Read before deleting: the grant may be gone, and the key someone else's.
    pub(in crate::redis) careful: bool,
    /// The server's identity as the acquire script takes it (a grant to the next
    /// waiter is fenced as an acquire's is).
    pub(in crate::redis) server: &'a [u8],
    /// A quorum's member grant given back, handed to nobody now: `Some`, with the
    /// caller's queue entry if it waits.
    pub(in crate::redis) quietly: Option<Option<&'a [u8]>>,
}

impl ScriptArgs for ReleaseArgs<'_> {
    const SCRIPT: &'static Lua = &RELEASE;
    const KEYS: &'static [&'static str] = &["lock", "queue", "fence"];
    const ARGV: &'static [&'static str] = &[
        "owner",
        "channel",
        "handoff_ms",
        "careful",
        "server",
        "quietly?",
        "entry?",
    ];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock)
            .key(self.queue)
            .key(self.fence)
            .arg(self.owner)
            .arg(self.channel)
            .arg(self.handoff_ms)
            .arg(flag(self.careful))
            .arg(self.server);
        if let Some(entry) = self.quietly {
            call.arg(flag(true));
            if let Some(entry) = entry {
                call.arg(entry);
            }
        }
    }
}

/// Withdraw (withdraw.lua): a waiter leaves the queue and passes on its reservation.
pub(in crate::redis) struct WithdrawArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) queue: Key<'a>,
    pub(in crate::redis) waiter: &'a [u8],
    pub(in crate::redis) entry: &'a [u8],
    pub(in crate::redis) channel: &'a str,
    pub(in crate::redis) handoff_ms: u64,
}

impl ScriptArgs for WithdrawArgs<'_> {
    const SCRIPT: &'static Lua = &WITHDRAW;
    const KEYS: &'static [&'static str] = &["lock", "queue"];
    const ARGV: &'static [&'static str] = &["waiter", "entry", "channel", "handoff_ms"];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock)
            .key(self.queue)
            .arg(self.waiter)
            .arg(self.entry)
            .arg(self.channel)
            .arg(self.handoff_ms);
    }
}

/// Inspect (inspect.lua): what a lock's keys hold.
pub(in crate::redis) struct InspectArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) queue: Key<'a>,
}

impl ScriptArgs for InspectArgs<'_> {
    const SCRIPT: &'static Lua = &INSPECT;
    const KEYS: &'static [&'static str] = &["lock", "queue"];
    const ARGV: &'static [&'static str] = &[];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock).key(self.queue);
    }
}

/// Raise (raise.lua): lift a quorum member's fencing counter to the quorum's token.
pub(in crate::redis) struct RaiseArgs<'a> {
    pub(in crate::redis) lock: Key<'a>,
    pub(in crate::redis) fence: Key<'a>,
    pub(in crate::redis) owner: &'a [u8],
    pub(in crate::redis) token: u64,
}

impl ScriptArgs for RaiseArgs<'_> {
    const SCRIPT: &'static Lua = &RAISE;
    const KEYS: &'static [&'static str] = &["lock", "fence"];
    const ARGV: &'static [&'static str] = &["owner", "token"];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock)
            .key(self.fence)
            .arg(self.owner)
            .arg(self.token);
    }
}

/// Create (create.lua): a new namespace's fencing counter in one bucket.
pub(in crate::redis) struct CreateArgs<'a> {
    pub(in crate::redis) fence: Key<'a>,
    pub(in crate::redis) server: &'a [u8],
}

impl ScriptArgs for CreateArgs<'_> {
    const SCRIPT: &'static Lua = &CREATE;
    const KEYS: &'static [&'static str] = &["fence"];
    const ARGV: &'static [&'static str] = &["server"];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.fence).arg(self.server);
    }
}

/// A key made of a hash tag, a kind and a lock name (empty for a namespace's own keys),
/// written into the command as one argument with no allocation.
#[derive(Debug, Clone, Copy)]
pub(in crate::redis) struct Key<'a> {
    parts: [&'a [u8]; 3],
}

impl<'a> Key<'a> {
    pub(in crate::redis) fn new(tag: &'a [u8], kind: &'static [u8], name: &'a [u8]) -> Self {
        Self {
            parts: [tag, kind, name],
        }
    }
}

/// Up to this length, a [`Key`] is joined on the stack and written in one piece: cheaper
/// than writing its parts one by one through `RedisWrite::writer_for_next_arg`, a call
/// into redis-rs per part (measured). Longer ones, rare, are written that way.
pub(super) const JOIN_ON_STACK: usize = 128;

impl ToRedisArgs for Key<'_> {
    fn write_redis_args<W>(&self, out: &mut W)
    where
        W: ?Sized + RedisWrite,
    {
        let len: usize = self.parts.iter().map(|part| part.len()).sum();
        if len <= JOIN_ON_STACK {
            let mut joined = [0; JOIN_ON_STACK];
            let mut at = 0;
            for part in self.parts {
                joined[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            out.write_arg(&joined[..len]);
        } else {
            let mut arg = out.writer_for_next_arg();
            // Writing into a command (or redis-rs's other argument buffers) cannot fail,
            // and `write_redis_args` could not report it if it did.
            for part in self.parts {
                let _ = arg.write_all(part);
            }
        }
    }
}

/// How long a grant's key lives, and the span its value records: the TTL alone, or, with
/// a lock-delay, `<ttl ms>+<delay ms>` (see common.lua).
pub(in crate::redis) struct Span {
    /// The key's lifetime in ms: the TTL plus the lock-delay.
    pub(in crate::redis) key_ms: u64,
    /// The span as the value writes it, when it is not `key_ms` itself.
    pub(in crate::redis) text: Option<String>,
}

impl Span {
    pub(in crate::redis) fn new(ttl: Duration, lock_delay: Duration) -> Self {
        if lock_delay.is_zero() {
            return Self {
                key_ms: millis_ceil(ttl),
                text: None,
            };
        }
        let (ttl_ms, delay_ms) = (millis_ceil(ttl), millis_ceil(lock_delay));
        Self {
            key_ms: ttl_ms.saturating_add(delay_ms),
            text: Some(format!("{ttl_ms}+{delay_ms}")),
        }
    }
}

/// A waiter as the scripts see it: its id (32 lower-case hex digits), and its queue entry,
/// `<id>:<poll interval in ms>`, from which a hand-off's reservation window is sized,
/// followed by `:<span>` when a release may grant the waiter the lock outright, with the
/// span its grant is to have (see common.lua and release_rest.lua). Built on the stack: a
/// waiting `lock()` sends it with every attempt.
pub(in crate::redis) struct WaiterArgs {
    /// The entry; the id is its first 32 bytes.
    entry: [u8; ENTRY_BYTES],
    len: usize,
}

/// The longest entry: an id (32), a poll interval, a TTL and a lock-delay, each of the
/// numbers at most 20 digits, and their three separators.
const ENTRY_BYTES: usize = 95;

impl WaiterArgs {
    /// `waiter`'s entry; `span`: the span of the grant a release may make it, when it
    /// may make one.
    pub(in crate::redis) fn new(waiter: &Waiter, span: Option<&Span>) -> Self {
        let mut entry = [0; ENTRY_BYTES];
        entry[..32].copy_from_slice(&hex128(waiter.id));
        let mut len = 32;
        let mut put = |bytes: &[u8]| {
            entry[len] = b':';
            entry[len + 1..len + 1 + bytes.len()].copy_from_slice(bytes);
            len += 1 + bytes.len();
        };
        let mut digits = itoa::Buffer::new();
        put(digits.format(millis_ceil(waiter.retry_within)).as_bytes());
        if let Some(span) = span {
            match &span.text {
                Some(text) => put(text.as_bytes()),
                None => put(digits.format(span.key_ms).as_bytes()),
            }
        }
        Self { entry, len }
    }

    pub(in crate::redis) fn id(&self) -> &[u8] {
        &self.entry[..32]
    }

    pub(in crate::redis) fn entry(&self) -> &[u8] {
        &self.entry[..self.len]
    }
}

/// A flag as the scripts take it.
fn flag(on: bool) -> &'static [u8] {
    if on { b"1" } else { b"0" }
}
