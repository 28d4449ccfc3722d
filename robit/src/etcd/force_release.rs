//! For operators: freeing a stuck holder by force, owner-checked.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use super::inspect::queue;
use super::{Shared, keys};
use crate::driver::{DriverError, LockName, OwnerToken};

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
