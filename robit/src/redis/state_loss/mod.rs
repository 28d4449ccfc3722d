//! State loss: what keeps a lock from being granted twice when the server forgot, or
//! never saw, the grants its holders still believe in.
//!
//! Redis may lose a namespace (a restart without persistence, a flush, an eviction) or
//! come back with an older copy of it (a failover to a replica that lagged, a restart
//! from a snapshot). The acquire script then quarantines the namespace — no grants
//! until every holder from before has signalled its loss — and this layer gives it what
//! it needs to tell: which server, and which life of it, a connection reaches
//! (`identity.rs`); whether this process has seen the namespace, so that a missing
//! counter means lost rather than new (`namespace.rs`); in cluster mode, every bucket's
//! counter created with the namespace, so that no bucket looks lost at its birth
//! (`buckets.rs`). The quarantine itself is the script's (`scripts/acquire_rest.lua`);
//! the driver only tells the operator of it, once per quarantine
//! (`driver/quarantine_log.rs`, shared with the Postgres driver).

mod buckets;
pub(super) mod identity;
pub(super) mod namespace;

pub use self::namespace::FirstUse;
