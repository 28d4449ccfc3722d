//! Deliberately planted bugs, for the simulation harness to prove it catches them.
//!
//! Compiled only under `cfg(robit_mutants)`, which robit's build script sets when the
//! build's environment has `ROBIT_MUTANTS=1` (robit-sim's tests run so): without it, no
//! planted bug is in the build at all — no field, no branch, and the code around each
//! planted branch is the code that ships, so the tests run it either way. With it,
//! [`MutexBuilder::mutant`](crate::MutexBuilder) selects one; without a selection the
//! library behaves as documented. Each mutant breaks one thing the library promises, so
//! that robit-sim's conformance tests can show that a library with that bug would fail
//! them.

/// A planted bug in the mutex itself (as opposed to a driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutant {
    /// The validity deadline is measured from when the backend's answer arrives, not
    /// from when the request was sent.
    ValidityFromReceive,
    /// The drift factor is left out of the validity deadline.
    DriftIgnored,
    /// A lost lease is never signalled: no callback, no `lost()`, and `is_held()` stays
    /// true.
    NoLossSignal,
    /// A voluntary unlock is followed by a loss signal.
    LossAfterUnlock,
}

impl super::Config {
    /// Whether `mutant` is planted in this mutex.
    pub(crate) fn planted(&self, mutant: Mutant) -> bool {
        self.mutant == Some(mutant)
    }
}

/// [`Mutant::LossAfterUnlock`]: runs the on-lost callbacks for a hold that an unlock
/// has just ended.
pub(crate) fn loss_after_unlock(
    config: &super::Config,
    fence: crate::driver::FenceToken,
    held_for: std::time::Duration,
) {
    if !config.planted(Mutant::LossAfterUnlock) {
        return;
    }
    let event = crate::loss::LossEvent {
        name: config.name.clone(),
        fence,
        reason: crate::LossReason::DeadlinePassed,
        held_for,
    };
    config.on_lost.iter().for_each(|callback| callback(&event));
}

/// [`Mutant::ValidityFromReceive`]: the instant a grant's or renewal's validity counts
/// from — its answer's arrival (read from `received`, only when this mutant is planted)
/// instead of its send time (`sent`).
pub(crate) fn validity_from(
    config: &super::Config,
    sent: tokio::time::Instant,
    received: impl FnOnce() -> tokio::time::Instant,
) -> tokio::time::Instant {
    if config.planted(Mutant::ValidityFromReceive) {
        received()
    } else {
        sent
    }
}
