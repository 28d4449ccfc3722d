//! What the on-jeopardy callbacks are told.

use std::time::Duration;

use crate::driver::{FenceToken, LockName};

/// Whether a hold entered jeopardy or left it.
///
/// # Example
///
/// ```
/// use robit::Jeopardy;
///
/// assert_ne!(Jeopardy::Entered, Jeopardy::Cleared);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Jeopardy {
    /// No renewal has succeeded for so long that the validity deadline is within the
    /// configured jeopardy time: the lease will be lost at the deadline unless a renewal
    /// gets through first. Checkpoint, or get ready to stop.
    Entered,
    /// A renewal got through: the deadline is far enough off again.
    Cleared,
}

/// A hold entering or leaving jeopardy, as handed to the on-jeopardy callbacks.
///
/// Why it exists: a loss is signalled at the validity deadline, when it is too late to
/// do anything but stop. Jeopardy comes earlier — when the backend has not confirmed a
/// renewal for a while — so that work can checkpoint while its writes are still
/// exclusive, as Chubby's jeopardy event and the DynamoDB lock client's "safe time"
/// allow.
///
/// # Example
///
/// ```
/// use robit::{Jeopardy, JeopardyEvent, LocalDriver, Mutex};
///
/// let mutex = Mutex::builder("reports", LocalDriver::new())
///     .on_jeopardy(|event: &JeopardyEvent| match event.change {
///         Jeopardy::Entered => eprintln!("{}: {:?} left, checkpoint now", event.name, event.valid_for),
///         _ => eprintln!("{}: renewed, safe again", event.name),
///     })
///     .build()
///     .unwrap();
/// # drop(mutex);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct JeopardyEvent {
    /// The lock's name.
    pub name: LockName,
    /// The fencing token of the hold.
    pub fence: FenceToken,
    /// Entered or cleared.
    pub change: Jeopardy,
    /// How long the hold stays valid from now unless a renewal succeeds.
    pub valid_for: Duration,
}
