//! The commands around the scripts: SCRIPT LOAD / EXISTS / FLUSH, EVALSHA, and a
//! subscribed connection's commands.

use super::*;

#[test]
fn scripts_are_loaded_flushed_and_lost_like_redis_does() {
    let backend = Backend::new();
    let sha = RobitScript::Renew.sha();
    let evalsha =
        |backend: &Backend| backend.run(at(0), &["EVALSHA", sha, "1", LOCK, OWNER_A, "1"]);
    let noscript = Frame::error("NOSCRIPT No matching script. Please use EVAL.");
    assert_eq!(evalsha(&backend), noscript);
    assert_eq!(
        backend.run(at(0), &["SCRIPT", "LOAD", RobitScript::Renew.source()]),
        Frame::bulk(sha)
    );
    assert_eq!(evalsha(&backend), int(0));
    let upper = sha.to_ascii_uppercase();
    assert_eq!(
        backend.run(at(0), &["SCRIPT", "EXISTS", &upper, "ff"]),
        Frame::Array(vec![int(1), int(0)])
    );
    assert_eq!(backend.run(at(0), &["SCRIPT", "FLUSH"]), Frame::ok());
    assert_eq!(evalsha(&backend), noscript);
    backend.run(at(0), &["SCRIPT", "LOAD", RobitScript::Renew.source()]);
    backend.state.wipe();
    assert_eq!(evalsha(&backend), noscript);
    // A script EVAL ran is kept for EVALSHA, as in Redis 7.
    assert_eq!(
        backend.run(at(0), &["EVAL", "return 'x'", "0"]),
        Frame::bulk("x")
    );
    let sha = crate::redis::lua::sha1_hex(b"return 'x'");
    assert_eq!(
        backend.run(at(0), &["EVALSHA", &sha, "0"]),
        Frame::bulk("x")
    );
}

#[test]
fn a_subscribed_connection_takes_only_subscription_commands_and_pings() {
    let backend = Backend::new();
    let (mut session, _pushes) = backend.subscriber();
    let mut replies = Vec::new();
    let mut send = |words: &[&str]| {
        replies.clear();
        let command: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        let next = session.handle(at(0), &command, &mut replies);
        (next, replies.clone())
    };
    let (_, refused) = send(&["GET", "k"]);
    assert!(matches!(&refused[..], [Frame::Error(e)] if e.starts_with(b"ERR Can't execute 'get'")));
    let pong = Frame::Array(vec![Frame::bulk("pong"), Frame::bulk("")]);
    assert_eq!(send(&["PING"]).1, vec![pong]);
    let left = Frame::Array(vec![
        Frame::bulk("unsubscribe"),
        Frame::bulk(CHANNEL),
        int(0),
    ]);
    assert_eq!(send(&["UNSUBSCRIBE"]).1, vec![left]);
    assert_eq!(send(&["PING"]).1, vec![Frame::simple("PONG")]);
    assert_eq!(
        send(&["CLIENT", "SETINFO", "LIB-NAME", "redis-rs"]).1,
        vec![Frame::ok()]
    );
    assert!(matches!(&send(&["HELLO", "3"]).1[..], [Frame::Error(e)] if e.starts_with(b"NOPROTO")));
    // Refused by design, with an error that says so (not that it needs a connection).
    assert!(matches!(&send(&["PSUBSCRIBE", "t:*"]).1[..],
        [Frame::Error(e)] if e.ends_with(b"does not support pattern subscriptions")));
    assert_eq!(send(&["SELECT", "0"]).1, vec![Frame::ok()]);
    assert_eq!(send(&["QUIT"]), (Next::Close, vec![Frame::ok()]));
}

#[test]
fn set_s_expiry_options_set_exactly_the_time_asked_for() {
    let backend = Backend::new();
    for (unit, amount, ms) in [
        ("EX", "60", 60_000),
        ("PX", "60000", 60_000),
        ("ex", "1", 1_000),
    ] {
        assert_eq!(
            backend.run(at(5), &["SET", "k", "v", unit, amount]),
            Frame::ok()
        );
        assert_eq!(
            backend.run(at(5), &["PTTL", "k"]),
            int(ms),
            "SET {unit} {amount}"
        );
    }
    // Seconds that overflow in milliseconds are refused, as by Redis.
    let too_long = (i64::MAX / 1000 + 1).to_string();
    assert_eq!(
        backend.run(at(5), &["SET", "k", "v", "EX", &too_long]),
        Frame::error("ERR invalid expire time in 'set' command")
    );
}
