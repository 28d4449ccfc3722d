//! The `robit-sim` command: its arguments, and what each subcommand does.
//!
//! The binary only parses the arguments, calls [`execute`] and turns the [`Status`]
//! into the process's exit status; everything else lives here, writing its report to
//! any [`Write`].

mod args;
mod commands;
mod operator;
mod report;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use self::args::DEFAULT_DIR;
use crate::ScenarioError;

pub use self::args::{Cli, Command, ForceReleaseArgs, LockArgs, ReplayArgs, RunArgs};

/// How a command ended, and so the process's exit status.
///
/// # Example
///
/// ```
/// use robit_sim::cli::Status;
///
/// assert_eq!(Status::Failed.code(), 1);
/// assert_eq!(Status::BadInput.code(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Every run passed: exit status 0.
    Passed,
    /// At least one run failed: exit status 1.
    Failed,
    /// The input was unusable: exit status 2 (as for invalid arguments).
    BadInput,
}

impl Status {
    /// The exit status.
    pub fn code(self) -> u8 {
        match self {
            Self::Passed => 0,
            Self::Failed => 1,
            Self::BadInput => 2,
        }
    }
}

impl From<Status> for std::process::ExitCode {
    fn from(status: Status) -> Self {
        Self::from(status.code())
    }
}

/// Why a command could not do its work: bad input, exit status 2. Each is one line.
///
/// # Example
///
/// ```
/// use robit_sim::cli::CliError;
///
/// let error = CliError::NoScenarios("empty".into());
/// assert_eq!(error.to_string(), "empty: no scenario files (*.toml) in this directory");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A scenario that cannot be read or is not valid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A path that does not exist.
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
    /// `run` was given no paths, and there is no `scenarios` directory here.
    #[error(
        "no scenarios given, and there is no `{DEFAULT_DIR}` directory here: name scenario files or directories"
    )]
    NoDefault,
    /// A directory with no scenario in it.
    #[error("{}: no scenario files (*.toml) in this directory", .0.display())]
    NoScenarios(PathBuf),
    /// `replay`'s `--client`, `--from` or `--to` name what the run does not have.
    #[error("{0}")]
    Filter(String),
    /// Seeds past the largest seed there is.
    #[error("--first-seed {first} with --seeds {seeds} goes past the largest seed")]
    SeedOverflow {
        /// The first seed.
        first: u64,
        /// How many seeds.
        seeds: u64,
    },
    /// A Redis server the operator commands could not use: a bad URL or namespace, or a
    /// server that did not answer.
    #[error("{0}")]
    Redis(String),
    /// An output file or directory that cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl CliError {
    fn write(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Write {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Runs the command, writing its report to `out` (and a progress bar to the terminal,
/// if standard error is one).
///
/// # Errors
///
/// [`CliError`] for input that cannot be used: the caller prints it and exits with
/// [`Status::BadInput`].
///
/// # Example
///
/// ```no_run
/// use clap::Parser;
/// use robit_sim::cli::{Cli, execute};
///
/// let cli = Cli::parse_from(["robit-sim", "replay", "scenarios/holder-crash.toml", "--seed", "3"]);
/// let status = execute(&cli, &mut std::io::stdout())?;
/// # Ok::<(), robit_sim::cli::CliError>(())
/// ```
pub fn execute(cli: &Cli, out: &mut dyn Write) -> Result<Status, CliError> {
    match &cli.command {
        Command::Run(args) => commands::run(args, out),
        Command::Replay(args) => commands::replay(args, out),
        Command::Inspect(args) => operator::inspect(args, out),
        Command::ForceRelease(args) => operator::force_release(args, out),
    }
}

/// One line for an argument error: clap's `error: …` message, its continuation lines
/// joined on, without the usage and tips after it.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, argument_error};
///
/// let error = Cli::try_parse_from(["robit-sim", "run", "--seeds", "0"]).unwrap_err();
/// assert_eq!(
///     argument_error(&error),
///     "error: invalid value '0' for '--seeds <N>': at least one seed is needed (see --help)",
/// );
/// let error = Cli::try_parse_from(["robit-sim", "replay", "a.toml"]).unwrap_err();
/// assert_eq!(
///     argument_error(&error),
///     "error: the following required arguments were not provided: --seed <S> (see --help)",
/// );
/// ```
pub fn argument_error(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .skip_while(|line| !line.starts_with("error:"))
        .take_while(|line| !line.trim().is_empty() && !line.starts_with("Usage:"))
        .map(str::trim)
        .collect();
    if message.is_empty() {
        return "error: invalid arguments (see --help)".to_owned();
    }
    format!("{} (see --help)", message.join(" "))
}

/// Writes `text`; a closed pipe (the reader stopped early) is not an error.
fn emit(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result.map_err(CliError::write("the standard output".as_ref())),
    }
}
