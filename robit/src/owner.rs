//! Owner tokens: who a grant belongs to.

use std::fmt;

use crate::Entropy;

/// A random 128-bit token naming the owner of one grant.
///
/// The [`Mutex`](crate::Mutex) draws a fresh token for every acquire attempt, from its
/// [`Entropy`] source (the OS RNG unless one is injected), and hands it to the
/// [`Driver`](crate::Driver). A backend stores it with the grant and compares it on every
/// renew and release, which is what makes those operations safe (promise P6): a late
/// release carrying an old token cannot match a newer grant.
///
/// # Example
///
/// ```
/// use robit::{OwnerToken, SeededEntropy};
///
/// let entropy = SeededEntropy::new(7);
/// let a = OwnerToken::generate(&entropy);
/// let b = OwnerToken::generate(&entropy);
/// assert_ne!(a, b);
/// assert_eq!(a.to_string().len(), 32); // lower-case hex
/// assert_eq!(OwnerToken::from_u128(a.as_u128()), a);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerToken(u128);

impl OwnerToken {
    /// Draws a token from `entropy`.
    pub fn generate(entropy: &dyn Entropy) -> Self {
        let high = u128::from(entropy.next_u64());
        let low = u128::from(entropy.next_u64());
        Self((high << 64) | low)
    }

    /// Wraps a known value, for drivers that read a token back from their backend.
    pub const fn from_u128(value: u128) -> Self {
        Self(value)
    }

    /// The token's value.
    pub const fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Display for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = hex128(self.0);
        // Hex digits are ASCII, so this cannot fail.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

/// `value` as 32 lower-case hex digits, without the formatting machinery or an allocation:
/// drivers encode a token or two on every operation.
pub(crate) fn hex128(value: u128) -> [u8; 32] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0; 32];
    for (pair, byte) in hex.chunks_exact_mut(2).zip(value.to_be_bytes()) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    hex
}

impl fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_lower_case_hex_digits() {
        for value in [
            0,
            1,
            0x0f,
            0xa0,
            u128::from(u64::MAX),
            1 << 64,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
            u128::MAX - 1,
            u128::MAX,
        ] {
            let expected = format!("{value:032x}");
            assert_eq!(hex128(value), expected.as_bytes(), "{value:#x}");
            assert_eq!(OwnerToken(value).to_string(), expected);
            assert_eq!(
                format!("{:?}", OwnerToken(value)),
                format!("OwnerToken({expected})")
            );
        }
    }
}
