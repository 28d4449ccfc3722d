//! One acquire on one server: the script call, and what its answer makes.
//!
//! [`Driver::acquire`](crate::Driver::acquire) on a [`RedisDriver`] is a claim with the
//! server's clock as the token's candidate; a quorum's member claims with the quorum's
//! proposal instead, and keeps the lease's concrete type, to raise its counter later.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::keys::NameKeys;
use super::lease::{LeaseGrant, Owner, RedisLease};
use super::scripts::ScriptCall;
use super::scripts::answers::{AcquireAnswer, Freed};
use super::scripts::args::{AcquireArgs, Span, WaiterArgs, WithdrawArgs};
use super::scripts::whole_millis::millis_ceil;
use super::{Connector, RedisDriver};
use crate::driver::{Acquire, AcquireRequest, DriverError, FenceToken, Waiter};
use crate::millis::Millis;
use tokio::time::Instant;

/// What one server answered an acquire.
pub(super) enum Claim<C: Connector> {
    /// Granted: the lease on this server's grant.
    Granted(RedisLease<C>),
    /// Granted to the caller's waiter by a release before this claim.
    Handed(RedisLease<C>),
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
        // A single server's waiter may be granted the lock by a release, straight
        // (release_rest.lua): not a quorum's member (a grant on one server is not the
        // quorum's), nor one whose grants count only once replicas acknowledge them.
        let direct = inner.settings.grants_to_waiters(proposal.is_some());
        if direct
            && let Some(waiter) = &request.waiter
            && let Some((queued, fence)) = inner.dispatcher.handoffs.take_granted(waiter.id)
        {
            let lease = self.handed(request, waiter, fence, None, Some(queued.since));
            return Ok(Claim::Handed(lease));
        }
        let owner = Owner::token(request.owner);
        let span = Span::new(request.ttl, request.lock_delay);
        let waiter = (request.waiter.as_ref())
            .map(|waiter| WaiterArgs::new(waiter, direct.then_some(&span)));
        let keys = inner.settings.keys(&request.name);
        let mut args = self.acquire_args(request, &keys, &owner, &span, waiter.as_ref());
        args.proposal = proposal;
        let sent = Instant::now();
        // The script compares the server the namespace was written on with the one it
        // runs on: the argument (read it there, or detection off) is the connection's.
        let current = inner.connection().await?;
        args.server = current.identity.as_bytes();
        let call = ScriptCall::new(&args, keys.call_bytes(&inner.settings.channel));
        let (answer, acked) = inner.run_acked_on(current, call).await?;
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
            AcquireAnswer::Handed { fence, next } => {
                let Some(waiter) = request.waiter.as_ref().filter(|_| direct) else {
                    return Err(DriverError::rejected(
                        "the server answered a grant made by a release to a waiter that \
                         never asked for one: is another client writing this namespace?",
                    ));
                };
                let since = inner.dispatcher.handoffs.take(waiter.id);
                let since = since.map(|queued| queued.since);
                return Ok(Claim::Handed(
                    self.handed(request, waiter, fence, next, since),
                ));
            }
            AcquireAnswer::Held { expires_in } => {
                if direct && let Some(waiter) = &request.waiter {
                    inner.dispatcher.handoffs.queued(waiter.id, sent);
                }
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
            LeaseGrant {
                name: request.name.clone(),
                owner,
                fence,
                next,
                sent: Some(sent),
                ttl: request.ttl,
                lock_delay: request.lock_delay,
            },
        );
        // A waiter's first attempt cannot have been answered held before: nothing of it
        // is kept, and an uncontended `lock()` takes no lock of the map.
        if let Some(waiter) = request.waiter.filter(|waiter| waiter.attempt > 0) {
            inner.dispatcher.handoffs.take(waiter.id);
        }
        if let Err(err) = acked {
            // Not counted: give it back rather than let it block others.
            let _ = crate::driver::Lease::release(&lease).await;
            return Err(err);
        }
        Ok(Claim::Granted(lease))
    }

    /// Takes `request`'s waiter out of the queue ([`Driver::withdraw`](crate::Driver::withdraw)),
    /// and frees what a release reserved for it or granted it. `member`: the waiter of
    /// a quorum's attempt, queued on this server as its member.
    pub(super) async fn withdraw_waiter(
        &self,
        request: &AcquireRequest,
        member: bool,
    ) -> Result<(), DriverError> {
        let Some(waiter) = &request.waiter else {
            return Ok(());
        };
        let inner = &self.inner;
        let settings = &inner.settings;
        inner.dispatcher.handoffs.take(waiter.id);
        // The entry as the acquire sent it.
        let span = Span::new(request.ttl, request.lock_delay);
        let direct = settings.grants_to_waiters(member);
        let waiter = WaiterArgs::new(waiter, direct.then_some(&span));
        let keys = settings.keys(&request.name);
        let args = WithdrawArgs {
            lock: keys.lock(),
            queue: keys.queue(),
            waiter: waiter.id(),
            entry: waiter.entry(),
            channel: &settings.channel,
            handoff_ms: settings.handoff_window_ms,
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        let withdrawn = inner.run::<Freed>(&call);
        inner.dispatcher.freeing(withdrawn).await?;
        Ok(())
    }

    /// The lease on the grant a release made `waiter` (its owner the waiter's id),
    /// with fencing token `fence`; `since`: when the waiter's last attempt answered
    /// held was sent, if this driver knows.
    fn handed(
        &self,
        request: &AcquireRequest,
        waiter: &Waiter,
        fence: FenceToken,
        next: Option<u128>,
        since: Option<Instant>,
    ) -> RedisLease<C> {
        RedisLease::new(
            &self.inner,
            LeaseGrant {
                name: request.name.clone(),
                owner: Owner::handed(waiter.id, fence),
                fence,
                next,
                sent: since,
                ttl: request.ttl,
                lock_delay: request.lock_delay,
            },
        )
    }

    /// The acquire script's arguments for `request`, but for the server's identity,
    /// which [`claim`](Self::claim) sets once it has a connection, and a quorum's
    /// proposal.
    fn acquire_args<'a>(
        &'a self,
        request: &AcquireRequest,
        keys: &'a NameKeys<'a>,
        owner: &'a Owner,
        span: &'a Span,
        waiter: Option<&'a WaiterArgs>,
    ) -> AcquireArgs<'a> {
        let inner = &self.inner;
        let settings = &inner.settings;
        // A queue entry outlives its waiter's silence several times over.
        let queue_ttl = request.waiter.as_ref().map_or(0, |waiter| {
            millis_ceil(
                waiter
                    .retry_within
                    .saturating_mul(4)
                    .max(Duration::from_secs(1)),
            )
        });
        let quarantine = if settings.quarantine.is_zero() {
            0
        } else {
            // Long enough for every grant from before a loss of state to have ended, its
            // lock-delay included.
            millis_ceil(settings.quarantine.max(request.ttl + request.lock_delay))
        };
        AcquireArgs {
            lock: keys.lock(),
            queue: keys.queue(),
            fence: keys.fence(),
            quarantine: keys.quarantine(),
            owner: owner.as_bytes(),
            key_ms: span.key_ms,
            waiter: waiter.map_or(&[][..], WaiterArgs::id),
            entry: waiter.map_or(&[][..], WaiterArgs::entry),
            queue_ttl_ms: queue_ttl,
            channel: &settings.channel,
            handoff_ms: settings.handoff_window_ms,
            quarantine_ms: quarantine,
            // While this driver creates the namespace's buckets, a missing one is one it
            // has not reached yet.
            lost: inner.namespace.missing_means_lost() && !inner.sweeping.load(Ordering::Relaxed),
            queued: request.waiter.is_some_and(|waiter| waiter.attempt > 0),
            server: b"",
            span: span.text.as_deref(),
            proposal: None,
        }
    }
}

