//! Durations as the scripts take them: whole milliseconds, rounded up. (The crate's
//! `millis.rs` is another matter: durations as messages show them.)

use std::time::Duration;

/// Whole milliseconds, rounded up so that a TTL is never shortened, and at least 1;
/// `u64::MAX` if there are more.
///
/// Whole seconds are whole milliseconds, so only the fraction of a second needs rounding:
/// no 128-bit division.
pub(in crate::redis) fn millis_ceil(duration: Duration) -> u64 {
    let fraction = u64::from(duration.subsec_nanos().div_ceil(1_000_000));
    duration
        .as_secs()
        .checked_mul(1_000)
        .and_then(|millis| millis.checked_add(fraction))
        .map_or(u64::MAX, |millis| millis.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: nanoseconds divided by a million, rounded up.
    fn by_definition(duration: Duration) -> u64 {
        let millis = duration.as_nanos().div_ceil(1_000_000).max(1);
        u64::try_from(millis).unwrap_or(u64::MAX)
    }

    #[test]
    fn millis_ceil_rounds_up_to_at_least_one_and_saturates() {
        let max_millis = Duration::from_millis(u64::MAX);
        let edges = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(999_999),
            Duration::from_millis(1),
            Duration::from_nanos(1_000_001),
            Duration::from_nanos(1_999_999),
            Duration::from_nanos(999_999_999),
            Duration::from_secs(1),
            Duration::from_nanos(1_000_000_001),
            Duration::new(1, 999_999_999),
            Duration::from_secs(365 * 24 * 3600),
            Duration::from_secs(u64::MAX / 1_000),
            Duration::new(u64::MAX / 1_000, 999_999_999),
            max_millis - Duration::from_nanos(1),
            max_millis,
            max_millis + Duration::from_nanos(1),
            max_millis + Duration::from_millis(1),
            Duration::from_secs(u64::MAX / 1_000 + 1),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ];
        for duration in edges {
            assert_eq!(
                millis_ceil(duration),
                by_definition(duration),
                "{duration:?}"
            );
        }
        // And a spread of others, seconds of every magnitude.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let duration = Duration::new(state >> (state % 64), (state % 1_000_000_000) as u32);
            assert_eq!(
                millis_ceil(duration),
                by_definition(duration),
                "{duration:?}"
            );
        }
        assert_eq!(millis_ceil(Duration::ZERO), 1);
        assert_eq!(millis_ceil(Duration::from_nanos(1_000_001)), 2);
        assert_eq!(millis_ceil(max_millis), u64::MAX);
        assert_eq!(millis_ceil(Duration::MAX), u64::MAX);
    }
}
