//! The rest of the command surface the simulated Redis serves without a connection:
//! every option of its commands, in any order and combination, bad values among them;
//! wrong numbers of arguments for every command; unknown commands and subcommands.
//! robit's scripts use a few of these forms, but a script written against the simulated
//! Redis may use any, and must get what a real server answers.

use rand::RngExt;
use rand::rngs::StdRng;

use super::{Check, OTHER, Step, pick, words};

/// A list of its own, apart from robit's queues.
const LIST: &str = "{d}:list";

/// Commands a test may send with any number of arguments: none of them needs, or
/// changes, the connection.
pub(crate) const COMMANDS: [&str; 26] = [
    "ping",
    "echo",
    "time",
    "get",
    "getdel",
    "set",
    "del",
    "exists",
    "type",
    "pttl",
    "pexpire",
    "pexpireat",
    "incr",
    "dbsize",
    "flushall",
    "publish",
    "eval",
    "evalsha",
    "script",
    "lpush",
    "rpush",
    "lpop",
    "lindex",
    "lpos",
    "lrem",
    "lrange",
];

/// One random step over the command surface. `arities` holds each of [`COMMANDS`]'s
/// arity as the real server reports it (`COMMAND INFO`).
pub(crate) fn surface(rng: &mut StdRng, arities: &[(&str, i64)], lock: &str) -> Step {
    let key = pick(rng, &[lock, OTHER]);
    let exact = |command: Vec<String>| Step::Command(command, Check::Exact);
    match rng.random_range(0..12) {
        0 => exact(words(pick(
            rng,
            &[&["PING"][..], &["PING", "hi"], &["ECHO", "hi"]],
        ))),
        1 => wrong_arity(rng, arities, key),
        // With GET, the old value may be a lock's, with its end on the server's clock.
        2 | 3 => Step::Command(set(rng, key), Check::LockValue),
        4 | 5 => exact(pexpire(rng, key)),
        6 if rng.random_bool(0.3) => Step::Command(words(&["GETDEL", key]), Check::LockValue),
        6 => Step::Command(words(&["PTTL", key]), Check::Remaining),
        7 => exact(words(&[
            "FLUSHALL",
            pick(rng, &["SYNC", "ASYNC", "async", "LAZY"]),
        ])),
        8 => exact(script(rng)),
        9 | 10 => exact(list(rng)),
        _ => exact(unknown(rng, key)),
    }
}

/// A command from [`COMMANDS`] with a number of arguments its arity refuses.
fn wrong_arity(rng: &mut StdRng, arities: &[(&str, i64)], key: &str) -> Step {
    let (name, arity) = pick(rng, arities);
    // Words in all, the name included: one too few or, for an exact arity, one too many.
    // (A command of arity 1 has no fewer: only one too many is wrong.)
    let count = if arity > 0 && (arity == 1 || rng.random_bool(0.5)) {
        arity + 1
    } else {
        arity.abs() - 1
    };
    let mut command = vec![name.to_ascii_uppercase()];
    for n in 1..count {
        command.push(if n == 1 {
            key.to_owned()
        } else {
            n.to_string()
        });
    }
    Step::Command(command, Check::Exact)
}

/// SET with zero to three options, any of them with a bad value, in any order. Unix
/// times (EXAT, PXAT) are all long past: the two servers' clocks differ, the past is the
/// same for both.
fn set(rng: &mut StdRng, key: &str) -> Vec<String> {
    let mut command = words(&["SET", key, "v"]);
    for _ in 0..rng.random_range(0..4) {
        match rng.random_range(0..7) {
            0 => command.push(pick(rng, &["NX", "nx"]).to_owned()),
            1 => command.push("XX".to_owned()),
            2 => command.push("KEEPTTL".to_owned()),
            3 => command.push(pick(rng, &["GET", "get"]).to_owned()),
            4 => command.push(pick(rng, &["EX", "PX", "px", "EXAT", "PXAT", "BOGUS"]).to_owned()),
            5 => {
                command.push(pick(rng, &["EXAT", "PXAT", "pxat"]).to_owned());
                let amount = pick(rng, &["1", "5", "0", "-5", "x", "9223372036854775807"]);
                command.push(amount.to_owned());
            }
            _ => {
                command.push(pick(rng, &["EX", "PX"]).to_owned());
                let amount = pick(rng, &["60", "60000", "0", "-5", "x", "9223372036854775807"]);
                command.push(amount.to_owned());
            }
        }
    }
    command
}

/// PEXPIRE (or PEXPIREAT) with a time that may be bad and zero to three of its
/// conditions.
fn pexpire(rng: &mut StdRng, key: &str) -> Vec<String> {
    let mut command = if rng.random_bool(0.3) {
        // A Unix time, long past for both servers' clocks.
        let when = pick(rng, &["1", "0", "-1", "x"]);
        words(&["PEXPIREAT", key, when])
    } else {
        let when = pick(rng, &["60000", "120000", "30000", "-1", "x"]);
        words(&["PEXPIRE", key, when])
    };
    for _ in 0..rng.random_range(0..4) {
        command.push(pick(rng, &["NX", "XX", "GT", "LT", "gt", "SOON"]).to_owned());
    }
    command
}

fn script(rng: &mut StdRng) -> Vec<String> {
    let sha = "da39a3ee5e6b4b0d3255bfef95601890afd80709";
    match rng.random_range(0..4) {
        0 => words(&["SCRIPT", "FLUSH", pick(rng, &["SYNC", "ASYNC", "LATER"])]),
        1 => words(&["SCRIPT", "EXISTS", sha, "x"]),
        2 => words(&["SCRIPT", "KILL"]),
        _ => words(&["SCRIPT", "FLUSH", "SYNC", "ASYNC"]),
    }
}

/// A list command on a list of its own, with its options and ranges.
fn list(rng: &mut StdRng) -> Vec<String> {
    let element = pick(rng, &["a", "b", "c"]);
    let index = |rng: &mut StdRng| rng.random_range(-4..5_i32).to_string();
    let mut command = match rng.random_range(0..8) {
        0 | 1 => {
            let mut push = words(&[pick(rng, &["LPUSH", "RPUSH"]), LIST]);
            for _ in 0..rng.random_range(1..4) {
                push.push(pick(rng, &["a", "b", "c"]).to_owned());
            }
            push
        }
        2 => words(&["LPOP", LIST, pick(rng, &["1", "2", "0", "-1", "x"])]),
        3 => words(&["LRANGE", LIST, &index(rng), &index(rng)]),
        4 => words(&["LINDEX", LIST, &index(rng)]),
        5 => words(&["LREM", LIST, &index(rng), element]),
        6 => words(&["LLEN", LIST]),
        _ => words(&["LPOS", LIST, element]),
    };
    if command[0] == "LPOS" {
        for _ in 0..rng.random_range(0..3) {
            let option = pick(rng, &["RANK", "COUNT", "MAXLEN", "rank", "LIMIT"]);
            command.push(option.to_owned());
            command.push(pick(rng, &["1", "2", "-1", "0", "-2", "x"]).to_owned());
        }
    }
    command
}

/// An unknown command (with arguments long enough to be cut in the error) or subcommand.
fn unknown(rng: &mut StdRng, key: &str) -> Vec<String> {
    let long = "x".repeat(rng.random_range(100..140));
    match rng.random_range(0..3) {
        0 => words(&["NOSUCH", key, &long, "y"]),
        1 => words(&[&long, "a", "b"]),
        _ => words(&["SCRIPT", pick(rng, &["NOSUCH", "help-me"]), key]),
    }
}
