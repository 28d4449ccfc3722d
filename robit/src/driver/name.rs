//! The name of a lock.

use std::fmt;
use std::sync::Arc;

/// The name of a lock: any non-empty byte string.
///
/// Two [`Mutex`](crate::Mutex)es with the same name, over the same backend, exclude each
/// other. Names are bytes rather than `str` because backends key on bytes and callers
/// often build names from ids that are not text. Cloning is cheap (the bytes are shared).
///
/// `Display` shows the name as text, escaping bytes that are not printable UTF-8, so a
/// name can always be logged safely.
///
/// # Example
///
/// ```
/// use robit::driver::LockName;
///
/// let by_text = LockName::from("orders/42");
/// let by_bytes = LockName::from(&b"orders/42"[..]);
/// assert_eq!(by_text, by_bytes);
/// assert_eq!(by_text.as_bytes(), b"orders/42");
/// assert_eq!(LockName::from(&b"\xff"[..]).to_string(), "\\xff");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockName(Arc<[u8]>);

impl LockName {
    /// The name's bytes, as a backend should key on them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether the name is empty. An empty name is rejected by
    /// [`MutexBuilder::build`](crate::MutexBuilder::build).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&[u8]> for LockName {
    fn from(bytes: &[u8]) -> Self {
        Self(Arc::from(bytes))
    }
}

impl From<Vec<u8>> for LockName {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Arc::from(bytes))
    }
}

impl From<&str> for LockName {
    fn from(text: &str) -> Self {
        Self::from(text.as_bytes())
    }
}

impl From<String> for LockName {
    fn from(text: String) -> Self {
        Self::from(text.into_bytes())
    }
}

impl AsRef<[u8]> for LockName {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                if c.is_control() {
                    write!(f, "{}", c.escape_default())?;
                } else {
                    write!(f, "{c}")?;
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LockName(\"{self}\")")
    }
}

/// How many buckets a namespace's lock names fall into, for a driver that keeps one
/// fencing counter per bucket (Redis in cluster mode, Postgres): enough that locks of
/// different names rarely share a counter (or, on a cluster, spread evenly over a few
/// hundred masters), few enough that the counters, kept forever, stay a fixed, small set.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) const BUCKETS: u32 = 1024;

/// The bucket of a lock name: 32-bit FNV-1a of its bytes, xor-folded to ten bits (its top
/// ten bits xor its bottom ten: FNV-1a's own low bits spread names that differ in their
/// last characters poorly). Fixed forever: every client of a namespace must compute the
/// same.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn bucket(name: &[u8]) -> u32 {
    let hash = fnv1a(name);
    ((hash >> 22) ^ hash) % BUCKETS
}

#[cfg(any(feature = "redis", feature = "postgres"))]
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &byte in bytes {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(feature = "redis", feature = "postgres"))]
    #[test]
    fn the_bucket_of_a_name_is_its_fnv1a_hash_folded_to_ten_bits() {
        // FNV-1a's published test vectors: "" → 0x811c9dc5, "a" → 0xe40c292c,
        // "foobar" → 0xbf9cf968.
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
        assert_eq!(bucket(b"foobar"), (0xbf9c_f968 >> 22 ^ 0xbf9c_f968) & 1023);
        // Part of the on-server format: these must never change.
        assert_eq!(bucket(b"job-0"), 618);
        assert_eq!(bucket(b"invoice-run"), 374);
        assert_eq!(bucket(b""), 961);
    }

    #[cfg(any(feature = "redis", feature = "postgres"))]
    #[test]
    fn a_thousand_names_fill_most_buckets() {
        // 1,000 names thrown into 1,024 buckets at random fill about 632 of them, give or
        // take 10; FNV-1a's low bits alone fill about 550 for names like these.
        for pattern in ["job-", "", "user/"] {
            let used: std::collections::BTreeSet<u32> = (0..1000)
                .map(|i| bucket(format!("{pattern}{i}").as_bytes()))
                .collect();
            assert!(
                used.len() > 600,
                "{pattern}: only {} buckets used",
                used.len()
            );
        }
    }

    #[test]
    fn a_name_gives_back_the_bytes_it_was_made_of_however_it_is_asked() {
        for bytes in [&b"orders/42"[..], b"\xff\x00"] {
            let name = LockName::from(bytes);
            assert_eq!(name.as_bytes(), bytes);
            assert_eq!(AsRef::<[u8]>::as_ref(&name), bytes);
            assert_eq!(LockName::from(bytes.to_vec()), name);
        }
    }

    #[test]
    fn a_name_shows_in_debug_as_its_escaped_text() {
        assert_eq!(
            format!("{:?}", LockName::from(&b"orders/\x07\xff"[..])),
            "LockName(\"orders/\\u{7}\\xff\")"
        );
    }
}
