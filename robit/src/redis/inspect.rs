//! For operators: what a lock's keys hold, read by the inspect script in one round trip.

use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::scripts::ScriptCall;
use super::scripts::args::InspectArgs;
use super::{Connector, RedisDriver};
use crate::driver::{DriverError, FenceToken, Inspection, LockName, LockState, OwnerToken};

impl<C: Connector> RedisDriver<C> {
    /// See [`Driver::inspect`](crate::Driver::inspect).
    pub(super) async fn inspect_lock(&self, name: &LockName) -> Result<Inspection, DriverError> {
        let settings = &self.inner.settings;
        let keys = settings.keys(name);
        let args = InspectArgs {
            lock: keys.lock(),
            queue: keys.queue(),
        };
        let call = ScriptCall::new(&args, keys.call_bytes(&settings.channel));
        let Seen(inspection) = self.inner.run(&call).await?;
        Ok(inspection)
    }
}

/// The inspect script's answer.
struct Seen(Inspection);

impl FromRedisValue for Seen {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Self::from_redis_value_ref(&value)
    }

    fn from_redis_value_ref(value: &Value) -> Result<Self, ParsingError> {
        inspection(value).map(Seen).ok_or_else(|| {
            format!(
                "the inspect script answered {value:?}, which is not an answer it gives: is \
                 something between robit and Redis rewriting replies?"
            )
            .into()
        })
    }
}

/// `{state, id, token, ms, waiters}`, as inspect.lua answers.
fn inspection(value: &Value) -> Option<Inspection> {
    let Value::Array(parts) = value else {
        return None;
    };
    let [state, id, token, ms, waiters] = parts.as_slice() else {
        return None;
    };
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok().map(str::to_owned),
        _ => None,
    };
    let int = |value: &Value| match value {
        Value::Int(n) => Some(*n),
        _ => None,
    };
    let (state, id, token, ms) = (text(state)?, text(id)?, text(token)?, int(ms)?);
    let mut seen = Inspection::free();
    seen.waiters = usize::try_from(int(waiters)?).ok()?;
    seen.state = match state.as_str() {
        "free" => return Some(seen),
        "held" => LockState::Held,
        "delay" => LockState::LockDelay,
        "reserved" => LockState::Reserved,
        "foreign" => LockState::Foreign,
        _ => return None,
    };
    // A foreign key without an expiry answers -1: it has no end.
    seen.expires_in = u64::try_from(ms).ok().map(Duration::from_millis);
    if matches!(seen.state, LockState::Held | LockState::LockDelay) {
        // A grant a release made a waiter is owned by the waiter's id followed by the
        // grant's token (release_rest.lua): its holder is the waiter.
        let holder = match id.split_at_checked(32) {
            Some((waiter, rest)) if !rest.is_empty() && rest == token => waiter,
            _ => id.as_str(),
        };
        seen.holder = Some(OwnerToken::from_u128(
            u128::from_str_radix(holder, 16).ok()?,
        ));
        // A grant written before tokens were recorded in it has none.
        seen.fence = token.parse().ok().map(FenceToken::new);
    }
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(state: &str, id: &str, token: &str, ms: i64, waiters: i64) -> Value {
        let bulk = |text: &str| Value::BulkString(text.as_bytes().to_vec());
        Value::Array(vec![
            bulk(state),
            bulk(id),
            bulk(token),
            Value::Int(ms),
            Value::Int(waiters),
        ])
    }

    #[test]
    fn every_answer_the_inspect_script_gives_is_understood_and_nothing_else_is() {
        let held = inspection(&answer("held", "0f", "42", 1_500, 2)).unwrap();
        assert_eq!(
            (
                held.state,
                held.holder,
                held.fence,
                held.expires_in,
                held.waiters
            ),
            (
                LockState::Held,
                Some(OwnerToken::from_u128(15)),
                Some(FenceToken::new(42)),
                Some(Duration::from_millis(1_500)),
                2
            )
        );
        // A grant a release made a waiter: its holder is the waiter.
        let id = u128::MAX - 5;
        let waiter = format!("{id:032x}");
        let handed = inspection(&answer("held", &format!("{waiter}42"), "42", 9, 0)).unwrap();
        assert_eq!(handed.holder, Some(OwnerToken::from_u128(id)));
        // Longer than an owner token, but not a waiter's id and this grant's token: not
        // an owner robit wrote.
        assert!(inspection(&answer("held", &format!("{waiter}42"), "43", 9, 0)).is_none());
        let delayed = inspection(&answer("delay", "0f", "", 900, 0)).unwrap();
        assert_eq!((delayed.state, delayed.fence), (LockState::LockDelay, None));
        assert_eq!(
            inspection(&answer("free", "", "", 0, 3)).unwrap().waiters,
            3
        );
        let reserved = inspection(&answer("reserved", "0a", "", 200, 1)).unwrap();
        assert_eq!(
            (reserved.state, reserved.holder),
            (LockState::Reserved, None)
        );
        let foreign = inspection(&answer("foreign", "", "", -1, 0)).unwrap();
        assert_eq!(
            (foreign.state, foreign.expires_in),
            (LockState::Foreign, None)
        );
        for odd in [
            answer("gone", "", "", 0, 0),
            answer("held", "xyz", "1", 0, 0),
            answer("free", "", "", 0, -1),
            Value::Int(1),
            Value::Array(vec![]),
        ] {
            assert_eq!(inspection(&odd), None, "{odd:?}");
        }
    }
}
