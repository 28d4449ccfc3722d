//! Every scenario under `scenarios/`, across seeds: `cargo test -p robit-sim`.
//!
//! `ROBIT_SIM_SEEDS` sets how many seeds each scenario runs with (default 20), and
//! `ROBIT_SIM_FIRST_SEED` the first of them (default 1). A failure prints the seed, what
//! broke, and the command that replays it with a timeline.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use robit_sim::{Scenario, ScenarioError};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Every scenario, named as from the workspace root (`scenarios/x.toml`), so that the
/// replay commands printed work from there.
fn load() -> Result<Vec<Scenario>, ScenarioError> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(|source| ScenarioError::Read {
            file: root.clone(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
                file: path.clone(),
                source,
            })?;
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            Scenario::parse(format!("scenarios/{name}"), &text)
        })
        .collect()
}

fn main() -> ExitCode {
    let scenarios = match load() {
        Ok(scenarios) => scenarios,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let first = env_u64("ROBIT_SIM_FIRST_SEED", 1);
    let seeds = env_u64("ROBIT_SIM_SEEDS", 20);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "running {} scenarios × {seeds} seeds on {threads} threads",
        scenarios.len()
    );
    let outcomes = robit_sim::run_batch(scenarios, first..first + seeds, threads, |outcome| {
        let verdict = match &outcome.run {
            Ok(run) => run.verdict.to_string(),
            Err(error) => error.to_string(),
        };
        println!(
            "{} seed {}: {verdict}",
            outcome
                .scenario
                .file()
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            outcome.seed
        );
    });
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|outcome| !outcome.passed())
        .collect();
    for outcome in &failed {
        eprintln!(
            "\nFAILED: {} ({}) seed {}",
            outcome.scenario.name(),
            outcome.scenario.file().display(),
            outcome.seed
        );
        match &outcome.run {
            Ok(run) => {
                eprintln!("  {}", run.verdict);
                for violation in run.violations.iter().take(5) {
                    eprintln!("  - {violation}");
                }
            }
            Err(error) => eprintln!("  {error}"),
        }
        eprintln!("  replay: {}", outcome.replay_command());
    }
    println!(
        "\n{} runs, {} passed, {} failed",
        outcomes.len(),
        outcomes.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
