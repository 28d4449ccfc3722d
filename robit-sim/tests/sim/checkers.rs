//! Each checker reports the violation it exists for, on a small hand-made history, and
//! stays quiet on the correct version of the same history.

use std::time::Duration;

use robit_sim::{CheckConfig, EventKind, History, Promise, Violation, check};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn acquired(h: &History, at: u64, who: &str, lease: u64, token: u64) {
    h.record_at(ms(at), who, EventKind::LockCalled);
    h.record_at(ms(at), who, EventKind::Acquired { lease, token });
}

fn granted(h: &History, at: u64, to: &str, token: u64, until: u64) {
    h.record_at(
        ms(at),
        "backend",
        EventKind::BackendGranted {
            to: to.into(),
            token,
            until: ms(until),
        },
    );
}

fn unlock(h: &History, at: u64, who: &str, lease: u64) {
    h.record_at(ms(at), who, EventKind::UnlockCalled { lease });
}

fn lost(h: &History, at: u64, who: &str, lease: u64) {
    h.record_at(
        ms(at),
        who,
        EventKind::Lost {
            lease,
            reason: "deadline".into(),
        },
    );
}

fn run(h: &History, promise: Promise) -> Vec<Violation> {
    check(h, &CheckConfig::new(ms(1000), ms(20_000)), &[promise])
}

#[test]
fn overlapping_beliefs_break_mutual_exclusion_and_sequential_ones_do_not() {
    let h = History::new();
    acquired(&h, 0, "a", 1, 1);
    unlock(&h, 100, "a", 1);
    acquired(&h, 100, "b", 1, 2);
    assert!(run(&h, Promise::MutualExclusion).is_empty());
    acquired(&h, 150, "a", 2, 3);
    let found = run(&h, Promise::MutualExclusion);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].clients, ["b", "a"]);
    assert_eq!(found[0].instants[0], ms(150));
}

#[test]
fn a_loss_after_the_backend_expiry_a_double_loss_and_a_loss_after_unlock_break_early_loss() {
    let h = History::new();
    granted(&h, 0, "a", 1, 1000);
    acquired(&h, 1, "a", 1, 1);
    lost(&h, 990, "a", 1);
    assert!(
        run(&h, Promise::EarlyLoss).is_empty(),
        "a loss before expiry is fine"
    );

    let late = History::new();
    granted(&late, 0, "a", 1, 1000);
    acquired(&late, 1, "a", 1, 1);
    lost(&late, 1200, "a", 1);
    let found = run(&late, Promise::EarlyLoss);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].instants, [ms(1000), ms(1200)]);

    let twice = History::new();
    acquired(&twice, 0, "a", 1, 1);
    lost(&twice, 100, "a", 1);
    lost(&twice, 200, "a", 1);
    assert!(run(&twice, Promise::EarlyLoss)[0].message.contains("twice"));

    let after_unlock = History::new();
    acquired(&after_unlock, 0, "a", 1, 1);
    unlock(&after_unlock, 100, "a", 1);
    lost(&after_unlock, 150, "a", 1);
    assert!(
        run(&after_unlock, Promise::EarlyLoss)[0]
            .message
            .contains("after its unlock")
    );
}

#[test]
fn an_unlock_after_the_backend_could_grant_the_lock_again_breaks_early_loss() {
    let h = History::new();
    granted(&h, 0, "a", 1, 1000);
    acquired(&h, 1, "a", 1, 1);
    unlock(&h, 1500, "a", 1);
    let found = run(&h, Promise::EarlyLoss);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("unlocked"),
        "{}",
        found[0].message
    );

    let dropped = History::new();
    granted(&dropped, 0, "a", 1, 1000);
    acquired(&dropped, 1, "a", 1, 1);
    dropped.record_at(ms(1200), "a", EventKind::Dropped { lease: 1 });
    assert_eq!(run(&dropped, Promise::EarlyLoss).len(), 1);

    let in_time = History::new();
    granted(&in_time, 0, "a", 1, 1000);
    acquired(&in_time, 1, "a", 1, 1);
    unlock(&in_time, 900, "a", 1);
    assert!(run(&in_time, Promise::EarlyLoss).is_empty());
}

#[test]
fn a_loss_with_no_fault_nearby_is_spurious_and_one_during_a_partition_is_not() {
    let h = History::new();
    acquired(&h, 0, "a", 1, 1);
    lost(&h, 5000, "a", 1);
    assert_eq!(run(&h, Promise::NoSpuriousLoss).len(), 1);

    let excused = History::new();
    excused.record_at(
        ms(3500),
        "world",
        EventKind::Fault {
            what: "partition a | backend".into(),
            ended: false,
        },
    );
    acquired(&excused, 0, "a", 1, 1);
    lost(&excused, 5000, "a", 1);
    assert!(run(&excused, Promise::NoSpuriousLoss).is_empty());
}

