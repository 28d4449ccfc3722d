//! The randomness abstraction: owner tokens and retry jitter.

use std::fmt::{self, Debug};
use std::sync::Mutex;

use rand::rngs::{StdRng, SysRng};
use rand::{Rng, SeedableRng, TryRng};

/// The source of randomness for a [`Mutex`](crate::Mutex): owner tokens and retry jitter.
///
/// Owner tokens must be unguessable and unique across processes, so the default,
/// [`OsEntropy`], reads the operating system's generator. A simulation injects
/// [`SeededEntropy`] instead, so that a run is a pure function of its seed.
///
/// # Example
///
/// ```
/// use robit::sources::Entropy;
///
/// /// Counts up: fine for a unit test, useless for anything else.
/// #[derive(Debug, Default)]
/// struct Counter(std::sync::atomic::AtomicU64);
///
/// impl Entropy for Counter {
///     fn next_u64(&self) -> u64 {
///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
///     }
/// }
///
/// assert_eq!(Counter::default().next_u64(), 0);
/// ```
pub trait Entropy: Send + Sync + Debug + 'static {
    /// The next 64 random bits.
    fn next_u64(&self) -> u64;

    /// The next 128 random bits: by default two draws of [`next_u64`](Self::next_u64),
    /// the first giving the high half. Every `lock()` draws two of these (its owner
    /// token and its waiter id); a source behind a lock overrides this to take its lock
    /// once, drawing the same two values in the same order.
    fn next_u128(&self) -> u128 {
        let high = u128::from(self.next_u64());
        (high << 64) | u128::from(self.next_u64())
    }

    /// A value drawn uniformly from `0..=max`; used for full-jitter backoff.
    fn below_or_equal(&self, max: u64) -> u64 {
        match max {
            u64::MAX => self.next_u64(),
            // Rejection-free reduction: the bias of at most max/2^64 does not matter
            // for jitter.
            _ => ((u128::from(self.next_u64()) * (u128::from(max) + 1)) >> 64) as u64,
        }
    }
}

/// Unpredictable randomness from the operating system: the default entropy source.
///
/// It draws a seed from the OS generator once, and expands it with ChaCha12 — the
/// construction of `rand`'s thread-local generator — so that owner tokens stay
/// unguessable without a system call per token.
///
/// # Example
///
/// ```
/// use robit::sources::{Entropy, OsEntropy};
///
/// let entropy = OsEntropy::new();
/// let (a, b) = (entropy.next_u64(), entropy.next_u64());
/// assert_ne!(a, b);
/// assert_ne!(OsEntropy::new().next_u64(), a);
/// ```
pub struct OsEntropy {
    rng: LockedRng,
}

impl OsEntropy {
    /// A generator seeded from the operating system.
    pub fn new() -> Self {
        let mut seed = <StdRng as SeedableRng>::Seed::default();
        if SysRng.try_fill_bytes(&mut seed).is_err() {
            // The OS generator failing is exceedingly rare (an exhausted file descriptor
            // table on some platforms). Tokens must still differ between processes, so
            // fall back to std's per-process random hash keys rather than panicking.
            for (i, chunk) in seed.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&fallback_u64(i).to_le_bytes()[..chunk.len()]);
            }
        }
        Self {
            rng: LockedRng::new(StdRng::from_seed(seed)),
        }
    }
}

impl Default for OsEntropy {
    fn default() -> Self {
        Self::new()
    }
}

impl Debug for OsEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OsEntropy").finish_non_exhaustive()
    }
}

impl Entropy for OsEntropy {
    fn next_u64(&self) -> u64 {
        self.rng.next_u64()
    }

    fn next_u128(&self) -> u128 {
        self.rng.next_u128()
    }
}

fn fallback_u64(salt: usize) -> u64 {
    use std::hash::{BuildHasher, RandomState};
    // Every `RandomState::new()` has fresh keys, so equal inputs hash differently.
    RandomState::new().hash_one(salt)
}

/// A deterministic generator seeded by a number: the same seed gives the same sequence.
///
/// For simulations and tests only: its tokens are predictable.
///
/// # Example
///
/// ```
/// use robit::sources::{Entropy, SeededEntropy};
///
/// let a = SeededEntropy::new(42);
/// let b = SeededEntropy::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// ```
pub struct SeededEntropy {
    rng: LockedRng,
}

impl SeededEntropy {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: LockedRng::new(StdRng::seed_from_u64(seed)),
        }
    }
}

impl Debug for SeededEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeededEntropy").finish_non_exhaustive()
    }
}

impl Entropy for SeededEntropy {
    fn next_u64(&self) -> u64 {
        self.rng.next_u64()
    }

    fn next_u128(&self) -> u128 {
        self.rng.next_u128()
    }
}

/// A generator behind a lock, shared by the entropy sources.
struct LockedRng(Mutex<StdRng>);

impl LockedRng {
    fn new(rng: StdRng) -> Self {
        Self(Mutex::new(rng))
    }

    fn rng(&self) -> std::sync::MutexGuard<'_, StdRng> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn next_u64(&self) -> u64 {
        self.rng().next_u64()
    }

    fn next_u128(&self) -> u128 {
        let mut rng = self.rng();
        let high = u128::from(rng.next_u64());
        (high << 64) | u128::from(rng.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trait's default `next_u128`, for a source that only has `next_u64`.
    #[derive(Debug)]
    struct Unlocked(SeededEntropy);

    impl Entropy for Unlocked {
        fn next_u64(&self) -> u64 {
            self.0.next_u64()
        }
    }

    #[test]
    fn drawing_128_bits_under_one_lock_gives_the_same_sequence_as_two_draws() {
        let once = SeededEntropy::new(7);
        let twice = Unlocked(SeededEntropy::new(7));
        for _ in 0..4 {
            assert_eq!(once.next_u128(), twice.next_u128());
        }
        assert_eq!(
            once.next_u64(),
            twice.next_u64(),
            "the sequences drifted apart"
        );
    }

    /// A source that always draws the same bits.
    #[derive(Debug)]
    struct Constant(u64);

    impl Entropy for Constant {
        fn next_u64(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn a_jitter_draw_spans_zero_to_its_bound_in_proportion() {
        assert_eq!(Constant(0).below_or_equal(10), 0);
        assert_eq!(Constant(u64::MAX).below_or_equal(10), 10);
        assert_eq!(Constant(1 << 63).below_or_equal(10), 5);
        assert_eq!(Constant(u64::MAX).below_or_equal(u64::MAX), u64::MAX);
    }

    #[test]
    fn the_os_source_draws_differ_between_draws_and_between_sources() {
        let entropy = OsEntropy::new();
        assert_ne!(entropy.next_u64(), entropy.next_u64());
        assert_ne!(entropy.next_u128(), entropy.next_u128());
        assert_ne!(OsEntropy::new().next_u64(), entropy.next_u64());
    }

    #[test]
    fn the_fallback_seed_differs_between_chunks_and_between_calls() {
        assert_ne!(fallback_u64(0), fallback_u64(1));
        assert_ne!(fallback_u64(0), fallback_u64(0));
    }

    #[test]
    fn the_sources_show_their_kind_but_not_their_state_in_debug() {
        assert_eq!(format!("{:?}", OsEntropy::new()), "OsEntropy { .. }");
        assert_eq!(
            format!("{:?}", SeededEntropy::new(1)),
            "SeededEntropy { .. }"
        );
    }
}
