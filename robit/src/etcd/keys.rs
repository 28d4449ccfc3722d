//! Where a lock lives in etcd's keyspace: one prefix per lock name, one key per entry
//! (the holder's, or a waiter's) under it.
//!
//! `{namespace}/{length}:{name}/{kind}{32 hex digits}`. The name's length in bytes,
//! written before it, keeps the prefixes of two names apart even when one name is the
//! other followed by a `/`: a range read of one lock's prefix never sees another's
//! entries. `kind` is `w` for a waiter's entry (keyed by its [`Waiter::id`], the same on
//! every attempt of one `lock()` call) or `t` for a single try's (keyed by its owner).

use crate::driver::{AcquireRequest, LockName, OwnerToken, hex128};

/// The prefix all of `name`'s entries share.
pub(super) fn prefix(namespace: &str, name: &LockName) -> Vec<u8> {
    let name = name.as_bytes();
    let mut key = Vec::with_capacity(namespace.len() + name.len() + 8);
    key.extend_from_slice(namespace.as_bytes());
    key.push(b'/');
    key.extend_from_slice(itoa::Buffer::new().format(name.len()).as_bytes());
    key.push(b':');
    key.extend_from_slice(name);
    key.push(b'/');
    key
}

/// The key of `request`'s entry: its waiter's if it has one, else its owner's.
///
/// [`Waiter::id`]: crate::driver::Waiter::id
pub(super) fn entry(prefix: &[u8], request: &AcquireRequest) -> Vec<u8> {
    let (kind, id) = match request.waiter {
        Some(waiter) => (b'w', waiter.id),
        None => (b't', request.owner.as_u128()),
    };
    let mut key = Vec::with_capacity(prefix.len() + 33);
    key.extend_from_slice(prefix);
    key.push(kind);
    key.extend_from_slice(&hex128(id));
    key
}

/// An entry's value: the number of the attempt that wrote it (8 hex digits, so that
/// values compare as attempts do) and that attempt's owner token (32 hex digits). A
/// waiter's later attempt rewrites it when it is granted, so that a grant is one
/// attempt's alone: an earlier attempt's late release or renew compares the value and
/// finds it is not theirs.
pub(super) fn value(request: &AcquireRequest) -> Vec<u8> {
    let attempt = request.waiter.map_or(0, |waiter| waiter.attempt);
    let mut value = Vec::with_capacity(40);
    value.extend_from_slice(&hex128(u128::from(attempt))[24..]);
    value.extend_from_slice(&hex128(request.owner.as_u128()));
    value
}

/// The owner token an entry's value names, if robit wrote it.
pub(super) fn parse_owner(value: &[u8]) -> Option<OwnerToken> {
    if value.len() != 40 {
        return None;
    }
    let text = std::str::from_utf8(&value[8..]).ok()?;
    u128::from_str_radix(text, 16)
        .ok()
        .map(OwnerToken::from_u128)
}

/// Whether `key` is an entry robit writes under `prefix`.
pub(super) fn is_entry(prefix: &[u8], key: &[u8]) -> bool {
    key.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == 33
            && matches!(rest[0], b'w' | b't')
            && rest[1..].iter().all(u8::is_ascii_hexdigit)
    })
}

/// The end of the range of keys that start with `prefix` (etcd's prefix range end).
pub(super) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff: the range runs to the end of the keyspace.
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Waiter;
    use std::time::Duration;

    fn request(name: &str, waiter: Option<u128>) -> AcquireRequest {
        let request = AcquireRequest::new(
            LockName::from(name),
            OwnerToken::from_u128(0xab),
            Duration::from_secs(1),
        );
        match waiter {
            Some(id) => request.with_waiter(Waiter::new(id, Duration::from_millis(250))),
            None => request,
        }
    }

    #[test]
    fn one_name_s_prefix_never_covers_another_s_entries() {
        let short = prefix("robit", &LockName::from("a"));
        let long = prefix("robit", &LockName::from("a/b"));
        assert_eq!(short, b"robit/1:a/");
        let entry = entry(&long, &request("a/b", Some(1)));
        assert!(!entry.starts_with(&short));
        assert!(!is_entry(&short, &entry));
        assert!(is_entry(&long, &entry));
    }

    #[test]
    fn only_a_waiter_s_or_a_try_s_entry_of_32_hex_digits_is_one_of_robit_s() {
        let prefix = prefix("ns", &LockName::from("jobs"));
        let with = |rest: &str| [prefix.as_slice(), rest.as_bytes()].concat();
        let digits = "0123456789abcdef0123456789ABCDEF";
        assert!(is_entry(&prefix, &with(&format!("w{digits}"))));
        assert!(is_entry(&prefix, &with(&format!("t{digits}"))));
        // Another kind of key under the prefix, each way it can differ.
        assert!(!is_entry(&prefix, &with(&format!("x{digits}"))));
        assert!(!is_entry(&prefix, &with(&format!("w{digits}0"))));
        assert!(!is_entry(&prefix, &with(&format!("w{}", &digits[1..]))));
        assert!(!is_entry(&prefix, &with(&format!("w{}g", &digits[1..]))));
        assert!(!is_entry(&prefix, &with(&format!("x{}g", &digits[1..]))));
    }

    #[test]
    fn a_waiter_keeps_its_entry_across_attempts_and_a_try_has_its_owner_s() {
        let prefix = prefix("ns", &LockName::from("jobs"));
        let waiting = entry(&prefix, &request("jobs", Some(7)));
        assert_eq!(&waiting[prefix.len()..prefix.len() + 1], b"w");
        assert!(waiting.ends_with(b"0007"));
        let trying = entry(&prefix, &request("jobs", None));
        assert_eq!(&trying[prefix.len()..prefix.len() + 1], b"t");
        assert!(trying.ends_with(b"00ab"));
    }

    #[test]
    fn an_owner_survives_the_round_trip_through_its_value() {
        let owner = OwnerToken::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let request = AcquireRequest::new(LockName::from("a"), owner, Duration::from_secs(1));
        assert_eq!(parse_owner(&value(&request)), Some(owner));
        assert_eq!(parse_owner(b"not a token"), None);
    }

    #[test]
    fn a_later_attempt_s_value_is_larger_whatever_the_owners() {
        let attempt = |n: u32, owner: u128| {
            let request = request("a", Some(1));
            let mut request =
                AcquireRequest::new(request.name, OwnerToken::from_u128(owner), request.ttl)
                    .with_waiter(request.waiter.unwrap().on_attempt(n));
            request.lock_delay = Duration::ZERO;
            value(&request)
        };
        assert!(attempt(9, 0) < attempt(10, 0));
        assert!(attempt(1, u128::MAX) < attempt(2, 0));
        assert_eq!(&attempt(255, 0)[..8], b"000000ff");
    }

    #[test]
    fn the_range_end_is_the_prefix_with_its_last_byte_raised() {
        assert_eq!(range_end(b"robit/1:a/"), b"robit/1:a0");
        assert_eq!(range_end(&[b'a', 0xff]), b"b");
        assert_eq!(range_end(&[0xff]), vec![0]);
    }
}
