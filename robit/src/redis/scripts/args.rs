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
//! declares.

use std::io::Write;

use redis::{RedisWrite, ToRedisArgs};

use super::{ACQUIRE, CREATE, INSPECT, Key, Lua, RAISE, RELEASE, RENEW, ScriptCall, WITHDRAW};
use crate::redis::flag;

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
    pub(in crate::redis) owner: &'a [u8],
    pub(in crate::redis) channel: &'a str,
    pub(in crate::redis) handoff_ms: u64,
    /// Read before deleting: the grant may be gone, and the key someone else's.
    pub(in crate::redis) careful: bool,
    /// A quorum's member grant given back, handed to nobody now: `Some`, with the
    /// caller's queue entry if it waits.
    pub(in crate::redis) quietly: Option<Option<&'a [u8]>>,
}

impl ScriptArgs for ReleaseArgs<'_> {
    const SCRIPT: &'static Lua = &RELEASE;
    const KEYS: &'static [&'static str] = &["lock", "queue"];
    const ARGV: &'static [&'static str] = &[
        "owner",
        "channel",
        "handoff_ms",
        "careful",
        "quietly?",
        "entry?",
    ];

    fn write(&self, call: &mut ScriptCall) {
        call.key(self.lock)
            .key(self.queue)
            .arg(self.owner)
            .arg(self.channel)
            .arg(self.handoff_ms)
            .arg(flag(self.careful));
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The names a script's header gives its keys and its arguments, in order: the
    /// lines `-- KEYS[i] <name> …` and `-- ARGV[i] <name> …`, numbered from 1 without a
    /// gap.
    fn header(source: &str) -> [Vec<&str>; 2] {
        let mut names = [Vec::new(), Vec::new()];
        for line in source.lines() {
            for (table, names) in ["-- KEYS[", "-- ARGV["].into_iter().zip(&mut names) {
                let Some(rest) = line.strip_prefix(table) else {
                    continue;
                };
                let (index, rest) = rest.split_once(']').expect("KEYS[i] or ARGV[i]");
                assert_eq!(index, (names.len() + 1).to_string(), "{line}");
                let name = rest.split_whitespace().next().expect("a name");
                names.push(name);
            }
        }
        names
    }

    /// The indexes of `KEYS[i]` and of `ARGV[i]` that a script's code (not its comments)
    /// reads.
    fn reads(source: &str) -> [BTreeSet<usize>; 2] {
        let mut read = [BTreeSet::new(), BTreeSet::new()];
        for line in source.lines() {
            let code = line.split("--").next().unwrap_or_default();
            for (table, read) in ["KEYS[", "ARGV["].into_iter().zip(&mut read) {
                for (at, _) in code.match_indices(table) {
                    let rest = &code[at + table.len()..];
                    let index = rest.split(']').next().unwrap_or_default();
                    read.insert(index.parse().expect("a literal index"));
                }
            }
        }
        read
    }

    /// Checks `A`'s declared names against its script's header and code, and the
    /// arguments `fewest` (every optional one absent) and `most` (all present) write.
    /// Answers the script's text.
    fn check<A: ScriptArgs>(fewest: &A, most: &A) -> &'static str {
        let source = A::SCRIPT.source();
        let [keys, argv] = header(source);
        let name = std::any::type_name::<A>();
        assert_eq!(
            keys,
            A::KEYS,
            "{name}'s keys: the script's header, then the struct's"
        );
        assert_eq!(
            argv,
            A::ARGV,
            "{name}'s arguments: the header's, then the struct's"
        );
        let [keys_read, argv_read] = reads(source);
        assert_eq!(keys_read, (1..=keys.len()).collect(), "{name}'s keys read");
        assert_eq!(
            argv_read,
            (1..=argv.len()).collect(),
            "{name}'s arguments read"
        );
        let optional = argv.iter().position(|name| name.ends_with('?'));
        let trailing = argv[optional.unwrap_or(argv.len())..].iter();
        assert!(
            trailing.clone().all(|arg| arg.ends_with('?')),
            "{name}: {argv:?}"
        );
        assert_eq!(ScriptCall::new(fewest, 0).args(), required(&argv), "{name}");
        assert_eq!(ScriptCall::new(most, 0).args(), argv.len(), "{name}");
        source
    }

    #[test]
    fn every_script_s_header_names_the_keys_and_arguments_its_call_writes_and_its_code_reads() {
        let key = |kind: &'static [u8]| Key::new(b"{t}", kind, b"a");
        let (lock, queue, fence) = (key(b":lock:"), key(b":queue:"), key(b":fence"));
        let owner = &[b'a'; 32][..];
        let acquire = |span, proposal| AcquireArgs {
            lock,
            queue,
            fence,
            quarantine: key(b":quarantine"),
            owner,
            key_ms: 1500,
            waiter: b"",
            entry: b"",
            queue_ttl_ms: 0,
            channel: "t:handoff",
            handoff_ms: 500,
            quarantine_ms: 0,
            lost: true,
            queued: false,
            server: b"*",
            span,
            proposal,
        };
        let renew = |lock_delay| RenewArgs {
            lock,
            owner,
            ttl_ms: 1000,
            lock_delay,
        };
        let release = |quietly| ReleaseArgs {
            lock,
            queue,
            owner,
            channel: "t:handoff",
            handoff_ms: 500,
            careful: false,
            quietly,
        };
        let withdraw = WithdrawArgs {
            lock,
            queue,
            waiter: owner,
            entry: b"x:1",
            channel: "t:handoff",
            handoff_ms: 500,
        };
        let raise = RaiseArgs {
            lock,
            fence,
            owner,
            token: 7,
        };
        let create = CreateArgs { fence, server: b"" };
        let checked = [
            check(&acquire(None, None), &acquire(Some("1000+500"), Some(7))),
            check(&renew(None), &renew(Some(("1000+500", 1500)))),
            check(&release(None), &release(Some(Some(b"x:1")))),
            check(&withdraw, &withdraw),
            check(&InspectArgs { lock, queue }, &InspectArgs { lock, queue }),
            check(&raise, &raise),
            check(&create, &create),
        ];
        // Every script file with a header is part of a script checked here. (The folder
        // holds the Rust that calls them too.)
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/scripts");
        for file in std::fs::read_dir(folder).expect("the scripts' folder") {
            let path = file.expect("a script").path();
            if path.extension().is_none_or(|extension| extension != "lua") {
                continue;
            }
            let text = std::fs::read_to_string(path).unwrap();
            if header(&text) != [Vec::<&str>::new(), Vec::new()] {
                assert!(
                    checked.iter().any(|source| source.contains(&text)),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn acquire_s_optional_arguments_travel_as_one_without_placeholders() {
        let key = Key::new(b"{t}", b":lock:", b"a");
        let call = |span, proposal| {
            let args = AcquireArgs {
                lock: key,
                queue: key,
                fence: key,
                quarantine: key,
                owner: b"a",
                key_ms: 1500,
                waiter: b"",
                entry: b"",
                queue_ttl_ms: 0,
                channel: "c",
                handoff_ms: 500,
                quarantine_ms: 0,
                lost: false,
                queued: false,
                server: b"",
                span,
                proposal,
            };
            ScriptCall::new(&args, 0).words()
        };
        // EVALSHA, the hash, the number of keys, four keys, eleven arguments.
        assert_eq!(call(None, None).len(), 3 + 4 + 11);
        for (span, proposal, extras) in [
            (Some("1000+500"), None, &b"1000+500"[..]),
            (None, Some(u64::MAX), b"@18446744073709551615"),
            (Some("1000+500"), Some(7), b"1000+500@7"),
        ] {
            let words = call(span, proposal);
            assert_eq!(words.len(), 3 + 4 + 12);
            assert_eq!(words.last().unwrap(), extras);
        }
    }
}
