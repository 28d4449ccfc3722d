//! For operators: freeing a stuck holder by force on every server it holds the lock on.

use futures_util::future::join_all;

use super::tally::majority;
use super::{Connector, RedlockDriver};
use crate::driver::{Driver, DriverError, LockName, OwnerToken};

impl<C: Connector> RedlockDriver<C> {
    /// See [`Driver::force_release`] on [`RedlockDriver`]: every server's at once; an
    /// error only when fewer than a majority answered.
    pub(super) async fn release_by_force(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        let answers = join_all(
            self.inner
                .servers
                .iter()
                .map(|server| server.force_release(name, holder)),
        )
        .await;
        let answered = answers.iter().filter(|answer| answer.is_ok()).count();
        let freed = answers.iter().any(|answer| matches!(answer, Ok(true)));
        match answers.into_iter().find_map(Result::err) {
            Some(err) if answered < majority(self.inner.servers.len()) => Err(err),
            _ => Ok(freed),
        }
    }
}
