//! One acquire on one server: the script call, and what its answer makes.
//!
//! [`Driver::acquire`](crate::Driver::acquire) on a [`RedisDriver`] is a claim with the
//! server's clock as the token's candidate; a quorum's member claims with the quorum's
//! proposal instead, and keeps the lease's concrete type, to raise its counter later.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::answers::AcquireAnswer;
use super::lease::RedisLease;
use super::millis::millis_ceil;
use super::scripts::{ACQUIRE, ScriptCall, Span, WaiterArgs};
use super::{Connector, RedisDriver, flag};
use crate::driver::{Acquire, AcquireRequest, DriverError, hex128};
use crate::millis::Millis;

/// What one server answered an acquire.
pub(super) enum Claim<C: Connector> {
    /// Granted: the lease on this server's grant.
    Granted(RedisLease<C>),
    /// Held, or quarantined: never [`Acquire::Granted`].
    Refused(Acquire),
}

impl<C: Connector> RedisDriver<C> {
    /// Tries once to grant `request` on this server. `proposal`: a quorum's proposed
    /// token, which the server issues unless its counter is at or past it (then the
    /// counter's next); `None`: the server's clock, as on its own.
    pub(super) async fn claim(
        &self,
        request: &AcquireRequest,
        proposal: Option<u64>,
    ) -> Result<Claim<C>, DriverError> {
        let inner = &self.inner;
        if request.ttl > crate::engine::MAX_TTL || request.lock_delay > crate::engine::MAX_TTL {
            return Err(DriverError::rejected(format!(
                "a TTL of {} with a lock-delay of {} is longer than a year; the Redis \
                 driver refuses it",
                Millis(request.ttl),
                Millis(request.lock_delay)
            )));
        }
        let owner = hex128(request.owner.as_u128());
        let span = Span::new(request.ttl, request.lock_delay);
        let mut call = self.acquire_call(request, &owner, &span, proposal.is_some());
        let sent = tokio::time::Instant::now();
        // The script compares the server the namespace was written on with the one it
        // runs on: the argument (read it there, or detection off) is the connection's.
        let current = inner.connection().await?;
        call.arg(current.identity.as_bytes());
        match (&span.text, proposal) {
            (Some(text), _) => call.arg(text.as_str()),
            (None, Some(_)) => call.arg(""),
            (None, None) => &mut call,
        };
        if let Some(proposal) = proposal {
            call.arg(proposal);
        }
        let (answer, acked) = inner.run_acked_on(current, &call).await?;
        // A grant that created the namespace in cluster mode starts creating its
        // buckets before the namespace counts as seen, so that no acquire of this driver
        // takes a bucket not reached yet for a lost one.
        let sweep = match answer {
            AcquireAnswer::Granted { created: true, .. } if inner.settings.spread => {
                inner.begin_sweep()
            }
            _ => None,
        };
        inner.namespace.seen();
        let (fence, next) = match answer {
            AcquireAnswer::Granted {
                fence,
                next,
                created,
            } => {
                if created {
                    inner.namespace.created();
                    if let Some(sweep) = sweep {
                        inner.create_buckets(sweep).await;
                    }
                }
                (fence, next)
            }
            AcquireAnswer::Held { expires_in } => {
                return Ok(Claim::Refused(Acquire::Held { expires_in }));
            }
            AcquireAnswer::Quarantined {
                left: Some(left),
                moved,
            } => {
                inner.quarantine_log.seen(&request.name, left, moved);
                return Ok(Claim::Refused(Acquire::Quarantined { left }));
            }
            // A quarantine key without an expiry, set by hand: it lasts until deleted.
            AcquireAnswer::Quarantined { left: None, .. } => {
                return Ok(Claim::Refused(Acquire::Held { expires_in: None }));
            }
        };
        let lease = RedisLease::new(
            inner,
            request.name.clone(),
            owner,
            (fence, next),
            (sent, request.ttl, request.lock_delay),
        );
        if let Err(err) = acked {
            // Not counted: give it back rather than let it block others.
            let _ = crate::driver::Lease::release(&lease).await;
            return Err(err);
        }
        Ok(Claim::Granted(lease))
    }

