//! Telling the operator of a quarantine: once per quarantine per driver, with when it
//! ends, however many waiters run into it.

use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::driver::LockName;

/// A quarantine seen to end later than the one already reported by more than this is a
/// new one (the state was lost again): the answers' own timing varies by far less.
const NEW_AFTER: Duration = Duration::from_secs(1);

/// When the quarantine last reported ends.
#[derive(Debug, Default)]
pub(crate) struct QuarantineLog {
    reported_until: StdMutex<Option<Instant>>,
}

impl QuarantineLog {
    /// An acquire of `name` found the namespace quarantined for `left` (`moved`: it began
    /// the quarantine, on finding the namespace written on another server): warns, unless
    /// this quarantine was reported already.
    pub(crate) fn seen(&self, name: &LockName, left: Duration, moved: bool) {
        let now = Instant::now();
        let until = now + left;
        {
            let mut reported = self
                .reported_until
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if reported.is_some_and(|end| now < end && until <= end + NEW_AFTER) {
                return;
            }
            *reported = Some(until);
        }
        let ends = rfc3339(SystemTime::now() + left);
        let cause = if moved {
            "the server answering is not the one the namespace's state was written on (a \
             failover, or a restart from older data), which may lack grants still believed in"
        } else {
            "the namespace's state was lost or is new"
        };
        tracing::warn!(
            target: "robit",
            lock = %name,
            quarantine_left_ms = left.as_millis(),
            "{cause}: no grants until its quarantine ends at {ends}; waiters sleep until then",
        );
    }
}

/// `at` as `YYYY-MM-DDTHH:MM:SSZ`, in UTC.
fn rfc3339(at: SystemTime) -> String {
    let seconds = at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (days, time) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(i64::try_from(days).unwrap_or(i64::MAX));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        time / 3600,
        time / 60 % 60,
        time % 60
    )
}

/// The Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_in_rfc_3339_utc() {
        let at = |seconds| UNIX_EPOCH + Duration::from_secs(seconds);
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(at(1_795_560_671)), "2026-11-24T22:51:11Z");
        assert_eq!(rfc3339(at(86_399)), "1970-01-01T23:59:59Z");
    }

    #[test]
    fn every_day_of_six_centuries_is_the_date_a_calendar_counts_to() {
        let leap = |year: i64| year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let length = |year: i64, month: u32| match month {
            2 if leap(year) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let (mut year, mut month, mut day) = (1970, 1, 1);
        // To 2570: past the centuries that are leap years (2000, 2400) and those that are
        // not (2100, 2200, 2300, 2500).
        for days in 0..219_000 {
            assert_eq!(
                civil(days),
                (year, month, day),
                "{days} days after 1970-01-01"
            );
            day += 1;
            if day > length(year, month) {
                (month, day) = (month + 1, 1);
                if month > 12 {
                    (year, month) = (year + 1, 1);
                }
            }
        }
    }

    /// What `seen` warned, as lines.
    fn warnings(captured: &robit_test_support::kit::Captured) -> Vec<String> {
        captured
            .lines()
            .into_iter()
            .filter(|line| line.contains("quarantine ends at"))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_quarantine_is_warned_once_and_a_new_one_again() {
        let captured = robit_test_support::kit::Captured::default();
        let _logs = captured.install();
        let log = QuarantineLog::default();
        let name = LockName::from("q");
        let left = Duration::from_secs(10);
        log.seen(&name, left, false);
        let told = warnings(&captured);
        assert_eq!(told.len(), 1);
        // Its end, ten seconds from now on the wall clock, in the same format.
        let end = told[0].split("ends at ").nth(1).unwrap();
        assert!(end[..20] > *rfc3339(SystemTime::now()), "{end}");
        // The same quarantine, seen by another waiter later, its end told a little later
        // than first (the answers' timing varies).
        tokio::time::advance(Duration::from_secs(4)).await;
        log.seen(&name, left - Duration::from_secs(4) + NEW_AFTER, false);
        assert_eq!(warnings(&captured).len(), 1, "{:#?}", warnings(&captured));
        // A quarantine ending later than that: the state was lost again.
        log.seen(
            &name,
            left - Duration::from_secs(4) + NEW_AFTER + Duration::from_millis(1),
            true,
        );
        let told = warnings(&captured);
        assert_eq!(told.len(), 2, "{told:#?}");
        assert!(
            told[0].contains("the namespace's state was lost or is new"),
            "{told:#?}"
        );
        assert!(
            told[1].contains("is not the one the namespace's state"),
            "{told:#?}"
        );
        assert!(told[1].contains("quarantine_left_ms=7001"), "{told:#?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quarantine_seen_after_the_reported_one_ended_is_warned() {
        let captured = robit_test_support::kit::Captured::default();
        let _logs = captured.install();
        let log = QuarantineLog::default();
        let name = LockName::from("q");
        log.seen(&name, Duration::from_secs(2), false);
        // Ended: a new quarantine, though it ends before the old one's end + NEW_AFTER.
        tokio::time::advance(Duration::from_secs(2)).await;
        log.seen(&name, Duration::from_millis(500), false);
        assert_eq!(warnings(&captured).len(), 2, "{:#?}", warnings(&captured));
    }
}
