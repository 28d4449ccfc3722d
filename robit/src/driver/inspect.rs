//! What a backend holds for one lock, as an operator asks to see it.

use std::fmt;
use std::time::Duration;

use super::{FenceToken, OwnerToken};
use crate::millis::Millis;

/// What the backend holds for a lock now.
///
/// # Example
///
/// ```
/// use robit::driver::LockState;
///
/// assert_ne!(LockState::Held, LockState::LockDelay);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockState {
    /// Nobody holds it: the next acquire gets it (the first waiter's, if any wait).
    Free,
    /// A holder's grant is live.
    Held,
    /// The holder's lease ended by expiry, and its lock-delay keeps everyone out.
    LockDelay,
    /// Reserved for the longest-waiting waiter, which a release handed it to.
    Reserved,
    /// The backend holds something robit did not write under the lock's name.
    Foreign,
}

/// A lock as its backend holds it, from [`Driver::inspect`](crate::Driver::inspect): for
/// an operator who wants to know who holds a lock, since when it is stuck, and whether
/// to free it by force.
///
/// It is a snapshot: by the time it is read, the lock may have changed hands.
///
/// # Example
///
/// ```
/// use robit::{Driver, LocalDriver, Mutex};
/// use robit::driver::{LockName, LockState};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), robit::BoxError> {
/// let driver = LocalDriver::new();
/// let mutex = Mutex::builder("nightly-report", driver.clone()).build()?;
/// let guard = mutex.lock().await?;
/// let seen = driver.inspect(&LockName::from("nightly-report")).await?;
/// assert_eq!(seen.state, LockState::Held);
/// assert_eq!(seen.fence, Some(guard.fence()));
/// println!("{seen}"); // held by 5f0c1d2e (fencing token 1), 29.998s left
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// What the backend holds.
    pub state: LockState,
    /// Whose grant it is (or was, in its lock-delay): the owner token to name in
    /// [`Driver::force_release`](crate::Driver::force_release).
    pub holder: Option<OwnerToken>,
    /// The grant's fencing token, where the backend records it.
    pub fence: Option<FenceToken>,
    /// How long until the grant ends unless renewed ([`LockState::Held`]), until the
    /// lock-delay or the reservation ends, or until a foreign value expires (`None`:
    /// never, or nothing to end).
    pub expires_in: Option<Duration>,
    /// How many waiters are queued for it (0 for a driver that does not queue).
    pub waiters: usize,
}

impl Inspection {
    /// A lock nobody holds, with nobody waiting. A driver reports any other state by
    /// setting the public fields of this value (the type is `#[non_exhaustive]`, so it
    /// has no struct literal outside robit).
    pub fn free() -> Self {
        Self {
            state: LockState::Free,
            holder: None,
            fence: None,
            expires_in: None,
            waiters: 0,
        }
    }
}

impl fmt::Display for Inspection {
    /// One line for an operator: the holder by the first 8 of its 32 hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.state {
            LockState::Free => "free",
            LockState::Held => "held",
            LockState::LockDelay => "in its lock-delay",
            LockState::Reserved => "reserved for the first waiter",
            LockState::Foreign => "holding a value robit did not write",
        })?;
        if let Some(holder) = self.holder {
            let hex = holder.to_string();
            write!(f, " by {}", &hex[..8])?;
        }
        if let Some(fence) = self.fence {
            write!(f, " (fencing token {fence})")?;
        }
        if let Some(left) = self.expires_in {
            write!(f, ", {} left", Millis(left))?;
        }
        if self.waiters > 0 {
            write!(f, ", {} waiting", self.waiters)?;
        }
        Ok(())
    }
}
