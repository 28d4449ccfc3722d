//! Redis's pseudo-random generator for scripts' `math.random`: the 48-bit linear
//! congruential generator of POSIX `lrand48`. Redis 7 seeds it once, at random, and
//! its scripts draw from one sequence; here it is seeded with 0 when the server's Lua
//! starts, so that a simulation run draws the same numbers every time.

use std::sync::atomic::{AtomicU64, Ordering};

use mlua::{Lua, MultiValue, Value};

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

/// The generator's state, shared by the Lua functions that read and seed it.
#[derive(Debug, Default)]
pub(super) struct Rand48(AtomicU64);

impl Rand48 {
    /// `srand48(seed)`: the seed's 32 bits above the fixed low word.
    pub(super) fn seed(&self, seed: i32) {
        let seed = u64::from(u32::from_ne_bytes(seed.to_ne_bytes()));
        self.0.store((seed << 16) | 0x330E, Ordering::Relaxed);
    }

    /// `lrand48()`: the next state's top 31 bits.
    pub(super) fn next(&self) -> i32 {
        let state = self.0.load(Ordering::Relaxed);
        let next = MULTIPLIER.wrapping_mul(state).wrapping_add(INCREMENT) & MASK;
        self.0.store(next, Ordering::Relaxed);
        i32::try_from(next >> 17).unwrap_or(i32::MAX)
    }
}

/// `RAND_MAX` of Redis's generator.
const MAX: i32 = i32::MAX;

impl Rand48 {
    /// `math.random([m [, n]])` as Redis 7 computes it; an error is Lua's message.
    pub(super) fn random(&self, lua: &Lua, args: &MultiValue) -> Result<f64, String> {
        let r = f64::from(self.next() % MAX) / f64::from(MAX);
        let int = |n: usize| checkint(lua, args, n, "random");
        match args.len() {
            0 => Ok(r),
            1 => {
                let upper = int(1)?;
                if upper < 1.0 {
                    return Err(empty(1));
                }
                Ok((r * upper).floor() + 1.0)
            }
            2 => {
                let (lower, upper) = (int(1)?, int(2)?);
                if lower > upper {
                    return Err(empty(2));
                }
                Ok((r * (upper - lower + 1.0)).floor() + lower)
            }
            _ => Err("wrong number of arguments".to_owned()),
        }
    }

    /// `math.randomseed(seed)`.
    pub(super) fn randomseed(&self, lua: &Lua, args: &MultiValue) -> Result<(), String> {
        #[allow(clippy::cast_possible_truncation)] // luaL_checkint's (int) cast
        self.seed(checkint(lua, args, 1, "randomseed")? as i32);
        Ok(())
    }
}

fn empty(n: usize) -> String {
    format!("bad argument #{n} to 'random' (interval is empty)")
}

/// `luaL_checkint`: argument `n` (from 1) of the function `name`, as a number truncated
/// to an integer.
fn checkint(lua: &Lua, args: &MultiValue, n: usize, name: &str) -> Result<f64, String> {
    let value = args.get(n - 1).cloned();
    let got = value.as_ref().map_or("no value", Value::type_name);
    let number = value.and_then(|value| lua.coerce_number(value).ok().flatten());
    number
        .map(f64::trunc)
        .ok_or_else(|| format!("bad argument #{n} to '{name}' (number expected, got {got})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_from_seed_zero_is_posix_lrand48s() {
        let rand = Rand48::default();
        rand.seed(0);
        // lrand48() after srand48(0), as C libraries give it.
        assert_eq!(rand.next(), 366_850_414);
        assert_eq!(rand.next(), 1_610_402_240);
        assert_eq!(rand.next(), 206_956_554);
        rand.seed(5);
        assert_eq!(rand.next(), 1_127_084_414);
    }
}
