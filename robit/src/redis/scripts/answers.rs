//! What the scripts answer, parsed: acquire's status, and what a release or a withdrawal
//! freed.

use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use crate::driver::FenceToken;

/// The acquire script's answer: `{1, fence, next}` (`{1, fence, next, 1}` when the
/// grant created the namespace), `{0, ms}`, or `{2, ms}` (`{2, ms, 1}` when the
/// quarantine began because the namespace was written on another server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::redis) enum AcquireAnswer {
    /// Granted, with a fencing token (never 0).
    Granted {
        fence: FenceToken,
        /// The waiter first in line behind this grant, if any. A hint: an entry that is
        /// not one of robit's ids (another writer's, say) reads as none.
        next: Option<u128>,
        /// The grant created the namespace: its fencing counter was missing.
        created: bool,
    },
    /// Granted to the caller by a release before this attempt (a hand-off straight to
    /// the waiter first in line): its validity counts from the waiter's last attempt
    /// answered as held.
    Handed {
        fence: FenceToken,
        /// As for [`Granted`](Self::Granted).
        next: Option<u128>,
    },
    /// Held by someone else, who has this long left (`None`: no expiry).
    Held { expires_in: Option<Duration> },
    /// No grants in this namespace for this long: its state was lost, or is new.
    Quarantined {
        left: Option<Duration>,
        /// This acquire began the quarantine because the namespace was written on
        /// another server, or another life of this one (a failover, a restart).
        moved: bool,
    },
}

/// The answer of the release and withdraw scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::redis) enum Freed {
    /// Nothing of the caller's was there to free: the grant (or the reservation) had
    /// expired, or was someone else's.
    Nothing,
    /// Freed, and nobody was waiting.
    Free,
    /// Reserved for the waiter whose id was also published: this one, if it is one of
    /// robit's ids (another writer's queue entry reads as `None`).
    ReservedFor(Option<u128>),
    /// Granted to the waiter first in line, with this fencing token (published too).
    GrantedTo(Handoff),
}

/// A grant a release made to a waiter: `<id>@<token>`, as the release answers and
/// publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::redis) struct Handoff {
    pub(in crate::redis) waiter: u128,
    pub(in crate::redis) fence: FenceToken,
}

impl Handoff {
    /// `<id>@<token>`, or `None` for anything else.
    pub(in crate::redis) fn parse(bytes: &[u8]) -> Option<Self> {
        let at = bytes.iter().position(|&byte| byte == b'@')?;
        let (waiter, token) = (&bytes[..at], &bytes[at + 1..]);
        let fence = std::str::from_utf8(token)
            .ok()
            .filter(|token| !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|token| token.parse::<u64>().ok())
            .filter(|&fence| fence > 0)?;
        Some(Self {
            waiter: parse_waiter(waiter)?,
            fence: FenceToken::new(fence),
        })
    }
}

/// A waiter id as robit writes it: 1 to 32 hex digits. Anything else — an entry another
/// writer put in the queue — is nobody robit knows.
pub(in crate::redis) fn parse_waiter(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > 32 || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|hex| u128::from_str_radix(hex, 16).ok())
}

fn not_understood(what: &str, value: &Value) -> ParsingError {
    format!(
        "the {what} script answered {value:?}, which is not an answer it gives: is \
         something between robit and Redis rewriting replies?"
    )
    .into()
}

impl FromRedisValue for AcquireAnswer {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Self::from_redis_value_ref(&value)
    }

    fn from_redis_value_ref(value: &Value) -> Result<Self, ParsingError> {
        let millis = |ms: &i64| u64::try_from(*ms).ok().map(Duration::from_millis);
        let answer = match value {
            Value::Array(items) => match items.as_slice() {
                [
                    Value::Int(1),
                    Value::Int(fence),
                    Value::BulkString(next),
                    created @ ..,
                ] if matches!(created, [] | [Value::Int(1)]) => u64::try_from(*fence)
                    .ok()
                    .filter(|&fence| fence > 0)
                    .map(|fence| Self::Granted {
                        fence: FenceToken::new(fence),
                        next: parse_waiter(next),
                        created: !created.is_empty(),
                    }),
                [Value::Int(3), Value::Int(fence), Value::BulkString(next)] => {
                    u64::try_from(*fence)
                        .ok()
                        .filter(|&fence| fence > 0)
                        .map(|fence| Self::Handed {
                            fence: FenceToken::new(fence),
                            next: parse_waiter(next),
                        })
                }
                [Value::Int(0), Value::Int(pttl)] => Some(Self::Held {
                    expires_in: millis(pttl),
                }),
                [Value::Int(2), Value::Int(left), moved @ ..]
                    if matches!(moved, [] | [Value::Int(1)]) =>
                {
                    Some(Self::Quarantined {
                        left: millis(left),
                        moved: !moved.is_empty(),
                    })
                }
                _ => None,
            },
            _ => None,
        };
        answer.ok_or_else(|| not_understood("acquire", value))
    }
}

impl FromRedisValue for Freed {
    fn from_redis_value(value: Value) -> Result<Self, ParsingError> {
        Self::from_redis_value_ref(&value)
    }

