//! For operators: what a lock's row and queue hold.

use std::time::Duration;

use super::Shared;
use super::call::{Arg, column};
use crate::driver::{DriverError, FenceToken, Inspection, LockName, LockState, OwnerToken};

/// The row `inspect` reads: the holder (32 hex digits), its token, ms left of its lease
/// and of its lock-delay, and how many live waiters.
type Row = (Option<String>, Option<i64>, Option<i64>, Option<i64>, i64);

pub(super) async fn inspect(shared: &Shared, name: &LockName) -> Result<Inspection, DriverError> {
    let what = "inspecting a Postgres lock";
    let args = [Arg::Text(shared.namespace()), Arg::Bytes(name.as_bytes())];
    let row = shared
        .fetch_one(what, &shared.statements.inspect, &args)
        .await?;
    Ok(inspection((
        column(shared, what, &row, 0)?,
        column(shared, what, &row, 1)?,
        column(shared, what, &row, 2)?,
        column(shared, what, &row, 3)?,
        column(shared, what, &row, 4)?,
    )))
}

fn inspection((holder, fence, left, delay_left, waiters): Row) -> Inspection {
    let positive = |ms: Option<i64>| {
        ms.and_then(|ms| u64::try_from(ms).ok())
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
    };
    let mut inspection = Inspection::free();
    inspection.waiters = usize::try_from(waiters).unwrap_or_default();
    let (left, delay_left) = (positive(left), positive(delay_left));
    if delay_left.is_none() {
        return inspection;
    }
    inspection.state = if left.is_some() {
        LockState::Held
    } else {
        LockState::LockDelay
    };
    inspection.holder = holder
        .and_then(|hex| u128::from_str_radix(&hex, 16).ok())
        .map(OwnerToken::from_u128);
    inspection.fence = fence
        .and_then(|fence| u64::try_from(fence).ok())
        .map(FenceToken::new);
    inspection.expires_in = left.or(delay_left);
    inspection
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_in_its_lock_delay_shows_the_delay_left_and_a_gone_row_shows_free() {
        let holder = "000000000000000000000000000000ff".to_owned();
        let held = inspection((Some(holder.clone()), Some(7), Some(1500), Some(2500), 2));
        assert_eq!(held.state, LockState::Held);
        assert_eq!(held.holder, Some(OwnerToken::from_u128(255)));
        assert_eq!(held.fence, Some(FenceToken::new(7)));
        assert_eq!(held.expires_in, Some(Duration::from_millis(1500)));
        assert_eq!(held.waiters, 2);
        let delayed = inspection((Some(holder), Some(7), Some(-10), Some(990), 0));
        assert_eq!(delayed.state, LockState::LockDelay);
        assert_eq!(delayed.expires_in, Some(Duration::from_millis(990)));
        let expired = inspection((Some("ff".to_owned()), Some(7), Some(-10), Some(-10), 1));
        assert_eq!(expired.state, LockState::Free);
        assert_eq!(expired.holder, None);
        assert_eq!(expired.waiters, 1);
        assert_eq!(inspection((None, None, None, None, 0)), Inspection::free());
    }
}
