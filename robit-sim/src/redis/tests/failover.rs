//! The acquire script's failover detection: a namespace whose counter names another
//! server than the caller's connection reaches is quarantined before anything is granted.

use super::*;

const SERVER_A: &str = "/0123456789abcdef0123456789abcdef";
const SERVER_B: &str = "/fedcba9876543210fedcba9876543210";

fn quarantined(left: i64, moved: bool) -> Frame {
    let mut answer = vec![int(2), int(left)];
    if moved {
        answer.push(int(1));
    }
    Frame::Array(answer)
}

fn counter(token: i64, mark: &str, server: &str) -> Frame {
    Frame::bulk(format!("{token}{mark}{server}"))
}

#[test]
fn a_grant_records_the_server_it_was_made_on_and_the_same_server_grants_on() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, &format!("1{SERVER_A}")]);
    assert_eq!(
        backend.acquire_on(1_000, OWNER_A, "30000", SERVER_A),
        grant(clock_token(at(1_000)), "")
    );
    assert_eq!(
        backend.run(at(1_000), &["GET", FENCE]),
        counter(clock_token(at(1_000)), "", SERVER_A)
    );
    backend.release(1_100, OWNER_A);
    assert_eq!(
        backend.acquire_on(1_200, OWNER_B, "30000", SERVER_A),
        grant(clock_token(at(1_200)), "")
    );
    assert_eq!(backend.run(at(1_200), &["EXISTS", QUARANTINE]), int(0));
}

#[test]
fn a_namespace_written_on_another_server_is_quarantined_before_any_grant() {
    let backend = Backend::new();
    // Server A granted; then this state is served by B (a promoted replica that missed
    // A's last grant, say).
    backend.run(at(0), &["SET", FENCE, &format!("1{SERVER_A}")]);
    assert_eq!(
        backend.acquire_on(0, OWNER_A, "30000", SERVER_A),
        grant(clock_token(at(0)), "")
    );
    backend.run(at(10), &["DEL", LOCK]);
    assert_eq!(
        backend.acquire_on(1_000, OWNER_B, "30000", SERVER_B),
        quarantined(30_000, true)
    );
    // Nothing granted, the counter marked and now naming B, the quarantine running.
    assert_eq!(backend.run(at(1_000), &["EXISTS", LOCK]), int(0));
    assert_eq!(
        backend.run(at(1_000), &["GET", FENCE]),
        counter(clock_token(at(0)), "q", SERVER_B)
    );
    assert_eq!(
        backend.run(at(1_000), &["GET", QUARANTINE]),
        Frame::bulk("moved")
    );
    // Every acquire on B is refused, and told why, until the quarantine ends.
    assert_eq!(
        backend.acquire_on(21_000, OWNER_B, "30000", SERVER_B),
        quarantined(10_000, true)
    );
    assert_eq!(
        backend.acquire_on(31_000, OWNER_B, "30000", SERVER_B),
        grant(clock_token(at(31_000)), "")
    );
    assert_eq!(
        backend.run(at(31_000), &["GET", FENCE]),
        counter(clock_token(at(31_000)), "", SERVER_B)
    );
    // A's grant (with its token), its key gone, the quarantine, and B's grant.
    let kinds = backend.kinds();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(
        matches!(kinds[0], LockEventKind::Granted { fence, .. } if fence == clock_token(at(0))),
        "{kinds:?}"
    );
    assert!(
        matches!(kinds[2], LockEventKind::Quarantined { .. }),
        "{kinds:?}"
    );
    assert!(
        matches!(kinds[3], LockEventKind::Granted { fence, .. } if fence == clock_token(at(31_000))),
        "{kinds:?}"
    );
}

#[test]
fn a_move_keeps_a_longer_quarantine_and_a_held_lock_stays_held() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, &format!("1{SERVER_A}")]);
    backend.acquire_on(0, OWNER_A, "30000", SERVER_A);
    backend.run(at(0), &["SET", QUARANTINE, "1", "PX", "60000"]);
    // The lock is still A's on B (the replica had it): B's acquire is refused as held.
    assert_eq!(
        backend.acquire_on(1_000, OWNER_B, "30000", SERVER_B),
        pair(0, 9_000)
    );
    // Once it is free, the move is found, and the longer quarantine kept.
    backend.run(at(2_000), &["DEL", LOCK]);
    assert_eq!(
        backend.acquire_on(2_000, OWNER_B, "30000", SERVER_B),
        quarantined(58_000, true)
    );
}

