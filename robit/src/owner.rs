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
        f.write_str(&hex128(self.0))
    }
}

/// `value` as 32 lower-case hex digits, without the formatting machinery: drivers encode
/// a token or two on every operation.
pub(crate) fn hex128(value: u128) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let bytes = value.to_be_bytes();
    let mut hex = String::with_capacity(32);
    for byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

impl fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({self})")
    }
}
