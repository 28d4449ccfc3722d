//! Ending a hold: the voluntary unlock, and the releases that run in the background
//! when nobody waits for them (a dropped guard, a cancelled unlock, an abandoned grant).

use std::sync::Arc;

use super::Core;
use super::hold::Which;
use crate::driver::Lease;
use crate::error::UnlockError;

/// Unlocks and waits for the backend to confirm the release.
pub(crate) async fn unlock(core: &Arc<Core>, which: Which) -> Result<(), UnlockError> {
    let (hold, now) = core.end_voluntarily(which)?;
    #[cfg(robit_mutants)]
    super::mutant::loss_after_unlock(
        &core.config,
        hold.fence,
        now.saturating_duration_since(hold.acquired_at),
    );
    let mut pending = PendingRelease {
        core: Arc::clone(core),
        lease: Some(Arc::clone(&hold.lease)),
    };
    let result = core
        .within_from(now, core.config.renew_timeout, hold.lease.release())
        .await;
    pending.lease = None;
    match &result {
        Ok(()) => {
            tracing::debug!(target: "robit", lock = %core.config.name, fence = hold.fence.get(), "released")
        }
        Err(error) => {
            tracing::warn!(target: "robit", lock = %core.config.name, fence = hold.fence.get(), %error, "release not confirmed; the grant lapses at its expiry")
        }
    }
    Ok(result?)
}

/// Runs backend work that nobody waits for any more — an abandoned acquire's grant, a
/// cancelled unlock's release, a withdrawn waiter — on the current runtime. Outside a
/// runtime there is nowhere to run it: what it would have freed lapses at its TTL.
pub(crate) fn in_background(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}

/// Finishes a release in the background if `unlock()` is cancelled before the backend
/// answers, so a cancelled unlock does not leave the grant until its TTL.
struct PendingRelease {
    core: Arc<Core>,
    lease: Option<Arc<dyn Lease>>,
}

impl Drop for PendingRelease {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            in_background(release(Arc::clone(&self.core), lease));
        }
    }
}

/// Releases a lease nobody waits on, on a runtime that may shut down before it runs the
/// release: the lease is then left to the mutex, which releases it when it goes
/// ([`Core::close`]).
pub(crate) fn release_or_orphan(
    core: Arc<Core>,
    lease: Arc<dyn Lease>,
) -> impl Future<Output = ()> + Send + 'static {
    // Made before the future is first polled: a runtime may drop it unpolled.
    let mut orphan = Orphan {
        core,
        lease: Some(lease),
    };
    async move {
        if let Some(lease) = orphan.lease.clone() {
            release(Arc::clone(&orphan.core), lease).await;
        }
        orphan.lease.take();
    }
}

/// A release not yet done: dropped unfinished, it hands its lease back to the mutex.
struct Orphan {
    core: Arc<Core>,
    lease: Option<Arc<dyn Lease>>,
}

impl Drop for Orphan {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.core.state().orphans.push(lease);
        }
    }
}

/// Releases a lease nobody waits on, once, bounded by the renew timeout.
pub(crate) async fn release(core: Arc<Core>, lease: Arc<dyn Lease>) {
    if let Err(error) = core
        .within(core.config.renew_timeout, lease.release())
        .await
    {
        tracing::warn!(target: "robit", %error, "release not confirmed; the grant lapses at its expiry");
    }
}
