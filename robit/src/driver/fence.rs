//! Fencing tokens and the resource-side gate that enforces them.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fencing token: a number that strictly increases with every grant of a lock name,
/// across holders, releases and expiries (promise P4).
///
/// A lease can be lost without its holder noticing in time (a stop-the-world pause, a
/// partition). Fencing closes that gap on the resource side: the holder sends its token
/// with every write, and the resource refuses tokens lower than the highest it has seen,
/// so a stale holder's late write is rejected. See [`FenceGate`].
///
/// # Example
///
/// ```
/// use robit::FenceToken;
///
/// let older = FenceToken::new(41);
/// let newer = FenceToken::new(42);
/// assert!(older < newer);
/// assert_eq!(newer.get(), 42);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FenceToken(u64);

impl FenceToken {
    /// Wraps a token value, for drivers that read it from their backend.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The token's value, to send along with writes to a fenced resource.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FenceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for FenceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FenceToken({})", self.0)
    }
}

/// A write carried a fencing token lower than one the resource has already seen: it comes
/// from a holder whose lease was lost, and must not be applied.
///
/// # Example
///
/// ```
/// use robit::{FenceGate, FenceToken, StaleFence};
///
/// let gate = FenceGate::new();
/// gate.check(FenceToken::new(9)).unwrap();
/// let err: StaleFence = gate.check(FenceToken::new(3)).unwrap_err();
/// assert_eq!((err.presented.get(), err.highest.get()), (3, 9));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "stale fencing token {presented}: the resource has already seen {highest}, \
     so the writer's lease was lost; drop the write and re-acquire the lock"
)]
pub struct StaleFence {
    /// The token the write carried.
    pub presented: FenceToken,
    /// The highest token the gate had seen.
    pub highest: FenceToken,
}

/// The resource side of fencing: remembers the highest token seen and rejects lower ones.
///
/// Put one in front of the thing the lock protects (one per lock name), and check every
/// write's token before applying it. Equal tokens pass, so one holder can write many
/// times. The check is a single atomic `fetch_max`, so a gate can be shared between
/// threads as it is.
///
/// This in-process gate shows the rule; a database enforces the same rule with a
/// conditional write (`UPDATE … WHERE fence <= $token`).
///
/// # Example
///
/// ```
/// use robit::{FenceGate, FenceToken};
///
/// let gate = FenceGate::new();
/// // A holder with token 7 writes; then its lease is lost and token 8 is granted.
/// assert!(gate.check(FenceToken::new(7)).is_ok());
/// assert!(gate.check(FenceToken::new(8)).is_ok());
/// // The old holder wakes from a long pause and tries to write: rejected.
/// let stale = gate.check(FenceToken::new(7)).unwrap_err();
/// assert_eq!(stale.highest, FenceToken::new(8));
/// ```
#[derive(Debug, Default)]
pub struct FenceGate {
    highest: AtomicU64,
}

impl FenceGate {
    /// A gate that has seen no token yet.
    pub const fn new() -> Self {
        Self {
            highest: AtomicU64::new(0),
        }
    }

    /// Admits `token` if no higher token has been seen, and remembers it.
    ///
    /// # Errors
    ///
    /// [`StaleFence`] when a higher token has already been admitted.
    pub fn check(&self, token: FenceToken) -> Result<(), StaleFence> {
        let previous = self.highest.fetch_max(token.get(), Ordering::AcqRel);
        if token.get() < previous {
            Err(StaleFence {
                presented: token,
                highest: FenceToken::new(previous),
            })
        } else {
            Ok(())
        }
    }

    /// The highest token admitted so far, if any.
    pub fn highest(&self) -> Option<FenceToken> {
        match self.highest.load(Ordering::Acquire) {
            0 => None,
            n => Some(FenceToken::new(n)),
        }
    }
}
