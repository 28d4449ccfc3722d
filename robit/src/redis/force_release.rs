//! For operators: freeing a stuck holder by force, owner-checked.

use super::scripts::ScriptCall;
use super::scripts::answers::Freed;
use super::scripts::args::ReleaseArgs;
use super::{Connector, RedisDriver};
use crate::driver::{DriverError, LockName, OwnerToken, hex128};

impl<C: Connector> RedisDriver<C> {
    /// See [`Driver::force_release`](crate::Driver::force_release): the release script, as
    /// the holder's own release would run it, reading before it deletes.
    pub(super) async fn release_by_force(
        &self,
        name: &LockName,
        holder: OwnerToken,
    ) -> Result<bool, DriverError> {
        let settings = &self.inner.settings;
        let owner = hex128(holder.as_u128());
        let keys = settings.keys(name);
        let args = ReleaseArgs {
            lock: keys.lock(),
            queue: keys.queue(),
            owner: &owner[..],
            channel: &settings.channel,
            handoff_ms: settings.handoff_window_ms,
            careful: true,
            quietly: None,
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        let freed: Freed = self.inner.run(&call).await?;
        let done = !matches!(freed, Freed::Nothing);
        self.inner
            .dispatcher
            .freeing(async { Ok(freed) }, None)
            .await?;
        if done {
            tracing::warn!(target: "robit", lock = %name, %holder, "lock released by force");
        }
        Ok(done)
    }
}
