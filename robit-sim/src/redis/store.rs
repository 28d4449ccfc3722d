//! The dataset: strings and lists under byte-string keys, with millisecond expiries.
//!
//! Time is an argument, never read here: every operation takes `now`, the backend's
//! local clock in whole milliseconds since the simulation started, as Redis reads its
//! clock once per command. A key whose expiry is `when` is gone once `now > when`, and
//! is removed lazily by the first operation that looks at it. Keys live in a
//! `BTreeMap`, so nothing depends on hashing or iteration order.

use std::collections::{BTreeMap, VecDeque};

/// The reply to a command on a key of the other type.
pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
/// The reply to an argument or value that is not a 64-bit integer.
pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
/// The reply to an INCR past `i64::MAX`.
pub(crate) const OVERFLOW: &str = "ERR increment or decrement would overflow";

/// An error reply's text, code first.
pub(crate) type Failed = String;

/// A value: Redis's string and list types (the only ones robit uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Str(Vec<u8>),
    List(VecDeque<Vec<u8>>),
}

#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    /// Milliseconds since the simulation started, on the backend's local clock.
    expires_at: Option<i64>,
}

/// All the keys of the one database the simulated Redis has.
#[derive(Debug, Default, Clone)]
pub(crate) struct Dataset {
    keys: BTreeMap<Vec<u8>, Entry>,
}

impl Dataset {
    /// The live entry at `key`, after removing it if it has expired.
    fn entry(&mut self, key: &[u8], now: i64) -> Option<&mut Entry> {
        let expired = self
            .keys
            .get(key)
            .is_some_and(|entry| entry.expires_at.is_some_and(|when| now > when));
        if expired {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    /// The string at `key`; `None` if there is no key.
    pub(crate) fn get(&mut self, key: &[u8], now: i64) -> Result<Option<Vec<u8>>, Failed> {
        match self.entry(key, now).map(|entry| &entry.value) {
            None => Ok(None),
            Some(Value::Str(bytes)) => Ok(Some(bytes.clone())),
            Some(Value::List(_)) => Err(WRONGTYPE.to_owned()),
        }
    }

    /// Whether `key` exists.
    pub(crate) fn exists(&mut self, key: &[u8], now: i64) -> bool {
        self.entry(key, now).is_some()
    }

    /// The type's name, as TYPE answers it.
    pub(crate) fn type_name(&mut self, key: &[u8], now: i64) -> &'static str {
        match self.entry(key, now).map(|entry| &entry.value) {
            None => "none",
            Some(Value::Str(_)) => "string",
            Some(Value::List(_)) => "list",
        }
    }

    /// Writes a string, whatever was there. `keep_ttl` keeps the old expiry (if the key
    /// existed); otherwise the key gets `expires_at`.
    pub(crate) fn set(
        &mut self,
        key: &[u8],
        value: Vec<u8>,
        expires_at: Option<i64>,
        keep_ttl: bool,
        now: i64,
    ) {
        let kept = if keep_ttl {
            self.entry(key, now).and_then(|entry| entry.expires_at)
        } else {
            expires_at
        };
        self.keys.insert(
            key.to_vec(),
            Entry {
                value: Value::Str(value),
                expires_at: kept,
            },
        );
    }

    /// Deletes `key`; whether it existed.
    pub(crate) fn del(&mut self, key: &[u8], now: i64) -> bool {
        self.entry(key, now).is_some() && self.keys.remove(key).is_some()
    }

    /// `None` if there is no key, else its expiry (`None` for none).
    pub(crate) fn expiry(&mut self, key: &[u8], now: i64) -> Option<Option<i64>> {
        self.entry(key, now).map(|entry| entry.expires_at)
    }

    /// PTTL: milliseconds left, -1 without an expiry, -2 without a key.
    pub(crate) fn pttl(&mut self, key: &[u8], now: i64) -> i64 {
        match self.expiry(key, now) {
            None => -2,
            Some(None) => -1,
            Some(Some(when)) => when.saturating_sub(now).max(0),
        }
    }

    /// Sets an existing key's expiry to `when`, deleting it if `when` is not in the
    /// future (Redis's PEXPIRE with a time in the past). Whether the key existed.
    pub(crate) fn expire_at(&mut self, key: &[u8], when: i64, now: i64) -> bool {
        let Some(entry) = self.entry(key, now) else {
            return false;
        };
        if when <= now {
            self.keys.remove(key);
        } else {
            entry.expires_at = Some(when);
        }
        true
    }

    /// INCR: adds one to the integer at `key` (0 if missing), keeping its expiry.
    pub(crate) fn incr(&mut self, key: &[u8], now: i64) -> Result<i64, Failed> {
        let (current, expires_at) = match self.entry(key, now) {
            None => (0, None),
            Some(Entry {
                value: Value::Str(bytes),
                expires_at,
            }) => (
                parse_integer(bytes).ok_or_else(|| NOT_AN_INTEGER.to_owned())?,
                *expires_at,
            ),
            Some(_) => return Err(WRONGTYPE.to_owned()),
        };
        let next = current.checked_add(1).ok_or_else(|| OVERFLOW.to_owned())?;
        self.keys.insert(
            key.to_vec(),
            Entry {
                value: Value::Str(next.to_string().into_bytes()),
                expires_at,
            },
        );
        Ok(next)
    }

    /// The list at `key`, read-only; `None` if there is no key.
    pub(crate) fn list(
        &mut self,
        key: &[u8],
        now: i64,
    ) -> Result<Option<&VecDeque<Vec<u8>>>, Failed> {
        match self.entry(key, now).map(|entry| &entry.value) {
            None => Ok(None),
            Some(Value::List(list)) => Ok(Some(list)),
            Some(Value::Str(_)) => Err(WRONGTYPE.to_owned()),
        }
    }

    /// Applies `change` to the list at `key` (created empty if missing, when `create`),
    /// then deletes the key if the list is left empty, as Redis does.
    pub(crate) fn with_list<T>(
        &mut self,
        key: &[u8],
        now: i64,
        create: bool,
        change: impl FnOnce(&mut VecDeque<Vec<u8>>) -> T,
    ) -> Result<Option<T>, Failed> {
        if self.entry(key, now).is_none() {
            if !create {
                return Ok(None);
            }
            self.keys.insert(
                key.to_vec(),
                Entry {
                    value: Value::List(VecDeque::new()),
                    expires_at: None,
                },
            );
        }
        let Some(entry) = self.keys.get_mut(key) else {
            return Ok(None);
        };
        let Value::List(list) = &mut entry.value else {
            return Err(WRONGTYPE.to_owned());
        };
        let result = change(list);
        if list.is_empty() {
            self.keys.remove(key);
        }
        Ok(Some(result))
    }

    /// How many keys are live.
    pub(crate) fn len(&mut self, now: i64) -> usize {
        self.keys
            .retain(|_, entry| entry.expires_at.is_none_or(|when| now <= when));
        self.keys.len()
    }

    /// The live keys, in order.
    pub(crate) fn keys(&mut self, now: i64) -> Vec<Vec<u8>> {
        self.len(now);
        self.keys.keys().cloned().collect()
    }

    /// FLUSHALL.
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
    }
}

