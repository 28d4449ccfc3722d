//! Key names. Part of the on-server format: every client of a namespace must agree.
//!
//! ```text
//! {<namespace>}:lock:<name>    the lock: <owner token>:<until> or W<waiter id>:<until>,
//!                              ":q" appended once waiters queued (scripts/common.lua)
//! {<namespace>}:queue:<name>   list of waiter entries, oldest first
//! {<namespace>}:fence          the last fencing token, one per namespace, no TTL;
//!                              "<token>q" while a quarantine may be running
//! {<namespace>}:quarantine     present while grants are suspended after state loss
//! <namespace>:handoff          pub/sub channel: the id of the waiter a lock went to
//! ```
//!
//! All keys of a namespace share the hash tag `{<namespace>}`, so every script touches a
//! single Redis Cluster slot. Lock names are arbitrary bytes; they come after the tag, so
//! braces in a name do not change the slot.
//!
//! In cluster mode ([`RedisDriver::cluster`](super::RedisDriver::cluster)) a namespace
//! is cut into [`BUCKETS`] buckets instead, each with its own hash tag
//! `{<namespace>:<bucket>}`, its own fencing counter and its own quarantine key; a lock
//! name's bucket is a hash of its bytes ([`bucket`]). A namespace's locks
//! then spread over every master, while each script still touches one slot: a lock's
//! keys and its bucket's counter share the bucket's tag.

use std::borrow::Cow;

use crate::driver::LockName;

use super::config::Settings;
use super::scripts::args::Key;

pub(super) use crate::driver::{BUCKETS, bucket};

/// The keys of one lock name's script calls: its lock and queue, and the fencing counter
/// and quarantine key that guard it (the namespace's, or in cluster mode its bucket's).
pub(super) struct NameKeys<'a> {
    /// `{<namespace>}`, or `{<namespace>:<bucket>}` in cluster mode.
    tag: Cow<'a, str>,
    name: &'a [u8],
}

impl NameKeys<'_> {
    /// `<tag>:lock:<name>`.
    pub(super) fn lock(&self) -> Key<'_> {
        Key::new(self.tag.as_bytes(), b":lock:", self.name)
    }

    /// `<tag>:queue:<name>`.
    pub(super) fn queue(&self) -> Key<'_> {
        Key::new(self.tag.as_bytes(), b":queue:", self.name)
    }

    /// `<tag>:fence`.
    pub(super) fn fence(&self) -> Key<'_> {
        Key::new(self.tag.as_bytes(), b":fence", b"")
    }

    /// `<tag>:quarantine`.
    pub(super) fn quarantine(&self) -> Key<'_> {
        Key::new(self.tag.as_bytes(), b":quarantine", b"")
    }

    /// Room enough, in bytes, for the keys and arguments of any script call on the name:
    /// its keys, the channel, and tokens and numbers (the largest call, an acquire with
    /// every argument at its longest, has 272 bytes besides the tag, the name and the
    /// channel).
    pub(super) fn call_bytes(&self, channel: &str) -> usize {
        4 * self.tag.len() + 2 * self.name.len() + channel.len() + 300
    }
}

impl Settings {
    /// Whether a release may grant the lock straight to a waiter queued by these
    /// settings' acquire, which then sends its queue entry with its span
    /// (release_rest.lua): not a quorum's `member` (a grant on one server is not the
    /// quorum's), nor with replica acknowledgements (a release waits for none).
    pub(super) fn grants_to_waiters(&self, member: bool) -> bool {
        !member && self.replica_acks.is_none()
    }

    /// The keys of the lock `name`.
    pub(super) fn keys<'a>(&'a self, name: &'a LockName) -> NameKeys<'a> {
        let name = name.as_bytes();
        NameKeys {
            tag: self.bucket_tag(self.spread.then(|| bucket(name))),
            name,
        }
    }

    /// The keys of bucket `bucket` in cluster mode, for calls that touch no lock (the
    /// creation of a namespace's counters, a ping); the namespace's own without buckets.
    pub(super) fn bucket_keys(&self, bucket: u32) -> NameKeys<'_> {
        NameKeys {
            tag: self.bucket_tag(self.spread.then_some(bucket)),
            name: b"",
        }
    }

    fn bucket_tag(&self, bucket: Option<u32>) -> Cow<'_, str> {
        match bucket {
            Some(bucket) => Cow::Owned(format!("{{{}:{bucket}}}", self.namespace)),
            None => Cow::Borrowed(&self.tag),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_release_grants_straight_only_to_a_single_server_s_waiter_without_replica_acks() {
        let plain = crate::redis::RedisDriver::builder("redis://localhost")
            .build()
            .unwrap();
        assert!(plain.inner.settings.grants_to_waiters(false));
        assert!(
            !plain.inner.settings.grants_to_waiters(true),
            "a quorum's member"
        );
        let acked = crate::redis::RedisDriver::builder("redis://localhost")
            .replica_acks(1, std::time::Duration::from_millis(100))
            .build()
            .unwrap();
        assert!(!acked.inner.settings.grants_to_waiters(false));
    }
}