    fn from_redis_value_ref(value: &Value) -> Result<Self, ParsingError> {
        let freed = match value {
            Value::Int(0) => Some(Self::Nothing),
            Value::Int(1) => Some(Self::Free),
            Value::BulkString(id) if id.contains(&b'@') => Handoff::parse(id).map(Self::GrantedTo),
            Value::BulkString(id) => Some(Self::ReservedFor(parse_waiter(id))),
            _ => None,
        };
        freed.ok_or_else(|| not_understood("release or withdraw", value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(value: Value) -> Option<AcquireAnswer> {
        AcquireAnswer::from_redis_value(value).ok()
    }

    fn granted(fence: u64, next: Option<u128>) -> Option<AcquireAnswer> {
        Some(AcquireAnswer::Granted {
            fence: FenceToken::new(fence),
            next,
            created: false,
        })
    }

    #[test]
    fn every_acquire_answer_the_script_gives_is_understood_and_nothing_else_is() {
        let int = Value::Int;
        let bulk = |bytes: &[u8]| Value::BulkString(bytes.to_vec());
        let array = Value::Array;
        let ms = |ms| Some(Duration::from_millis(ms));
        assert_eq!(
            acquire(array(vec![int(1), int(7), bulk(b"")])),
            granted(7, None)
        );
        assert_eq!(
            acquire(array(vec![int(1), int(7), bulk(b"0f")])),
            granted(7, Some(0x0f))
        );
        assert_eq!(
            acquire(array(vec![int(1), int(7), bulk(b""), int(1)])),
            Some(AcquireAnswer::Granted {
                fence: FenceToken::new(7),
                next: None,
                created: true,
            })
        );
        // Next in line is a hint: a queue entry robit did not write reads as nobody, a
        // number longer than robit's 32 digits too.
        let padded = format!("{:033x}", 0x0f).into_bytes();
        for foreign in [&b"not hex"[..], &[b'f'; 33], b"+f", &padded] {
            assert_eq!(
                acquire(array(vec![int(1), int(7), bulk(foreign)])),
                granted(7, None)
            );
        }
        assert_eq!(
            acquire(array(vec![int(3), int(9), bulk(b"0f")])),
            Some(AcquireAnswer::Handed {
                fence: FenceToken::new(9),
                next: Some(0x0f)
            })
        );
        assert_eq!(
            acquire(array(vec![int(0), int(250)])),
            Some(AcquireAnswer::Held {
                expires_in: ms(250)
            })
        );
        // A lock without expiry (PTTL -1).
        assert_eq!(
            acquire(array(vec![int(0), int(-1)])),
            Some(AcquireAnswer::Held { expires_in: None })
        );
        assert_eq!(
            acquire(array(vec![int(2), int(900)])),
            Some(AcquireAnswer::Quarantined {
                left: ms(900),
                moved: false
            })
        );
        assert_eq!(
            acquire(array(vec![int(2), int(900), int(1)])),
            Some(AcquireAnswer::Quarantined {
                left: ms(900),
                moved: true
            })
        );
        for odd in [
            array(vec![int(1), int(0), bulk(b"")]),
            array(vec![int(1), int(-7), bulk(b"")]),
            array(vec![int(0), int(1), bulk(b"0f")]),
            array(vec![int(1)]),
            array(vec![int(1), int(7)]),
            array(vec![int(1), int(7), bulk(b""), int(0)]),
            array(vec![int(1), int(7), bulk(b""), int(1), int(1)]),
            array(vec![int(3), int(7)]),
            array(vec![int(3), int(0), bulk(b"")]),
            array(vec![int(3), int(7), bulk(b""), int(1)]),
            array(vec![int(2), int(7), int(0)]),
            array(vec![int(2), int(7), int(1), int(1)]),
            array(vec![int(1), bulk(b"7")]),
            int(1),
            Value::Nil,
        ] {
            assert_eq!(acquire(odd.clone()), None, "{odd:?}");
        }
    }

    #[test]
    fn every_release_answer_the_scripts_give_is_understood_and_nothing_else_is() {
        let parse = |value: Value| Freed::from_redis_value(value).ok();
        assert_eq!(parse(Value::Int(0)), Some(Freed::Nothing));
        assert_eq!(parse(Value::Int(1)), Some(Freed::Free));
        assert_eq!(
            parse(Value::BulkString(b"0f".to_vec())),
            Some(Freed::ReservedFor(Some(0x0f)))
        );
        let widest = format!("{:x}", u128::MAX).into_bytes();
        assert_eq!(
            parse(Value::BulkString(widest)),
            Some(Freed::ReservedFor(Some(u128::MAX)))
        );
        // Released, to a waiter robit did not queue: nobody to wake, but no error.
        let padded = format!("{:033x}", 0x0f).into_bytes();
        for foreign in [&b"not hex"[..], &[b'f'; 33], b"+f", b"", &padded] {
            assert_eq!(
                parse(Value::BulkString(foreign.to_vec())),
                Some(Freed::ReservedFor(None))
            );
        }
        assert_eq!(
            parse(Value::BulkString(b"0f@1764000000000001".to_vec())),
            Some(Freed::GrantedTo(Handoff {
                waiter: 0x0f,
                fence: FenceToken::new(1_764_000_000_000_001)
            }))
        );
        for odd in [
            Value::Int(2),
            Value::Nil,
            Value::BulkString(b"0f@".to_vec()),
            Value::BulkString(b"0f@0".to_vec()),
            Value::BulkString(b"0f@+1".to_vec()),
            Value::BulkString(b"@1".to_vec()),
            Value::BulkString(b"0f@1@2".to_vec()),
            Value::SimpleString("OK".to_owned()),
        ] {
            assert_eq!(parse(odd.clone()), None, "{odd:?}");
        }
    }
}
