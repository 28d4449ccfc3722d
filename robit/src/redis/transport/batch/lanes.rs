//! A driver's lanes: for each script and hash tag, whether a call is in flight and which
//! calls wait behind it, and the batches they go out in.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// A queued call gave up waiting for its batch's answer, and that was told.
    timeout_told: AtomicBool,
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

/// Tells that a lane's call in flight was given up on as stranded: once per takeover,
/// and a lane is taken over at most once per `limit` (the new lead's own time in flight
/// starts then).
fn stranded(script: &str, in_flight_for: Duration, limit: Duration) {
    tracing::warn!(
        target: "robit",
        script,
        in_flight_ms = in_flight_for.as_millis(),
        "a batch of {script} calls has been in flight for {} ms, longer than a call can \
         take ({} ms, the connect and command timeouts): the driver's task that sends what \
         queues behind it is not running (its runtime is blocked, or no longer driven); the \
         next call goes out on its own instead of waiting for it",
        in_flight_for.as_millis(),
        limit.as_millis(),
    );
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
        let in_flight_for = now.saturating_duration_since(lane.since);
        if !lane.in_flight || in_flight_for > limits.stranded_after {
            if lane.in_flight {
                stranded(call.script_name(), in_flight_for, limits.stranded_after);
            }
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

    /// A queued call of `script` waited `limit` (the command timeout) for its batch and
    /// gave up. Its caller gets [`DriverError::Timeout`]; the log says, once per driver,
    /// that the wait was for a batch, and what that means.
    pub(super) fn queued_call_timed_out(&self, script: &str, limit: Duration) {
        if self.timeout_told.swap(true, Ordering::Relaxed) {
            tracing::debug!(target: "robit", script, "a queued call timed out waiting for its batch");
            return;
        }
        tracing::warn!(
            target: "robit",
            script,
            timeout_ms = limit.as_millis(),
            "a {script} call queued behind the one in flight gave up after the command \
             timeout ({} ms) without its batch's answer: the server or the link is slow or \
             down, and calls of one kind made while one is in flight go out together once it \
             is answered; later such timeouts are logged at DEBUG",
            limit.as_millis(),
        );
    }

    /// Frees `lane`, failing every call that waits in it: nothing can send them.
    pub(super) fn abandon(&self, lane: &LaneId) {
        while self.next(lane, usize::MAX).is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::scripts::args::{Key, RenewArgs};

    fn renewal() -> ScriptCall {
        let args = RenewArgs {
            lock: Key::new(b"{t}", b":lock:", b"a"),
            owner: b"owner",
            ttl_ms: 1000,
            lock_delay: None,
        };
        ScriptCall::new(&args, 0)
    }

    #[tokio::test(start_paused = true)]
    async fn a_lane_stranded_past_its_limit_is_led_by_the_next_call_and_that_is_told_once() {
        let captured = robit_test_support::kit::Captured::default();
        let _logs = captured.install();
        let told = || captured.lines_with("longer than a call can take");
        let batches = Batches::default();
        let call = renewal();
        let lane = LaneId::of(&call);
        let limits = Limits {
            max_batch: 8,
            stranded_after: Duration::from_secs(3),
        };
        assert!(matches!(batches.join(&lane, call, limits), Joined::Lead(_)));
        // In flight for as long as a call may take: the next call queues, and nothing is
        // told.
        tokio::time::advance(limits.stranded_after).await;
        assert!(matches!(
            batches.join(&lane, renewal(), limits),
            Joined::Queued(_)
        ));
        assert!(told().is_empty(), "{:#?}", told());
        // Longer: the next call leads, and says why, once.
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(matches!(
            batches.join(&lane, renewal(), limits),
            Joined::Lead(_)
        ));
        assert!(matches!(
            batches.join(&lane, renewal(), limits),
            Joined::Queued(_)
        ));
        let lines = told();
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(lines[0].contains("in_flight_ms=3001"), "{lines:#?}");
        assert!(lines[0].contains("renew"), "{lines:#?}");
    }

    #[test]
    fn a_key_s_hash_tag_is_what_its_first_braces_hold_unless_they_hold_nothing() {
        assert_eq!(hash_tag(b"{robit}:lock:a"), b"robit");
        assert_eq!(hash_tag(b"x{a}{b}"), b"a");
        assert_eq!(hash_tag(b"{}:lock:{a}"), b"{}:lock:{a}");
        assert_eq!(hash_tag(b"no-braces"), b"no-braces");
        assert_eq!(hash_tag(b"{open"), b"{open");
    }
}
