//! Durations as people read them in messages: to the millisecond, not the nanosecond.

use std::fmt;
use std::time::Duration;

/// Shows a duration rounded to the millisecond — "250ms", "3.333s", "1h 2m 3.000s" —
/// where `{:?}` would print "3.333333333s". A non-zero duration under half a millisecond
/// shows as "<1ms", so that it never reads as nothing.
#[derive(Clone, Copy)]
pub(crate) struct Millis(pub(crate) Duration);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        let millis = (nanos + 500_000) / 1_000_000;
        if millis == 0 && nanos > 0 {
            return f.write_str("<1ms");
        }
        if millis < 1_000 {
            return write!(f, "{millis}ms");
        }
        let (secs, millis) = (millis / 1_000, millis % 1_000);
        let (hours, minutes, secs) = (secs / 3_600, secs / 60 % 60, secs % 60);
        if hours > 0 {
            write!(f, "{hours}h {minutes}m ")?;
        } else if minutes > 0 {
            write!(f, "{minutes}m ")?;
        }
        write!(f, "{secs}.{millis:03}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(duration: Duration) -> String {
        Millis(duration).to_string()
    }

    #[test]
    fn durations_are_shown_to_the_millisecond() {
        assert_eq!(shown(Duration::ZERO), "0ms");
        assert_eq!(shown(Duration::from_nanos(1)), "<1ms");
        assert_eq!(shown(Duration::from_micros(499)), "<1ms");
        assert_eq!(shown(Duration::from_micros(500)), "1ms");
        assert_eq!(shown(Duration::from_millis(250)), "250ms");
        assert_eq!(shown(Duration::from_micros(999_600)), "1.000s");
        assert_eq!(shown(Duration::from_secs(10) / 3), "3.333s");
        assert_eq!(shown(Duration::from_secs(90)), "1m 30.000s");
        assert_eq!(shown(Duration::from_secs(3_723)), "1h 2m 3.000s");
        assert_eq!(shown(Duration::from_secs(3_600)), "1h 0m 0.000s");
        // The longest duration rounds up to one second more than u64 holds, without
        // overflowing.
        let hours = (u128::from(u64::MAX) + 1) / 3_600;
        assert_eq!(shown(Duration::MAX), format!("{hours}h 0m 16.000s"));
    }
}
