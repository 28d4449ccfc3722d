//! A lease on the local driver.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::driver::{DriverError, FenceToken, Lease, LockName, OwnerToken, Renewal};

pub(super) struct LocalLease {
    shared: Arc<Shared>,
    name: LockName,
    owner: OwnerToken,
    fence: FenceToken,
    gone: CancellationToken,
}

impl LocalLease {
    pub(super) fn new(
        shared: Arc<Shared>,
        name: LockName,
        owner: OwnerToken,
        (fence, gone): (FenceToken, CancellationToken),
    ) -> Self {
        Self {
            shared,
            name,
            owner,
            fence,
            gone,
        }
    }
}

#[async_trait]
impl Lease for LocalLease {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let now = self.shared.clock.now();
        let until = super::expiry(now, ttl)?;
        let mut table = self.shared.table();
        table.sweep(now);
        Ok(if table.renew(&self.name, self.owner, self.fence, until) {
            Renewal::Renewed
        } else {
            Renewal::Lost
        })
    }

    async fn release(&self) -> Result<(), DriverError> {
        let now = self.shared.clock.now();
        let mut table = self.shared.table();
        table.sweep(now);
        table.release(&self.name, self.owner, self.fence);
        Ok(())
    }

    async fn lost(&self) {
        self.gone.cancelled().await;
    }
}
