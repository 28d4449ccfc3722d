//! A lease on the Redis driver.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use async_trait::async_trait;

use super::answers::Freed;
use super::config::millis_ceil;
use super::scripts::{RELEASE, RENEW, ScriptCall};
use super::{Connector, Inner};
use crate::driver::{DriverError, FenceToken, Lease, LockName, Renewal};

pub(super) struct RedisLease<C: Connector> {
    pub(super) inner: Arc<Inner<C>>,
    pub(super) name: LockName,
    /// The owner token as stored in the lock key: 32 lower-case hex digits.
    pub(super) owner: [u8; 32],
    pub(super) fence: FenceToken,
    /// The waiter first in line behind this grant when it was made, if any: woken early
    /// by the release.
    pub(super) next: Option<u128>,
    /// A renewal found the grant gone: the release reads before it deletes, as whatever
    /// is in the key now is someone else's.
    pub(super) gone: AtomicBool,
    /// Until when the key can hold nobody else's grant: the TTL from the send of the
    /// acquire or of the last renewal. Past it, the release reads before it deletes too,
    /// so that it never takes, and must put back, a value whose expiry it cannot know.
    pub(super) ours_until: StdMutex<Instant>,
}

impl<C: Connector> RedisLease<C> {
    /// Whether the release should read the key before deleting it.
    fn careful(&self) -> bool {
        let ours_until = *self
            .ours_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.gone.load(Ordering::Relaxed) || Instant::now() >= ours_until
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
        let mut call = ScriptCall::new(&RENEW, 1, 2, settings.call_bytes(&self.name));
        call.key(settings.lock_key(&self.name))
            .arg(&self.owner[..])
            .arg(millis_ceil(ttl));
        let sent = Instant::now();
        let renewed: i64 = self.inner.run(&call).await?;
        Ok(if renewed == 1 {
            *self
                .ours_until
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = sent + ttl;
            Renewal::Renewed
        } else {
            self.gone.store(true, Ordering::Relaxed);
            Renewal::Lost
        })
    }

    async fn release(&self) -> Result<(), DriverError> {
        let settings = &self.inner.settings;
        let mut call = ScriptCall::new(&RELEASE, 2, 4, settings.call_bytes(&self.name));
        call.key(settings.lock_key(&self.name))
            .key(settings.queue_key(&self.name))
            .arg(&self.owner[..])
            .arg(&settings.channel)
            .arg(settings.handoff_window_ms)
            .arg(super::flag(self.careful()));
        let released = self.inner.run::<Freed>(&call);
        self.inner.dispatcher.freeing(released, self.next).await?;
        Ok(())
    }
}
