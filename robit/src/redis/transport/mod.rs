//! Transport: how the driver reaches its server, and nothing of what it says there.
//!
//! Where connections come from ([`Connector`]: one server by URL, the master a set of
//! sentinels names, or a Redis Cluster), and the one command connection a driver
//! shares between its calls, replaced when it breaks, every command on it bounded by
//! the command timeout (`connection.rs`), where calls of one script that arrive while
//! another is in flight go out together (`batch/`). What the commands say — the scripts
//! and their keys — is in `scripts/` and `keys.rs`; what the pub/sub connection is for,
//! in `watch/`.

pub(super) mod batch;
mod cluster;
pub(super) mod connection;
mod connector;
mod sentinel;

pub use self::cluster::ClusterConnector;
pub use self::connector::{Connector, UrlConnector};
pub use self::sentinel::SentinelConnector;
