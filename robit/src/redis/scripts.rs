//! The server-side scripts: one round trip per operation.
//!
//! Each is loaded once and called with EVALSHA; `redis::Script` reloads it on NOSCRIPT
//! (after SCRIPT FLUSH or a restart) and retries, transparently.

use std::sync::LazyLock;

use redis::Script;

pub(super) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/acquire.lua")));
pub(super) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/renew.lua")));
pub(super) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/release.lua")));
pub(super) static WITHDRAW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/withdraw.lua")));
