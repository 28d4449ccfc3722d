//! A namespace's first use: whether a missing fencing counter is a new namespace or a
//! lost one.
//!
//! Redis cannot tell the two apart: a server restarted without persistence, flushed, or
//! that evicted the counter looks exactly like one that never held the namespace. Only a
//! client can know that the namespace existed: it saw it. So once any driver of this
//! process has seen the namespace on a server (any answer of an acquire), every driver
//! of the process for that server and namespace treats a missing counter as lost state
//! and quarantines it; until then they create the namespace and grant at once, unless
//! built with [`FirstUse::Quarantine`].

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex as StdMutex, PoisonError};

/// The servers and namespaces the drivers of this process have seen, as
/// `<server> <namespace tag>`: so that a driver built after another one saw the
/// namespace knows it existed too.
static SEEN: StdMutex<BTreeSet<String>> = StdMutex::new(BTreeSet::new());

/// What a driver does on finding its namespace's fencing counter missing before any
/// driver of its process has seen the namespace on that server — on a fresh Redis, and
/// after a loss of state that happened before the process's first lock.
///
/// Once a driver of the process has had any answer from the namespace, a missing counter
/// always means lost state to every driver of the process for that server and namespace,
/// and the namespace is quarantined (see
/// [`RedisDriverBuilder::quarantine`](crate::redis::RedisDriverBuilder::quarantine)).
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
    /// process never saw the namespace before, it can be granted that lock while the
    /// other holder still believes in its grant, until that holder's next renewal.
    #[default]
    Create,
    /// Quarantine it, as lost state: each process's first lock on a fresh Redis waits the
    /// quarantine once (logged, with its end), and no loss goes unnoticed.
    Quarantine,
}

/// One driver's knowledge of its namespace, and the process's.
#[derive(Debug)]
pub(in crate::redis) struct Namespace {
    first_use: FirstUse,
    /// `<server> <namespace tag>`, the key in [`SEEN`].
    key: String,
    /// This driver knows the namespace existed: a copy of [`SEEN`]'s entry, read without
    /// its lock once set.
    seen: AtomicBool,
}

impl Namespace {
    /// What a driver for `server` (as its connector describes it) and the namespace
    /// `tag` knows.
    pub(in crate::redis) fn new(first_use: FirstUse, server: &str, tag: &str) -> Self {
        Self {
            first_use,
            key: format!("{server} {tag}"),
            seen: AtomicBool::new(false),
        }
    }

    /// Whether a missing fencing counter means lost state (rather than a new namespace).
    pub(in crate::redis) fn missing_means_lost(&self) -> bool {
        if self.first_use == FirstUse::Quarantine || self.seen.load(Ordering::Relaxed) {
            return true;
        }
        let known = seen_set().contains(&self.key);
        if known {
            self.seen.store(true, Ordering::Relaxed);
        }
        known
    }

    /// A grant created the namespace on the server: says so, once per creation.
    pub(in crate::redis) fn created(&self) {
        tracing::info!(
            target: "robit",
            namespace = %self.key,
            "created the namespace on the server: its fencing counter was missing and no driver of this process had seen it, so no quarantine (see robit::redis::FirstUse)"
        );
    }

    /// The server answered an acquire in the namespace: from now on it existed, for
    /// every driver of the process.
    pub(in crate::redis) fn seen(&self) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Relaxed);
            seen_set().insert(self.key.clone());
        }
    }
}

fn seen_set() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    SEEN.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_namespace_is_new_until_seen_unless_the_driver_is_strict() {
        let created = Namespace::new(FirstUse::Create, "server-a", "{first}");
        assert!(!created.missing_means_lost());
        created.seen();
        assert!(created.missing_means_lost());
        let strict = Namespace::new(FirstUse::Quarantine, "server-a", "{strict}");
        assert!(strict.missing_means_lost());
        strict.seen();
        assert!(strict.missing_means_lost());
    }

    #[test]
    fn a_driver_built_after_another_saw_the_namespace_knows_it_existed() {
        let first = Namespace::new(FirstUse::Create, "server-b", "{shared}");
        let later = Namespace::new(FirstUse::Create, "server-b", "{shared}");
        let elsewhere = Namespace::new(FirstUse::Create, "server-c", "{shared}");
        let other = Namespace::new(FirstUse::Create, "server-b", "{other}");
        first.seen();
        assert!(later.missing_means_lost());
        assert!(!elsewhere.missing_means_lost());
        assert!(!other.missing_means_lost());
    }

    #[test]
    fn creating_a_namespace_is_told_with_its_server() {
        let captured = robit_test_support::kit::Captured::default();
        let _logs = captured.install();
        Namespace::new(FirstUse::Create, "server-d", "{told}").created();
        let lines = captured.lines();
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(lines[0].contains("INFO"), "{lines:#?}");
        assert!(lines[0].contains("namespace=server-d {told}"), "{lines:#?}");
        assert!(lines[0].contains("created the namespace"), "{lines:#?}");
    }
}
