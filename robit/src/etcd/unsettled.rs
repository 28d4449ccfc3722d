//! Entries this driver wrote that no caller owns, and the sweeping of those whose caller
//! went away.
//!
//! A waiter's entry stays in the queue between its attempts; a try's entry, or a
//! waiter's granted one, belongs to the caller once it is told `Granted`, and its lease
//! releases it. Until then the entry is *unsettled*: if its caller gives up without a
//! withdraw reaching etcd (the withdraw failed, or the call gave up on an error before
//! it was ever told `Held`, or an answer was lost), nothing else would delete it, and the
//! driver's lease — kept alive by this driver's other locks — would keep it at the head
//! of its queue for good. The same goes for a grant whose release failed.
//!
//! So each entry records the largest value an attempt of its caller may have written
//! (attempt number, then owner), and, once no attempt is in flight, a time by which the
//! caller must be back: four of its waiter's poll intervals plus a request timeout after
//! its last attempt ended; a request timeout after a withdraw (an attempt dropped on the
//! way out may still write the entry); at once for a grant whose release failed. Each
//! later acquire or renew on this driver deletes a batch of the entries past their time
//! — each delete guarded: only if the entry's value is not larger than the one recorded,
//! so that a grant made to an attempt that started after the batch was chosen survives
//! it. A caller that was only slow is not hurt: its next attempt queues it again.

use std::collections::BTreeMap;
use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The most entries one sweep deletes, well under etcd's 128 operations per transaction.
pub(super) const SWEEP_BATCH: usize = 32;

struct Entry {
    /// The largest value an attempt may have written.
    value: Vec<u8>,
    /// Attempts in flight: none is swept while one is.
    in_flight: u32,
    /// How long the caller may stay away after its last attempt.
    away: Duration,
    /// When the entry is swept, once nothing is in flight.
    until: Instant,
}

/// An entry to delete, and the value it is deleted under.
pub(super) type Stale = (Vec<u8>, Vec<u8>);

#[derive(Default)]
pub(super) struct Unsettled {
    entries: StdMutex<BTreeMap<Vec<u8>, Entry>>,
}

/// One attempt in flight on an entry; ends (and starts the caller's time away) on drop,
/// whether the attempt finished or was dropped.
pub(super) struct InFlight<'a> {
    unsettled: &'a Unsettled,
    key: Vec<u8>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut entries = self.unsettled.entries();
        if let Some(entry) = entries.get_mut(&self.key) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            entry.until = Instant::now() + entry.away;
        }
    }
}

impl Unsettled {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u8>, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An attempt that may write `value` to `key` starts; its caller may stay away for
    /// `away` after it ends.
    pub(super) fn attempting(&self, key: &[u8], value: &[u8], away: Duration) -> InFlight<'_> {
        let mut entries = self.entries();
        let entry = entries.entry(key.to_vec()).or_insert_with(|| Entry {
            value: Vec::new(),
            in_flight: 0,
            away,
            until: Instant::now(),
        });
        entry.in_flight += 1;
        entry.away = away;
        if entry.value.as_slice() < value {
            entry.value = value.to_vec();
        }
        InFlight {
            unsettled: self,
            key: key.to_vec(),
        }
    }

    /// `key` is settled: granted to its caller, or never written.
    pub(super) fn settled(&self, key: &[u8]) {
        self.entries().remove(key);
    }

    /// `key` was withdrawn: swept once more after `timeout`, in case an attempt dropped
    /// on the caller's way out writes it after the withdraw.
    pub(super) fn withdrawn(&self, key: &[u8], timeout: Duration) {
        if let Some(entry) = self.entries().get_mut(key) {
            entry.away = timeout;
            entry.until = Instant::now() + timeout;
        }
    }

    /// `key`, granted with `value`, was not confirmed released: swept at once.
    pub(super) fn abandoned(&self, key: &[u8], value: &[u8]) {
        self.entries().insert(
            key.to_vec(),
            Entry {
                value: value.to_vec(),
                in_flight: 0,
                away: Duration::ZERO,
                until: Instant::now(),
            },
        );
    }

    /// Up to [`SWEEP_BATCH`] entries past their time, with nothing in flight.
    pub(super) fn stale(&self) -> Vec<Stale> {
        let now = Instant::now();
        self.entries()
            .iter()
            .filter(|(_, entry)| entry.in_flight == 0 && entry.until <= now)
            .take(SWEEP_BATCH)
            .map(|(key, entry)| (key.clone(), entry.value.clone()))
            .collect()
    }

    /// `stale` were deleted (where their guard allowed): forget those that no attempt
    /// touched meanwhile.
    pub(super) fn swept(&self, stale: &[Stale]) {
        let mut entries = self.entries();
        for (key, value) in stale {
            if entries
                .get(key)
                .is_some_and(|entry| entry.in_flight == 0 && entry.value == *value)
            {
                entries.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AWAY: Duration = Duration::from_millis(1500);

    #[tokio::test(start_paused = true)]
    async fn an_entry_goes_stale_when_its_caller_stays_away() {
        let unsettled = Unsettled::default();
        drop(unsettled.attempting(b"k", b"1", AWAY));
        tokio::time::sleep(AWAY - Duration::from_millis(1)).await;
        assert!(unsettled.stale().is_empty(), "stale before its time away");
        tokio::time::sleep(Duration::from_millis(1)).await;
        let stale = unsettled.stale();
        assert_eq!(stale, vec![(b"k".to_vec(), b"1".to_vec())]);
        unsettled.swept(&stale);
        assert!(unsettled.stale().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_with_an_attempt_in_flight_is_never_swept() {
        let unsettled = Unsettled::default();
        let first = unsettled.attempting(b"k", b"1", AWAY);
        drop(first);
        let second = unsettled.attempting(b"k", b"2", AWAY);
        tokio::time::sleep(AWAY * 10).await;
        assert!(
            unsettled.stale().is_empty(),
            "swept while an attempt was in flight"
        );
        drop(second);
        tokio::time::sleep(AWAY).await;
        assert_eq!(unsettled.stale(), vec![(b"k".to_vec(), b"2".to_vec())]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_an_attempt_touched_during_the_sweep_is_kept() {
        let unsettled = Unsettled::default();
        drop(unsettled.attempting(b"k", b"1", AWAY));
        tokio::time::sleep(AWAY).await;
        let stale = unsettled.stale();
        drop(unsettled.attempting(b"k", b"2", AWAY));
        unsettled.swept(&stale);
        tokio::time::sleep(AWAY).await;
        assert_eq!(unsettled.stale(), vec![(b"k".to_vec(), b"2".to_vec())]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_withdrawn_entry_is_swept_once_more_after_a_request_timeout() {
        let unsettled = Unsettled::default();
        drop(unsettled.attempting(b"k", b"1", AWAY));
        unsettled.withdrawn(b"k", Duration::from_millis(500));
        assert!(unsettled.stale().is_empty());
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(unsettled.stale().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_settled_entry_is_never_swept_and_an_abandoned_one_at_once() {
        let unsettled = Unsettled::default();
        drop(unsettled.attempting(b"k", b"1", AWAY));
        unsettled.settled(b"k");
        unsettled.abandoned(b"held", b"7");
        tokio::time::sleep(AWAY * 10).await;
        assert_eq!(unsettled.stale(), vec![(b"held".to_vec(), b"7".to_vec())]);
    }
}
