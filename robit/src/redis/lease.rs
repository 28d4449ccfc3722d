//! A lease on the Redis driver.

use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use async_trait::async_trait;

use super::scripts::ScriptCall;
use super::scripts::answers::Freed;
use super::scripts::args::{RaiseArgs, ReleaseArgs, RenewArgs, Span, WaiterArgs};
use super::scripts::whole_millis::millis_ceil;
use super::{Connector, Inner};
use crate::driver::{
    DriverError, FenceToken, Lease, LockName, OwnerToken, Renewal, Waiter, hex128,
};

pub(super) struct RedisLease<C: Connector> {
    inner: Arc<Inner<C>>,
    name: LockName,
    /// The owner as stored in the lock key.
    owner: Owner,
    fence: FenceToken,
    /// The waiter first in line behind this grant when it was made, if any: the
    /// release hands the lock on, and goes out at once.
    next: Option<u128>,
    /// The grant's lock-delay: kept by every renewal.
    lock_delay: Duration,
    /// Until when the key can hold nobody else's grant: the TTL (and lock-delay) from the
    /// send of the acquire or of the last renewal, or the send of a renewal that found the
    /// grant gone. Past it, the release reads before it deletes, so that it never takes,
    /// and must put back, a value whose expiry it cannot know.
    ours_until: StdMutex<Instant>,
}

/// What an acquire's grant gives its lease: the grant, and when the acquire was sent.
pub(super) struct LeaseGrant {
    pub(super) name: LockName,
    /// The owner as stored in the lock key.
    pub(super) owner: Owner,
    pub(super) fence: FenceToken,
    /// The waiter first in line behind the grant, if any.
    pub(super) next: Option<u128>,
    /// When the grant's life counts from, by this process's clock: the acquire's
    /// sending, or for a grant a release made a waiter, the sending of the waiter's
    /// last attempt answered held (`None` if unknown: the release then reads first).
    pub(super) sent: Option<Instant>,
    pub(super) ttl: Duration,
    pub(super) lock_delay: Duration,
}

/// A grant's owner as the lock key stores it: the acquire's owner token, 32 lower-case
/// hex digits; or, for a grant a release made a waiter, the waiter's id and then the
/// grant's token in decimal digits (release_rest.lua) — the waiter's id alone would name
/// every grant the waiter is ever made, and a late release of one must never free
/// another.
#[derive(Clone, Copy)]
pub(super) struct Owner {
    bytes: [u8; 32 + 20],
    len: usize,
}

impl Owner {
    /// The acquire's own owner token.
    pub(super) fn token(token: OwnerToken) -> Self {
        let mut bytes = [0; 52];
        bytes[..32].copy_from_slice(&hex128(token.as_u128()));
        Self { bytes, len: 32 }
    }

