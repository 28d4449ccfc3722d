//! The local driver's lock table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::driver::{FenceToken, LockName, OwnerToken, WatchRegistry};

/// All grants of one local driver.
///
/// `grants` is only ever looked up, never iterated; the one ordered walk (expiry) goes
/// through the `expiries` B-tree, so behaviour never depends on hash order.
#[derive(Default)]
pub(super) struct Table {
    grants: HashMap<LockName, Grant>,
    /// (expiry, fence) → name: the sweep order. Fences are unique, so keys are too.
    expiries: BTreeMap<(Instant, FenceToken), LockName>,
    /// Shared with the driver, which registers watches without taking the table's lock.
    pub(super) watchers: Arc<WatchRegistry<LockName>>,
    last_fence: u64,
}

pub(super) struct Grant {
    pub(super) owner: OwnerToken,
    pub(super) fence: FenceToken,
    expires_at: Instant,
    /// Cancelled when the driver drops the grant by itself (expiry, eviction).
    pub(super) gone: CancellationToken,
}

impl Table {
    pub(super) fn len(&self) -> usize {
        self.grants.len()
    }

    #[cfg(test)]
    pub(super) fn footprint(&self) -> (usize, usize, usize) {
        (self.grants.len(), self.expiries.len(), self.watchers.len())
    }

    /// Removes every grant that expired at or before `now`.
    pub(super) fn sweep(&mut self, now: Instant) {
        while let Some(entry) = self.expiries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (_, fence) = *entry.key();
            let name = entry.remove();
            // The index and the map always agree; checking the fence keeps a future
            // mistake from deleting a newer grant. An expiry is an eviction by the clock.
            if self
                .grants
                .get(&name)
                .is_some_and(|grant| grant.fence == fence)
            {
                self.evict(&name);
            }
        }
    }

    /// Grants `name` to `owner` until `expires_at`, or returns how long the live grant has
    /// left. The caller has swept, so any grant found is live.
    pub(super) fn grant(
        &mut self,
        name: &LockName,
        owner: OwnerToken,
        now: Instant,
        expires_at: Instant,
    ) -> Result<(FenceToken, CancellationToken), Duration> {
        if let Some(grant) = self.grants.get(name) {
            return Err(grant.expires_at.saturating_duration_since(now));
        }
        self.last_fence += 1;
        let fence = FenceToken::new(self.last_fence);
        let gone = CancellationToken::new();
        self.expiries.insert((expires_at, fence), name.clone());
        self.grants.insert(
            name.clone(),
            Grant {
                owner,
                fence,
                expires_at,
                gone: gone.clone(),
            },
        );
        Ok((fence, gone))
    }

    /// Extends the grant if it is `owner`'s `fence` and live (the caller has swept).
    pub(super) fn renew(
        &mut self,
        name: &LockName,
        owner: OwnerToken,
        fence: FenceToken,
        until: Instant,
    ) -> bool {
        let Some(grant) = self.grants.get_mut(name) else {
            return false;
        };
        if grant.owner != owner || grant.fence != fence {
            return false;
        }
        self.expiries.remove(&(grant.expires_at, fence));
        grant.expires_at = until;
        self.expiries.insert((until, fence), name.clone());
        true
    }

    /// Deletes the grant if it is `owner`'s `fence`; idempotent.
    pub(super) fn release(&mut self, name: &LockName, owner: OwnerToken, fence: FenceToken) {
        let ours = self
            .grants
            .get(name)
            .is_some_and(|grant| grant.owner == owner && grant.fence == fence);
        if ours {
            self.remove(name);
        }
    }

    /// Deletes whatever grant `name` has and signals its loss.
    pub(super) fn evict(&mut self, name: &LockName) -> bool {
        match self.remove(name) {
            Some(grant) => {
                grant.gone.cancel();
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, name: &LockName) -> Option<Grant> {
        let grant = self.grants.remove(name)?;
        self.expiries.remove(&(grant.expires_at, grant.fence));
        self.notify(name);
        Some(grant)
    }

    fn notify(&self, name: &LockName) {
        self.watchers.notify(name);
    }
}
