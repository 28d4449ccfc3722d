//! What the simulated Redis tells a checker: grants, renewals and releases, as they
//! happen on the backend.

use std::net::SocketAddr;
use std::time::Duration;

/// Who sent a command: the connection's peer address and, inside a simulation, the
/// name of the host it belongs to.
///
/// # Example
///
/// ```
/// use robit_sim::redis::Peer;
///
/// let peer = Peer::new("192.168.0.2:49152".parse()?, Some("client-1".to_owned()));
/// assert_eq!(peer.to_string(), "client-1 (192.168.0.2:49152)");
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The client end of the connection.
    pub addr: SocketAddr,
    /// The simulated host at that address, when known.
    pub host: Option<String>,
}

impl Peer {
    /// A peer at `addr`, on the simulated host `host` if known.
    pub fn new(addr: SocketAddr, host: Option<String>) -> Self {
        Self { addr, host }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host} ({})", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// A change to a lock, made by one of robit's scripts on the simulated backend.
///
/// The backend is the authority on who holds a lock: a checker that stamps these events
/// with true time (via the backend's clock) can tell exactly when each grant was valid
/// *on the server*, and compare that with what the clients believed. A grant ends at
/// `at + ttl` of its last `Granted` or `Renewed` event, or at its `Released` event.
///
/// # Example
///
/// ```
/// use robit_sim::redis::{LockEventKind, RedisState};
/// use std::sync::{Arc, Mutex};
///
/// let state = RedisState::new();
/// let grants = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&grants);
/// state.on_event(move |event| {
///     if let LockEventKind::Granted { fence, .. } = &event.kind {
///         seen.lock().unwrap().push((event.at, *fence));
///     }
/// });
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEvent {
    /// The backend's local clock when the script ran (elapsed since the simulation
    /// started, as [`SimClock::local_elapsed`](crate::SimClock::local_elapsed) reads it).
    pub at: Duration,
    /// The client whose command ran the script.
    pub peer: Peer,
    /// What happened.
    pub kind: LockEventKind,
}

/// What a [`LockEvent`] reports: the three ways the backend's view of a grant changes
/// (an expiry is not an event: it follows from the last TTL), and a quarantine.
///
/// # Example
///
/// ```
/// use robit_sim::redis::{LockEvent, LockEventKind};
/// use std::time::Duration;
///
/// /// When the backend stops honouring a grant, if this event says.
/// fn ends_at(event: &LockEvent) -> Option<Duration> {
///     match &event.kind {
///         LockEventKind::Granted { ttl, .. } | LockEventKind::Renewed { ttl, .. } => {
///             Some(event.at + *ttl)
///         }
///         LockEventKind::Released { .. } => Some(event.at),
///         _ => None,
///     }
/// }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockEventKind {
    /// The acquire script granted the lock at `key` to `owner`, with fencing token
    /// `fence`, for `ttl`.
    Granted {
        /// The lock's key (`{namespace}:lock:<name>`).
        key: Vec<u8>,
        /// The owner token stored in the key.
        owner: Vec<u8>,
        /// The fencing token the script returned.
        fence: i64,
        /// The grant's time to live, from `at`.
        ttl: Duration,
    },
    /// The renew script extended `owner`'s grant at `key` to `ttl` from `at`.
    Renewed {
        /// The lock's key.
        key: Vec<u8>,
        /// The owner whose grant was extended.
        owner: Vec<u8>,
        /// The new time to live, from `at`.
        ttl: Duration,
    },
    /// `owner`'s grant at `key` ended before its expiry: the release script deleted it
    /// or handed it to a waiter (or a renew with a TTL of zero deleted it).
    Released {
        /// The lock's key.
        key: Vec<u8>,
        /// The owner whose grant ended.
        owner: Vec<u8>,
    },
    /// Grants in a namespace are suspended for `ttl` from `at` (robit's quarantine after
    /// a loss of state: its `{<namespace>}:quarantine` key was written with a TTL).
    Quarantined {
        /// The namespace's quarantine key.
        key: Vec<u8>,
        /// How long the quarantine lasts, from `at`.
        ttl: Duration,
    },
}
