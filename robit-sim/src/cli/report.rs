//! What `robit-sim run` prints: the verdict table, then the failing runs.
//!
//! Runs are summed up as they finish ([`Summary`]): a long batch keeps what it prints,
//! not every run's history.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Outcome, Promise};

/// How many violations a failing run lists.
const VIOLATIONS_SHOWN: usize = 3;

/// A scenario file's name without its directory and extension.
pub(super) fn short_name(file: &Path) -> String {
    file.file_stem().map_or_else(
        || file.display().to_string(),
        |stem| stem.to_string_lossy().into_owned(),
    )
}

/// One run, as the report needs it.
pub(super) struct Summary {
    file: PathBuf,
    seed: u64,
    elapsed: Duration,
    /// The promises the scenario expects broken, each with whether this run broke it.
    expected: Vec<(Promise, bool)>,
    /// What to say about the run if it failed.
    failure: Option<Failure>,
}

/// A failing run, as printed.
struct Failure {
    name: String,
    verdict: String,
    violations: Vec<String>,
    more: usize,
    replay: String,
    timeline: Option<PathBuf>,
}

impl Summary {
    /// Sums up `outcome`; `timeline` is where its SVG timeline was written, if it was.
    pub(super) fn new(outcome: &Outcome, timeline: Option<PathBuf>) -> Self {
        let scenario = &outcome.scenario;
        let violations = outcome.run.as_ref().map_or(&[][..], |run| &run.violations);
        let failure = (!outcome.passed()).then(|| Failure {
            name: scenario.name().to_owned(),
            verdict: match &outcome.run {
                Ok(run) => run.verdict.to_string(),
                Err(error) => format!("FAIL: {error}"),
            },
            violations: violations
                .iter()
                .take(VIOLATIONS_SHOWN)
                .map(ToString::to_string)
                .collect(),
            more: violations.len().saturating_sub(VIOLATIONS_SHOWN),
            replay: outcome.replay_command(),
            timeline,
        });
        Self {
            file: scenario.file().to_path_buf(),
            seed: outcome.seed,
            elapsed: outcome.elapsed,
            expected: scenario
                .expected_violations()
                .iter()
                .map(|promise| (*promise, violations.iter().any(|v| v.promise == *promise)))
                .collect(),
            failure,
        }
    }

    /// Whether the run passed.
    pub(super) fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// The run's seed.
    pub(super) fn seed(&self) -> u64 {
        self.seed
    }
}

/// One row of the table: a scenario's runs, summed up.
#[derive(Default)]
struct Row {
    runs: usize,
    passed: usize,
    /// For each expected promise, in how many runs it was seen broken.
    expected: BTreeMap<Promise, usize>,
    slowest: Option<(Duration, u64)>,
}

fn seconds(elapsed: Duration) -> String {
    format!("{:.2}s", elapsed.as_secs_f64())
}

/// The verdict table: one row per scenario, in the order they first appear, and a
/// total.
pub(super) fn table(runs: &[Summary]) -> String {
    let (order, rows) = rows(runs);
    let names = names(&order);
    let mut cells: Vec<[String; 6]> = order
        .iter()
        .zip(names)
        .filter_map(|(file, name)| rows.get(file).map(|row| row.cells(name)))
        .collect();
    let passed = runs.iter().filter(|run| run.passed()).count();
    cells.push([
        "total".to_owned(),
        runs.len().to_string(),
        passed.to_string(),
        (runs.len() - passed).to_string(),
        String::new(),
        runs.iter()
            .map(|run| run.elapsed)
            .max()
            .map_or_else(String::new, seconds),
    ]);
    aligned(&cells)
}

