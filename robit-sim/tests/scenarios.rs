//! Every scenario under `scenarios/`, across seeds: `cargo test -p robit-sim --test scenarios`.
//!
//! Each scenario and seed is a test of its own, named `<scenario>/seed-<n>` after the
//! scenario's file (`holder-partitioned/seed-3`), so that the usual filters pick runs out:
//! `cargo test -p robit-sim --test scenarios -- holder-partitioned`, or
//! `cargo nextest run -p robit-sim -E 'test(/^redlock-/)'`. (`--exact` picks one seed.)
//!
//! `ROBIT_SIM_SEEDS` sets how many seeds each scenario runs with (default 20), and
//! `ROBIT_SIM_FIRST_SEED` the first of them (default 1). A failure prints the seed, what
//! broke, and the command that replays it with a timeline. A scenario file that does not
//! load is a failing test, `<scenario>/load`, that names the file and the error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use robit_sim::{Scenario, ScenarioError, replay_command, run};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// How many of a failed run's violations its report lists.
const VIOLATIONS_SHOWN: usize = 5;

/// The scenario files under `root`, in name order.
fn scenario_files(root: &Path) -> Result<Vec<PathBuf>, ScenarioError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|source| ScenarioError::Read {
            file: root.to_path_buf(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

/// The scenario in `path`, named as from the workspace root (`scenarios/x.toml`), so
/// that the replay commands printed work from there.
fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Scenario::parse(format!("scenarios/{name}"), &text)
}

/// Runs `scenario` with `seed`: a failure says what broke and how to replay it.
fn check(scenario: &Scenario, seed: u64) -> Result<(), Failed> {
    let what = match run(scenario, seed) {
        Ok(run) if run.verdict.passed() => return Ok(()),
        Ok(run) => {
            let mut what = run.verdict.to_string();
            for violation in run.violations.iter().take(VIOLATIONS_SHOWN) {
                what.push_str(&format!("\n  - {violation}"));
            }
            if run.violations.len() > VIOLATIONS_SHOWN {
                let more = run.violations.len() - VIOLATIONS_SHOWN;
                what.push_str(&format!("\n  ({more} more)"));
            }
            what
        }
        Err(error) => error.to_string(),
    };
    Err(format!(
        "{} ({}) seed {seed}: {what}\n  replay: {}",
        scenario.name(),
        scenario.file().display(),
        replay_command(scenario.file(), seed)
    )
    .into())
}

/// A test per scenario file and seed; a failing one for a file that does not load, or
/// for a directory that cannot be read or holds no scenario.
fn trials(root: &Path, seeds: std::ops::Range<u64>) -> Vec<Trial> {
    let files = match scenario_files(root) {
        Ok(files) if files.is_empty() => {
            let message = format!("no scenario files (*.toml) in {}", root.display());
            return vec![Trial::test("scenarios/load", move || Err(message.into()))];
        }
        Ok(files) => files,
        Err(error) => {
            let message = error.to_string();
            return vec![Trial::test("scenarios/load", move || Err(message.into()))];
        }
    };
    let mut trials = Vec::new();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match load(&path) {
            Ok(scenario) => {
                let scenario = Arc::new(scenario);
                for seed in seeds.clone() {
                    let scenario = Arc::clone(&scenario);
                    trials.push(Trial::test(format!("{stem}/seed-{seed}"), move || {
                        check(&scenario, seed)
                    }));
                }
            }
            Err(error) => {
                let message = format!("the scenario does not load: {error}");
                trials.push(Trial::test(format!("{stem}/load"), move || {
                    Err(message.into())
                }));
            }
        }
    }
    trials
}

fn main() {
    let arguments = Arguments::from_args();
    let first = env_u64("ROBIT_SIM_FIRST_SEED", 1);
    let seeds = env_u64("ROBIT_SIM_SEEDS", 20);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    libtest_mimic::run(&arguments, trials(&root, first..first + seeds)).exit();
}
