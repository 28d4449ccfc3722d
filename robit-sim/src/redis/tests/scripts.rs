//! robit's scripts: what each answers and writes, and the lock events it reports.

use super::*;

#[test]
fn acquire_grants_a_free_lock_with_a_token_from_the_servers_clock() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, "1"]);
    assert_eq!(
        backend.acquire(1_500, OWNER_A, "10000", None, "0"),
        grant(clock_token(at(1_500)), "")
    );
    // The grant and when it ends, and a key that expires then.
    assert_eq!(
        backend.run(at(1_500), &["GET", LOCK]),
        grant_value(OWNER_A, 1_500, 10_000, 1_500, "")
    );
    assert_eq!(backend.run(at(2_000), &["PTTL", LOCK]), int(9_500));
    let counter = clock_token(at(1_500)).to_string();
    assert_eq!(
        backend.run(at(1_500), &["GET", FENCE]),
        Frame::bulk(&counter)
    );
    let events = backend.events.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].at, events[0].peer.host.as_deref()),
        (at(1_500), Some("client-a"))
    );
    assert_eq!(
        events[0].kind,
        LockEventKind::Granted {
            key: LOCK.into(),
            owner: OWNER_A.into(),
            fence: clock_token(at(1_500)),
            ttl: at(10_000),
        }
    );
}

#[test]
fn a_held_lock_answers_its_time_left_and_queues_a_waiter_once_but_not_a_single_try() {
    let backend = Backend::new();
    backend.acquire(0, OWNER_A, "10000", None, "0");
    assert_eq!(
        backend.acquire(4_000, OWNER_B, "10000", None, "0"),
        pair(0, 6_000)
    );
    assert_eq!(backend.run(at(4_000), &["EXISTS", QUEUE]), int(0));
    assert_eq!(
        backend.run(at(4_000), &["GET", LOCK]),
        grant_value(OWNER_A, 0, 10_000, 0, "")
    );
    let waiter = Some((WAITER_B, 300));
    let first = backend.acquire_as(4_000, OWNER_B, "10000", waiter, "0", First::WaiterFirstTry);
    assert_eq!(first, pair(0, 6_000));
    assert_eq!(
        backend.acquire(4_100, OWNER_B, "10000", waiter, "0"),
        pair(0, 5_900)
    );
    let entry = format!("{WAITER_B}:300");
    let queued = backend.run(at(4_100), &["LRANGE", QUEUE, "0", "-1"]);
    assert_eq!(
        queued,
        Frame::Array(vec![Frame::bulk(&entry)]),
        "queued once"
    );
    assert_eq!(backend.run(at(4_100), &["PTTL", QUEUE]), int(4_000));
    // The holder's grant is marked as having waiters, its end unchanged; the key lives
    // until the later of that end and the queue's.
    assert_eq!(
        backend.run(at(4_100), &["GET", LOCK]),
        grant_value(OWNER_A, 0, 10_000, 0, ":q")
    );
    assert_eq!(backend.run(at(9_000), &["PTTL", LOCK]), int(1_000));
    assert_eq!(
        backend.acquire(9_000, OWNER_B, "10000", waiter, "0"),
        pair(0, 1_000)
    );
    assert_eq!(backend.run(at(9_000), &["PTTL", LOCK]), int(4_000));
    // Marking and keeping alive is not a renewal.
    assert_eq!(backend.kinds().len(), 1);
}