/// Each scenario's runs summed up into its row, and the scenarios in the order they
/// first appear.
fn rows(runs: &[Summary]) -> (Vec<&Path>, BTreeMap<&Path, Row>) {
    let mut order: Vec<&Path> = Vec::new();
    let mut rows: BTreeMap<&Path, Row> = BTreeMap::new();
    for run in runs {
        let row = rows.entry(&run.file).or_insert_with(|| {
            order.push(&run.file);
            Row::default()
        });
        row.runs += 1;
        row.passed += usize::from(run.passed());
        for (promise, seen) in &run.expected {
            *row.expected.entry(*promise).or_default() += usize::from(*seen);
        }
        if row.slowest.is_none_or(|(slowest, _)| run.elapsed > slowest) {
            row.slowest = Some((run.elapsed, run.seed));
        }
    }
    (order, rows)
}

/// Each scenario file's name in the table: its short name, or its path when scenario
/// files with the same name in different directories ran.
fn names(order: &[&Path]) -> Vec<String> {
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for file in order {
        *names.entry(short_name(file)).or_default() += 1;
    }
    order
        .iter()
        .map(|file| {
            let short = short_name(file);
            if names.get(&short).copied().unwrap_or(0) > 1 {
                file.display().to_string()
            } else {
                short
            }
        })
        .collect()
}

impl Row {
    /// The row's cells, with the scenario called `name`.
    fn cells(&self, name: String) -> [String; 6] {
        let expected = if self.expected.is_empty() {
            "-".to_owned()
        } else {
            self.expected
                .iter()
                .map(|(promise, seen)| format!("{} {seen}/{}", promise.code(), self.runs))
                .collect::<Vec<_>>()
                .join(", ")
        };
        [
            name,
            self.runs.to_string(),
            self.passed.to_string(),
            (self.runs - self.passed).to_string(),
            expected,
            self.slowest.map_or_else(String::new, |(elapsed, seed)| {
                format!("{} (seed {seed})", seconds(elapsed))
            }),
        ]
    }
}

/// The table laid out: the header, a rule, the rows, a rule before the last (the
/// total), every column as wide as its widest cell.
fn aligned(cells: &[[String; 6]]) -> String {
    let header = [
        "scenario",
        "runs",
        "passed",
        "failed",
        "expected seen",
        "slowest",
    ];
    let mut widths = header.map(str::len);
    for row in cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: [&str; 6]| {
        let mut text = String::new();
        for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
            // Names and words to the left, counts to the right.
            if (1..=3).contains(&column) {
                let _ = write!(text, "{cell:>width$}  ");
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        format!("{}\n", text.trim_end())
    };
    let rule = widths.map(|width| "-".repeat(width));
    let rule = line(rule.each_ref().map(String::as_str));
    let mut out = String::from("\n");
    out.push_str(&line(header));
    out.push_str(&rule);
    let count = cells.len();
    for (index, row) in cells.iter().enumerate() {
        if index + 1 == count {
            out.push_str(&rule);
        }
        out.push_str(&line(row.each_ref().map(String::as_str)));
    }
    out
}

/// Every failing run: its seed, verdict, first violations and replay command, and its
/// SVG timeline if one was written.
pub(super) fn failures(runs: &[Summary]) -> String {
    let failed: Vec<(&Summary, &Failure)> = runs
        .iter()
        .filter_map(|run| run.failure.as_ref().map(|failure| (run, failure)))
        .collect();
    let mut out = String::new();
    if failed.is_empty() {
        let _ = writeln!(out, "\nall {} runs passed", runs.len());
        return out;
    }
    let _ = writeln!(out, "\n{} failing run(s):", failed.len());
    for (run, failure) in failed {
        let _ = writeln!(
            out,
            "\n{} ({}), seed {}",
            failure.name,
            run.file.display(),
            run.seed
        );
        let _ = writeln!(out, "  verdict: {}", failure.verdict);
        for violation in &failure.violations {
            let _ = writeln!(out, "  - {violation}");
        }
        if failure.more > 0 {
            let _ = writeln!(out, "  … and {} more violation(s)", failure.more);
        }
        let _ = writeln!(out, "  replay: {}", failure.replay);
        if let Some(svg) = &failure.timeline {
            let _ = writeln!(out, "  timeline: {}", svg.display());
        }
    }
    out
}