    /// The owner of the grant with `fence` that a release made `waiter`.
    pub(super) fn handed(waiter: u128, fence: FenceToken) -> Self {
        let mut bytes = [0; 52];
        bytes[..32].copy_from_slice(&hex128(waiter));
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(fence.get()).as_bytes();
        bytes[32..32 + digits.len()].copy_from_slice(digits);
        Self {
            bytes,
            len: 32 + digits.len(),
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<C: Connector> RedisLease<C> {
    /// The lease on `grant`.
    pub(super) fn new(inner: &Arc<Inner<C>>, grant: LeaseGrant) -> Self {
        let LeaseGrant {
            name,
            owner,
            fence,
            next,
            sent,
            ttl,
            lock_delay,
        } = grant;
        Self {
            inner: Arc::clone(inner),
            name,
            owner,
            fence,
            next,
            lock_delay,
            ours_until: StdMutex::new(
                sent.map_or_else(Instant::now, |sent| sent + ttl + lock_delay),
            ),
        }
    }

    fn ours_until(&self) -> std::sync::MutexGuard<'_, Instant> {
        self.ours_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: Connector> RedisLease<C> {
    /// Lifts this server's fencing counter to `token` (if it is below), while this
    /// lease's grant is live: a quorum's member whose token was below the quorum's.
    /// Answers whether the grant was still this lease's.
    pub(super) async fn raise(&self, token: u64) -> Result<bool, DriverError> {
        let settings = &self.inner.settings;
        let keys = settings.keys(&self.name);
        let args = RaiseArgs {
            lock: keys.lock(),
            fence: keys.fence(),
            owner: self.owner.as_bytes(),
            token,
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        let raised: i64 = self.inner.run(&call).await?;
        Ok(raised == 1)
    }
}

#[async_trait]
impl<C: Connector> Lease for RedisLease<C> {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    /// Redis tells nobody when a key goes: a loss shows in a renew's answer.
    fn signals_loss(&self) -> bool {
        false
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let settings = &self.inner.settings;
        let span = Span::new(ttl, self.lock_delay);
        let keys = settings.keys(&self.name);
        let args = RenewArgs {
            lock: keys.lock(),
            owner: self.owner.as_bytes(),
            ttl_ms: millis_ceil(ttl),
            lock_delay: span.text.as_deref().map(|text| (text, span.key_ms)),
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        let sent = Instant::now();
        let current = self.inner.connection().await?;
        let (renewed, acked): (i64, _) = self.inner.run_acked_on(current, call).await?;
        if renewed == 1 {
            *self.ours_until() = sent + ttl + self.lock_delay;
            // Renewed on the primary, but not counted without its replicas.
            acked?;
            Ok(Renewal::Renewed)
        } else {
            // Gone: whatever the key holds now is someone else's.
            *self.ours_until() = sent;
            Ok(Renewal::Lost)
        }
    }

    async fn release(&self) -> Result<(), DriverError> {
        let call = self.release_call(None);
        // A release with a waiter in line behind its grant goes out at once, never queued:
        // the hand-off it makes is on that waiter's path.
        let call = if self.next.is_some() {
            call.alone()
        } else {
            call
        };
        let released = self.inner.run_batched::<Freed>(call);
        self.inner.dispatcher.freeing(released).await?;
        Ok(())
    }
}

impl<C: Connector> RedisLease<C> {
    /// The release script's call; `quietly`: without handing the lock to the first
    /// waiter, and with the caller's queue entry if it waits.
    fn release_call(&self, quietly: Option<Option<&WaiterArgs>>) -> ScriptCall {
        let settings = &self.inner.settings;
        let keys = settings.keys(&self.name);
        let args = ReleaseArgs {
            lock: keys.lock(),
            queue: keys.queue(),
            fence: keys.fence(),
            owner: self.owner.as_bytes(),
            channel: &settings.channel,
            handoff_ms: settings.handoff_window_ms,
            careful: Instant::now() >= *self.ours_until(),
            server: settings.identity().as_bytes(),
            quietly: quietly.map(|waiter| waiter.map(WaiterArgs::entry)),
        };
        ScriptCall::new(&args, keys.call_bytes(&settings.channel))
    }

    /// Gives the grant back without handing the lock to anyone now: a quorum's member
    /// grant of an attempt that got no majority. Handed on, it would go to the next
    /// waiter in this server's queue, who cannot get a majority either while another
    /// holds the lock elsewhere, and gives it back in turn: a storm of split votes.
    /// `waiter`, the caller's if it waits, goes back to the head of this server's queue
    /// (release_rest.lua).
    pub(super) async fn give_back(&self, waiter: Option<&Waiter>) -> Result<(), DriverError> {
        let waiter = waiter.map(|waiter| WaiterArgs::new(waiter, None));
        self.inner
            .run_batched::<Freed>(self.release_call(Some(waiter.as_ref())))
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::OwnerToken;
    use crate::redis::RedisDriver;

    #[test]
    fn a_redis_lease_never_signals_a_loss_so_short_holds_need_no_watchdog() {
        // Redis tells nobody when a key goes: a lease that claimed to signal losses would
        // have the mutex run its watchdog for every hold, however short.
        let driver = RedisDriver::builder("redis://localhost").build().unwrap();
        let owner = Owner::token(OwnerToken::from_u128(1));
        let lease = RedisLease::new(
            &driver.inner,
            LeaseGrant {
                name: LockName::from("l"),
                owner,
                fence: FenceToken::new(1),
                next: None,
                sent: Some(Instant::now()),
                ttl: Duration::from_secs(1),
                lock_delay: Duration::ZERO,
            },
        );
        assert!(!lease.signals_loss());
    }
}
