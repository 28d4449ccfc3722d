//! The command line: subcommands, arguments and their help.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// The directory `run` reads when given no paths.
pub(super) const DEFAULT_DIR: &str = "scenarios";

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
    /// Show what a Redis server holds for one lock: its holder, fencing token, time left
    /// and waiters. For an operator; it only reads.
    #[command(after_help = OPERATOR_EXIT_STATUS)]
    Inspect(LockArgs),
    /// Free a lock whose holder is stuck — only if it is still the holder `inspect`
    /// showed — and hand it to the first waiter, as the holder's own release would.
    #[command(after_help = OPERATOR_EXIT_STATUS)]
    ForceRelease(ForceReleaseArgs),
}

const OPERATOR_EXIT_STATUS: &str = "\
Exit status:
  0  done: the lock shown, or freed
  1  force-release freed nothing: the lock is not (or no longer) that holder's
  2  bad input, or the server could not be asked";

/// The lock an operator command looks at: a server, a namespace, a name.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let cli = Cli::try_parse_from(["robit-sim", "inspect", "--redis", "redis://10.0.0.5:6379", "job:42"])?;
/// let Command::Inspect(lock) = cli.command else { unreachable!() };
/// assert_eq!((lock.namespace.as_str(), lock.name.as_str()), ("robit", "job:42"));
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct LockArgs {
    /// The Redis server, as the application's driver names it (`redis://`, or
    /// `rediss://` for TLS; an ACL user and password in the URL)
    #[arg(long, value_name = "URL")]
    pub redis: String,
    /// The namespace the application's driver uses
    #[arg(long, value_name = "NS", default_value = robit::redis::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The lock's name
    pub name: String,
}

/// The arguments of `robit-sim force-release`.
///
/// # Example
///
/// ```
/// use clap::Parser;
/// use robit_sim::cli::{Cli, Command};
///
/// let holder = "0123456789abcdef0123456789abcdef";
/// let cli = Cli::try_parse_from(["robit-sim", "force-release", "--redis", "redis://h", "job:42", "--holder", holder])?;
/// let Command::ForceRelease(args) = cli.command else { unreachable!() };
/// assert_eq!(args.holder, 0x0123456789abcdef0123456789abcdef);
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Debug, Args)]
#[non_exhaustive]
pub struct ForceReleaseArgs {
    /// The lock.
    #[command(flatten)]
    pub lock: LockArgs,
    /// The holder to free it from: its 32 hex digits, as `inspect` shows them
    #[arg(long, value_name = "HEX", value_parser = holder)]
    pub holder: u128,
}

fn holder(text: &str) -> Result<u128, String> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("expected the holder's 32 hex digits, as `inspect` shows them".to_owned());
    }
    u128::from_str_radix(text, 16).map_err(|error| error.to_string())
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
/// let cli = Cli::try_parse_from([
///     "robit-sim", "replay", "a.toml", "--seed", "3", "--client", "c2", "--from", "10s",
/// ])?;
/// let Command::Replay(args) = cli.command else { unreachable!() };
/// assert_eq!(args.clients, ["c2"]);
/// assert_eq!(args.from, Some(std::time::Duration::from_secs(10)));
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
    /// Show only this client (repeat for several): its lane, its events, and what the
    /// backend and the resource did for it
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Show the timeline from this simulated time on (`10s`, `1500ms`)
    #[arg(long, value_name = "TIME", value_parser = humantime::parse_duration)]
    pub from: Option<Duration>,
    /// Show the timeline up to this simulated time
    #[arg(long, value_name = "TIME", value_parser = humantime::parse_duration)]
    pub to: Option<Duration>,
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
