//! For operators: freeing a stuck holder by force, owner-checked.

use super::lease::Owner;
use super::scripts::ScriptCall;
use super::scripts::answers::Freed;
use super::scripts::args::ReleaseArgs;
use super::{Connector, RedisDriver};
use crate::driver::{DriverError, LockName, OwnerToken};

impl<C: Connector> RedisDriver<C> {
    /// See [`Driver::force_release`](crate::Driver::force_release): the release script, as
    /// the holder's own release would run it, reading before it deletes. A grant a
    /// release made a waiter is owned by the waiter and its token: if the holder's own
    /// owner finds nothing, the lock is inspected, and a grant to this holder as a
    /// waiter is released by its token.
    pub(super) async fn release_by_force(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        let mut freed = self.release_owned(name, Owner::token(holder)).await?;
        if freed == Freed::Nothing {
            let inspection = self.inspect_lock(name).await?;
            if let (Some(seen), Some(fence)) = (inspection.holder, inspection.fence)
                && seen == holder
            {
                freed = self
                    .release_owned(name, Owner::handed(holder.as_u128(), fence))
                    .await?;
            }
        }
        let done = !matches!(freed, Freed::Nothing);
        self.inner.dispatcher.freeing(async { Ok(freed) }).await?;
        if done {
            tracing::warn!(target: "robit", lock = %name, %holder, "lock released by force");
        }
        Ok(done)
    }

    /// The release script for `owner`'s grant of `name`, reading before it deletes.
    async fn release_owned(&self, name: &LockName, owner: Owner) -> Result<Freed, DriverError> {
        let settings = &self.inner.settings;
        let keys = settings.keys(name);
        let args = ReleaseArgs {
            lock: keys.lock(),
            queue: keys.queue(),
            fence: keys.fence(),
            owner: owner.as_bytes(),
            channel: &settings.channel,
            handoff_ms: settings.handoff_window_ms,
            careful: true,
            server: settings.identity().as_bytes(),
            quietly: None,
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        self.inner.run(&call).await
    }
}
