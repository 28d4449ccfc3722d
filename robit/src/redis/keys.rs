//! Key names. Part of the on-server format: every client of a namespace must agree.
//!
//! ```text
//! {<namespace>}:lock:<name>    the lock: owner token (32 hex digits) or W<waiter id>
//! {<namespace>}:queue:<name>   list of waiter ids, oldest first
//! {<namespace>}:fence          the fencing counter, one per namespace, no TTL
//! {<namespace>}:quarantine     present while grants are suspended after state loss
//! <namespace>:handoff          pub/sub channel: the id of the waiter a lock went to
//! ```
//!
//! All keys of a namespace share the hash tag `{<namespace>}`, so every script touches a
//! single Redis Cluster slot. Lock names are arbitrary bytes; they come after the tag, so
//! braces in a name do not change the slot.

use crate::LockName;

use super::config::Settings;

/// The keys of one lock.
#[derive(Debug, Clone)]
pub(super) struct LockKeys {
    pub(super) lock: Vec<u8>,
    pub(super) queue: Vec<u8>,
}

impl Settings {
    pub(super) fn lock_keys(&self, name: &LockName) -> LockKeys {
        let key = |kind: &str| {
            let mut key = Vec::with_capacity(self.tag.len() + kind.len() + name.as_bytes().len());
            key.extend_from_slice(self.tag.as_bytes());
            key.extend_from_slice(kind.as_bytes());
            key.extend_from_slice(name.as_bytes());
            key
        };
        LockKeys {
            lock: key(":lock:"),
            queue: key(":queue:"),
        }
    }
}