/// Parses an integer exactly as Redis does (`string2ll`): an optional `-`, then digits
/// without a leading zero (except `0` itself), no `-0`, no sign `+`, no spaces, and no
/// overflow.
pub(crate) fn parse_integer(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let valid = match digits {
        [] => false,
        [b'0'] => digits.len() == text.len(),
        [first, ..] => *first != b'0' && digits.iter().all(u8::is_ascii_digit),
    };
    if !valid {
        return None;
    }
    super::resp::decimal(digits.len() != text.len(), digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_lives_through_its_expiry_millisecond_and_is_gone_after_it() {
        let mut data = Dataset::default();
        data.set(b"k", b"v".to_vec(), Some(100), false, 0);
        assert_eq!(data.pttl(b"k", 40), 60);
        assert_eq!(data.pttl(b"k", 100), 0);
        assert_eq!(data.get(b"k", 100), Ok(Some(b"v".to_vec())));
        assert_eq!(data.get(b"k", 101), Ok(None));
        assert_eq!(data.pttl(b"k", 101), -2);
    }

    #[test]
    fn incr_keeps_the_expiry_and_refuses_what_is_not_an_integer() {
        let mut data = Dataset::default();
        data.set(b"n", b"41".to_vec(), Some(500), false, 0);
        assert_eq!(data.incr(b"n", 10), Ok(42));
        assert_eq!(data.pttl(b"n", 10), 490);
        data.set(b"n", b"041".to_vec(), None, false, 0);
        assert_eq!(data.incr(b"n", 10), Err(NOT_AN_INTEGER.to_owned()));
        data.set(b"n", i64::MAX.to_string().into_bytes(), None, false, 0);
        assert_eq!(data.incr(b"n", 10), Err(OVERFLOW.to_owned()));
    }

    #[test]
    fn an_emptied_list_is_deleted_with_its_key() {
        let mut data = Dataset::default();
        let pushed = data.with_list(b"l", 0, true, |list| {
            list.push_back(b"a".to_vec());
            list.len()
        });
        assert_eq!(pushed, Ok(Some(1)));
        assert!(data.expire_at(b"l", 1_000, 0));
        let popped = data.with_list(b"l", 0, false, VecDeque::pop_front);
        assert_eq!(popped, Ok(Some(Some(b"a".to_vec()))));
        assert!(!data.exists(b"l", 0));
    }

    #[test]
    fn a_string_is_the_wrong_type_for_list_operations_and_a_list_for_get() {
        let mut data = Dataset::default();
        data.set(b"s", b"x".to_vec(), None, false, 0);
        assert_eq!(
            data.with_list(b"s", 0, true, |list| list.len()),
            Err(WRONGTYPE.to_owned())
        );
        data.with_list(b"l", 0, true, |list| list.push_back(b"a".to_vec()))
            .unwrap();
        assert_eq!(data.get(b"l", 0), Err(WRONGTYPE.to_owned()));
        assert_eq!(data.incr(b"l", 0), Err(WRONGTYPE.to_owned()));
    }

    #[test]
    fn integers_parse_like_redis_does() {
        for (text, value) in [("0", Some(0)), ("-7", Some(-7)), ("12", Some(12))] {
            assert_eq!(parse_integer(text.as_bytes()), value, "{text}");
        }
        for text in [
            "",
            "-",
            "-0",
            "+1",
            "01",
            " 1",
            "1.0",
            "9223372036854775808",
        ] {
            assert_eq!(parse_integer(text.as_bytes()), None, "{text}");
        }
        assert_eq!(parse_integer(b"-9223372036854775808"), Some(i64::MIN));
    }
}