#[test]
fn tokens_that_go_backwards_or_repeat_and_accepted_stale_writes_break_fencing() {
    let h = History::new();
    granted(&h, 0, "a", 5, 1000);
    acquired(&h, 1, "a", 1, 5);
    unlock(&h, 10, "a", 1);
    granted(&h, 20, "b", 6, 1020);
    acquired(&h, 21, "b", 1, 6);
    h.record_at(
        ms(30),
        "storage",
        EventKind::WriteAccepted {
            from: "b".into(),
            token: 6,
        },
    );
    assert!(run(&h, Promise::Fencing).is_empty());

    h.record_at(
        ms(40),
        "storage",
        EventKind::WriteAccepted {
            from: "a".into(),
            token: 5,
        },
    );
    let found = run(&h, Promise::Fencing);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("stale write from a (token 5)"));

    let backwards = History::new();
    granted(&backwards, 0, "a", 5, 1000);
    granted(&backwards, 2000, "b", 3, 3000);
    assert!(
        run(&backwards, Promise::Fencing)[0]
            .message
            .contains("granted token 3 to b after token 5")
    );

    let reordered = History::new();
    acquired(&reordered, 0, "a", 1, 9);
    unlock(&reordered, 10, "a", 1);
    acquired(&reordered, 20, "b", 1, 4);
    assert_eq!(run(&reordered, Promise::Fencing).len(), 1);
}

#[test]
fn a_waiter_left_waiting_on_a_free_lock_after_faults_heal_breaks_liveness() {
    let h = History::new();
    acquired(&h, 0, "a", 1, 1);
    unlock(&h, 100, "a", 1);
    h.record_at(ms(200), "b", EventKind::LockCalled);
    h.record_at(ms(900), "b", EventKind::Acquired { lease: 1, token: 2 });
    assert!(
        run(&h, Promise::Liveness).is_empty(),
        "a 700 ms wait is within the bound"
    );

    let stuck = History::new();
    acquired(&stuck, 0, "a", 1, 1);
    unlock(&stuck, 100, "a", 1);
    stuck.record_at(ms(200), "b", EventKind::LockCalled);
    stuck.record_at(ms(5000), "b", EventKind::Acquired { lease: 1, token: 2 });
    let found = run(&stuck, Promise::Liveness);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].instants, [ms(200), ms(5000)]);
}

#[test]
fn a_renew_or_release_by_someone_other_than_the_holder_breaks_safe_release() {
    let h = History::new();
    granted(&h, 0, "a", 1, 1000);
    h.record_at(
        ms(300),
        "backend",
        EventKind::BackendRenewed {
            by: "a".into(),
            token: 1,
            until: ms(1300),
        },
    );
    h.record_at(
        ms(400),
        "backend",
        EventKind::BackendReleased {
            by: "a".into(),
            token: 1,
        },
    );
    assert!(run(&h, Promise::SafeRelease).is_empty());
    h.record_at(
        ms(500),
        "backend",
        EventKind::BackendReleased {
            by: "b".into(),
            token: 1,
        },
    );
    let found = run(&h, Promise::SafeRelease);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].clients, ["b", "a"]);
}

#[test]
fn only_the_promises_asked_for_are_checked() {
    let h = History::new();
    acquired(&h, 0, "a", 1, 1);
    acquired(&h, 10, "b", 1, 1);
    assert!(run(&h, Promise::Liveness).is_empty());
    let all = check(&h, &CheckConfig::new(ms(1000), ms(20_000)), &Promise::ALL);
    assert!(all.iter().any(|v| v.promise == Promise::MutualExclusion));
    assert!(all.iter().any(|v| v.promise == Promise::Fencing));
}

#[test]
fn mutexes_of_one_host_are_separate_clients_whose_grants_the_backend_names_by_host() {
    // Two mutexes of host "h", one after the other, each with a grant the backend made
    // to "h": no violation.
    let h = History::new();
    granted(&h, 0, "h", 1, 1000);
    acquired(&h, 1, "h#1", 1, 1);
    unlock(&h, 100, "h#1", 1);
    granted(&h, 101, "h", 2, 1101);
    acquired(&h, 102, "h#2", 1, 2);
    unlock(&h, 200, "h#2", 1);
    for promise in [Promise::MutualExclusion, Promise::EarlyLoss] {
        assert!(run(&h, promise).is_empty(), "{promise:?}");
    }
    // The second mutex of the host holding while the first still does is two holders;
    // and an unlock after the grant to the host expired is a late loss.
    let overlap = History::new();
    granted(&overlap, 0, "h", 1, 1000);
    acquired(&overlap, 1, "h#1", 1, 1);
    acquired(&overlap, 50, "h#2", 1, 2);
    let found = run(&overlap, Promise::MutualExclusion);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].clients, ["h#1", "h#2"]);
    let late = History::new();
    granted(&late, 0, "h", 1, 1000);
    acquired(&late, 1, "h#2", 1, 1);
    unlock(&late, 1500, "h#2", 1);
    assert_eq!(run(&late, Promise::EarlyLoss).len(), 1);
}

#[test]
fn a_host_crash_ends_the_beliefs_of_all_its_mutexes() {
    // h#1 holds until h crashes; h#2 waits. After the crash g acquires: no two holders.
    let h = History::new();
    acquired(&h, 0, "h#1", 1, 1);
    h.record_at(ms(10), "h#2", EventKind::LockCalled);
    h.record_at(ms(500), "h", EventKind::Crashed);
    acquired(&h, 600, "g", 1, 2);
    assert!(run(&h, Promise::MutualExclusion).is_empty());
}
