//! A granted lease: what a driver hands the Mutex for one grant.

use std::time::Duration;

use async_trait::async_trait;

use super::{DriverError, FenceToken};

/// The outcome of a renew that reached the backend.
///
/// # Example
///
/// ```
/// use robit::driver::Renewal;
///
/// assert_ne!(Renewal::Renewed, Renewal::Lost);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// The grant is extended to at least `ttl` from the moment the renew was sent.
    Renewed,
    /// The grant is not this lease's any more: expired, evicted or taken over. Definitive.
    Lost,
}

/// One granted lease: a handle on a live grant, held by the [`Mutex`](crate::Mutex) for
/// as long as it believes it holds the lock.
///
/// See [`Driver`](crate::Driver) for the contract and a complete driver.
///
/// # Example
///
/// Driving a lease by hand, as the Mutex's watchdog does:
///
/// ```
/// use robit::{Driver, LocalDriver};
/// use robit::driver::{Acquire, AcquireRequest, LockName, OwnerToken, Renewal};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), robit::driver::DriverError> {
/// let driver = LocalDriver::new();
/// let request = AcquireRequest::new(LockName::from("jobs"), OwnerToken::from_u128(1), Duration::from_secs(5));
/// let Acquire::Granted(lease) = driver.acquire(&request).await? else { unreachable!() };
/// assert_eq!(lease.renew(Duration::from_secs(5)).await?, Renewal::Renewed);
/// lease.release().await?;
/// assert_eq!(lease.renew(Duration::from_secs(5)).await?, Renewal::Lost);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait Lease: Send + Sync + 'static {
    /// The grant's fencing token.
    fn fence(&self) -> FenceToken;

    /// Extends the grant to at least `ttl` from the moment of this call, if the grant is
    /// still this lease's and still live.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when the backend could not be asked: the Mutex retries until the
    /// validity deadline.
    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError>;

    /// Deletes the grant if it is still this lease's. Idempotent; succeeds when the grant
    /// is already gone.
    ///
    /// # Errors
    ///
    /// A [`DriverError`] when the backend could not be asked; the grant then lapses at
    /// its expiry.
    async fn release(&self) -> Result<(), DriverError>;

    /// Completes when the driver learns by itself that the grant is gone (a backend
    /// notification, an eviction it observed). The Mutex signals loss at once when it
    /// does. Must be cancel-safe; may be called more than once.
    ///
    /// The default never completes; the Mutex's validity deadline and renew answers
    /// detect every loss anyway, this is only a faster path.
    async fn lost(&self) {
        std::future::pending::<()>().await;
    }

    /// Whether [`lost`](Lease::lost) can ever complete. Return `false` if it never
    /// does (the default `lost` never does, but this defaults to `true` so that a
    /// driver that overrides `lost` alone keeps its fast path).
    ///
    /// Why it matters: the Mutex's watchdog listens to `lost` from the moment a hold
    /// starts, which means running the watchdog at every acquire. With no signal to
    /// listen to, the watchdog need only take the hold up before its first renew is
    /// due, and a hold shorter than that never runs it — on a fast backend, a
    /// measurable part of an uncontended lock + unlock.
    fn signals_loss(&self) -> bool {
        true
    }
}
