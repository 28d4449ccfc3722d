//! One run of a scenario: the turmoil world, its hosts, the fault schedule, the checks.

mod client;
mod faults;
mod storage;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, UNIX_EPOCH};

use robit::{FenceGate, LocalDriver};

use self::client::ClientHost;
use self::faults::{Applied, Hosts};
use crate::remote::{BackendLog, RemoteDriver, ServedDriver, serve_driver};
use crate::scenario::Backend;
use crate::{CheckConfig, History, Promise, Scenario, SimClock, Violation, check};

pub(crate) const BACKEND: &str = "backend";
const DRIVER_PORT: u16 = 7070;

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

/// Whether a run kept the promises it checks, given the violations its scenario expects.
///
/// # Example
///
/// ```
/// use robit_sim::{Promise, Verdict};
///
/// let verdict = Verdict::judge(&[], &[Promise::Fencing]);
/// assert!(!verdict.passed());
/// assert_eq!(verdict.to_string(), "FAIL: expected P4 (fencing) to be broken, and it was not");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// No promise was broken, and none was expected to be.
    Pass,
    /// Exactly the promises expected to break did, and nothing else.
    ExpectedViolations(Vec<Promise>),
    /// Something unexpected broke, or an expected violation did not show.
    Fail {
        /// Violations of promises the scenario does not expect to see broken.
        unexpected: Vec<Violation>,
        /// Promises expected to break that did not.
        missing: Vec<Promise>,
        /// Other expectations of the scenario that the run did not meet.
        unmet: Vec<String>,
    },
}

impl Verdict {
    /// Judges `violations` against the promises `expected` to be broken.
    pub fn judge(violations: &[Violation], expected: &[Promise]) -> Self {
        Self::judge_with(violations, expected, Vec::new())
    }

    /// Like [`judge`](Self::judge), with expectations beyond promises that were not met.
    pub fn judge_with(violations: &[Violation], expected: &[Promise], unmet: Vec<String>) -> Self {
        let unexpected: Vec<Violation> = violations
            .iter()
            .filter(|violation| !expected.contains(&violation.promise))
            .cloned()
            .collect();
        let missing: Vec<Promise> = expected
            .iter()
            .copied()
            .filter(|promise| !violations.iter().any(|v| v.promise == *promise))
            .collect();
        match (
            unexpected.is_empty() && unmet.is_empty(),
            missing.is_empty(),
            expected.is_empty(),
        ) {
            (true, true, true) => Self::Pass,
            (true, true, false) => Self::ExpectedViolations(expected.to_vec()),
            _ => Self::Fail {
                unexpected,
                missing,
                unmet,
            },
        }
    }

    /// Whether the run passes.
    pub fn passed(&self) -> bool {
        !matches!(self, Self::Fail { .. })
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pass => f.write_str("pass"),
            Self::ExpectedViolations(promises) => {
                let names: Vec<&str> = promises.iter().map(|p| p.code()).collect();
                write!(f, "pass (broke {} as expected)", names.join(", "))
            }
            Self::Fail {
                unexpected,
                missing,
                unmet,
            } => {
                f.write_str("FAIL:")?;
                for promise in missing {
                    write!(f, " expected {promise} to be broken, and it was not")?;
                }
                for expectation in unmet {
                    write!(f, " {expectation}")?;
                }
                if let Some(first) = unexpected.first() {
                    write!(
                        f,
                        " {} unexpected violation(s), first: {first}",
                        unexpected.len()
                    )?;
                }
                Ok(())
            }
        }
    }
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
}

/// The hosts' shared handles, for the fault schedule.
struct World {
    clients: Vec<String>,
    clocks: BTreeMap<String, SimClock>,
    served: Rc<RefCell<ServedDriver>>,
    backend_clock: SimClock,
    seed: u64,
    /// How many times the backend lost its state.
    boots: u32,
    drift_bound: f64,
}

impl Hosts for World {
    fn client_names(&self) -> Vec<String> {
        self.clients.clone()
    }

    fn clock(&self, host: &str) -> Option<SimClock> {
        if host == BACKEND {
            return Some(self.backend_clock.clone());
        }
        self.clocks.get(host).cloned()
    }

    fn lose_backend_state(&mut self) {
        self.boots += 1;
        *self.served.borrow_mut() = local_backend(&self.backend_clock, self.seed, self.boots);
    }

    fn drift_bound(&self) -> f64 {
        self.drift_bound
    }
}

fn local_backend(clock: &SimClock, seed: u64, boot: u32) -> ServedDriver {
    let driver = LocalDriver::with_clock(Arc::new(clock.clone()));
    ServedDriver::new(Arc::new(driver), seed ^ u64::from(boot), boot)
}

