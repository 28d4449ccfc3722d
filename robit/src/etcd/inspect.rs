//! For operators: what a lock's queue holds.

use std::time::Duration;

use etcd_client::{GetOptions, KeyValue, SortOrder, SortTarget};

use super::{Shared, keys};
use crate::driver::{DriverError, FenceToken, Inspection, LockName, LockState};

/// The queue of `name`, oldest entry first.
pub(super) async fn queue(
    shared: &Shared,
    name: &LockName,
) -> Result<(Vec<u8>, Vec<KeyValue>), DriverError> {
    let prefix = keys::prefix(&shared.session.settings().namespace, name);
    let options = GetOptions::new()
        .with_range(keys::range_end(&prefix))
        .with_sort(SortTarget::Create, SortOrder::Ascend);
    let link = shared.session.client().await?;
    let mut read = link
        .client
        .kv_client()
        .get(prefix.clone(), Some(options))
        .await
        .map_err(|err| {
            shared
                .session
                .failed(link.index, "reading an etcd lock", err)
        })?;
    Ok((prefix, read.take_kvs()))
}

/// The head of the queue holds the lock (a waiter's entry may not know it yet); the rest
/// wait. How long the holder has left is its lease's.
pub(super) async fn inspect(shared: &Shared, name: &LockName) -> Result<Inspection, DriverError> {
    let (prefix, entries) = queue(shared, name).await?;
    let Some(head) = entries.first() else {
        return Ok(Inspection::free());
    };
    let mut inspection = Inspection::free();
    inspection.waiters = entries.len() - 1;
    let owner = keys::parse_owner(head.value());
    if !keys::is_entry(&prefix, head.key()) || owner.is_none() {
        inspection.state = LockState::Foreign;
        return Ok(inspection);
    }
    inspection.state = LockState::Held;
    inspection.holder = owner;
    inspection.fence = u64::try_from(head.mod_revision()).ok().map(FenceToken::new);
    if head.lease() != 0 {
        let mut link = shared.session.client().await?;
        let left = link
            .client
            .lease_time_to_live(head.lease(), None)
            .await
            .map_err(|err| {
                shared
                    .session
                    .failed(link.index, "reading an etcd lease", err)
            })?;
        inspection.expires_in = u64::try_from(left.ttl()).ok().map(Duration::from_secs);
    }
    Ok(inspection)
}
