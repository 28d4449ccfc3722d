//! A namespace's first use: whether a missing fencing counter is a new namespace or a
//! lost one.
//!
//! Redis cannot tell the two apart: a server restarted without persistence, flushed, or
//! that evicted the counter looks exactly like one that never held the namespace. Only a
//! client can know that the namespace existed: it saw it. So a driver that has seen the
//! namespace (any answer of an acquire) treats a missing counter as lost state and
//! quarantines it; one that has not creates the namespace and grants at once, unless it
//! was built with [`FirstUse::Quarantine`].

use std::sync::atomic::{AtomicBool, Ordering};

/// What a driver does on finding its namespace's fencing counter missing before it has
/// seen the namespace itself — on a fresh Redis, and after a loss of state that happened
/// before this driver's first lock.
///
/// Once a driver has had any answer from the namespace, a missing counter always means
/// lost state to it, and the namespace is quarantined (see
/// [`RedisDriverBuilder::quarantine`](super::RedisDriverBuilder::quarantine)).
/// docs/safety.md weighs the two.
///
/// # Example
///
/// ```
/// use robit::redis::{FirstUse, RedisDriver};
///
/// // A process that may start while others hold locks on a server that could have
/// // restarted without persistence: never take a missing namespace for a new one.
/// let driver = RedisDriver::builder("redis://127.0.0.1:6379")
///     .first_use(FirstUse::Quarantine)
///     .build()?;
/// # drop(driver);
/// # Ok::<(), robit::redis::RedisConfigError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FirstUse {
    /// Create the namespace and grant at once (the default). A new namespace costs
    /// nothing; but if the state was lost while another process held a lock, and this
    /// driver never saw the namespace before, it can be granted that lock while the other
    /// holder still believes in its grant, until that holder's next renewal.
    #[default]
    Create,
    /// Quarantine it, as lost state: the first lock on a fresh Redis waits the quarantine
    /// once (logged, with its end), and no loss goes unnoticed.
    Quarantine,
}

/// One driver's knowledge of its namespace.
#[derive(Debug)]
pub(super) struct Namespace {
    first_use: FirstUse,
    seen: AtomicBool,
}

impl Namespace {
    pub(super) fn new(first_use: FirstUse) -> Self {
        Self {
            first_use,
            seen: AtomicBool::new(false),
        }
    }

    /// Whether a missing fencing counter means lost state (rather than a new namespace).
    pub(super) fn missing_means_lost(&self) -> bool {
        self.first_use == FirstUse::Quarantine || self.seen.load(Ordering::Relaxed)
    }

    /// The server answered an acquire in the namespace: from now on it existed.
    pub(super) fn seen(&self) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_namespace_is_new_until_seen_unless_the_driver_is_strict() {
        let created = Namespace::new(FirstUse::Create);
        assert!(!created.missing_means_lost());
        created.seen();
        assert!(created.missing_means_lost());
        let strict = Namespace::new(FirstUse::Quarantine);
        assert!(strict.missing_means_lost());
        strict.seen();
        assert!(strict.missing_means_lost());
    }
}