#[test]
fn release_hands_the_lock_to_the_first_waiter_and_publishes_its_id() {
    let backend = Backend::new();
    let (_subscribed, mut messages) = backend.subscriber();
    backend.acquire(0, OWNER_A, "10000", None, "0");
    backend.acquire(10, OWNER_B, "10000", Some((WAITER_B, 300)), "0");
    // The answer names the waiter, so that a driver in the same process can wake it.
    assert_eq!(backend.release(20, OWNER_A), Frame::bulk(WAITER_B));
    // The window is the longer of the hand-off window and twice the waiter's poll.
    let reservation = format!("W{WAITER_B}");
    assert_eq!(
        backend.run(at(20), &["GET", LOCK]),
        value(&reservation, 20, 600, ":q")
    );
    assert_eq!(backend.run(at(20), &["PTTL", LOCK]), int(600));
    assert_eq!(messages.try_recv().ok(), Some(published(WAITER_B)));
    // Another client cannot take it; the waiter it was reserved for can.
    assert_eq!(
        backend.acquire(30, OWNER_A, "10000", None, "0"),
        pair(0, 590)
    );
    let granted = backend.acquire(40, OWNER_B, "10000", Some((WAITER_B, 300)), "0");
    assert_eq!(granted, grant(clock_token(at(40)), ""));
    assert_eq!(backend.run(at(40), &["EXISTS", QUEUE]), int(0));
    assert_eq!(
        backend.run(at(40), &["GET", LOCK]),
        grant_value(OWNER_B, 40, 10_000, 40, ":q")
    );
    let kinds = backend.kinds();
    assert_eq!(kinds.len(), 3);
    assert!(
        matches!(&kinds[1], LockEventKind::Released { owner, .. } if owner == OWNER_A.as_bytes())
    );
    assert!(
        matches!(&kinds[2], LockEventKind::Granted { owner, ttl, .. } if owner == OWNER_B.as_bytes() && *ttl == at(10_000))
    );
    // Released by the last waiter: the queue is empty, so the lock is simply free.
    assert_eq!(backend.release(50, OWNER_B), int(1));
    assert_eq!(backend.run(at(50), &["EXISTS", LOCK]), int(0));
}

#[test]
fn a_queued_waiter_that_finds_the_key_gone_takes_the_lock_and_leaves_it_marked_for_the_rest() {
    let backend = Backend::new();
    backend.acquire(0, OWNER_A, "10000", None, "0");
    backend.acquire(1, OWNER_B, "10000", Some((WAITER_B, 100)), "0");
    backend.acquire(2, OWNER_B, "10000", Some((WAITER_C, 100)), "0");
    backend.run(at(3), &["DEL", LOCK]);
    assert_eq!(
        backend.acquire(4, OWNER_B, "10000", Some((WAITER_B, 100)), "0"),
        grant(clock_token(at(4)), "")
    );
    let entry = format!("{WAITER_C}:100");
    assert_eq!(
        backend.run(at(4), &["LRANGE", QUEUE, "0", "-1"]),
        Frame::Array(vec![Frame::bulk(&entry)])
    );
    assert_eq!(
        backend.run(at(4), &["GET", LOCK]),
        grant_value(OWNER_B, 4, 10_000, 4, ":q")
    );
    // So its release hands the lock on.
    assert_eq!(backend.release(5, OWNER_B), Frame::bulk(WAITER_C));
}

#[test]
fn a_lock_whose_holder_expired_with_waiters_queued_is_handed_on_by_the_next_acquire() {
    let backend = Backend::new();
    let (_subscribed, mut messages) = backend.subscriber();
    backend.acquire(0, OWNER_A, "1000", None, "0");
    backend.acquire(10, OWNER_B, "10000", Some((WAITER_B, 100)), "0");
    // The key outlives the grant, for the queue; the grant is over all the same.
    assert_eq!(backend.renew(1_001, OWNER_A, "1000"), int(0));
    assert_eq!(
        backend.acquire(1_001, OWNER_A, "10000", None, "0"),
        pair(0, 500)
    );
    let reservation = format!("W{WAITER_B}");
    assert_eq!(
        backend.run(at(1_001), &["GET", LOCK]),
        value(&reservation, 1_001, 500, ":q")
    );
    assert_eq!(messages.try_recv().ok(), Some(published(WAITER_B)));
    // The grant ended on its own at 1 000: handing the lock on is not its release.
    assert_eq!(backend.kinds().len(), 1, "{:?}", backend.kinds());
    // The waiter handed the lock polls first: it is granted at once.
    let backend = Backend::new();
    backend.acquire(0, OWNER_A, "1000", None, "0");
    backend.acquire(10, OWNER_B, "10000", Some((WAITER_B, 100)), "0");
    assert_eq!(
        backend.acquire(1_001, OWNER_B, "10000", Some((WAITER_B, 100)), "0"),
        grant(clock_token(at(1_001)), "")
    );
}

