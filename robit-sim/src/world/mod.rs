//! One run of a scenario: the turmoil world, its hosts, the fault schedule, the checks.

mod backend;
mod client;
mod schedule;
mod sim;
mod storage;
mod verdict;

pub(crate) use self::client::Command;
use self::schedule::Schedule;
pub(crate) use self::sim::SimWorld;
pub(crate) use self::storage::HOST as STORAGE;
pub use self::verdict::Verdict;
use crate::{CheckConfig, DriverFactory, History, Scenario, Violation, check};

pub(crate) const BACKEND: &str = "backend";

/// A finished run: its history, what the checkers found, and the verdict.
///
/// # Example
///
/// ```no_run
/// use robit_sim::{Scenario, run};
///
/// let scenario = Scenario::load("scenarios/steady-contention.toml")?;
/// let outcome = run(&scenario, 7)?;
/// assert!(outcome.verdict.passed(), "{}", outcome.verdict);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Run {
    /// The seed it ran with.
    pub seed: u64,
    /// Everything that happened.
    pub history: History,
    /// Every broken promise the checkers found, expected or not.
    pub violations: Vec<Violation>,
    /// Whether the run passes, given what the scenario expects.
    pub verdict: Verdict,
}

/// Why a run could not complete.
///
/// # Example
///
/// ```
/// use robit_sim::RunError;
///
/// let error = RunError::Simulation("host c1 failed".into());
/// assert_eq!(error.to_string(), "the simulation stopped: host c1 failed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A host's software failed, or the simulator refused to go on.
    #[error("the simulation stopped: {0}")]
    Simulation(String),
    /// The simulation was started from inside a tokio runtime: it runs its own runtimes,
    /// one per simulated host, and cannot nest them. Call it from a plain `#[test]` or
    /// from `spawn_blocking`.
    #[error(
        "a simulation cannot run inside a tokio runtime (it runs one per simulated host); call it from a plain #[test] or from spawn_blocking"
    )]
    InsideRuntime,
    /// A driver under test is served from one backend host: a scenario of a quorum of
    /// servers (`backend = "redlock"`) has no place for it.
    #[error(
        "scenario {0:?} runs a quorum of simulated Redis servers; a driver under test is served from one backend host, so it cannot run there"
    )]
    QuorumScenario(String),
}

/// Runs `scenario` with `seed`: a pure function of the two.
///
/// # Errors
///
/// [`RunError`] if a host's software fails or the simulator stops.
pub fn run(scenario: &Scenario, seed: u64) -> Result<Run, RunError> {
    run_with(scenario, seed, None)
}

/// Runs `scenario` with `seed`, its backend serving the driver `driver` builds instead
/// of the scenario's own (the conformance suite's way of putting a new driver through
/// every scenario).
///
/// # Errors
///
/// [`RunError`] if a host's software fails or the simulator stops.
pub fn run_driver(scenario: &Scenario, seed: u64, driver: &DriverFactory) -> Result<Run, RunError> {
    run_with(scenario, seed, Some(driver))
}

fn run_with(
    scenario: &Scenario,
    seed: u64,
    driver: Option<&DriverFactory>,
) -> Result<Run, RunError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(RunError::InsideRuntime);
    }
    if driver.is_some() && scenario.servers > 1 {
        return Err(RunError::QuorumScenario(scenario.name.clone()));
    }
    let mut world = SimWorld::new(scenario, seed, false, driver);
    let mut schedule = Schedule::new(&scenario.faults);
    while world.now() < scenario.duration {
        schedule.run_due(&mut world, scenario);
        world.step()?;
    }
    let history = world.history().clone();
    let violations = check(&history, &check_config(scenario), &scenario.check);
    let mut unmet = unmet(scenario, &history);
    // A fault still waiting for a holder to land on never bit: the run proves nothing
    // about it, so it does not pass.
    unmet.extend(schedule.never_started(&scenario.faults));
    let verdict = Verdict::judge_with(&violations, &scenario.expect, unmet);
    Ok(Run {
        seed,
        history,
        violations,
        verdict,
    })
}

fn check_config(scenario: &Scenario) -> CheckConfig {
    let mut config =
        CheckConfig::new(scenario.lock.ttl, scenario.duration).with_servers(scenario.servers);
    if let Some(bound) = scenario.liveness_bound {
        config = config.with_liveness_bound(bound);
    }
    if let Some(settle) = scenario.settle {
        config = config.with_settle(settle);
    }
    config
}

/// The scenario's required events that never happened, and its forbidden ones that did.
fn unmet(scenario: &Scenario, history: &History) -> Vec<String> {
    let events = history.events();
    let missing = scenario
        .require
        .iter()
        .filter(|label| {
            !events
                .iter()
                .any(|event| event.kind.label() == label.as_str())
        })
        .map(|label| format!("the scenario requires a {label:?} event, and none happened"));
    let forbidden = scenario.forbid.iter().filter_map(|label| {
        let event = events
            .iter()
            .find(|event| event.kind.label() == label.as_str())?;
        Some(format!(
            "the scenario forbids {label:?} events, and one happened: {event}"
        ))
    });
    missing.chain(forbidden).collect()
}
