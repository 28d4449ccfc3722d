//! What `robit-sim run` prints: the verdict table, then the failing runs.

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

/// The verdict table: one row per scenario, in the order they ran, and a total.
pub(super) fn table(outcomes: &[Outcome]) -> String {
    let mut order: Vec<&Path> = Vec::new();
    let mut rows: BTreeMap<&Path, Row> = BTreeMap::new();
    for outcome in outcomes {
        let file = outcome.scenario.file();
        let row = rows.entry(file).or_insert_with(|| {
            order.push(file);
            Row {
                expected: outcome
                    .scenario
                    .expected_violations()
                    .iter()
                    .map(|promise| (*promise, 0))
                    .collect(),
                ..Row::default()
            }
        });
        row.runs += 1;
        row.passed += usize::from(outcome.passed());
        if let Ok(run) = &outcome.run {
            for (promise, seen) in &mut row.expected {
                *seen += usize::from(run.violations.iter().any(|v| v.promise == *promise));
            }
        }
        if row
            .slowest
            .is_none_or(|(slowest, _)| outcome.elapsed > slowest)
        {
            row.slowest = Some((outcome.elapsed, outcome.seed));
        }
    }
    // Scenario files with the same name in different directories go by their path.
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for file in &order {
        *names.entry(short_name(file)).or_default() += 1;
    }
    let name = |file: &Path| {
        let short = short_name(file);
        if names.get(&short).copied().unwrap_or(0) > 1 {
            file.display().to_string()
        } else {
            short
        }
    };

    let header = [
        "scenario",
        "runs",
        "passed",
        "failed",
        "expected seen",
        "slowest",
    ];
    let mut cells: Vec<[String; 6]> = order
        .iter()
        .filter_map(|file| rows.get(file).map(|row| (file, row)))
        .map(|(file, row)| {
            let expected = if row.expected.is_empty() {
                "-".to_owned()
            } else {
                row.expected
                    .iter()
                    .map(|(promise, seen)| format!("{} {seen}/{}", promise.code(), row.runs))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            [
                name(file),
                row.runs.to_string(),
                row.passed.to_string(),
                (row.runs - row.passed).to_string(),
                expected,
                row.slowest.map_or_else(String::new, |(elapsed, seed)| {
                    format!("{} (seed {seed})", seconds(elapsed))
                }),
            ]
        })
        .collect();
    let passed = outcomes.iter().filter(|outcome| outcome.passed()).count();
    cells.push([
        "total".to_owned(),
        outcomes.len().to_string(),
        passed.to_string(),
        (outcomes.len() - passed).to_string(),
        String::new(),
        outcomes
            .iter()
            .max_by_key(|outcome| outcome.elapsed)
            .map_or_else(String::new, |outcome| seconds(outcome.elapsed)),
    ]);
    let mut widths = header.map(str::len);
    for row in &cells {
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
    let mut out = String::from("\n");
    out.push_str(&line(header));
    let rule = widths.map(|width| "-".repeat(width));
    out.push_str(&line(rule.each_ref().map(String::as_str)));
    let count = cells.len();
    for (index, row) in cells.iter().enumerate() {
        if index + 1 == count {
            out.push_str(&line(rule.each_ref().map(String::as_str)));
        }
        out.push_str(&line(row.each_ref().map(String::as_str)));
    }
    out
}

/// Every failing run: its seed, verdict, first violations and replay command, and its
/// SVG timeline if one was written (`timelines`: seed, scenario file, SVG path).
pub(super) fn failures(outcomes: &[Outcome], timelines: &[(u64, &Path, PathBuf)]) -> String {
    let failed: Vec<&Outcome> = outcomes
        .iter()
        .filter(|outcome| !outcome.passed())
        .collect();
    let mut out = String::new();
    if failed.is_empty() {
        let _ = writeln!(out, "\nall {} runs passed", outcomes.len());
        return out;
    }
    let _ = writeln!(out, "\n{} failing run(s):", failed.len());
    for outcome in failed {
        let _ = writeln!(
            out,
            "\n{} ({}), seed {}",
            outcome.scenario.name(),
            outcome.scenario.file().display(),
            outcome.seed
        );
        match &outcome.run {
            Ok(run) => {
                let _ = writeln!(out, "  verdict: {}", run.verdict);
                for violation in run.violations.iter().take(VIOLATIONS_SHOWN) {
                    let _ = writeln!(out, "  - {violation}");
                }
                if run.violations.len() > VIOLATIONS_SHOWN {
                    let _ = writeln!(
                        out,
                        "  … and {} more violation(s)",
                        run.violations.len() - VIOLATIONS_SHOWN
                    );
                }
            }
            Err(error) => {
                let _ = writeln!(out, "  verdict: FAIL: {error}");
            }
        }
        let _ = writeln!(out, "  replay: {}", outcome.replay_command());
        if let Some((_, _, svg)) = timelines
            .iter()
            .find(|(seed, file, _)| *seed == outcome.seed && *file == outcome.scenario.file())
        {
            let _ = writeln!(out, "  timeline: {}", svg.display());
        }
    }
    out
}