#[test]
fn a_missing_fence_counter_quarantines_a_namespace_the_caller_had_seen_until_the_quarantine_ends() {
    let backend = Backend::new();
    assert_eq!(
        backend.acquire(0, OWNER_A, "10000", None, "30000"),
        pair(2, 30_000)
    );
    let counter = format!("{}q", clock_token(at(0)));
    assert_eq!(backend.run(at(0), &["GET", FENCE]), Frame::bulk(&counter));
    assert_eq!(
        backend.acquire(1_000, OWNER_A, "10000", None, "30000"),
        pair(2, 29_000)
    );
    assert_eq!(backend.run(at(1_000), &["EXISTS", LOCK]), int(0));
    assert_eq!(
        backend.run(at(1_000), &["GET", FENCE]),
        Frame::bulk(&counter)
    );
    let granted = backend.acquire(30_001, OWNER_A, "10000", None, "30000");
    assert_eq!(granted, grant(clock_token(at(30_001)), ""));
    let counter = clock_token(at(30_001)).to_string();
    assert_eq!(
        backend.run(at(30_001), &["GET", FENCE]),
        Frame::bulk(&counter)
    );
    // The quarantine is reported once, when it was written, for its whole length.
    let kinds = backend.kinds();
    let quarantined = LockEventKind::Quarantined {
        key: QUARANTINE.into(),
        ttl: at(30_000),
    };
    assert_eq!(kinds.first(), Some(&quarantined));
    assert_eq!(kinds.iter().filter(|kind| **kind == quarantined).count(), 1);
}

#[test]
fn a_driver_that_never_saw_the_namespace_creates_it_and_is_granted_at_once() {
    let backend = Backend::new();
    let first = backend.acquire_as(0, OWNER_A, "10000", None, "30000", First::NewDriver);
    assert_eq!(first, grant_creating(clock_token(at(0))));
    assert_eq!(backend.run(at(0), &["EXISTS", QUARANTINE]), int(0));
    // Once created, the counter is there for everyone.
    backend.release(1, OWNER_A);
    assert_eq!(
        backend.acquire(2, OWNER_B, "10000", None, "30000"),
        grant(clock_token(at(2)), "")
    );
    // A quarantine running is honoured whoever asks.
    backend.run(at(3), &["SET", QUARANTINE, "1", "PX", "5000"]);
    let marked = format!("{}q", clock_token(at(2)));
    backend.run(at(3), &["SET", FENCE, &marked]);
    backend.release(3, OWNER_B);
    let late = backend.acquire_as(4, OWNER_A, "10000", None, "30000", First::NewDriver);
    assert_eq!(late, pair(2, 4_999));
}

#[test]
fn a_counter_ahead_of_the_clock_is_incremented() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, "9000000000000000"]);
    assert_eq!(
        backend.acquire(0, OWNER_A, "10000", None, "30000"),
        grant(9_000_000_000_000_001, "")
    );
    assert_eq!(
        backend.run(at(0), &["GET", FENCE]),
        Frame::bulk("9000000000000001")
    );
    // The grant carries the counter's token, not the clock's.
    let granted = backend.run(at(0), &["GET", LOCK]);
    let Frame::Bulk(granted) = granted else {
        panic!("a grant, got {granted:?}");
    };
    assert!(
        granted.ends_with(b"@9000000000000001"),
        "{}",
        String::from_utf8_lossy(&granted)
    );
    assert_eq!(
        backend.run(at(1), &["PTTL", LOCK]),
        int(9_999),
        "its expiry kept"
    );
}

