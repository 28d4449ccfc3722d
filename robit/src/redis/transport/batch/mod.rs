//! Natural batching: calls of one script that arrive while another of that script is in
//! flight wait, and go out together, as one call of the script's batch script.
//!
//! Acquire, renew and release each have a batch script (`scripts/*_many.lua`) that runs
//! many of their calls in one: the server pays a script call's overhead once for all of
//! them, where it costs more than the work of an uncontended acquire. A call that finds
//! nothing of its script in flight goes out at once, on its own, so that a lone caller
//! waits no longer than without batching. While it is in flight, others queue in its
//! lane (its script, and in cluster mode its hash tag: one batch's keys all live on one
//! node); when it is answered, a task of the driver sends what queued, a batch at a
//! time, until the lane is empty. A batch is capped at the driver's `max_batch` calls
//! and [`MAX_BATCH_BYTES`](lanes::MAX_BATCH_BYTES) bytes, so that one never holds the
//! server for long; a call that makes a batch full sends it at once, beside the call in
//! flight, since waiting cannot make it larger. A lane whose call has been in flight
//! longer than a call can take (its drain's runtime is not being driven) is led by the
//! next call instead.
//!
//! Each caller's answer is its own: the batch script answers every item in its place,
//! an item's error included (one bad request fails only its caller), and a failure of
//! the whole call reaches every caller in it. A caller waits at most the command timeout
//! from when it queued: its validity counts from before it queued, so the wait costs it
//! time, never safety.

mod lanes;

use std::sync::Arc;

use futures_util::future::join_all;
use redis::Value;
use tokio::sync::oneshot;

pub(in crate::redis) use self::lanes::Batches;
use self::lanes::{Joined, LaneId, Limits, Waiting};
use super::Connector;
use super::connection::Current;
use crate::driver::DriverError;
use crate::redis::Inner;
use crate::redis::scripts::{Lua, ScriptCall};

/// What a call answered: the script's answer, and whether enough replicas acknowledged
/// it (always, when none must).
pub(in crate::redis) type Answered = (Value, Result<(), DriverError>);

/// The lead call of a lane, in flight: when it ends (answered or abandoned), a task
/// sends what queued behind it.
struct Lead<'a, C: Connector> {
    inner: &'a Arc<Inner<C>>,
    lane: LaneId,
    many: &'static Lua,
    acked: bool,
}

impl<C: Connector> Drop for Lead<'_, C> {
    fn drop(&mut self) {
        if !self.inner.batches.more_waiting(&self.lane) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.inner.batches.abandon(&self.lane);
            return;
        };
        // Made here, not in the task: a task dropped before it first runs (its runtime
        // shutting down) frees the lane too.
        let draining = Draining {
            inner: Arc::clone(self.inner),
            lane: self.lane.clone(),
            done: false,
        };
        let (many, acked) = (self.many, self.acked);
        runtime.spawn(async move { draining.drain(many, acked).await });
    }
}

/// A lane being drained by a task of the driver: freed if the task is dropped before the
/// lane is empty (its runtime shut down), failing the calls still waiting there. The
/// lane would otherwise stay in flight, and every later call queue for a batch that
/// nothing sends.
struct Draining<C: Connector> {
    inner: Arc<Inner<C>>,
    lane: LaneId,
    /// The lane was emptied and freed ([`Batches::next`] answered `None`): it may be
    /// another call's by now.
    done: bool,
}

impl<C: Connector> Draining<C> {
    /// Sends what waits in the lane, a batch at a time, until none waits.
    async fn drain(mut self, many: &'static Lua, acked: bool) {
        let inner = Arc::clone(&self.inner);
        while let Some(batch) = inner.batches.next(&self.lane, inner.settings.max_batch) {
            inner.send_batch(batch, many, acked).await;
        }
        self.done = true;
    }
}

