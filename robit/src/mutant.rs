//! Deliberately planted bugs, for the simulation harness to prove it catches them.
//!
//! With the `mutants` feature, [`MutexBuilder::mutant`](crate::MutexBuilder) selects one;
//! without a selection (and always without the feature) the library behaves as
//! documented. Each mutant breaks one thing the library promises, so that robit-sim's
//! conformance tests can show that a library with that bug would fail them.

/// A planted bug in the mutex itself (as opposed to a driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[allow(unreachable_pub)]
#[cfg_attr(not(feature = "mutants"), allow(dead_code))]
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