#[test]
fn renew_and_release_touch_only_the_callers_own_grant() {
    let backend = Backend::new();
    backend.acquire(0, OWNER_A, "10000", None, "0");
    assert_eq!(backend.renew(500, OWNER_B, "20000"), int(0));
    assert_eq!(backend.run(at(500), &["PTTL", LOCK]), int(9_500));
    assert_eq!(backend.renew(500, OWNER_A, "20000"), int(1));
    assert_eq!(backend.run(at(500), &["PTTL", LOCK]), int(20_000));
    // Someone else's release takes the key and puts it back as it was.
    assert_eq!(backend.release(600, OWNER_B), int(0));
    assert_eq!(
        backend.run(at(600), &["GET", LOCK]),
        grant_value(OWNER_A, 500, 20_000, 0, "")
    );
    assert_eq!(backend.run(at(600), &["PTTL", LOCK]), int(19_900));
    assert_eq!(backend.release(700, OWNER_A), int(1));
    assert_eq!(backend.run(at(700), &["EXISTS", LOCK]), int(0));
    assert_eq!(backend.renew(800, OWNER_A, "20000"), int(0), "gone");
    let kinds = backend.kinds();
    assert!(matches!(&kinds[1], LockEventKind::Renewed { ttl, .. } if *ttl == at(20_000)));
    assert!(matches!(&kinds[2], LockEventKind::Released { .. }));
    assert_eq!(kinds.len(), 3);
}

#[test]
fn a_release_that_knows_its_grant_is_gone_reads_before_it_deletes() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", LOCK, "someone-else", "PX", "5000"]);
    let careful = [OWNER_A, CHANNEL, HANDOFF_MS, "1"];
    let released = backend.eval(at(1), RobitScript::Release, &[LOCK, QUEUE], &careful);
    assert_eq!(released, int(0));
    assert_eq!(backend.run(at(1), &["PTTL", LOCK]), int(4_999));
    // Without knowing, a value robit did not write is put back, without its expiry.
    assert_eq!(backend.release(2, OWNER_A), int(0));
    assert_eq!(
        backend.run(at(2), &["GET", LOCK]),
        Frame::bulk("someone-else")
    );
    assert_eq!(backend.run(at(2), &["PTTL", LOCK]), int(-1));
    // Its own grant, it deletes.
    backend.run(at(3), &["DEL", LOCK]);
    backend.acquire(3, OWNER_A, "10000", None, "0");
    let released = backend.eval(at(4), RobitScript::Release, &[LOCK, QUEUE], &careful);
    assert_eq!(released, int(1));
    assert_eq!(backend.run(at(4), &["EXISTS", LOCK]), int(0));
}

#[test]
fn renewing_a_grant_with_waiters_keeps_the_key_alive_for_them() {
    let backend = Backend::new();
    backend.acquire(0, OWNER_A, "1000", None, "0");
    backend.acquire(10, OWNER_B, "10000", Some((WAITER_B, 100)), "0");
    assert_eq!(backend.run(at(10), &["PTTL", LOCK]), int(4_000));
    assert_eq!(backend.renew(500, OWNER_A, "1000"), int(1));
    assert_eq!(
        backend.run(at(500), &["GET", LOCK]),
        grant_value(OWNER_A, 500, 1_000, 0, ":q")
    );
    assert_eq!(backend.run(at(500), &["PTTL", LOCK]), int(3_510));
    assert_eq!(backend.renew(600, OWNER_A, "9000"), int(1));
    assert_eq!(backend.run(at(600), &["PTTL", LOCK]), int(9_000));
}

#[test]
fn withdraw_leaves_the_queue_and_passes_on_the_waiters_reservation() {
    let backend = Backend::new();
    let (_subscribed, mut messages) = backend.subscriber();
    backend.acquire(0, OWNER_A, "10000", None, "0");
    backend.acquire(1, OWNER_B, "10000", Some((WAITER_B, 100)), "0");
    backend.acquire(2, OWNER_B, "10000", Some((WAITER_C, 100)), "0");
    backend.release(3, OWNER_A);
    assert_eq!(messages.try_recv().ok(), Some(published(WAITER_B)));
    assert_eq!(
        backend.withdraw(4, (WAITER_C, 100)),
        int(0),
        "not reserved for C"
    );
    assert_eq!(
        backend.run(at(4), &["LLEN", QUEUE]),
        int(0),
        "C left the queue"
    );
    backend.acquire(5, OWNER_B, "10000", Some((WAITER_C, 100)), "0");
    assert_eq!(backend.withdraw(6, (WAITER_B, 100)), Frame::bulk(WAITER_C));
    let reservation = format!("W{WAITER_C}");
    assert_eq!(
        backend.run(at(6), &["GET", LOCK]),
        value(&reservation, 6, 500, ":q")
    );
    assert_eq!(messages.try_recv().ok(), Some(published(WAITER_C)));
    // The last waiter withdrawing frees the lock: nobody to pass it to.
    assert_eq!(backend.withdraw(7, (WAITER_C, 100)), int(1));
    assert_eq!(backend.run(at(7), &["EXISTS", LOCK]), int(0));
}