impl<C: Connector> Drop for Draining<C> {
    fn drop(&mut self) {
        if !self.done {
            self.inner.batches.abandon(&self.lane);
        }
    }
}

impl<C: Connector> Inner<C> {
    /// Sends `call` (obtained with `current`), with `WAIT` for replicas if `acked`: on
    /// its own if nothing of its lane is in flight or it cannot go out with others, or
    /// else in the batch it queues for.
    pub(in crate::redis) async fn send(
        self: &Arc<Self>,
        current: Current<C::Connection>,
        call: ScriptCall,
        acked: bool,
    ) -> Result<Answered, DriverError> {
        let Some(many) = call.many().filter(|_| self.settings.max_batch > 1) else {
            return self.send_alone(current, &call, acked).await;
        };
        let (lane, script) = (LaneId::of(&call), call.script_name());
        let settings = &self.settings;
        let limits = Limits {
            max_batch: settings.max_batch,
            stranded_after: settings
                .connect_timeout
                .saturating_add(settings.command_timeout),
        };
        match self.batches.join(&lane, call, limits) {
            Joined::Lead(call) => {
                let _lead = Lead {
                    inner: self,
                    lane,
                    many,
                    acked,
                };
                self.send_alone(current, &call, acked).await
            }
            Joined::Queued(answer) => self.answer_to(answer, script).await,
            Joined::Full(batch, answer) => {
                let inner = Arc::clone(self);
                tokio::spawn(async move { inner.send_batch(batch, many, acked).await });
                self.answer_to(answer, script).await
            }
        }
    }

    /// A queued call's answer (a call of `script`), once its batch is answered: within
    /// the command timeout.
    async fn answer_to(
        &self,
        answer: oneshot::Receiver<Result<Answered, DriverError>>,
        script: &'static str,
    ) -> Result<Answered, DriverError> {
        let limit = self.settings.command_timeout;
        match tokio::time::timeout(limit, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(DriverError::unavailable(
                "the call's batch was dropped unsent: the task that was to send it ended \
                 (its runtime shut down)",
            )),
            Err(_) => {
                self.batches.queued_call_timed_out(script, limit);
                Err(DriverError::Timeout(limit))
            }
        }
    }

    /// Sends `batch` as one call and gives each caller its answer.
    async fn send_batch(&self, batch: Vec<Waiting>, many: &'static Lua, acked: bool) {
        let (calls, mut answers): (Vec<ScriptCall>, Vec<_>) = batch
            .into_iter()
            .map(|waiting| (waiting.call, waiting.answer))
            .unzip();
        // Given up by every caller, the call is dropped: the connection learns that a call
        // went unanswered (`connection.rs`, `Abandoned`) as it would from a lone caller
        // that gave up, and the lane is not held for the rest of the command timeout.
        let everyone_gone = join_all(answers.iter_mut().map(oneshot::Sender::closed));
        let sent = tokio::select! {
            biased;
            sent = self.send_calls(&calls, many, acked) => sent,
            _ = everyone_gone => return,
        };
        match sent {
            Ok((generation, (value, acks))) => {
                let items = match calls.len() {
                    1 => vec![Ok(value)],
                    count => self.items(value, count, generation),
                };
                for (answer, item) in answers.into_iter().zip(items) {
                    let acks = acks.as_ref().copied().map_err(DriverError::share);
                    let _ = answer.send(item.map(|value| (value, acks)));
                }
            }
            Err(err) => {
                for answer in answers {
                    let _ = answer.send(Err(err.share()));
                }
            }
        }
    }

    /// Sends `calls` as one call (one of them alone, as itself), on the command
    /// connection: its answer, and the connection it was sent on.
    async fn send_calls(
        &self,
        calls: &[ScriptCall],
        many: &'static Lua,
        acked: bool,
    ) -> Result<(u64, Answered), DriverError> {
        let current = self.connection().await?;
        let generation = current.generation();
        let answered = match calls {
            [call] => self.send_alone(current, call, acked).await,
            _ => {
                let calls: Vec<&ScriptCall> = calls.iter().collect();
                let call = ScriptCall::batch(many, &calls);
                self.send_alone(current, &call, acked).await
            }
        }?;
        Ok((generation, answered))
    }

