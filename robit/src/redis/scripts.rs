//! The server-side scripts: one round trip per operation.
//!
//! Each is loaded once and called with EVALSHA; `redis::Script` reloads it on NOSCRIPT
//! (after SCRIPT FLUSH or a restart) and retries, transparently. The scripts that can
//! free a lock share the hand-off logic in `scripts/handoff.lua`, prepended at load.

use std::sync::LazyLock;

use redis::Script;

/// The exact text of every script the driver sends, hand-off prelude included.
///
/// Not part of the API: it exists so that a simulated server can recognise the scripts
/// by their SHA1 without keeping a copy of them that could drift.
#[doc(hidden)]
pub mod sources {
    /// Acquire: grant, queue, or refuse during a quarantine.
    pub const ACQUIRE: &str = concat!(
        include_str!("scripts/handoff.lua"),
        include_str!("scripts/acquire.lua")
    );
    /// Renew: extend the caller's own grant.
    pub const RENEW: &str = include_str!("scripts/renew.lua");
    /// Release: free the caller's own grant, handing it to the first waiter.
    pub const RELEASE: &str = concat!(
        include_str!("scripts/handoff.lua"),
        include_str!("scripts/release.lua")
    );
    /// Withdraw: a waiter leaves the queue and passes on its reservation.
    pub const WITHDRAW: &str = concat!(
        include_str!("scripts/handoff.lua"),
        include_str!("scripts/withdraw.lua")
    );
}

pub(super) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(sources::ACQUIRE));
pub(super) static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(sources::RENEW));
pub(super) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(sources::RELEASE));
pub(super) static WITHDRAW: LazyLock<Script> = LazyLock::new(|| Script::new(sources::WITHDRAW));
