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

/// The entry each queued waiter waits behind, by waiter id. Only looked up by id, never
/// iterated, so hash order cannot reach behaviour.
#[derive(Default)]
pub(super) struct Waiting {
    ahead: StdMutex<HashMap<u128, (Vec<u8>, i64)>>,
}

impl Waiting {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<u128, (Vec<u8>, i64)>> {
        self.ahead.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `request`'s waiter waits behind `key`, as of `revision`.
    pub(super) fn ahead_of(&self, request: &AcquireRequest, key: Vec<u8>, revision: i64) {
        if let Some(waiter) = request.waiter {
            self.entries().insert(waiter.id, (key, revision));
        }
    }

    /// `request`'s waiter waits no more: granted, or gone.
    pub(super) fn served(&self, request: &AcquireRequest) {
        if let Some(waiter) = request.waiter {
            self.entries().remove(&waiter.id);
        }
    }

    fn take(&self, id: u128) -> Option<(Vec<u8>, i64)> {
        self.entries().remove(&id)
    }
}

/// The watch for `request`'s next attempt; never completes for a single try.
pub(super) fn watch_release(shared: &Arc<Shared>, request: &AcquireRequest) -> ReleaseWatch {
    let Some(waiter) = request.waiter else {
        return ReleaseWatch::never();
    };
    let shared = Arc::clone(shared);
    ReleaseWatch::new(async move {
        let Some((key, revision)) = shared.waiting.take(waiter.id) else {
            // The attempt did not find an entry ahead (it failed): the Mutex polls.
            return std::future::pending().await;
        };
        gone(&shared, key, revision).await;
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