    /// A batch's answer, item by item: each item's answer, or its own error.
    fn items(
        &self,
        value: Value,
        count: usize,
        generation: u64,
    ) -> Vec<Result<Value, DriverError>> {
        match value {
            Value::Array(items) if items.len() == count => items
                .into_iter()
                .map(|item| match item {
                    Value::ServerError(err) => Err(self.failed(generation, err.into())),
                    item => Ok(item),
                })
                .collect(),
            other => {
                let err = DriverError::rejected(format!(
                    "a batch of {count} calls was answered {other:?}, not one answer each"
                ));
                (0..count).map(|_| Err(err.share())).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::RedisDriver;

    fn reply(resp: &[u8]) -> Value {
        redis::parse_redis_value(resp).unwrap()
    }

    #[test]
    fn each_item_of_a_batch_s_answer_goes_to_its_own_caller_its_error_included() {
        let driver = RedisDriver::builder("redis://localhost").build().unwrap();
        let answer = reply(b"*3\r\n:1\r\n-WRONGTYPE not a lock\r\n:0\r\n");
        let items = driver.inner.items(answer, 3, 0);
        assert!(matches!(items[0], Ok(Value::Int(1))), "{items:?}");
        assert!(
            matches!(&items[1], Err(DriverError::Rejected { reason, .. }) if reason.contains("WRONGTYPE")),
            "{items:?}"
        );
        assert!(matches!(items[2], Ok(Value::Int(0))), "{items:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_queued_call_that_times_out_says_it_waited_for_its_batch_once_per_driver() {
        let captured = robit_test_support::kit::Captured::default();
        let _logs = captured.install();
        let driver = RedisDriver::builder("redis://localhost").build().unwrap();
        let limit = driver.inner.settings.command_timeout;
        let told = || captured.lines_with("without its batch's answer");
        for _ in 0..2 {
            // A batch never answered: the sender kept, never used.
            let (_sender, receiver) = oneshot::channel();
            let waited = tokio::time::Instant::now();
            let answer = driver.inner.answer_to(receiver, "renew").await;
            assert!(
                matches!(answer, Err(DriverError::Timeout(l)) if l == limit),
                "{answer:?}"
            );
            assert_eq!(waited.elapsed(), limit);
        }
        let lines = told();
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(lines[0].contains("a renew call queued"), "{lines:#?}");
        assert!(lines[0].contains("WARN"), "{lines:#?}");
    }

    #[test]
    fn a_batch_answered_with_anything_but_one_answer_per_call_fails_every_call() {
        let driver = RedisDriver::builder("redis://localhost").build().unwrap();
        for answer in [reply(b":1\r\n"), reply(b"*2\r\n:1\r\n:1\r\n")] {
            let items = driver.inner.items(answer, 3, 0);
            assert_eq!(items.len(), 3);
            for item in items {
                assert!(
                    matches!(item, Err(DriverError::Rejected { .. })),
                    "{item:?}"
                );
            }
        }
    }

    #[test]
    fn a_shared_error_keeps_its_kind_and_its_words() {
        let limit = std::time::Duration::from_millis(5);
        assert!(
            matches!(DriverError::Timeout(limit).share(), DriverError::Timeout(l) if l == limit)
        );
        let refused = DriverError::unavailable(std::io::Error::other("refused"));
        let shared = refused.share();
        assert!(shared.is_transient());
        assert_eq!(shared.to_string(), refused.to_string());
        let rejected = DriverError::rejected("NOPERM").share();
        assert!(!rejected.is_transient());
        assert!(rejected.to_string().contains("NOPERM"));
    }
}