    /// The acquire script's call for `request`, but for its last arguments (the
    /// server's identity, the span, the proposal), which [`claim`](Self::claim) adds.
    fn acquire_call(
        &self,
        request: &AcquireRequest,
        owner: &[u8; 32],
        span: &Span,
        proposed: bool,
    ) -> ScriptCall {
        let inner = &self.inner;
        let settings = &inner.settings;
        let waiter = request.waiter.as_ref().map(|waiter| {
            // A queue entry outlives its waiter's silence several times over.
            let queue_ttl = waiter
                .retry_within
                .saturating_mul(4)
                .max(Duration::from_secs(1));
            (WaiterArgs::new(waiter), millis_ceil(queue_ttl))
        });
        let (id, entry, queue_ttl) = match &waiter {
            Some((waiter, queue_ttl)) => (waiter.id(), waiter.entry(), *queue_ttl),
            None => (&[][..], &[][..], 0),
        };
        let queued = request.waiter.is_some_and(|waiter| waiter.attempt > 0);
        let quarantine = if settings.quarantine.is_zero() {
            0
        } else {
            // Long enough for every grant from before a loss of state to have ended, its
            // lock-delay included.
            millis_ceil(settings.quarantine.max(request.ttl + request.lock_delay))
        };
        let args = match (span.text.is_some(), proposed) {
            (_, true) => 13,
            (true, false) => 12,
            (false, false) => 11,
        };
        let keys = settings.keys(&request.name);
        let mut call = ScriptCall::new(&ACQUIRE, 4, args, keys.call_bytes(&settings.channel));
        call.key(keys.lock())
            .key(keys.queue())
            .key(keys.fence())
            .key(keys.quarantine())
            .arg(&owner[..])
            .arg(span.key_ms)
            .arg(id)
            .arg(entry)
            .arg(queue_ttl)
            .arg(&settings.channel)
            .arg(settings.handoff_window_ms)
            .arg(quarantine)
            // While this driver creates the namespace's buckets, a missing one is one it
            // has not reached yet.
            .arg(flag(
                inner.namespace.missing_means_lost() && !inner.sweeping.load(Ordering::Relaxed),
            ))
            .arg(flag(queued));
        call
    }
}

impl<C: Connector> Claim<C> {
    /// The answer as [`Driver::acquire`](crate::Driver::acquire) gives it.
    pub(super) fn into_acquire(self) -> Acquire {
        match self {
            Self::Granted(lease) => Acquire::Granted(Arc::new(lease)),
            Self::Refused(answer) => answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{LockName, OwnerToken, Waiter};
    use crate::engine::MAX_TTL;
    use crate::redis::identity::Identity;

    #[test]
    fn the_largest_acquire_call_fits_the_room_its_keys_give_it() {
        // A long namespace and name, and every optional argument at its longest.
        let namespace = "n".repeat(100);
        let driver = RedisDriver::builder("redis://localhost")
            .namespace(&namespace)
            .handoff_window(Duration::from_secs(u64::from(u32::MAX)))
            .build()
            .unwrap();
        let name = LockName::from("x".repeat(1000));
        let mut request = AcquireRequest::new(name, OwnerToken::from_u128(u128::MAX), MAX_TTL)
            .with_lock_delay(MAX_TTL)
            .with_waiter(Waiter::new(u128::MAX, MAX_TTL));
        if let Some(waiter) = request.waiter.as_mut() {
            waiter.attempt = u32::MAX;
        }
        let owner = hex128(u128::MAX);
        let span = Span::new(MAX_TTL, MAX_TTL);
        let mut call = driver.acquire_call(&request, &owner, &span, true);
        let identity = Identity::parse(&format!(
            "run_id:{}\r\nmaster_replid:{}\r\n",
            "f".repeat(40),
            "e".repeat(40)
        ))
        .unwrap();
        call.arg(identity.as_bytes())
            .arg(span.text.as_deref().unwrap())
            .arg(u64::MAX);
        let settings = &driver.inner.settings;
        let room = settings.keys(&request.name).call_bytes(&settings.channel);
        let used = call.bytes();
        // Room for all of it, and not much more: a buffer sized once, and small.
        assert!(used <= room, "{used} bytes in room for {room}");
        assert!(room <= used + 100, "{used} bytes in room for {room}");
    }
}
