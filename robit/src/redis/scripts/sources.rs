//! The exact text of every script the driver sends, common prelude included.
//!
//! Not part of the API: it exists so that a simulated server can recognise the scripts
//! by their SHA1 without keeping a copy of them that could drift.

/// Acquire: grant, queue, or refuse during a quarantine. The uncontended grant comes
/// before the common prelude, so that it does not pay for defining its functions.
pub const ACQUIRE: &str = concat!(
    include_str!("acquire.lua"),
    include_str!("common.lua"),
    include_str!("acquire_rest.lua")
);
/// Renew: extend the caller's own grant.
pub const RENEW: &str = concat!(include_str!("common.lua"), include_str!("renew.lua"));
/// Release: free the caller's own grant, handing it to the first waiter. The
/// uncontended release comes before the common prelude, as acquire's does.
pub const RELEASE: &str = concat!(
    include_str!("release.lua"),
    include_str!("common.lua"),
    include_str!("release_rest.lua")
);
/// Withdraw: a waiter leaves the queue and passes on its reservation.
pub const WITHDRAW: &str = concat!(include_str!("common.lua"), include_str!("withdraw.lua"));
/// Inspect: what a lock's keys hold, for an operator.
pub const INSPECT: &str = concat!(include_str!("common.lua"), include_str!("inspect.lua"));
/// Raise: lift a quorum member's fencing counter to the quorum's token.
pub const RAISE: &str = concat!(include_str!("common.lua"), include_str!("raise.lua"));
/// Create: a new namespace's fencing counter in one bucket, in cluster mode.
pub const CREATE: &str = include_str!("create.lua");
/// Acquire, for many callers at once (`redis/transport/batch/`): acquire's code as
/// a function of its keys and arguments, run for each item, and a quicker grant for
/// the uncontended ones, which share one reading of the clock and of the counter.
pub const ACQUIRE_MANY: &str = concat!(
    include_str!("common.lua"),
    include_str!("many.lua"),
    "local function acquire_one(KEYS, ARGV)\n",
    include_str!("acquire.lua"),
    include_str!("acquire_rest.lua"),
    "end\n",
    include_str!("acquire_many.lua")
);
/// Renew, for many grants at once: renew's code run for each item.
pub const RENEW_MANY: &str = concat!(
    include_str!("common.lua"),
    include_str!("many.lua"),
    "local function renew_one(KEYS, ARGV)\n",
    include_str!("renew.lua"),
    "end\n",
    include_str!("renew_many.lua")
);
/// Release, for many grants at once: release's code run for each item.
pub const RELEASE_MANY: &str = concat!(
    include_str!("common.lua"),
    include_str!("many.lua"),
    "local function release_one(KEYS, ARGV)\n",
    include_str!("release.lua"),
    include_str!("release_rest.lua"),
    "end\n",
    include_str!("release_many.lua")
);
