//! Lock events from plain commands on a lock's key, as from a script's: what the
//! checkers see does not depend on who wrote the key.

use super::*;

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

fn granted(owner: &str, fence: i64, ttl: Duration) -> LockEventKind {
    LockEventKind::Granted {
        key: LOCK.into(),
        owner: owner.into(),
        fence,
        ttl,
    }
}

fn released(owner: &str) -> LockEventKind {
    LockEventKind::Released {
        key: LOCK.into(),
        owner: owner.into(),
    }
}

#[test]
fn commands_on_a_lock_s_key_are_grants_renewals_and_releases() {
    let backend = Backend::new();
    backend.run(at(0), &["SET", FENCE, "41"]);
    backend.run(at(0), &["SET", LOCK, OWNER_A, "PX", "5000"]);
    backend.run(at(1_000), &["PEXPIRE", LOCK, "9000"]);
    // Overwritten without an expiry: a grant that never lapses.
    backend.run(at(2_000), &["SET", LOCK, OWNER_B]);
    backend.run(at(3_000), &["DEL", LOCK, LOCK]);
    // A reservation for a waiter is nobody's grant.
    backend.run(
        at(4_000),
        &["SET", LOCK, &format!("W{WAITER_B}"), "PX", "500"],
    );
    backend.run(at(5_000), &["SET", LOCK, OWNER_A, "PX", "5000"]);
    backend.run(at(6_000), &["FLUSHALL"]);
    let kinds = backend.kinds();
    let renewed = LockEventKind::Renewed {
        key: LOCK.into(),
        owner: OWNER_A.into(),
        ttl: Duration::from_secs(9),
    };
    assert_eq!(&kinds[..2], [granted(OWNER_A, 41, at(5_000)), renewed]);
    assert_eq!(kinds[2], released(OWNER_A));
    assert!(
        matches!(&kinds[3], LockEventKind::Granted { owner, ttl, .. }
            if owner == OWNER_B.as_bytes() && *ttl > YEAR),
        "{:?}",
        kinds[3]
    );
    assert_eq!(
        kinds[4..],
        [
            released(OWNER_B),
            granted(OWNER_A, 41, at(5_000)),
            released(OWNER_A)
        ]
    );
}

#[test]
fn only_a_namespace_s_quarantine_key_written_with_an_expiry_is_a_quarantine() {
    let backend = Backend::new();
    for command in [
        &["SET", QUARANTINE, "1"][..],
        &["SET", "{t}:other", "1", "PX", "5000"],
        &["SET", "{t}:quarantined", "1", "PX", "5000"],
        &["SET", "t:quarantine", "1", "PX", "5000"],
        &["RPUSH", QUARANTINE, "1"],
        &["DEL", QUARANTINE],
        &["GET", QUARANTINE],
    ] {
        backend.run(at(0), command);
    }
    assert_eq!(backend.kinds(), []);
    backend.run(at(0), &["SET", QUARANTINE, "1", "PX", "5000"]);
    assert_eq!(
        backend.kinds(),
        [LockEventKind::Quarantined {
            key: QUARANTINE.into(),
            ttl: at(5_000),
        }]
    );
}
