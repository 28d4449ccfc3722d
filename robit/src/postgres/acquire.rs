//! One acquire attempt: a call of `acquire_v1`.

use std::sync::Arc;
use std::time::Duration;

use super::lease::PostgresLease;
use super::{Shared, millis, uuid_text};
use crate::driver::{Acquire, AcquireRequest, DriverError, FenceToken, bucket};

/// `acquire_v1`'s answer for a grant.
const GRANTED: i16 = 1;
/// `acquire_v1`'s answer for a lock held, or free but promised to an earlier waiter.
const HELD: i16 = 2;

pub(super) async fn acquire(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
) -> Result<Acquire, DriverError> {
    let name = request.name.as_bytes();
    let bucket = i16::try_from(bucket(name)).unwrap_or_default();
    let waiter = request.waiter.map(|waiter| uuid_text(waiter.id));
    let retry = request
        .waiter
        .map_or(0, |waiter| millis(waiter.retry_within));
    let query = sqlx::query_as::<_, (i16, Option<i64>, Option<i64>)>(&shared.statements.acquire)
        .persistent(shared.persistent())
        .bind(shared.namespace())
        .bind(name)
        .bind(bucket)
        .bind(uuid_text(request.owner.as_u128()))
        .bind(millis(request.ttl))
        .bind(millis(request.lock_delay))
        .bind(waiter)
        .bind(retry);
    let answer = shared
        .call("acquiring a Postgres lock", query.fetch_one(&shared.pool))
        .await?;
    answered(shared, request, answer)
}

/// What an answer of `acquire_v1` means.
fn answered(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
    (status, fence, left): (i16, Option<i64>, Option<i64>),
) -> Result<Acquire, DriverError> {
    match (status, fence) {
        (GRANTED, Some(fence)) => {
            let fence = u64::try_from(fence)
                .ok()
                .filter(|&fence| fence > 0)
                .map(FenceToken::new)
                .ok_or_else(|| unexpected(status, Some(fence)))?;
            Ok(Acquire::Granted(Arc::new(PostgresLease {
                shared: Arc::clone(shared),
                name: request.name.clone(),
                owner: request.owner,
                fence,
            })))
        }
        (HELD, _) => Ok(Acquire::Held {
            expires_in: left
                .and_then(|left| u64::try_from(left).ok())
                .map(Duration::from_millis),
        }),
        _ => Err(unexpected(status, fence)),
    }
}

fn unexpected(status: i16, fence: Option<i64>) -> DriverError {
    DriverError::rejected(format!(
        "acquire_v1 answered ({status}, {fence:?}), which this version of robit does not \
         know; run its schema file again (docs/postgres.md)"
    ))
}
