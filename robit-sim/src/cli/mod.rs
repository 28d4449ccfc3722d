//! The `robit-sim` command: its arguments, and what each subcommand does.
//!
//! The binary only parses the arguments, calls [`execute`] and turns the [`Status`]
//! into the process's exit status; everything else lives here, writing its report to
//! any [`Write`].

mod report;

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{Outcome, Scenario, ScenarioError, Timeline, load_scenarios, run, run_batch};

/// The directory `run` reads when given no paths.
const DEFAULT_DIR: &str = "scenarios";

const EXIT_STATUS: &str = "\
Exit status:
  0  every run passed (for replay: the run passed)
  1  a run failed: a promise broke that the scenario does not expect, an expected
     violation did not show, or the simulation stopped
  2  bad input: invalid arguments, a missing or malformed scenario, or an output
     path that cannot be written";

/// The command line of `robit-sim`.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let cli = Cli::try_parse_from(["robit-sim", "run", "scenarios", "--seeds", "8"])?;
/// let Command::Run(args) = cli.command else { unreachable!() };
/// assert_eq!(args.seeds, 8);
/// assert_eq!(args.first_seed, 1);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Parser)]
#[command(
    name = "robit-sim",
    version,
    about = "Runs robit's fault scenarios in a deterministic simulation and checks its promises (P1-P6).",
    long_about = "Runs robit's fault scenarios in a deterministic simulation and checks its \
                  promises (P1-P6) on each run's history. A run is a pure function of its \
                  scenario and seed: `run` tries many seeds, `replay` shows one of them as a \
                  timeline.",
    after_help = EXIT_STATUS,
    subcommand_required = true,
    arg_required_else_help = true
)]
#[non_exhaustive]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let cli = Cli::try_parse_from(["robit-sim", "replay", "a.toml", "--seed", "3"])?;
/// assert!(matches!(cli.command, Command::Replay(ref args) if args.seed == 3));
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Subcommand)]
#[non_exhaustive]
pub enum Command {
    /// Run scenarios across many seeds and print a verdict table, then every failing run
    /// with the command that replays it.
    #[command(after_help = EXIT_STATUS)]
    Run(RunArgs),
    /// Run one scenario with one seed and print its timeline, its violations and its
    /// verdict.
    #[command(after_help = EXIT_STATUS)]
    Replay(ReplayArgs),
}

/// The arguments of `robit-sim run`.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let cli = Cli::try_parse_from(["robit-sim", "run", "--first-seed", "100", "--threads", "2"])?;
/// let Command::Run(args) = cli.command else { unreachable!() };
/// assert!(args.paths.is_empty());
/// assert_eq!((args.first_seed, args.threads), (100, Some(2)));
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct RunArgs {
    /// Scenario files, or directories whose *.toml files are scenarios [default: scenarios]
    #[arg(value_name = "FILES_OR_DIRS")]
    pub paths: Vec<PathBuf>,
    /// How many seeds to run each scenario with
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = at_least_one)]
    pub seeds: u64,
    /// The first seed; the others follow it (S, S+1, ...)
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub first_seed: u64,
    /// How many runs go at once [default: the number of CPUs]
    #[arg(long, value_name = "T", value_parser = at_least_one_thread)]
    pub threads: Option<usize>,
    /// Write an SVG timeline of every failing run into this directory (created if
    /// needed), named after the scenario file and the seed
    #[arg(long, value_name = "DIR")]
    pub timeline: Option<PathBuf>,
}

/// The arguments of `robit-sim replay`.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let cli = Cli::try_parse_from([
///     "robit-sim", "replay", "a.toml", "--seed", "3", "--timeline", "a.svg", "--no-writes",
/// ])?;
/// let Command::Replay(args) = cli.command else { unreachable!() };
/// assert_eq!(args.timeline.as_deref(), Some("a.svg".as_ref()));
/// assert!(args.no_writes);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ReplayArgs {
    /// The scenario file
    pub file: PathBuf,
    /// The seed to run it with (a failing run's seed, as `run` reports it)
    #[arg(long, value_name = "S")]
    pub seed: u64,
    /// Also write the timeline as an SVG picture to this file
    #[arg(long, value_name = "OUT.svg")]
    pub timeline: Option<PathBuf>,
    /// Leave fenced writes out of the timeline (they can outnumber everything else)
    #[arg(long)]
    pub no_writes: bool,
}

fn at_least_one(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("at least one seed is needed".to_owned()),
        Ok(n) => Ok(n),
        Err(error) => Err(error.to_string()),
    }
}

fn at_least_one_thread(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("at least one thread is needed".to_owned()),
        Ok(n) => Ok(n),
        Err(error) => Err(error.to_string()),
    }
}

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
    /// Seeds past the largest seed there is.
    #[error("--first-seed {first} with --seeds {seeds} goes past the largest seed")]
    SeedOverflow {
        /// The first seed.
        first: u64,
        /// How many seeds.
        seeds: u64,
    },
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
        Command::Run(args) => run_command(args, out),
        Command::Replay(args) => replay_command(args, out),
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

