//! The scripts' tests: every script's header against the keys and arguments its call
//! writes and its code reads (the rule `args.rs` states), and the words a call sends.

use std::collections::BTreeSet;

use redis::ToRedisArgs;

use super::args::{
    AcquireArgs, CreateArgs, InspectArgs, JOIN_ON_STACK, Key, RaiseArgs, ReleaseArgs, RenewArgs,
    ScriptArgs, WithdrawArgs, required,
};
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
        fence,
        owner,
        channel: "t:handoff",
        handoff_ms: 500,
        careful: false,
        server: b"*",
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

#[test]
fn a_call_in_full_is_eval_of_the_script_s_text_with_the_same_keys_and_arguments() {
    let args = RaiseArgs {
        lock: Key::new(b"k", b"1", b""),
        fence: Key::new(b"k", b"2", b""),
        owner: b"owner",
        token: 7,
    };
    let call = ScriptCall::new(&args, 64);
    let sent = call.words();
    let hash = RAISE.script().get_hash();
    assert_eq!(
        sent,
        [
            &b"EVALSHA"[..],
            hash.as_bytes(),
            b"2",
            b"k1",
            b"k2",
            b"owner",
            b"7"
        ]
    );
    let in_full = words(&call.in_full());
    assert_eq!(in_full[0], b"EVAL");
    assert_eq!(in_full[1], RAISE.source.as_bytes());
    assert_eq!(in_full[2..], sent[2..]);
}

#[test]
fn a_key_is_one_argument() {
    let long = vec![b'x'; 3 * JOIN_ON_STACK];
    for (first, second) in [
        (&b""[..], &b""[..]),
        (b"{ns}", b"name"),
        (&long[..JOIN_ON_STACK - 7], b"y"),
        (&long[..JOIN_ON_STACK - 6], b""),
        (&long[..JOIN_ON_STACK - 6], b"y"),
        (&long[..], &long[..]),
    ] {
        let key = Key::new(first, b":lock:", second);
        assert_eq!(
            key.to_redis_args(),
            vec![[first, &b":lock:"[..], second].concat()]
        );
    }
}

#[test]
fn a_batch_call_sends_every_item_s_keys_then_each_item_s_count_and_arguments() {
    // The layout many.lua reads: all keys first, then, item by item, how many arguments
    // it has and the arguments; a renewal with a lock-delay has two more.
    let lock = |name: &'static [u8]| Key::new(b"{t}", b":lock:", name);
    let plain = RenewArgs {
        lock: lock(b"a"),
        owner: &[b'a'; 32][..],
        ttl_ms: 1000,
        lock_delay: None,
    };
    let delayed = RenewArgs {
        lock: lock(b"b"),
        owner: &[b'b'; 32][..],
        ttl_ms: 2000,
        lock_delay: Some(("2000+500", 2500)),
    };
    let (plain, delayed) = (ScriptCall::new(&plain, 0), ScriptCall::new(&delayed, 0));
    let many = RENEW.many.expect("renew has a batch script");
    let batch = ScriptCall::batch(many, &[&plain, &delayed]);
    let words: Vec<String> = batch
        .words()
        .into_iter()
        .map(|word| String::from_utf8(word).unwrap())
        .collect();
    let (a, b) = ("a".repeat(32), "b".repeat(32));
    let expected = [
        "EVALSHA",
        many.script().get_hash(),
        "2",
        "{t}:lock:a",
        "{t}:lock:b",
        "2",
        &a,
        "1000",
        "4",
        &b,
        "2000",
        "2000+500",
        "2500",
    ];
    assert_eq!(words, expected);
    assert_eq!(batch.args(), 8);
}