#[test]
fn a_counter_without_a_server_is_quarantined_by_a_detecting_driver_and_adopted_without_one() {
    let backend = Backend::new();
    // Written by a driver with detection off.
    backend.run(at(0), &["SET", FENCE, "5"]);
    assert_eq!(
        backend.acquire_on(1_000, OWNER_A, "30000", SERVER_A),
        quarantined(30_000, true)
    );
    // With the quarantine off, the move is taken as it is: granted, and recorded.
    let other = Backend::new();
    other.run(at(0), &["SET", FENCE, &format!("5{SERVER_A}")]);
    assert_eq!(
        other.acquire_on(1_000, OWNER_A, "0", SERVER_B),
        grant(clock_token(at(1_000)), "")
    );
    assert_eq!(
        other.run(at(1_000), &["GET", FENCE]),
        counter(clock_token(at(1_000)), "", SERVER_B)
    );
    // And a driver with detection off ignores the server the counter names.
    other.release(1_500, OWNER_A);
    assert_eq!(
        other.acquire_on(2_000, OWNER_B, "30000", ""),
        grant(clock_token(at(2_000)), "")
    );
}

#[test]
fn a_quarantine_marked_by_hand_after_the_server_identity_is_honoured() {
    let backend = Backend::new();
    // What `APPEND {ns}:fence q` makes of it (the simulated Redis has no APPEND).
    backend.run(at(0), &["SET", FENCE, &format!("1{SERVER_A}q")]);
    backend.run(at(0), &["SET", QUARANTINE, "1", "PX", "5000"]);
    assert_eq!(
        backend.acquire_on(1_000, OWNER_A, "30000", SERVER_A),
        quarantined(4_000, false)
    );
    assert_eq!(
        backend.run(at(1_000), &["GET", FENCE]),
        Frame::bulk(format!("1{SERVER_A}q"))
    );
    assert_eq!(
        backend.acquire_on(5_000, OWNER_A, "30000", SERVER_A),
        grant(clock_token(at(5_000)), "")
    );
    assert_eq!(
        backend.run(at(5_000), &["GET", FENCE]),
        counter(clock_token(at(5_000)), "", SERVER_A)
    );
}

#[test]
fn a_replica_promoted_lag_behind_has_the_dataset_as_it_was_lag_ago() {
    let backend = Backend::new();
    backend.state.replicate(at(3_000));
    backend.run(at(0), &["SET", "k", "1"]);
    backend.run(at(1_000), &["SET", "k", "2"]);
    backend.run(at(2_000), &["SET", "k", "3", "PX", "500"]);
    // 1.5 s behind at 2.5 s: the replica has applied the writes up to 1 s.
    backend.state.fail_over(at(2_500), at(1_500));
    assert_eq!(backend.run(at(2_500), &["GET", "k"]), Frame::bulk("2"));
    // The promoted replica replicates on, and a replica in sync has every write.
    backend.run(at(3_000), &["SET", "k", "4"]);
    backend.state.fail_over(at(3_000), Duration::ZERO);
    assert_eq!(backend.run(at(3_000), &["GET", "k"]), Frame::bulk("4"));
    // Behind every write since the last promotion: the dataset it was promoted with.
    backend.run(at(4_000), &["SET", "k", "5"]);
    backend.state.fail_over(at(4_000), at(2_000));
    assert_eq!(backend.run(at(4_000), &["GET", "k"]), Frame::bulk("4"));
    // After a restart that lost everything, the replica synced again: nothing older.
    backend.run(at(5_000), &["SET", "k", "6"]);
    backend.state.wipe();
    backend.state.fail_over(at(9_000), at(3_000));
    assert_eq!(backend.run(at(9_000), &["GET", "k"]), Frame::NullBulk);
}

#[test]
fn a_replica_keeps_only_what_a_promotion_within_its_window_can_reach() {
    let backend = Backend::new();
    backend.state.replicate(at(1_000));
    for second in 0..10 {
        backend.run(at(second * 1_000), &["SET", "k", &second.to_string()]);
    }
    // 1 s behind at 9 s reaches the write at 8 s, still kept.
    backend.state.fail_over(at(9_000), at(1_000));
    assert_eq!(backend.run(at(9_000), &["GET", "k"]), Frame::bulk("8"));
}
