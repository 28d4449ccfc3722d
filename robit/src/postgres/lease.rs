//! A held Postgres lock: its row in `locks`, named by its owner and fencing token.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::call::{Arg, column};
use super::{Shared, millis};
use crate::driver::{DriverError, FenceToken, Lease, LockName, OwnerToken, Renewal};

/// One grant: the row of `name` while it holds `owner` and `fence`.
pub(super) struct PostgresLease {
    pub(super) shared: Arc<Shared>,
    pub(super) name: LockName,
    pub(super) owner: OwnerToken,
    pub(super) fence: FenceToken,
}

impl PostgresLease {
    fn fence_value(&self) -> i64 {
        i64::try_from(self.fence.get()).unwrap_or(i64::MAX)
    }
}

impl fmt::Debug for PostgresLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresLease")
            .field("name", &self.name)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Lease for PostgresLease {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    /// One call of `renew_v1`: the lease ends `ttl` after the server runs it, if the row
    /// is still this grant's and live.
    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let shared = &self.shared;
        let args = [
            Arg::Text(shared.namespace()),
            Arg::Bytes(self.name.as_bytes()),
            Arg::Uuid(Some(self.owner.as_u128())),
            Arg::Int(self.fence_value()),
            Arg::Int(millis(ttl)),
        ];
        let what = "renewing a Postgres lock";
        let row = shared
            .fetch_one(what, &shared.statements.renew, &args)
            .await?;
        Ok(if column(shared, what, &row, 0)? {
            Renewal::Renewed
        } else {
            Renewal::Lost
        })
    }

    /// Deletes the row if it is still this grant's; the first waiter is told.
    async fn release(&self) -> Result<(), DriverError> {
        let shared = &self.shared;
        let args = [
            Arg::Text(shared.namespace()),
            Arg::Bytes(self.name.as_bytes()),
            Arg::Uuid(Some(self.owner.as_u128())),
            Arg::Int(self.fence_value()),
        ];
        shared
            .fetch_one(
                "releasing a Postgres lock",
                &shared.statements.release,
                &args,
            )
            .await
            .map(drop)
    }

    fn signals_loss(&self) -> bool {
        false
    }
}
