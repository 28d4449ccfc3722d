//! Which server, and which life of it, a command connection reaches: so that a namespace
//! whose state another server wrote is quarantined before anything is granted in it.
//!
//! A failover to a replica that lagged, or a restart from a snapshot or an AOF, brings
//! back a namespace that lacks its last grants: their holders still believe in them, and
//! the lock keys that would keep others out are gone. The fencing counter survives, so
//! the namespace does not look lost. What changed is the server: the namespace's counter
//! records the identity of the server that last granted in it (`<token>/<identity>`,
//! see `redis/keys.rs`), every grant reads the identity of the server it runs on, and
//! the acquire script quarantines the namespace when the two differ.
//!
//! The acquire script reads the identity of the server it runs on (`INFO server
//! replication`, from inside the script), on every call that grants: a connection can
//! outlive a change of its server's role. `REPLICAOF` neither closes a demoted primary's
//! connections nor refuses them until a write arrives on them, so a connection idle
//! through a failover and a failback, and an identity learned when it opened, would take
//! the old primary, back with an older namespace, for the life that wrote it. The
//! identity is 16 hex digits of the server's `run_id`, new at every start, followed by
//! 16 of its `master_replid`, new at every promotion of a replica. A connection checks,
//! in its first round trip, that its server names both.

use crate::driver::DriverError;

/// Hex digits taken from each of `run_id` and `master_replid`: 64 bits each, so two lives
/// of servers never share an identity by chance.
const DIGITS: usize = 16;

/// What the acquire script takes for the server's identity: [`ASK`](Self::ASK) (read it
/// there), or nothing when detection is off; the script records it as `/<run id
/// digits><replication id digits>`, the form [`parse`](Self::parse) checks a server
/// names. Built on the stack; copied with every call.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::redis) struct Identity {
    bytes: [u8; 1 + 2 * DIGITS],
    len: u8,
}

impl Identity {
    /// No identity: the scripts neither record nor compare one.
    pub(in crate::redis) const OFF: Self = Self {
        bytes: [0; 1 + 2 * DIGITS],
        len: 0,
    };

    /// "Ask the server": the acquire script reads the identity of the server it runs on
    /// itself (`INFO server replication`, from inside the script), so that neither a
    /// call redirected in cluster mode nor a connection that outlived a role change
    /// answers for another server, or another life of it.
    pub(in crate::redis) const ASK: Self = {
        let mut bytes = [0; 1 + 2 * DIGITS];
        bytes[0] = b'*';
        Self { bytes, len: 1 }
    };

    /// The identity an `INFO server replication` answer gives, if it has both fields.
    pub(in crate::redis) fn parse(info: &str) -> Option<Self> {
        let field = |name: &str| {
            info.lines().find_map(|line| {
                let value = line.strip_prefix(name)?.strip_prefix(':')?.trim_end();
                (value.len() >= DIGITS && value.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| value[..DIGITS].to_ascii_lowercase())
            })
        };
        let (run, replication) = (field("run_id")?, field("master_replid")?);
        let mut bytes = [0; 1 + 2 * DIGITS];
        bytes[0] = b'/';
        bytes[1..=DIGITS].copy_from_slice(run.as_bytes());
        bytes[1 + DIGITS..].copy_from_slice(replication.as_bytes());
        Some(Self {
            bytes,
            len: 1 + 2 * DIGITS as u8,
        })
    }

    pub(in crate::redis) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl crate::redis::config::Settings {
    /// What every script call of these settings takes for the server's identity:
    /// [`Identity::ASK`] with failover detection on, [`Identity::OFF`] with it off.
    pub(in crate::redis) fn identity(&self) -> &'static Identity {
        if self.detect_failover {
            &Identity::ASK
        } else {
            &Identity::OFF
        }
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

/// The error for a server whose `INFO` lacks `run_id` or `master_replid`.
pub(in crate::redis) fn unknown() -> DriverError {
    DriverError::rejected(
        "the server's INFO names no run_id or master_replid, which robit reads to detect a \
         failover or a restart from older data: use Redis 7.0 or later, or turn the \
         detection off with RedisDriverBuilder::detect_failover(false) (docs/redis.md)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_is_the_run_id_and_the_replication_id_and_needs_both() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:0123456789ABCDEF0123456789abcdef01234567\r\n\
                    \r\n# Replication\r\nrole:master\r\nmaster_replid:fedcba9876543210fedcba9876543210fedcba98\r\n\
                    master_replid2:0000000000000000000000000000000000000000\r\n";
        let identity = Identity::parse(info).unwrap();
        assert_eq!(identity.as_bytes(), b"/0123456789abcdeffedcba9876543210");
        assert_eq!(Identity::parse("run_id:0123456789abcdef0123\r\n"), None);
        assert_eq!(
            Identity::parse("master_replid:0123456789abcdef0123\r\n"),
            None
        );
        assert_eq!(
            Identity::parse("run_id:short\r\nmaster_replid:0123456789abcdef0123\r\n"),
            None
        );
        // Each field must be at least 16 hex digits.
        let replid = "master_replid:0123456789abcdef0123\r\n";
        for run in ["run_id:abc", "run_id:0123456789abcdeX0123"] {
            assert_eq!(
                Identity::parse(&format!("{run}\r\n{replid}")),
                None,
                "{run}"
            );
        }
        assert_eq!(format!("{identity:?}"), "/0123456789abcdeffedcba9876543210");
        assert_eq!(Identity::OFF.as_bytes(), b"");
        assert_eq!(Identity::ASK.as_bytes(), b"*");
    }
}
