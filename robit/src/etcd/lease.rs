//! A held etcd lock: the entry at the head of its queue, on the driver's lease.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use super::Shared;
use super::session::{Kept, lease_seconds};
use crate::driver::{DriverError, FenceToken, Lease, Renewal};

/// One grant: entry `key`, last written at revision `fence` with the granted attempt's
/// `value`, on lease `lease`. Nothing writes a granted entry again, so its mod revision
/// names this grant alone.
pub(super) struct EtcdLease {
    pub(super) shared: Arc<Shared>,
    pub(super) key: Vec<u8>,
    pub(super) value: Vec<u8>,
    pub(super) fence: FenceToken,
    pub(super) lease: i64,
    /// The lease's TTL in whole seconds: no renewal may ask for more.
    pub(super) seconds: u64,
}

impl EtcdLease {
    fn revision(&self) -> i64 {
        i64::try_from(self.fence.get()).unwrap_or(i64::MAX)
    }
}

impl fmt::Debug for EtcdLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdLease")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("fence", &self.fence)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Lease for EtcdLease {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    /// A keepalive of the lease and a read of the entry, sent together: renewed when
    /// the lease is alive and the entry is still the one this grant created.
    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        if lease_seconds(ttl) > self.seconds {
            return Err(DriverError::rejected(format!(
                "a renewal for {} s on a grant whose etcd lease lives {} s; renew with the TTL the lock was acquired with",
                lease_seconds(ttl),
                self.seconds
            )));
        }
        let session = &self.shared.session;
        let link = session.client().await?;
        let mut kv = link.client.kv_client();
        let (kept, read, ()) = tokio::join!(
            session.keep_alive(self.lease),
            kv.get(self.key.clone(), None),
            self.shared.sweep(&link),
        );
        if matches!(kept, Ok(Kept::Gone)) {
            return Ok(Renewal::Lost);
        }
        let read = read.map_err(|err| session.failed(link.index, "renewing an etcd lock", err))?;
        let ours = read
            .kvs()
            .first()
            .is_some_and(|entry| entry.mod_revision() == self.revision());
        if !ours {
            return Ok(Renewal::Lost);
        }
        kept.map(|_| Renewal::Renewed)
    }

    /// Deletes the entry if it is still this grant's; the next in the queue, watching
    /// it, wakes.
    async fn release(&self) -> Result<(), DriverError> {
        let ours = Compare::mod_revision(self.key.clone(), CompareOp::Equal, self.revision());
        let txn = Txn::new()
            .when([ours])
            .and_then([TxnOp::delete(self.key.clone(), None)]);
        let result = self
            .shared
            .session
            .twice("releasing an etcd lock", |client| {
                let txn = txn.clone();
                async move { client.kv_client().txn(txn).await }
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(err) => {
                // Nobody may retry: the driver's next call deletes the entry instead,
                // or its lease lapses, whichever comes first.
                self.shared.unsettled.abandoned(&self.key, &self.value);
                Err(err)
            }
        }
    }

    fn signals_loss(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::EtcdDriver;

    fn lease() -> EtcdLease {
        let driver = EtcdDriver::builder(["127.0.0.1:1"]).build().unwrap();
        EtcdLease {
            shared: Arc::clone(&driver.shared),
            key: b"robit/job/0042".to_vec(),
            value: b"secret-owner".to_vec(),
            fence: FenceToken::new(17),
            lease: 694,
            seconds: 30,
        }
    }

    #[test]
    fn a_grant_shows_its_key_its_fence_and_its_etcd_lease() {
        let shown = format!("{:?}", lease());
        for part in ["EtcdLease", "robit/job/0042", "17", "694"] {
            assert!(shown.contains(part), "{part} is missing from {shown}");
        }
    }

    /// etcd tells nobody that a lease lapsed: the Mutex learns of a loss from the
    /// renewals, so a hold shorter than its first renewal needs no watchdog at all.
    #[tokio::test(start_paused = true)]
    async fn a_grant_says_it_never_signals_a_loss_since_it_cannot() {
        let lease = lease();
        assert!(!lease.signals_loss());
        let heard = tokio::time::timeout(Duration::from_secs(3600), lease.lost()).await;
        assert!(heard.is_err(), "the grant signalled a loss");
    }
}