/// Runs `scenario` with `seed`: a pure function of the two.
///
/// # Errors
///
/// [`RunError`] if a host's software fails or the simulator stops.
pub fn run(scenario: &Scenario, seed: u64) -> Result<Run, RunError> {
    let history = History::new();
    let backend_clock = SimClock::new();
    let mut world = World {
        clients: scenario.client_names(),
        clocks: BTreeMap::new(),
        served: Rc::new(RefCell::new(local_backend(&backend_clock, seed, 0))),
        backend_clock: backend_clock.clone(),
        seed,
        boots: 0,
        drift_bound: scenario.lock.drift_factor,
    };
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(UNIX_EPOCH + Duration::from_secs(1_767_225_600))
        .simulation_duration(scenario.duration + Duration::from_secs(3600))
        .tick_duration(scenario.tick)
        .min_message_latency(scenario.latency.0)
        .max_message_latency(scenario.latency.1)
        .repair_rate(0.5)
        .build();

    match scenario.backend {
        Backend::Local | Backend::Redis => {
            let (served, log) = (
                Rc::clone(&world.served),
                BackendLog::new(history.clone(), backend_clock.clone()),
            );
            sim.host(BACKEND, move || {
                let (driver, log) = (served.borrow().clone(), log.clone());
                async move {
                    serve_driver(driver, DRIVER_PORT, log)
                        .await
                        .map_err(Into::into)
                }
            });
        }
    }
    let gate = Arc::new(FenceGate::new());
    let (storage_history, fencing) = (history.clone(), scenario.fencing);
    sim.host(storage::HOST, move || {
        let (history, gate) = (storage_history.clone(), Arc::clone(&gate));
        async move {
            storage::serve(history, gate, fencing)
                .await
                .map_err(Into::into)
        }
    });
    let timeout = (scenario.lock.ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    for (index, client) in scenario.clients.iter().enumerate() {
        let clock = SimClock::new();
        if client.drift != 0.0 {
            clock.set_drift(Duration::ZERO, client.drift);
        }
        world.clocks.insert(client.name.clone(), clock.clone());
        let host = ClientHost {
            client: client.clone(),
            lock: scenario.lock.clone(),
            clock,
            history: history.clone(),
            seed: seed ^ (index as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f),
            lease: Arc::new(AtomicU64::new(0)),
            incarnation: Arc::new(AtomicU64::new(0)),
            writes_to_storage: true,
        };
        sim.host(client.name.as_str(), move || {
            let host = host.clone();
            async move {
                host.run(RemoteDriver::new(BACKEND, DRIVER_PORT, timeout))
                    .await
                    .map_err(|error| error.to_string().into())
            }
        });
    }

    // The schedule: (instant, order, fault index, started fault to undo).
    let mut schedule: Vec<(Duration, usize, usize, Option<Applied>)> = scenario
        .faults
        .iter()
        .enumerate()
        .map(|(index, fault)| (fault.at, index, index, None))
        .collect();
    let mut order = schedule.len();
    let base = scenario.latency;
    while sim.elapsed() < scenario.duration {
        let now = sim.elapsed();
        schedule.sort_by_key(|(at, order, ..)| (*at, *order));
        while schedule.first().is_some_and(|(at, ..)| *at <= now) {
            let (_, _, index, applied) = schedule.remove(0);
            let fault = &scenario.faults[index];
            match applied {
                // A fault aimed at the holder waits until someone holds the lock.
                None if fault.targets_holder() && !faults::someone_holds(&history) => {
                    order += 1;
                    schedule.push((now + scenario.tick, order, index, None));
                }
                None => {
                    let applied = faults::start(&mut sim, fault, &mut world, &history, now);
                    if let Some(length) = fault.length {
                        order += 1;
                        schedule.push((now + length, order, index, Some(applied)));
                    }
                }
                Some(applied) => faults::end(&mut sim, &applied, &mut world, &history, now, base),
            }
        }
        sim.step()
            .map_err(|error| RunError::Simulation(error.to_string()))?;
    }

    let mut config = CheckConfig::new(scenario.lock.ttl, scenario.duration);
    if let Some(bound) = scenario.liveness_bound {
        config = config.with_liveness_bound(bound);
    }
    if let Some(settle) = scenario.settle {
        config = config.with_settle(settle);
    }
    let violations = check(&history, &config, &scenario.check);
    let events = history.events();
    let unmet = scenario
        .require
        .iter()
        .filter(|label| {
            !events
                .iter()
                .any(|event| event.kind.label() == label.as_str())
        })
        .map(|label| format!("the scenario requires a {label:?} event, and none happened"))
        .collect();
    let verdict = Verdict::judge_with(&violations, &scenario.expect, unmet);
    Ok(Run {
        seed,
        history,
        violations,
        verdict,
    })
}
