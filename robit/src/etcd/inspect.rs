//! For operators: what a lock's queue holds, and freeing a stuck holder by force.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, SortOrder, SortTarget, Txn, TxnOp};

use super::{Shared, keys};
use crate::driver::{DriverError, FenceToken, Inspection, LockName, LockState, OwnerToken};

/// The queue of `name`, oldest entry first.
async fn queue(shared: &Shared, name: &LockName) -> Result<(Vec<u8>, Vec<KeyValue>), DriverError> {
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

/// Deletes the head entry if `holder` wrote it and nothing wrote it since it was read:
/// not a claim of a later attempt (whose grant it would free), nor a new entry under the
/// same key.
pub(super) async fn force_release(
    shared: &Shared,
    name: &LockName,
    holder: OwnerToken,
) -> Result<bool, DriverError> {
    let (_, entries) = queue(shared, name).await?;
    let Some(head) = entries.first() else {
        return Ok(false);
    };
    if keys::parse_owner(head.value()) != Some(holder) {
        return Ok(false);
    }
    let key = head.key().to_vec();
    let same = Compare::mod_revision(key.clone(), CompareOp::Equal, head.mod_revision());
    let txn = Txn::new().when([same]).and_then([TxnOp::delete(key, None)]);
    let link = shared.session.client().await?;
    let answer = link.client.kv_client().txn(txn).await.map_err(|err| {
        shared
            .session
            .failed(link.index, "releasing an etcd lock by force", err)
    })?;
    Ok(answer.succeeded())
}
