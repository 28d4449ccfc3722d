//! Any script runs in the server's Lua as in Redis 7: its values, its errors word for
//! word (each expected text below is what a real redis-server 7.0 answered), its
//! sandbox, and the lock events its commands make, whatever the script.

use super::*;
use crate::redis::lua::sha1_hex;

fn eval(backend: &Backend, script: &str, keys: &[&str], args: &[&str]) -> Frame {
    let numkeys = keys.len().to_string();
    let mut words = vec!["EVAL", script, &numkeys];
    words.extend_from_slice(keys);
    words.extend_from_slice(args);
    backend.run(at(0), &words)
}

/// The text of the error reply to `script`, its SHA1 shown as `<sha>`.
fn failure(backend: &Backend, script: &str) -> String {
    let Frame::Error(text) = eval(backend, script, &[], &[]) else {
        panic!("{script:?} did not fail");
    };
    String::from_utf8(text)
        .unwrap()
        .replace(&sha1_hex(script.as_bytes()), "<sha>")
}

#[test]
fn a_scripts_result_becomes_the_reply_redis_sends() {
    let backend = Backend::new();
    let cases: [(&str, Frame); 10] = [
        ("return 3.99", int(3)),
        ("return -0.5", int(0)),
        ("return true", int(1)),
        ("return false", Frame::NullBulk),
        ("return nil", Frame::NullBulk),
        ("return {1, nil, 2}", Frame::Array(vec![int(1)])),
        (
            "return {'a', false, {2, 'x'}}",
            Frame::Array(vec![
                Frame::bulk("a"),
                Frame::NullBulk,
                Frame::Array(vec![int(2), Frame::bulk("x")]),
            ]),
        ),
        ("return {ok='fine'}", Frame::simple("fine")),
        ("return {err='E a', ok='b'}", Frame::error("E a")),
        ("return {double=3.5}", Frame::bulk("3.5")),
    ];
    for (script, reply) in cases {
        assert_eq!(eval(&backend, script, &[], &[]), reply, "{script}");
    }
    assert_eq!(eval(&backend, "return math.huge", &[], &[]), int(i64::MIN));
    let keys_and_args = "return {KEYS[1], ARGV[2], #KEYS, #ARGV}";
    assert_eq!(
        eval(&backend, keys_and_args, &["k"], &["a", "b"]),
        Frame::Array(vec![Frame::bulk("k"), Frame::bulk("b"), int(1), int(2)])
    );
}

#[test]
fn replies_reach_the_script_as_redis_converts_them() {
    let backend = Backend::new();
    let script = "redis.call('SET', 'n', 1e20)
        local set = redis.call('SET', 'k', 'v')
        local missing = redis.call('GET', 'nokey')
        local failed = redis.pcall('INCR', 'k')
        return {set.ok, tostring(missing), failed.err, redis.call('GET', 'n'), redis.call('INCR', 'c') + 1}";
    assert_eq!(
        eval(&backend, script, &[], &[]),
        Frame::Array(vec![
            Frame::bulk("OK"),
            Frame::bulk("false"),
            Frame::bulk("ERR value is not an integer or out of range"),
            Frame::bulk("1e+20"),
            int(2),
        ])
    );
}