#[test]
fn a_key_of_the_wrong_type_fails_acquire_before_any_write_but_release_just_answers_0() {
    let backend = Backend::new();
    backend.run(at(0), &["RPUSH", LOCK, "x"]);
    let Frame::Error(error) = backend.acquire(0, OWNER_A, "10000", None, "0") else {
        panic!("acquire succeeded on a list");
    };
    let source = RobitScript::Acquire.source();
    let line = 1 + source
        .lines()
        .position(|l| l.contains("redis.call('SET', KEYS[1], mine, 'NX'"))
        .unwrap();
    let expected = format!(
        "WRONGTYPE Operation against a key holding the wrong kind of value script: {}, on \
         @user_script:{line}.",
        RobitScript::Acquire.sha()
    );
    assert_eq!(String::from_utf8(error).unwrap(), expected);
    assert_eq!(
        backend.run(at(0), &["EXISTS", FENCE]),
        int(0),
        "nothing written"
    );
    assert_eq!(backend.release(0, OWNER_A), int(0));
    assert_eq!(backend.renew(0, OWNER_A, "1000"), int(0));
    assert_eq!(backend.run(at(0), &["LLEN", LOCK]), int(1), "left alone");
}

#[test]
fn a_fencing_counter_robit_did_not_write_fails_the_acquire_and_leaves_the_lock_free() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, "garbage"]);
    let reply = backend.acquire(0, OWNER_A, "10000", None, "0");
    assert!(
        matches!(&reply, Frame::Error(e) if e.starts_with(b"ERR robit: the fencing counter {t}:fence holds a value robit did not write")),
        "{reply:?}"
    );
    assert_eq!(backend.run(at(0), &["EXISTS", LOCK]), int(0));
    assert_eq!(backend.run(at(0), &["GET", FENCE]), Frame::bulk("garbage"));
    assert!(backend.kinds().is_empty());
}

#[test]
fn each_of_robit_s_scripts_is_named_as_its_own_text_names_it() {
    for kind in RobitScript::ALL {
        let mut title = kind.name().to_owned();
        title[..1].make_ascii_uppercase();
        assert!(
            kind.source().contains(&format!("\n-- {title}: "))
                || kind.source().starts_with(&format!("-- {title}: ")),
            "{kind:?} is named {:?}",
            kind.name()
        );
    }
}

#[test]
fn a_quarantine_marked_by_hand_twice_or_on_a_missing_counter_is_honoured_then_cleared() {
    for mark in [format!("{}qq", clock_token(at(0))), "q".to_owned()] {
        let backend = Backend::new();
        backend.run(at(0), &["SET", QUARANTINE, "1", "PX", "5000"]);
        backend.run(at(0), &["SET", FENCE, &mark]);
        assert_eq!(
            backend.acquire(1_000, OWNER_A, "10000", None, "30000"),
            pair(2, 4_000),
            "{mark}"
        );
        assert_eq!(backend.run(at(1_000), &["GET", FENCE]), Frame::bulk(&mark));
        assert_eq!(
            backend.acquire(5_001, OWNER_A, "10000", None, "30000"),
            grant(clock_token(at(5_001)), ""),
            "{mark}"
        );
        let counter = clock_token(at(5_001)).to_string();
        assert_eq!(
            backend.run(at(5_001), &["GET", FENCE]),
            Frame::bulk(&counter)
        );
    }
}
