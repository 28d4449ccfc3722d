//! What `run` and `replay` do.

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::DEFAULT_DIR;
use super::report::{self, Summary};
use super::{CliError, ReplayArgs, RunArgs, Status, emit};
use crate::{Outcome, Scenario, ScenarioError, Timeline, load_scenarios, run_batch};

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

pub(super) fn run(args: &RunArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let scenarios = scenarios(&args.paths)?;
    let last = args
        .first_seed
        .checked_add(args.seeds.saturating_sub(1))
        .ok_or(CliError::SeedOverflow {
            first: args.first_seed,
            seeds: args.seeds,
        })?;
    if let Some(dir) = &args.timeline {
        std::fs::create_dir_all(dir).map_err(CliError::write(dir))?;
    }
    let runs = (scenarios.len() as u64).saturating_mul(args.seeds);
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
    let seeds = args.first_seed..=last;
    let (summaries, write_error) = run_in_chunks(&scenarios, seeds, threads, args, &bar);
    bar.finish_and_clear();

    emit(out, &report::table(&summaries))?;
    emit(out, &report::failures(&summaries))?;
    if let Some(error) = write_error {
        return Err(error);
    }
    Ok(if summaries.iter().all(Summary::passed) {
        Status::Passed
    } else {
        Status::Failed
    })
}

/// Runs every scenario with every seed of `seeds` on `threads` threads, and sums up each
/// run in (scenario, seed) order, with the first timeline that could not be written.
///
/// Runs go in chunks of seeds, each summed up when it ends: a long batch keeps what it
/// reports, not every run's history. A chunk gives every thread plenty to do.
fn run_in_chunks(
    scenarios: &[Scenario],
    seeds: RangeInclusive<u64>,
    threads: usize,
    args: &RunArgs,
    bar: &ProgressBar,
) -> (Vec<Summary>, Option<CliError>) {
    let chunk = (threads as u64 * 16)
        .max(64)
        .div_ceil(scenarios.len() as u64)
        .max(1);
    let (mut first, last) = seeds.into_inner();
    let mut summaries: Vec<(usize, Summary)> = Vec::new();
    let mut write_error = None;
    loop {
        let chunk_last = first.saturating_add(chunk - 1).min(last);
        let seeds_in_chunk = usize::try_from(chunk_last - first + 1).unwrap_or(usize::MAX);
        let outcomes = run_batch(scenarios.to_vec(), first..=chunk_last, threads, |outcome| {
            if !outcome.passed() {
                bar.set_message(format!(
                    "failed: {} seed {}",
                    report::short_name(outcome.scenario.file()),
                    outcome.seed
                ));
            }
            bar.inc(1);
        });
        for (index, outcome) in outcomes.iter().enumerate() {
            let timeline = args
                .timeline
                .as_deref()
                .and_then(|dir| failed_timeline(dir, outcome, &mut write_error));
            // Outcomes come in (scenario, seed) order.
            summaries.push((index / seeds_in_chunk, Summary::new(outcome, timeline)));
        }
        if chunk_last == last {
            break;
        }
        first = chunk_last + 1;
    }
    summaries.sort_by_key(|(scenario, summary)| (*scenario, summary.seed()));
    let summaries = summaries.into_iter().map(|(_, summary)| summary).collect();
    (summaries, write_error)
}

/// Writes a failing run's SVG timeline into `dir`, named after its scenario file and
/// seed, and says where; a write that fails is kept in `write_error`, if none was.
fn failed_timeline(
    dir: &Path,
    outcome: &Outcome,
    write_error: &mut Option<CliError>,
) -> Option<PathBuf> {
    let run = match &outcome.run {
        Ok(run) if !outcome.passed() => run,
        _ => return None,
    };
    let path = dir.join(format!(
        "{}-seed-{}.svg",
        report::short_name(outcome.scenario.file()),
        outcome.seed
    ));
    let svg = Timeline::of_run(&outcome.scenario, run).svg();
    match std::fs::write(&path, svg) {
        Ok(()) => Some(path),
        Err(source) => {
            write_error.get_or_insert(CliError::Write { path, source });
            None
        }
    }
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

pub(super) fn replay(args: &ReplayArgs, out: &mut dyn Write) -> Result<Status, CliError> {
    let scenario = Scenario::load(&args.file)?;
    // Refuse an unwritable SVG path before spending time on the run, without touching
    // what the file holds until there is a timeline to put in it.
    let svg_file = match &args.timeline {
        Some(path) => Some(SvgFile::open(path)?),
        None => None,
    };
    let run = match crate::run(&scenario, args.seed) {
        Ok(run) => run,
        Err(error) => {
            if let Some(file) = svg_file {
                file.abandon();
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
    let timeline = match filtered(Timeline::of_run(&scenario, &run), args) {
        Ok(timeline) => timeline,
        Err(error) => {
            if let Some(file) = svg_file {
                file.abandon();
            }
            return Err(error);
        }
    };
    emit(out, &timeline.text())?;
    if let Some(file) = svg_file {
        let path = file.write(&timeline.svg())?;
        emit(out, &format!("timeline: {}\n", path.display()))?;
    }
    Ok(if run.verdict.passed() {
        Status::Passed
    } else {
        Status::Failed
    })
}

/// `timeline` as `replay`'s options ask: without writes, only some clients, a window.
fn filtered(mut timeline: Timeline, args: &ReplayArgs) -> Result<Timeline, CliError> {
    if args.no_writes {
        timeline = timeline.without_writes();
    }
    if !args.clients.is_empty() {
        timeline = timeline
            .only_clients(&args.clients)
            .map_err(CliError::Filter)?;
    }
    if args.from.is_some() || args.to.is_some() {
        timeline = timeline
            .window(args.from.unwrap_or_default(), args.to)
            .map_err(CliError::Filter)?;
    }
    Ok(timeline)
}

/// The SVG file `replay` writes, opened before the run.
struct SvgFile<'a> {
    file: File,
    path: &'a Path,
    /// Whether the file was there before: if the run cannot complete, a file created
    /// for it is removed, and one that was there is left as it was.
    existed: bool,
}

impl<'a> SvgFile<'a> {
    fn open(path: &'a Path) -> Result<Self, CliError> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(CliError::write(path))?;
        Ok(Self {
            file,
            path,
            existed,
        })
    }

    fn write(mut self, svg: &str) -> Result<&'a Path, CliError> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all(svg.as_bytes()))
            .and_then(|()| self.file.flush())
            .map_err(CliError::write(self.path))?;
        Ok(self.path)
    }

    fn abandon(self) {
        if !self.existed {
            drop(self.file);
            let _ = std::fs::remove_file(self.path);
        }
    }
}
