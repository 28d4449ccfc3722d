//! Owner tokens: who a grant belongs to.

use std::fmt;

use crate::sources::Entropy;

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
/// use robit::driver::OwnerToken;
/// use robit::sources::SeededEntropy;
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
        Self(entropy.next_u128())
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
    let mut hex = [0; 32];
    for (digits, shift) in hex.chunks_exact_mut(8).zip([96, 64, 32, 0]) {
        // Eight digits at a time: the low 32 bits of the shifted value.
        digits.copy_from_slice(&hex32((value >> shift) as u32));
    }
    hex
}

/// `value` as 8 lower-case hex digits, all eight computed at once in one `u64`.
fn hex32(value: u32) -> [u8; 8] {
    // Spread the nibbles out, one per byte, the most significant in the highest byte.
    let mut nibbles = u64::from(value);
    nibbles = (nibbles | (nibbles << 16)) & 0x0000_ffff_0000_ffff;
    nibbles = (nibbles | (nibbles << 8)) & 0x00ff_00ff_00ff_00ff;
    nibbles = (nibbles | (nibbles << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // 1 in each byte whose nibble is 10 or more (adding 6 carries it into bit 4); no
    // byte overflows into the next, here or below.
    let letters = ((nibbles + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    // '0' + nibble, and 'a' - '0' - 10 more for the letters.
    let ascii = nibbles + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10);
    ascii.to_be_bytes()
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
    fn every_nibble_has_its_digit() {
        for nibble in 0..16_u32 {
            for at in 0..8 {
                let expected = format!("{:08x}", nibble << (4 * at));
                assert_eq!(hex32(nibble << (4 * at)), expected.as_bytes());
            }
        }
    }

    #[test]
    fn tokens_are_32_lower_case_hex_digits() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value =
                (u128::from(state) << 64 | u128::from(state.rotate_left(29))) >> (state % 128);
            assert_eq!(
                hex128(value),
                format!("{value:032x}").as_bytes(),
                "{value:#x}"
            );
        }
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
