//! Waking a waiter when the entry ahead of it in the queue goes: etcd's lock recipe.
//!
//! An attempt that finds its entry behind another records that entry and the revision
//! it read the queue at. The waiter's [`ReleaseWatch`], when first polled, watches that
//! one key for its deletion from the next revision on, so a delete between the read
//! and the watch is not missed, and only the waiter directly behind wakes. A watch
//! that etcd cancels (its start revision compacted away) or whose stream breaks wakes
//! the waiter too: it reads the queue again, which is always safe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex, PoisonError};

use etcd_client::{EventType, WatchFilterType, WatchOptions};

use super::Shared;
use crate::driver::{AcquireRequest, ReleaseWatch};

/// What a waiter waits for: the entry just ahead of it as of a revision, or nothing
/// (try again at once).
type Ahead = Option<(Vec<u8>, i64)>;

/// Per queued waiter, by waiter id: its entry's create revision, and what it waits for.
/// Only looked up by id, never iterated, so hash order cannot reach behaviour.
#[derive(Default)]
pub(super) struct Waiting {
    waiters: StdMutex<HashMap<u128, Queued>>,
}

#[derive(Default)]
struct Queued {
    created: Option<i64>,
    ahead: Option<Ahead>,
}

impl Waiting {
    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<u128, Queued>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The create revision of `request`'s waiter's entry, if an attempt learned it.
    pub(super) fn revision(&self, request: &AcquireRequest) -> Option<i64> {
        let waiter = request.waiter?;
        self.waiters().get(&waiter.id)?.created
    }

    /// `request`'s waiter's entry was created at `revision`.
    pub(super) fn queued_at(&self, request: &AcquireRequest, revision: i64) {
        if let Some(waiter) = request.waiter {
            self.waiters().entry(waiter.id).or_default().created = Some(revision);
        }
    }

    /// What `request`'s waiter waits for next.
    pub(super) fn ahead_of(&self, request: &AcquireRequest, ahead: Ahead) {
        if let Some(waiter) = request.waiter {
            self.waiters().entry(waiter.id).or_default().ahead = Some(ahead);
        }
    }

    /// `request`'s waiter waits no more: granted, or gone.
    pub(super) fn served(&self, request: &AcquireRequest) {
        if let Some(waiter) = request.waiter {
            self.waiters().remove(&waiter.id);
        }
    }

    fn take(&self, id: u128) -> Option<Ahead> {
        self.waiters().get_mut(&id)?.ahead.take()
    }
}

/// The watch for `request`'s next attempt; never completes for a single try.
pub(super) fn watch_release(shared: &Arc<Shared>, request: &AcquireRequest) -> ReleaseWatch {
    let Some(waiter) = request.waiter else {
        return ReleaseWatch::never();
    };
    let shared = Arc::clone(shared);
    ReleaseWatch::new(async move {
        match shared.waiting.take(waiter.id) {
            Some(Some((key, revision))) => gone(&shared, key, revision).await,
            // At the head, with a claim still to make: at once.
            Some(None) => {}
            // The attempt failed and found nothing to wait for: the Mutex polls.
            None => std::future::pending().await,
        }
    })
}

/// Completes when `key` is deleted after `revision`, or the watch cannot go on.
async fn gone(shared: &Shared, key: Vec<u8>, revision: i64) {
    let Ok(link) = shared.session.client().await else {
        return;
    };
    let options = WatchOptions::new()
        .with_start_revision(revision + 1)
        .with_filters([WatchFilterType::NoPut]);
    let mut stream = match link.client.watch_client().watch(key, Some(options)).await {
        Ok(stream) => stream,
        Err(err) => {
            shared
                .session
                .failed(link.index, "watching an etcd lock", err);
            return;
        }
    };
    while let Ok(Some(answer)) = stream.message().await {
        let deleted = answer
            .events()
            .iter()
            .any(|event| event.event_type() == EventType::Delete);
        if deleted || answer.canceled() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::driver::{LockName, OwnerToken, Waiter};

    fn request(waiter: Option<u128>) -> AcquireRequest {
        let request = AcquireRequest::new(
            LockName::from("job"),
            OwnerToken::from_u128(1),
            Duration::from_secs(5),
        );
        match waiter {
            Some(id) => request.with_waiter(Waiter::new(id, Duration::from_secs(1))),
            None => request,
        }
    }

    #[test]
    fn a_waiter_is_remembered_until_it_is_served_and_then_forgotten() {
        let waiting = Waiting::default();
        let (first, second) = (request(Some(7)), request(Some(8)));
        waiting.queued_at(&first, 41);
        waiting.ahead_of(&first, Some((b"ahead".to_vec(), 40)));
        waiting.queued_at(&second, 42);
        assert_eq!(waiting.revision(&first), Some(41));
        // What it waits for is taken once, by the watch of its next attempt.
        assert_eq!(waiting.take(7), Some(Some((b"ahead".to_vec(), 40))));
        assert_eq!(waiting.take(7), None);
        waiting.served(&first);
        assert_eq!(waiting.revision(&first), None);
        assert_eq!(
            waiting.waiters().len(),
            1,
            "the served waiter is still kept"
        );
        assert_eq!(waiting.revision(&second), Some(42));
        // A single try is no waiter: nothing is kept for it.
        let single = request(None);
        waiting.queued_at(&single, 43);
        waiting.ahead_of(&single, None);
        assert_eq!(waiting.revision(&single), None);
        assert_eq!(waiting.waiters().len(), 1);
    }
}
