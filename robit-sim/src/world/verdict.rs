//! Whether a run passes, given what its scenario expects.

use crate::{Promise, Violation};

/// Whether a run kept the promises it checks, given the violations its scenario expects.
///
/// # Example
///
/// ```
/// use robit_sim::{Promise, Verdict};
///
/// let verdict = Verdict::judge(&[], &[Promise::Fencing]);
/// assert!(!verdict.passed());
/// assert_eq!(verdict.to_string(), "FAIL: expected P4 (fencing) to be broken, and it was not");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// No promise was broken, and none was expected to be.
    Pass,
    /// Exactly the promises expected to break did, and nothing else.
    ExpectedViolations(Vec<Promise>),
    /// Something unexpected broke, or an expected violation did not show.
    Fail {
        /// Violations of promises the scenario does not expect to see broken.
        unexpected: Vec<Violation>,
        /// Promises expected to break that did not.
        missing: Vec<Promise>,
        /// Other expectations of the scenario that the run did not meet.
        unmet: Vec<String>,
    },
}

impl Verdict {
    /// Judges `violations` against the promises `expected` to be broken.
    pub fn judge(violations: &[Violation], expected: &[Promise]) -> Self {
        Self::judge_with(violations, expected, Vec::new())
    }

    /// Like [`judge`](Self::judge), with expectations beyond promises that were not met.
    pub fn judge_with(violations: &[Violation], expected: &[Promise], unmet: Vec<String>) -> Self {
        let unexpected: Vec<Violation> = violations
            .iter()
            .filter(|violation| !expected.contains(&violation.promise))
            .cloned()
            .collect();
        let missing: Vec<Promise> = expected
            .iter()
            .copied()
            .filter(|promise| !violations.iter().any(|v| v.promise == *promise))
            .collect();
        match (
            unexpected.is_empty() && unmet.is_empty(),
            missing.is_empty(),
            expected.is_empty(),
        ) {
            (true, true, true) => Self::Pass,
            (true, true, false) => Self::ExpectedViolations(expected.to_vec()),
            _ => Self::Fail {
                unexpected,
                missing,
                unmet,
            },
        }
    }

    /// Whether the run passes.
    pub fn passed(&self) -> bool {
        !matches!(self, Self::Fail { .. })
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pass => f.write_str("pass"),
            Self::ExpectedViolations(promises) => {
                let names: Vec<&str> = promises.iter().map(|p| p.code()).collect();
                write!(f, "pass (broke {} as expected)", names.join(", "))
            }
            Self::Fail {
                unexpected,
                missing,
                unmet,
            } => {
                let mut reasons: Vec<String> = missing
                    .iter()
                    .map(|promise| format!("expected {promise} to be broken, and it was not"))
                    .collect();
                reasons.extend(unmet.iter().cloned());
                if let Some(first) = unexpected.first() {
                    reasons.push(format!(
                        "{} unexpected violation(s), first: {first}",
                        unexpected.len()
                    ));
                }
                write!(f, "FAIL: {}", reasons.join("; "))
            }
        }
    }
}
