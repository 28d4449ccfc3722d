//! What a release or a withdrawal did, as its script answers.

use redis::{FromRedisValue, ParsingError, Value};

/// The answer of the release and withdraw scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freed {
    /// Nothing of the caller's was there to free: the grant (or the reservation) had
    /// expired, or was someone else's.
    Nothing,
    /// Freed, and nobody was waiting.
    Free,
    /// Reserved for this waiter, whose id was also published.
    ReservedFor(u128),
}

/// A waiter id as the scripts write it: lower-case hex digits.
pub(super) fn parse_waiter(bytes: &[u8]) -> Option<u128> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|hex| u128::from_str_radix(hex, 16).ok())
}

impl FromRedisValue for Freed {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Self::from_redis_value_ref(&value)
    }

    fn from_redis_value_ref(value: &Value) -> Result<Self, ParsingError> {
        let freed = match value {
            Value::Int(0) => Some(Self::Nothing),
            Value::Int(1) => Some(Self::Free),
            Value::BulkString(id) => parse_waiter(id).map(Self::ReservedFor),
            _ => None,
        };
        freed.ok_or_else(|| {
            format!(
                "the script answered {value:?}, which this version of robit does not \
                 understand; are two robit versions sharing the namespace?"
            )
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_the_scripts_give_is_understood_and_nothing_else() {
        let parse = |value: Value| Freed::from_redis_value(value).ok();
        assert_eq!(parse(Value::Int(0)), Some(Freed::Nothing));
        assert_eq!(parse(Value::Int(1)), Some(Freed::Free));
        assert_eq!(
            parse(Value::BulkString(b"0f".to_vec())),
            Some(Freed::ReservedFor(0x0f))
        );
        let widest = format!("{:x}", u128::MAX).into_bytes();
        assert_eq!(
            parse(Value::BulkString(widest)),
            Some(Freed::ReservedFor(u128::MAX))
        );
        for odd in [
            Value::Int(2),
            Value::Nil,
            Value::BulkString(b"not hex".to_vec()),
            Value::BulkString(vec![b'f'; 33]),
            Value::SimpleString("OK".to_owned()),
        ] {
            assert_eq!(parse(odd.clone()), None, "{odd:?}");
        }
    }
}
