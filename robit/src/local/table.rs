//! The local driver's lock table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::driver::{FenceToken, Inspection, LockName, LockState, OwnerToken, WatchRegistry};

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
    /// When the lease ends unless renewed.
    expires_at: Instant,
    /// How long after the lease ends by expiry nobody else gets the lock (lock-delay).
    delay: Duration,
    /// Whether the lease has ended by expiry, and the grant only blocks others for its
    /// lock-delay.
    lapsed: bool,
    /// The grant's key in the expiry index: `expires_at`, then, once lapsed, the end of
    /// the lock-delay.
    until: Instant,
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

    /// Ends every lease that expired at or before `now`: a grant with a lock-delay
    /// lapses (its holder is told, and it blocks others until the delay is over), any
    /// other is removed. Removes the lapsed grants whose delay is over.
    pub(super) fn sweep(&mut self, now: Instant) {
        while let Some(entry) = self.expiries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (_, fence) = *entry.key();
            let name = entry.remove();
            // The index and the map always agree; checking the fence keeps a future
            // mistake from deleting a newer grant. An expiry is an eviction by the clock.
            let Some(grant) = self.grants.get_mut(&name).filter(|g| g.fence == fence) else {
                continue;
            };
            let delay_ends = grant.expires_at.checked_add(grant.delay);
            match delay_ends {
                Some(until) if !grant.lapsed && until > now => {
                    grant.lapsed = true;
                    grant.until = until;
                    grant.gone.cancel();
                    self.expiries.insert((until, fence), name);
                }
                _ => {
                    self.evict(&name);
                }
            }
        }
    }

    /// Grants `name` to `owner` until `expires_at`, with a lock-delay of `delay`, or
    /// returns how long until the grant found (live, or lapsed in its lock-delay) lets
    /// go. The caller has swept, so any grant found still blocks.
    pub(super) fn grant(
        &mut self,
        name: &LockName,
        owner: OwnerToken,
        now: Instant,
        (expires_at, delay): (Instant, Duration),
    ) -> Result<(FenceToken, CancellationToken), Duration> {
        if let Some(grant) = self.grants.get(name) {
            return Err(grant.until.saturating_duration_since(now));
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
                delay,
                lapsed: false,
                until: expires_at,
                gone: gone.clone(),
            },
        );
        Ok((fence, gone))
    }

    /// Extends the grant if it is `owner`'s `fence` and live (the caller has swept): a
    /// lapsed grant is not.
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
        if grant.owner != owner || grant.fence != fence || grant.lapsed {
            return false;
        }
        self.expiries.remove(&(grant.until, fence));
        grant.expires_at = until;
        grant.until = until;
        self.expiries.insert((until, fence), name.clone());
        true
    }

    /// Deletes the grant if it is `owner`'s `fence`, lapsed or not (a release says its
    /// holder is done: no lock-delay is owed); idempotent.
    pub(super) fn release(&mut self, name: &LockName, owner: OwnerToken, fence: FenceToken) {
        let ours = self
            .grants
            .get(name)
            .is_some_and(|grant| grant.owner == owner && grant.fence == fence);
        if ours {
            self.remove(name);
        }
    }

    /// What the table holds for `name` (the caller has swept).
    pub(super) fn inspect(&self, name: &LockName, now: Instant) -> Inspection {
        let Some(grant) = self.grants.get(name) else {
            return Inspection::free();
        };
        let mut seen = Inspection::free();
        seen.state = if grant.lapsed {
            LockState::LockDelay
        } else {
            LockState::Held
        };
        seen.holder = Some(grant.owner);
        seen.fence = Some(grant.fence);
        seen.expires_in = Some(grant.until.saturating_duration_since(now));
        seen
    }

    /// Deletes the grant of `name` if `owner` holds it (or held it, in its lock-delay),
    /// and signals its loss: a release by force. Returns whether it did.
    pub(super) fn force_release(&mut self, name: &LockName, owner: OwnerToken) -> bool {
        let theirs = self
            .grants
            .get(name)
            .is_some_and(|grant| grant.owner == owner);
        theirs && self.evict(name)
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
        self.expiries.remove(&(grant.until, grant.fence));
        self.notify(name);
        Some(grant)
    }

    fn notify(&self, name: &LockName) {
        self.watchers.notify(name);
    }
}
