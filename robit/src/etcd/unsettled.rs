//! Entries this driver wrote that no caller owns yet, and the sweeping of those
//! whose caller went away.
//!
//! A waiter's entry stays in the queue between its attempts; a try's entry, or a
//! waiter's granted one, belongs to the caller once it is told `Granted`. Until then
//! the entry is *unsettled*: if its caller gives up without a withdraw reaching etcd
//! (the withdraw failed, or the call gave up on an error before it was ever told
//! `Held`, or an answer was lost), nothing else would delete it, and the driver's
//! lease — kept alive by this driver's other locks — would keep it at the head of its
//! queue for good. So every entry is stamped at each attempt with a time by which
//! its caller must have come back (four of its waiter's poll intervals, plus a
//! request timeout), and each later acquire or renew on this driver deletes the ones
//! past it. A caller that is only slow is not hurt: its next attempt queues it again.
//! When nothing on the driver calls any more, its lease lapses and takes them along.

use std::collections::BTreeMap;
use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::driver::AcquireRequest;

#[derive(Default)]
pub(super) struct Unsettled {
    entries: StdMutex<BTreeMap<Vec<u8>, Instant>>,
}

impl Unsettled {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u8>, Instant>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An attempt for `request` is about to write or refresh `key`: its caller has
    /// until the returned stamp to come back.
    pub(super) fn attempting(&self, key: &[u8], request: &AcquireRequest, timeout: Duration) {
        let polls = request
            .waiter
            .map_or(Duration::ZERO, |waiter| waiter.retry_within * 4);
        let until = Instant::now() + polls + timeout;
        self.entries().insert(key.to_vec(), until);
    }

    /// `key` is settled: granted to its caller.
    pub(super) fn settled(&self, key: &[u8]) {
        self.entries().remove(key);
    }

    /// `key` was withdrawn. An attempt the caller dropped on its way out may still be
    /// in flight, and may write the entry again after the withdraw: the entry is swept
    /// once more after a request timeout, in case.
    pub(super) fn withdrawn(&self, key: &[u8], timeout: Duration) {
        self.entries()
            .insert(key.to_vec(), Instant::now() + timeout);
    }

    /// The entries whose callers are past their time, other than `except`.
    pub(super) fn stale(&self, except: &[u8]) -> Vec<Vec<u8>> {
        let now = Instant::now();
        self.entries()
            .iter()
            .filter(|(key, until)| **until <= now && key.as_slice() != except)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// `keys` were deleted.
    pub(super) fn swept(&self, keys: &[Vec<u8>]) {
        let mut entries = self.entries();
        let now = Instant::now();
        for key in keys {
            // Unless an attempt stamped it again meanwhile.
            if entries.get(key).is_some_and(|until| *until <= now) {
                entries.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LockName, OwnerToken, Waiter};

    fn request() -> AcquireRequest {
        AcquireRequest::new(
            LockName::from("a"),
            OwnerToken::from_u128(1),
            Duration::from_secs(2),
        )
        .with_waiter(Waiter::new(1, Duration::from_millis(250)))
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_goes_stale_when_its_caller_stops_coming_back() {
        let unsettled = Unsettled::default();
        let timeout = Duration::from_millis(500);
        unsettled.attempting(b"k", &request(), timeout);
        assert!(unsettled.stale(b"other").is_empty());
        tokio::time::sleep(Duration::from_millis(1499)).await;
        assert!(
            unsettled.stale(b"other").is_empty(),
            "stale within 4 polls and a timeout"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(unsettled.stale(b"other"), vec![b"k".to_vec()]);
        assert!(
            unsettled.stale(b"k").is_empty(),
            "an attempt never sweeps its own entry"
        );
        unsettled.swept(&[b"k".to_vec()]);
        assert!(unsettled.stale(b"other").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_withdrawn_entry_is_swept_once_more_after_a_request_timeout() {
        let unsettled = Unsettled::default();
        unsettled.attempting(b"k", &request(), Duration::from_millis(500));
        unsettled.withdrawn(b"k", Duration::from_millis(500));
        assert!(unsettled.stale(b"other").is_empty());
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(unsettled.stale(b"other"), vec![b"k".to_vec()]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_settled_entry_is_never_swept() {
        let unsettled = Unsettled::default();
        unsettled.attempting(b"k", &request(), Duration::from_millis(500));
        unsettled.settled(b"k");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(unsettled.stale(b"other").is_empty());
    }
}
