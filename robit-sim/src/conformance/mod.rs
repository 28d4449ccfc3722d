//! The conformance suite for driver authors.
//!
//! A driver for a new backend (etcd, Postgres advisory locks, DynamoDB, …) implements
//! robit's [`Driver`](robit::Driver) and [`Lease`](robit::driver::Lease) traits. This suite
//! tells its author whether the driver keeps the contract the mutex relies on:
//!
//! - **(a) the contract, in real time** — [`check_contract`]: ten rules (grants, expiry,
//!   renewals, releases, fencing order, atomicity) checked against the live driver and
//!   its real backend. It lives in the published `robit-conformance` crate, which a
//!   driver's own tests depend on by version, and is re-exported here;
//! - **(b) the simulation** — [`check_in_simulation`]: the driver, running in memory on
//!   a simulated backend host, served to simulated clients over a faulty network, put
//!   through every scenario and through model checking, with the promises P1–P6
//!   checked on each run.
//!
//! docs/driver-authors.md walks through both with a complete example.

use std::path::PathBuf;

use crate::{
    DriverFactory, ModelConfig, ModelFailure, Run, RunError, Scenario, ScenarioError, check_model,
    load_scenarios, run_driver,
};
pub use robit_conformance::{CheckOutcome, ContractOptions, ContractReport, check_contract};

/// What [`check_in_simulation`] runs.
///
/// # Example
///
/// ```
/// use robit_sim::conformance::SimulationOptions;
///
/// let options = SimulationOptions::new("scenarios").seeds(4).model_cases(32);
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct SimulationOptions {
    scenarios: Vec<PathBuf>,
    seeds: u64,
    model_cases: u32,
}

impl SimulationOptions {
    /// The scenarios in `path` (a file or a directory), 2 seeds each, and 16
    /// model-checking sequences.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            scenarios: vec![path.into()],
            seeds: 2,
            model_cases: 16,
        }
    }

    /// Seeds per scenario.
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds.max(1);
        self
    }

    /// Model-checking sequences (0 skips model checking).
    pub fn model_cases(mut self, cases: u32) -> Self {
        self.model_cases = cases;
        self
    }
}

/// One scenario run of the suite, and whether it passed.
///
/// # Example
///
/// ```no_run
/// use robit_sim::DriverFactory;
/// use robit_sim::conformance::{SimulationOptions, check_in_simulation};
///
/// let options = SimulationOptions::new("scenarios").model_cases(0);
/// let report = check_in_simulation(&DriverFactory::local(), &options)?;
/// for run in report.runs.iter().filter(|run| !run.passed()) {
///     eprintln!("{} failed with seed {}", run.scenario, run.seed);
/// }
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ScenarioOutcome {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The run.
    pub run: Result<Run, RunError>,
}

impl ScenarioOutcome {
    /// Whether the run completed and passed.
    pub fn passed(&self) -> bool {
        self.run.as_ref().is_ok_and(|run| run.verdict.passed())
    }
}

/// The outcome of [`check_in_simulation`].
///
/// # Example
///
/// ```no_run
/// use robit_sim::DriverFactory;
/// use robit_sim::conformance::{SimulationOptions, check_in_simulation};
///
/// let report = check_in_simulation(&DriverFactory::local(), &SimulationOptions::new("scenarios"))?;
/// println!("{report}");
/// assert!(report.passed(), "failed: {:?}", report.failed_scenarios());
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct SimulationReport {
    /// Every scenario run.
    pub runs: Vec<ScenarioOutcome>,
    /// Scenarios left out: a backend losing its state cannot be simulated for a driver
    /// that keeps its state in memory, the simulated network's protocol between the
    /// clients and the driver under test carries no lock-delay, and a quorum of servers
    /// (`backend = "redlock"`) has no one backend host to serve it from.
    pub skipped: Vec<String>,
    /// The model check's result, if it ran.
    pub model: Option<Result<(), ModelFailure>>,
}

impl SimulationReport {
    /// Whether every run passed and the model check (if any) found nothing.
    pub fn passed(&self) -> bool {
        self.runs.iter().all(ScenarioOutcome::passed) && !matches!(self.model, Some(Err(_)))
    }

    /// The names of the scenarios (with seeds) that failed.
    pub fn failed_scenarios(&self) -> Vec<String> {
        self.runs
            .iter()
            .filter(|outcome| !outcome.passed())
            .map(|outcome| format!("{} (seed {})", outcome.scenario, outcome.seed))
            .collect()
    }
}

impl std::fmt::Display for SimulationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let failed = self.failed_scenarios();
        writeln!(
            f,
            "{} scenario runs, {} failed",
            self.runs.len(),
            failed.len()
        )?;
        for outcome in self.runs.iter().filter(|outcome| !outcome.passed()) {
            match &outcome.run {
                Ok(run) => writeln!(
                    f,
                    "  {} seed {}: {}",
                    outcome.scenario, outcome.seed, run.verdict
                )?,
                Err(error) => writeln!(f, "  {} seed {}: {error}", outcome.scenario, outcome.seed)?,
            }
        }
        match &self.model {
            None => write!(f, "model check: not run"),
            Some(Ok(())) => write!(f, "model check: passed"),
            Some(Err(failure)) => write!(f, "model check: FAILED\n{failure}"),
        }
    }
}

/// Puts the driver `driver` builds through the scenarios and model checking: part (b)
/// of the conformance suite.
///
/// The driver runs in memory on the simulated backend host, on that host's clock (so it
/// must take its time from the [`SimClock`](crate::SimClock) it is given, as robit's
/// `LocalDriver::with_clock` does), served to the clients over the simulated network.
///
/// # Errors
///
/// A [`ScenarioError`] if the scenarios cannot be loaded.
///
/// # Example
///
/// ```no_run
/// use robit_sim::DriverFactory;
/// use robit_sim::conformance::{SimulationOptions, check_in_simulation};
///
/// let report = check_in_simulation(&DriverFactory::local(), &SimulationOptions::new("scenarios"))?;
/// assert!(report.passed(), "{report}");
/// # Ok::<(), robit_sim::ScenarioError>(())
/// ```
pub fn check_in_simulation(
    driver: &DriverFactory,
    options: &SimulationOptions,
) -> Result<SimulationReport, ScenarioError> {
    let scenarios = load_scenarios(&options.scenarios)?;
    if scenarios.is_empty() {
        return Err(ScenarioError::NoScenarios {
            paths: options.scenarios.clone(),
        });
    }
    let (usable, skipped): (Vec<Scenario>, Vec<Scenario>) =
        scenarios.into_iter().partition(|scenario| {
            !scenario.loses_backend_state()
                && !scenario.needs_lock_delay()
                && scenario.servers() == 1
        });
    let mut runs = Vec::new();
    for scenario in &usable {
        for seed in 1..=options.seeds {
            runs.push(ScenarioOutcome {
                scenario: scenario.name().to_owned(),
                seed,
                run: run_driver(scenario, seed, driver),
            });
        }
    }
    let model = (options.model_cases > 0).then(|| {
        check_model(
            &ModelConfig::driver(driver.clone())
                .cases(options.model_cases)
                .replay_command("re-run the conformance test: the failing sequence is above"),
        )
    });
    Ok(SimulationReport {
        runs,
        skipped: skipped
            .iter()
            .map(|scenario| scenario.name().to_owned())
            .collect(),
        model,
    })
}
