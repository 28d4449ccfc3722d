//! A driver's lanes: for each script and hash tag, whether a call is in flight and which
//! calls wait behind it, and the batches they go out in.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex as StdMutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Answered;
use crate::driver::DriverError;
use crate::redis::scripts::ScriptCall;

/// At most this many bytes of keys and arguments go out in one batch (a call larger on
/// its own still goes, alone).
pub(in crate::redis) const MAX_BATCH_BYTES: usize = 128 * 1024;

/// The driver's lanes, by script and hash tag.
#[derive(Default)]
pub(in crate::redis) struct Batches {
    lanes: StdMutex<BTreeMap<&'static str, BTreeMap<Vec<u8>, Lane>>>,
}

/// Calls of one script on one hash tag: whether one is in flight (a lead call, or a
/// drain's batch) and since when, and those that wait.
struct Lane {
    in_flight: bool,
    since: Instant,
    waiting: VecDeque<Waiting>,
}

impl Lane {
    fn new() -> Self {
        Self {
            in_flight: false,
            since: Instant::now(),
            waiting: VecDeque::new(),
        }
    }

    /// Up to `max` of the waiting calls whose callers still wait, oldest first, and up to
    /// [`MAX_BATCH_BYTES`] (one call at least, however large).
    fn take(&mut self, max: usize) -> Vec<Waiting> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < max
            && let Some(waiting) = self.waiting.pop_front()
        {
            if waiting.answer.is_closed() {
                continue;
            }
            let size = waiting.call.bytes();
            if !batch.is_empty() && bytes + size > MAX_BATCH_BYTES {
                self.waiting.push_front(waiting);
                break;
            }
            bytes += size;
            batch.push(waiting);
        }
        batch
    }

    /// Drops the callers at the front that gave up; answers whether any still waits.
    fn anyone_waits(&mut self) -> bool {
        while self
            .waiting
            .front()
            .is_some_and(|waiting| waiting.answer.is_closed())
        {
            self.waiting.pop_front();
        }
        !self.waiting.is_empty()
    }
}

/// A queued call, and where its answer goes.
pub(super) struct Waiting {
    pub(super) call: ScriptCall,
    pub(super) answer: oneshot::Sender<Result<Answered, DriverError>>,
}

/// Where a call stands in its lane.
pub(super) enum Joined {
    /// Nothing was in flight: the call goes out now.
    Lead(ScriptCall),
    /// It waits for the batch it will go out in.
    Queued(oneshot::Receiver<Result<Answered, DriverError>>),
    /// It made a batch full, which goes out now, beside the call in flight: a full batch
    /// gains nothing by waiting, and on a slow network one batch a round trip would cap
    /// the lane at `max_batch` calls a round trip.
    Full(
        Vec<Waiting>,
        oneshot::Receiver<Result<Answered, DriverError>>,
    ),
}

/// How a lane is run: the batch cap, and how long a call may be in flight before the
/// lane counts as stranded.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_batch: usize,
    /// A call in flight takes at most the connect timeout and the command timeout; one
    /// in flight longer is a drain that never ran (its runtime is not being driven), and
    /// the next call leads the lane instead of queueing behind it for ever.
    pub(super) stranded_after: Duration,
}

/// Which lane: the script, and the hash tag of the call's keys.
#[derive(Clone)]
pub(super) struct LaneId {
    script: &'static str,
    tag: Vec<u8>,
}

impl LaneId {
    pub(super) fn of(call: &ScriptCall) -> Self {
        Self {
            script: call.script_name(),
            tag: hash_tag(call.first_key()).to_vec(),
        }
    }
}

/// The part of `key` that picks its cluster slot: what its first `{…}` holds, if that
/// is not empty, else the whole key (Redis Cluster's rule).
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&byte| byte == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&byte| byte == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

impl Batches {
    fn lanes(&self) -> MutexGuard<'_, BTreeMap<&'static str, BTreeMap<Vec<u8>, Lane>>> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `call` in its lane: to go out now, if nothing there is in flight (or only a
    /// stranded call), to wait, or to go out with the full batch it completes.
    pub(super) fn join(&self, lane: &LaneId, call: ScriptCall, limits: Limits) -> Joined {
        let mut lanes = self.lanes();
        let tags = lanes.entry(lane.script).or_default();
        let lane = match tags.get_mut(lane.tag.as_slice()) {
            Some(found) => found,
            None => tags.entry(lane.tag.clone()).or_insert_with(Lane::new),
        };
        let now = Instant::now();
        if !lane.in_flight || now.saturating_duration_since(lane.since) > limits.stranded_after {
            lane.in_flight = true;
            lane.since = now;
            return Joined::Lead(call);
        }
        let (answer, receiver) = oneshot::channel();
        lane.waiting.push_back(Waiting { call, answer });
        if lane.waiting.len() >= limits.max_batch {
            return Joined::Full(lane.take(limits.max_batch), receiver);
        }
        Joined::Queued(receiver)
    }

    /// The call in flight in `lane` was answered: whether others wait (the lane stays in
    /// flight for them), or the lane is free.
    pub(super) fn more_waiting(&self, lane: &LaneId) -> bool {
        self.next(lane, 0).is_some()
    }

    /// The next batch of `lane` ([`Lane::take`]); `None`, freeing the lane, when none
    /// waits. With `max` 0, takes none, and answers whether any waits.
    pub(super) fn next(&self, lane: &LaneId, max: usize) -> Option<Vec<Waiting>> {
        let mut lanes = self.lanes();
        let found = lanes
            .get_mut(lane.script)
            .and_then(|tags| tags.get_mut(lane.tag.as_slice()))?;
        if !found.anyone_waits() {
            found.in_flight = false;
            return None;
        }
        found.since = Instant::now();
        Some(found.take(max))
    }

    /// Frees `lane`, failing every call that waits in it: nothing can send them.
    pub(super) fn abandon(&self, lane: &LaneId) {
        while self.next(lane, usize::MAX).is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_s_hash_tag_is_what_its_first_braces_hold_unless_they_hold_nothing() {
        assert_eq!(hash_tag(b"{robit}:lock:a"), b"robit");
        assert_eq!(hash_tag(b"x{a}{b}"), b"a");
        assert_eq!(hash_tag(b"{}:lock:{a}"), b"{}:lock:{a}");
        assert_eq!(hash_tag(b"no-braces"), b"no-braces");
        assert_eq!(hash_tag(b"{open"), b"{open");
    }
}