/// The scenarios in `paths` (or the default directory), each path checked first.
fn scenarios(paths: &[PathBuf]) -> Result<Vec<Scenario>, CliError> {
    let paths = if paths.is_empty() {
        if !Path::new(DEFAULT_DIR).is_dir() {
            return Err(CliError::NoDefault);
        }
        vec![PathBuf::from(DEFAULT_DIR)]
    } else {
        paths.to_vec()
    };
    for path in &paths {
        if !path.exists() {
            return Err(CliError::Missing(path.clone()));
        }
        if path.is_dir() {
            let any = std::fs::read_dir(path)
                .map_err(|source| ScenarioError::Read {
                    file: path.clone(),
                    source,
                })?
                .filter_map(Result::ok)
                .any(|entry| entry.path().extension().is_some_and(|ext| ext == "toml"));
            if !any {
                return Err(CliError::NoScenarios(path.clone()));
            }
        }
    }
    Ok(load_scenarios(&paths)?)
}

fn run_command(args: &RunArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let scenarios = scenarios(&args.paths)?;
    let last = args
        .first_seed
        .checked_add(args.seeds - 1)
        .ok_or(CliError::SeedOverflow {
            first: args.first_seed,
            seeds: args.seeds,
        })?;
    if let Some(dir) = &args.timeline {
        std::fs::create_dir_all(dir).map_err(CliError::write(dir))?;
    }
    let runs = scenarios.len() as u64 * args.seeds;
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .min(usize::try_from(runs).unwrap_or(usize::MAX))
        .max(1);
    emit(
        out,
        &format!(
            "{} scenario(s) × {} seed(s) ({}..={last}) on {threads} thread(s)\n",
            scenarios.len(),
            args.seeds,
            args.first_seed
        ),
    )?;
    let bar = progress_bar(runs);
    let outcomes = run_batch(scenarios, args.first_seed..=last, threads, |outcome| {
        if !outcome.passed() {
            bar.set_message(format!(
                "failed: {} seed {}",
                report::short_name(outcome.scenario.file()),
                outcome.seed
            ));
        }
        bar.inc(1);
    });
    bar.finish_and_clear();

    let mut timelines = Vec::new();
    let mut write_error = None;
    if let Some(dir) = &args.timeline {
        for outcome in outcomes.iter().filter(|outcome| !outcome.passed()) {
            let Ok(run) = &outcome.run else {
                continue;
            };
            let path = dir.join(format!(
                "{}-seed-{}.svg",
                report::short_name(outcome.scenario.file()),
                outcome.seed
            ));
            let svg = Timeline::of_run(&outcome.scenario, run).svg();
            match std::fs::write(&path, svg) {
                Ok(()) => timelines.push((outcome.seed, outcome.scenario.file(), path)),
                Err(source) => {
                    write_error.get_or_insert(CliError::Write { path, source });
                }
            }
        }
    }
    emit(out, &report::table(&outcomes))?;
    emit(out, &report::failures(&outcomes, &timelines))?;
    if let Some(error) = write_error {
        return Err(error);
    }
    Ok(if outcomes.iter().all(Outcome::passed) {
        Status::Passed
    } else {
        Status::Failed
    })
}

/// A progress bar on standard error when it is a terminal; hidden otherwise.
fn progress_bar(runs: u64) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn replay_command(args: &ReplayArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let scenario = Scenario::load(&args.file)?;
    // Refuse an unwritable SVG path before spending time on the run.
    let svg_file = match &args.timeline {
        Some(path) => Some((File::create(path).map_err(CliError::write(path))?, path)),
        None => None,
    };
    let run = match run(&scenario, args.seed) {
        Ok(run) => run,
        Err(error) => {
            if let Some((file, path)) = svg_file {
                drop(file);
                let _ = std::fs::remove_file(path);
            }
            emit(
                out,
                &format!(
                    "{} ({}), seed {}\nverdict: FAIL: {error}\n",
                    scenario.name(),
                    scenario.file().display(),
                    args.seed
                ),
            )?;
            return Ok(Status::Failed);
        }
    };
    let mut timeline = Timeline::of_run(&scenario, &run);
    if args.no_writes {
        timeline = timeline.without_writes();
    }
    emit(out, &timeline.text())?;
    if let Some((mut file, path)) = svg_file {
        file.write_all(timeline.svg().as_bytes())
            .and_then(|()| file.flush())
            .map_err(CliError::write(path))?;
        emit(out, &format!("timeline: {}\n", path.display()))?;
    }
    Ok(if run.verdict.passed() {
        Status::Passed
    } else {
        Status::Failed
    })
}
