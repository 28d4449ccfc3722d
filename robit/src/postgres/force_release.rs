//! For operators: freeing a stuck holder's lock, as a release would, if that holder
//! still holds it (or held it, in its lock-delay).

use super::Shared;
use super::call::{Arg, column};
use crate::driver::{DriverError, LockName, OwnerToken};

pub(super) async fn force_release(
    shared: &Shared,
    name: &LockName,
    holder: OwnerToken,
) -> Result<bool, DriverError> {
    let what = "releasing a Postgres lock by force";
    let args = [
        Arg::Text(shared.namespace()),
        Arg::Bytes(name.as_bytes()),
        Arg::Uuid(Some(holder.as_u128())),
    ];
    let row = shared
        .fetch_one(what, &shared.statements.force_release, &args)
        .await?;
    column(shared, what, &row, 0)
}
