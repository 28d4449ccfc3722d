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
/// use robit::Entropy;
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

/// The operating system's random generator: the default entropy source.
///
/// # Example
///
/// ```
/// use robit::{Entropy, OsEntropy};
///
/// let a = OsEntropy.next_u64();
/// let b = OsEntropy.next_u64();
/// assert_ne!((a, b), (0, 0));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn next_u64(&self) -> u64 {
        match SysRng.try_next_u64() {
            Ok(value) => value,
            // The OS generator failing is exceedingly rare (an exhausted file descriptor
            // table on some platforms). Owner tokens must still differ between
            // processes, so fall back to std's per-process random hash keys rather than
            // panicking inside a lock call.
            Err(_) => fallback_u64(),
        }
    }
}

fn fallback_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    // Every `RandomState::new()` has fresh keys, so equal inputs hash differently.
    RandomState::new().hash_one(0_u8)
}

/// A deterministic generator seeded by a number: the same seed gives the same sequence.
///
/// For simulations and tests only: its tokens are predictable.
///
/// # Example
///
/// ```
/// use robit::{Entropy, SeededEntropy};
///
/// let a = SeededEntropy::new(42);
/// let b = SeededEntropy::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// ```
pub struct SeededEntropy {
    rng: Mutex<StdRng>,
}

impl SeededEntropy {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
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
        self.rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .next_u64()
    }
}