#[test]
fn a_failing_script_is_answered_with_redis_s_words_and_the_line_it_failed_on() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", "s", "abc"]);
    let cases = [
        (
            "return redis.call('INCR', 's')",
            "ERR value is not an integer or out of range script: <sha>, on @user_script:1.",
        ),
        (
            "local a = nil\nreturn a < 1",
            "ERR user_script:2: attempt to compare nil with number script: <sha>, on @user_script:2.",
        ),
        (
            "error('boom')",
            "ERR user_script:1: boom script: <sha>, on @user_script:1.",
        ),
        (
            "error({err='TABLE boom'})",
            "TABLE boom script: <sha>, on @user_script:1.",
        ),
        ("error()", "ERR nil script: <sha>, on @user_script:1."),
        (
            "local f = function()\n  return redis.call('INCR', 's')\nend\nreturn f()",
            "ERR value is not an integer or out of range script: <sha>, on @user_script:2.",
        ),
        (
            "return redis.call('nosuch')",
            "ERR Unknown Redis command called from script script: <sha>, on @user_script:1.",
        ),
        (
            "return redis.call('GET')",
            "ERR Wrong number of args calling Redis command from script script: <sha>, on @user_script:1.",
        ),
        (
            "return redis.call('SCRIPT', 'FLUSH')",
            "ERR This Redis command is not allowed from script script: <sha>, on @user_script:1.",
        ),
        (
            "return redis.call()",
            "ERR Please specify at least one argument for this redis lib call script: <sha>, on @user_script:1.",
        ),
        (
            "return redis.call('GET', {})",
            "ERR Lua redis lib command arguments must be strings or integers script: <sha>, on @user_script:1.",
        ),
        (
            "return math.random(0)",
            "ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: <sha>, on @user_script:1.",
        ),
        (
            "return redis.sha1hex()",
            "ERR wrong number of arguments script: <sha>, on @user_script:1.",
        ),
        (
            "retur",
            "ERR Error compiling script (new function): user_script:1: '=' expected near '<eof>'",
        ),
    ];
    for (script, expected) in cases {
        assert_eq!(failure(&backend, script), expected, "{script}");
    }
    // pcall gives the error as a value, without the position.
    let pcalled = eval(&backend, "return redis.pcall('INCR', 's')", &[], &[]);
    assert_eq!(
        pcalled,
        Frame::error("ERR value is not an integer or out of range")
    );
    let replies = [
        ("return redis.error_reply('MY bad')", "MY bad"),
        ("return redis.error_reply('-X y')", "X y"),
        ("return redis.error_reply('noprefix')", "ERR noprefix"),
        (
            "return redis.error_reply(5)",
            "ERR wrong number or type of arguments",
        ),
    ];
    for (script, expected) in replies {
        assert_eq!(
            eval(&backend, script, &[], &[]),
            Frame::error(expected),
            "{script}"
        );
    }
}

#[test]
fn scripts_cannot_change_or_invent_globals() {
    let backend = Backend::new();
    let cases = [
        (
            "x = 1",
            "ERR user_script:1: Attempt to modify a readonly table script: <sha>, on @user_script:1.",
        ),
        (
            "string.foo = 1",
            "ERR user_script:1: Attempt to modify a readonly table script: <sha>, on @user_script:1.",
        ),
        (
            "rawset(_G, 'z', 1)",
            "ERR Attempt to modify a readonly table script: <sha>, on @user_script:1.",
        ),
        (
            "return y",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: <sha>, on @user_script:1.",
        ),
        (
            "return type(print)",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: <sha>, on @user_script:1.",
        ),
        (
            "return type(debug)",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'debug' script: <sha>, on @user_script:1.",
        ),
    ];
    for (script, expected) in cases {
        assert_eq!(failure(&backend, script), expected, "{script}");
    }
    let available = "return {type(rawset), type(coroutine), type(unpack), type(loadstring), _VERSION, redis.sha1hex('')}";
    assert_eq!(
        eval(&backend, available, &[], &[]),
        Frame::Array(
            ["function", "table", "function", "function", "Lua 5.1"]
                .into_iter()
                .chain(["da39a3ee5e6b4b0d3255bfef95601890afd80709"])
                .map(Frame::bulk)
                .collect()
        )
    );
    // A chunk the script compiles gets the same globals, and bytecode is refused.
    assert!(
        failure(&backend, "loadstring('x = 1')()").contains("Attempt to modify a readonly table"),
    );
    let escape = "return loadstring('return type(print)')()";
    assert!(failure(&backend, escape).contains("nonexistent global variable 'print'"));
    let dumped = "local f, why = loadstring(string.dump(function() return 1 end)) \
                  return {tostring(f), why}";
    assert_eq!(
        eval(&backend, dumped, &[], &[]),
        Frame::Array(vec![
            Frame::bulk("nil"),
            Frame::bulk("the simulated Redis does not load Lua bytecode, only source")
        ])
    );
    let Frame::Error(text) = eval(&backend, "\x1bLuaQ", &[], &[]) else {
        panic!("bytecode was run");
    };
    assert!(text.ends_with(b"does not load Lua bytecode, only source"));
    // Locals are the script's own: a second script does not see the first's.
    eval(&backend, "local mine = 1 return mine", &[], &[]);
    assert!(failure(&backend, "return mine").contains("nonexistent global variable 'mine'"));
}

