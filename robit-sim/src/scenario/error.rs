//! What can be wrong with a scenario file.

use std::path::PathBuf;

/// A scenario file that cannot be used, and where the problem is.
///
/// # Example
///
/// ```
/// use robit_sim::Scenario;
///
/// let error = Scenario::parse("bad.toml", "name = \"x\"\nduration = \"soon\"\n").unwrap_err();
/// assert_eq!(error.line(), Some(2));
/// assert!(error.to_string().starts_with("bad.toml:2:12: invalid duration \"soon\""));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{}: cannot read the scenario: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The paths given hold no scenario file (`*.toml`).
    #[error("no scenario files (*.toml) in {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoScenarios {
        /// The paths searched.
        paths: Vec<PathBuf>,
    },
    /// The file is not valid TOML, or does not describe a valid scenario.
    #[error("{}:{line}:{column}: {message}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column of the offending text.
        column: usize,
        /// What was wrong, and what was expected instead.
        message: String,
    },
    /// A tick outside the range the simulation accepts.
    #[error("a tick of {tick:?} is outside the simulation's range ({min:?} to {max:?})")]
    Tick {
        /// The tick asked for.
        tick: std::time::Duration,
        /// The finest tick.
        min: std::time::Duration,
        /// The coarsest tick.
        max: std::time::Duration,
    },
}

impl ScenarioError {
    /// The 1-based line the error points at, if it points into the file.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Invalid { line, .. } => Some(*line),
            Self::Read { .. } | Self::NoScenarios { .. } | Self::Tick { .. } => None,
        }
    }

    /// The 1-based column the error points at, if it points into the file.
    pub fn column(&self) -> Option<usize> {
        match self {
            Self::Invalid { column, .. } => Some(*column),
            Self::Read { .. } | Self::NoScenarios { .. } | Self::Tick { .. } => None,
        }
    }
}
