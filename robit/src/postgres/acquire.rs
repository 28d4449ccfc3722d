//! One acquire attempt: a call of `acquire_v1`.

use std::sync::Arc;
use std::time::Duration;

use super::call::{Arg, column};
use super::lease::PostgresLease;
use super::{Shared, millis};
use crate::driver::{Acquire, AcquireRequest, DriverError, FenceToken, bucket};

/// `acquire_v1`'s answer for a grant.
const GRANTED: i16 = 1;
/// `acquire_v1`'s answer for a lock held, or free but promised to an earlier waiter.
const HELD: i16 = 2;
/// `acquire_v1`'s answer while the namespace is quarantined after a failover.
const QUARANTINED: i16 = 3;

pub(super) async fn acquire(
    shared: &Arc<Shared>,
    request: &AcquireRequest,
) -> Result<Acquire, DriverError> {
    let what = "acquiring a Postgres lock";
    let name = request.name.as_bytes();
    let bucket = i16::try_from(bucket(name)).unwrap_or_default();
    let retry = request
        .waiter
        .map_or(0, |waiter| millis(waiter.retry_within));
    let args = [
        Arg::Text(shared.namespace()),
        Arg::Bytes(name),
        Arg::SmallInt(bucket),
        Arg::Uuid(Some(request.owner.as_u128())),
        Arg::Int(millis(request.ttl)),
        Arg::Int(millis(request.lock_delay)),
        Arg::Uuid(request.waiter.map(|waiter| waiter.id)),
        Arg::Int(retry),
        Arg::MaybeInt(quarantine(shared, request)),
        Arg::Int(lock_timeout(shared)),
    ];
    let row = shared
        .fetch_one(what, &shared.statements.acquire, &args)
        .await?;
    let answer = (
        column(shared, what, &row, 0)?,
        column(shared, what, &row, 1)?,
        column(shared, what, &row, 2)?,
    );
    answered(shared, request, answer)
}

/// How long a quarantine that this acquire begins lasts, when the driver detects
/// failovers: long enough for every grant made before the failover to have ended, its
/// lock-delay included.
fn quarantine(shared: &Shared, request: &AcquireRequest) -> Option<i64> {
    let settings = &shared.settings;
    settings
        .detect_failover
        .then(|| millis(settings.quarantine.max(request.ttl + request.lock_delay)))
}

/// How long the acquire may wait for a row lock: three quarters of the request
/// timeout, so that it fails while its caller still waits for the answer, rather than
/// grant after the caller gave up (a grant nobody holds, until its TTL ends).
fn lock_timeout(shared: &Shared) -> i64 {
    millis(shared.settings.request_timeout * 3 / 4).max(1)
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
                .map(FenceToken::new)
                .map_err(|_| unexpected(status, Some(fence)))?;
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
        (QUARANTINED, _) => {
            let left = Duration::from_millis(
                left.and_then(|left| u64::try_from(left).ok())
                    .unwrap_or_default(),
            );
            shared.quarantine_log.seen(&request.name, left, true);
            Ok(Acquire::Quarantined { left })
        }
        _ => Err(unexpected(status, fence)),
    }
}

fn unexpected(status: i16, fence: Option<i64>) -> DriverError {
    DriverError::rejected(format!(
        "acquire_v1 answered ({status}, {fence:?}), which this version of robit does not \
         know; run its schema file again (docs/postgres.md)"
    ))
}