#[test]
fn math_random_draws_from_redis_s_generator() {
    let backend = Backend::new();
    // Redis 7 answers 525 too: its generator, seeded with 5.
    let seeded = "math.randomseed(5) return math.random(1000)";
    assert_eq!(eval(&backend, seeded, &[], &[]), int(525));
    // So does it to these, the bounds included (a range of one is its only value).
    let draws = "math.randomseed(5) return {math.random(1), math.random(3, 3), \
                 math.random(10, 20), math.random(-5, 5), math.random(7)}";
    assert_eq!(
        eval(&backend, draws, &[], &[]),
        Frame::Array([1, 3, 18, -3, 4].map(int).to_vec())
    );
    // One sequence for all the server's scripts: the next draw is another number.
    let next = eval(&backend, "return math.random(1000000)", &[], &[]);
    let again = eval(&backend, "return math.random(1000000)", &[], &[]);
    assert_ne!(next, again);
}

#[test]
fn a_script_that_runs_away_is_stopped_with_an_error_that_says_why() {
    let backend = Backend::new();
    let Frame::Error(text) = eval(&backend, "while true do end", &[], &[]) else {
        panic!("an endless script returned");
    };
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("stopped script"), "{text}");
    // The server goes on.
    assert_eq!(eval(&backend, "return 1", &[], &[]), int(1));
    // A script cannot catch being stopped.
    let stubborn = "while true do pcall(function() while true do end end) end";
    let Frame::Error(text) = eval(&backend, stubborn, &[], &[]) else {
        panic!("a script that swallows its stop returned");
    };
    assert!(String::from_utf8(text).unwrap().contains("stopped script"));
}

#[test]
fn a_result_that_holds_itself_is_an_error_not_a_crash() {
    let backend = Backend::new();
    let reply = eval(&backend, "local t = {} t[1] = t return t", &[], &[]);
    let mut depth = 0;
    let mut frame = &reply;
    while let Frame::Array(items) = frame {
        depth += 1;
        frame = &items[0];
    }
    assert_eq!(frame, &Frame::error("ERR reached lua stack limit"));
    assert_eq!(depth, 1_000);
}

#[test]
fn lock_events_come_from_what_any_script_does_to_a_lock_key() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, "41"]);
    // Not robit's scripts: a bare SET NX PX lock, and a compare-and-delete.
    let lock = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
                redis.call('INCR', KEYS[2]) return 1 end return 0";
    let unlock = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
                  return redis.call('DEL', KEYS[1]) end return 0";
    let extend = "return redis.call('PEXPIRE', KEYS[1], ARGV[1])";
    // INCR runs after the SET: the grant reports the counter as the script left it.
    assert_eq!(
        eval(&backend, lock, &[LOCK, FENCE], &[OWNER_A, "1000"]),
        int(1)
    );
    assert_eq!(
        eval(&backend, lock, &[LOCK, FENCE], &[OWNER_B, "1000"]),
        int(0)
    );
    assert_eq!(eval(&backend, extend, &[LOCK], &["5000"]), int(1));
    assert_eq!(eval(&backend, unlock, &[LOCK], &[OWNER_B]), int(0));
    assert_eq!(eval(&backend, unlock, &[LOCK], &[OWNER_A]), int(1));
    let key = LOCK.as_bytes().to_vec();
    let owner = OWNER_A.as_bytes().to_vec();
    assert_eq!(
        backend.kinds(),
        vec![
            LockEventKind::Granted {
                key: key.clone(),
                owner: owner.clone(),
                fence: 42,
                ttl: at(1_000),
            },
            LockEventKind::Renewed {
                key: key.clone(),
                owner: owner.clone(),
                ttl: at(5_000),
            },
            LockEventKind::Released { key, owner },
        ]
    );
    // A key that is not a lock's makes no event.
    eval(
        &backend,
        "return redis.call('SET', KEYS[1], 'x')",
        &[QUEUE],
        &[],
    );
    assert_eq!(backend.kinds().len(), 3);
}
