//! The quorum as a [`Driver`]: each operation on every server at once (the acquire's
//! in `acquire.rs`), answered by a majority.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::{join_all, select_all};

use super::{Connector, RedlockDriver};
use crate::driver::{
    Acquire, AcquireRequest, Driver, DriverError, Inspection, LockName, OwnerToken, ReleaseWatch,
};

#[async_trait]
impl<C: Connector> Driver for RedlockDriver<C> {
    /// Claims the lock on every server at once, proposing one more than the largest
    /// token this driver has seen, and holds it once a majority granted. Servers that
    /// answer after that join the lease; the grants of an attempt without a majority
    /// are given back at once.
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.acquire_quorum(request).await
    }

    /// Wakes on a release notification from any server.
    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        let watches: Vec<ReleaseWatch> = self
            .inner
            .servers
            .iter()
            .map(|server| server.watch_release(request))
            .filter(ReleaseWatch::is_live)
            .collect();
        if watches.is_empty() {
            return ReleaseWatch::never();
        }
        ReleaseWatch::new(async move {
            select_all(watches).await;
        })
    }

    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        let answers = join_all(
            self.inner
                .servers
                .iter()
                .map(|server| server.withdraw(request)),
        )
        .await;
        answers.into_iter().collect::<Result<(), _>>()
    }

    /// Three of a server's own limits: the claims run at once; a raise of the token may
    /// follow, and, if it fails, the giving back of the grants.
    fn call_limit(&self) -> Option<Duration> {
        let one = self
            .inner
            .servers
            .iter()
            .map(|server| server.call_limit())
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max()?;
        Some(one.saturating_mul(3))
    }

    /// Every server keeps it, so a majority refuses the lock for the delay.
    fn supports_lock_delay(&self) -> bool {
        true
    }

    /// What a majority of the servers agrees the lock's state is; an error that lists
    /// each server's view when no majority agrees.
    async fn inspect(&self, name: &LockName) -> Result<Inspection, DriverError> {
        self.inspect_quorum(name).await
    }

    /// Frees `name` by force on every server `holder` holds it on. Answers whether it
    /// freed it anywhere.
    async fn force_release(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        self.release_by_force(name, holder).await
    }
}
