//! The server-side scripts: one round trip per operation.
//!
//! Each is loaded once and called with EVALSHA; `redis::Script` reloads it on NOSCRIPT
//! (after SCRIPT FLUSH or a restart) and retries, transparently. The scripts that can
//! free a lock share the hand-off logic in `scripts/handoff.lua`, prepended at load.

use std::sync::LazyLock;

use redis::Script;

const HAND_OFF: &str = include_str!("scripts/handoff.lua");

fn with_hand_off(body: &str) -> Script {
    Script::new(&format!("{HAND_OFF}{body}"))
}

pub(super) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| with_hand_off(include_str!("scripts/acquire.lua")));
pub(super) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("scripts/renew.lua")));
pub(super) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| with_hand_off(include_str!("scripts/release.lua")));
pub(super) static WITHDRAW: LazyLock<Script> =
    LazyLock::new(|| with_hand_off(include_str!("scripts/withdraw.lua")));
