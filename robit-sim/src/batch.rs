//! Many runs at once: every scenario across many seeds, spread over threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::{Run, RunError, Scenario, ScenarioError, run};

/// Loads the scenarios in `paths`: files as given, directories by their `*.toml` files
/// in name order.
///
/// # Errors
///
/// The first [`ScenarioError`]: a path that cannot be read, or a scenario that does not
/// parse.
///
/// # Example
///
/// ```no_run
/// let scenarios = robit_sim::load_scenarios(&["scenarios".into()])?;
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
pub fn load_scenarios(paths: &[PathBuf]) -> Result<Vec<Scenario>, ScenarioError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| ScenarioError::Read {
                file: path.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|file| file.extension().is_some_and(|ext| ext == "toml"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    files
        .iter()
        .map(|file| Scenario::load(file.as_path()))
        .collect()
}

/// The outcome of one (scenario, seed) run in a batch.
///
/// # Example
///
/// ```no_run
/// let scenarios = robit_sim::load_scenarios(&["scenarios/holder-crash.toml".into()])?;
/// for outcome in robit_sim::run_batch(scenarios, 1..=3, 1, |_| {}) {
///     if !outcome.passed() {
///         println!("seed {} failed; replay: {}", outcome.seed, outcome.replay_command());
///     }
/// }
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// The scenario.
    pub scenario: Arc<Scenario>,
    /// The seed.
    pub seed: u64,
    /// The run, or why it could not complete.
    pub run: Result<Run, RunError>,
    /// How long the run took in real (wall-clock) time: measured around the run, it
    /// plays no part in it.
    pub elapsed: Duration,
}

impl Outcome {
    /// Whether the run completed and passed.
    pub fn passed(&self) -> bool {
        self.run.as_ref().is_ok_and(|run| run.verdict.passed())
    }

    /// The command that replays this run with a timeline.
    pub fn replay_command(&self) -> String {
        replay_command(self.scenario.file(), self.seed)
    }
}

/// The command that replays `file` with `seed`, printing its timeline.
///
/// # Example
///
/// ```
/// let command = robit_sim::replay_command("scenarios/holder-crash.toml".as_ref(), 9);
/// assert_eq!(command, "cargo run -p robit-sim -- replay scenarios/holder-crash.toml --seed 9");
/// ```
pub fn replay_command(file: &Path, seed: u64) -> String {
    format!(
        "cargo run -p robit-sim -- replay {} --seed {seed}",
        file.display()
    )
}

/// Runs every scenario with every seed in `seeds` on `threads` threads, calling
/// `progress` as each run finishes. Outcomes come back in (scenario, seed) order,
/// whatever order they finished in.
///
/// # Example
///
/// ```no_run
/// let scenarios = robit_sim::load_scenarios(&["scenarios".into()])?;
/// let outcomes = robit_sim::run_batch(scenarios, 1..=4, 2, |_| {});
/// assert!(outcomes.iter().all(|outcome| outcome.passed()));
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
pub fn run_batch(
    scenarios: Vec<Scenario>,
    seeds: impl IntoIterator<Item = u64>,
    threads: usize,
    progress: impl Fn(&Outcome) + Sync,
) -> Vec<Outcome> {
    let seeds: Vec<u64> = seeds.into_iter().collect();
    let scenarios: Vec<Arc<Scenario>> = scenarios.into_iter().map(Arc::new).collect();
    let jobs: Vec<(Arc<Scenario>, u64)> = scenarios
        .iter()
        .flat_map(|scenario| seeds.iter().map(|&seed| (Arc::clone(scenario), seed)))
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::with_capacity(jobs.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some((scenario, seed)) = jobs.get(index) else {
                        break;
                    };
                    let started = Instant::now();
                    let run = run(scenario, *seed);
                    let outcome = Outcome {
                        scenario: Arc::clone(scenario),
                        seed: *seed,
                        run,
                        elapsed: started.elapsed(),
                    };
                    progress(&outcome);
                    results
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((index, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, outcome)| outcome).collect()
}