impl<C: Connector> Claim<C> {
    /// The answer as [`Driver::acquire`](crate::Driver::acquire) gives it.
    pub(super) fn into_acquire(self) -> Acquire {
        match self {
            Self::Granted(lease) => Acquire::Granted(Arc::new(lease)),
            Self::Handed(lease) => Acquire::Handed(Arc::new(lease)),
            Self::Refused(answer) => answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{LockName, OwnerToken, Waiter};
    use crate::engine::MAX_TTL;
    use crate::redis::state_loss::identity::Identity;

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
        let owner = Owner::token(OwnerToken::from_u128(u128::MAX));
        let span = Span::new(MAX_TTL, MAX_TTL);
        let settings = &driver.inner.settings;
        let keys = settings.keys(&request.name);
        let span_ref = Some(&span);
        let waiter = (request.waiter.as_ref()).map(|waiter| WaiterArgs::new(waiter, span_ref));
        let mut args = driver.acquire_args(&request, &keys, &owner, &span, waiter.as_ref());
        let identity = Identity::parse(&format!(
            "run_id:{}\r\nmaster_replid:{}\r\n",
            "f".repeat(40),
            "e".repeat(40)
        ))
        .unwrap();
        args.server = identity.as_bytes();
        args.proposal = Some(u64::MAX);
        let call = ScriptCall::new(&args, 0);
        let room = keys.call_bytes(&settings.channel);
        let used = call.bytes();
        // Room for all of it, and not much more: a buffer sized once, and small.
        assert!(used <= room, "{used} bytes in room for {room}");
        assert!(room <= used + 100, "{used} bytes in room for {room}");
    }
}
