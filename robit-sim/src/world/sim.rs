//! The simulated world: its hosts, their clocks and the backend's state, stepped one
//! tick at a time, with faults started and undone on request.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, UNIX_EPOCH};

use robit::FenceGate;
use tokio::sync::mpsc::UnboundedSender;
use turmoil::Sim;

use super::backend::{self, Server};
use super::client::{ClientHost, Command, PoisedHolds, Software};
use super::{RunError, storage};
use crate::faults::{self, Applied, Scene, Testbed};
use crate::remote::DriverFactory;
use crate::scenario::Fault;
use crate::{History, Scenario, SimClock};

/// The simulated epoch: 2026-01-01T00:00:00Z.
const EPOCH_SECS: u64 = 1_767_225_600;

/// The hosts' shared handles, for the fault schedule.
struct Handles {
    clients: Vec<String>,
    clocks: BTreeMap<String, SimClock>,
    /// Per client host, when the holds of its mutexes that are mid-hold end (see
    /// `ClientHost`).
    poised: BTreeMap<String, PoisedHolds>,
    /// The backend's servers: one, or a quorum's.
    backends: Vec<Server>,
    drift_bound: f64,
    ttl: Duration,
}

impl Testbed for Handles {
    fn client_names(&self) -> Vec<String> {
        self.clients.clone()
    }

    fn poised_until(&self, host: &str) -> Option<Duration> {
        let holds = self.poised.get(host)?;
        let holds = holds.lock().unwrap_or_else(PoisonError::into_inner);
        holds.iter().max().copied()
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }

    fn backend_names(&self) -> Vec<String> {
        self.backends
            .iter()
            .map(|server| server.host.clone())
            .collect()
    }

    fn clock(&self, host: &str) -> Option<SimClock> {
        match self.backends.iter().find(|server| server.host == host) {
            Some(server) => Some(server.clock.clone()),
            None => self.clocks.get(host).cloned(),
        }
    }

    fn lose_backend_state(&mut self, host: &str) {
        for server in self
            .backends
            .iter_mut()
            .filter(|server| server.host == host)
        {
            server.state.lose(&server.clock);
        }
    }

    fn snapshot_backend(&mut self) {
        self.backends
            .iter_mut()
            .for_each(|server| server.state.snapshot());
    }

    fn restore_backend(&mut self) {
        self.backends
            .iter_mut()
            .for_each(|server| server.state.restore());
    }

    fn fail_over_backend(&mut self, now: Duration, lag: Duration) {
        for server in &mut self.backends {
            let at = server.clock.local_at(now);
            server.state.fail_over(at, lag);
        }
    }

    fn drift_bound(&self) -> f64 {
        self.drift_bound
    }
}

/// A running world built from a scenario.
pub(crate) struct SimWorld<'a> {
    sim: Sim<'a>,
    handles: Handles,
    history: History,
    base_latency: (Duration, Duration),
    /// Where commands for each client go, when the clients obey commands.
    commands: BTreeMap<String, UnboundedSender<Command>>,
}

impl<'a> SimWorld<'a> {
    /// Builds the world of `scenario` for `seed`, with every client running the
    /// scenario's workload, or (with `commanded`) obeying [`send`](Self::send).
    pub(crate) fn new(
        scenario: &Scenario,
        seed: u64,
        commanded: bool,
        driver: Option<&DriverFactory>,
    ) -> Self {
        let history = History::new();
        let handles = Handles {
            clients: scenario.client_names(),
            clocks: BTreeMap::new(),
            poised: BTreeMap::new(),
            backends: backend::servers(scenario, seed, driver),
            drift_bound: scenario.lock.drift_factor,
            ttl: scenario.lock.ttl,
        };
        let sim = turmoil::Builder::new()
            .rng_seed(seed)
            .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
            .simulation_duration(scenario.duration + Duration::from_secs(3600))
            .tick_duration(scenario.tick)
            .min_message_latency(scenario.latency.0)
            .max_message_latency(scenario.latency.1)
            .repair_rate(0.5)
            .build();
        let mut world = SimWorld {
            sim,
            handles,
            history,
            base_latency: scenario.latency,
            commands: BTreeMap::new(),
        };
        world.add_backend();
        world.add_storage(scenario.fencing);
        world.add_clients(scenario, seed, commanded);
        world
    }

    fn add_backend(&mut self) {
        for server in &self.handles.backends {
            server
                .state
                .install(&mut self.sim, &self.history, &server.clock, &server.host);
        }
    }

    fn add_storage(&mut self, fencing: bool) {
        let gate = Arc::new(FenceGate::new());
        let history = self.history.clone();
        self.sim.host(storage::HOST, move || {
            let (history, gate) = (history.clone(), Arc::clone(&gate));
            async move {
                storage::serve(history, gate, fencing)
                    .await
                    .map_err(Into::into)
            }
        });
    }

    fn add_clients(&mut self, scenario: &Scenario, seed: u64, commanded: bool) {
        let mut commands = commanded.then(BTreeMap::new);
        let driver = self.handles.backends[0]
            .state
            .client_driver(scenario, self.handles.backend_names());
        for (index, client) in scenario.clients.iter().enumerate() {
            let clock = SimClock::new();
            if client.drift != 0.0 {
                clock.set_drift(Duration::ZERO, client.drift);
            }
            self.handles
                .clocks
                .insert(client.name.clone(), clock.clone());
            let host = ClientHost {
                client: client.clone(),
                lock: scenario.lock.clone(),
                clock,
                history: self.history.clone(),
                seed: seed ^ (index as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f),
                leases: (0..client.mutexes).map(|_| AtomicU64::new(0)).collect(),
                incarnation: Arc::new(AtomicU64::new(0)),
                poised: Arc::clone(self.handles.poised.entry(client.name.clone()).or_default()),
                software: match &mut commands {
                    None => Software::Workload,
                    Some(senders) => Software::Commands(
                        (0..client.mutexes as usize)
                            .map(|n| {
                                let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
                                senders.insert(client.mutex_name(n), sender);
                                Arc::new(tokio::sync::Mutex::new(receiver))
                            })
                            .collect(),
                    ),
                },
            };
            let driver = driver.clone();
            self.sim.host(client.name.as_str(), move || {
                let (host, driver) = (host.clone(), driver.build());
                async move {
                    let driver = driver.map_err(|error| error.to_string())?;
                    host.run(driver)
                        .await
                        .map_err(|error| error.to_string().into())
                }
            });
        }
        self.commands = commands.unwrap_or_default();
    }

    /// Sends `command` to `client`'s software (a world built with `commanded`).
    pub(crate) fn send(&self, client: &str, command: Command) {
        if let Some(sender) = self.commands.get(client) {
            let _ = sender.send(command);
        }
    }

    /// The run's history so far.
    pub(crate) fn history(&self) -> &History {
        &self.history
    }

    /// True time since the start.
    pub(crate) fn now(&self) -> Duration {
        self.sim.elapsed()
    }

    /// Advances the world by one tick.
    pub(crate) fn step(&mut self) -> Result<(), RunError> {
        self.sim
            .step()
            .map(drop)
            .map_err(|error| RunError::Simulation(error.to_string()))
    }

    /// Whether there is a holder for `fault` to land on now (see `faults::holder`).
    pub(crate) fn holder_for(&self, fault: &Fault) -> bool {
        faults::holder(&self.history, &self.handles, fault, self.now()).is_some()
    }

    /// Starts `fault` now.
    pub(crate) fn start(&mut self, fault: &Fault) -> Applied {
        faults::start(&mut self.scene(), fault)
    }

    /// Undoes a fault started by [`start`](Self::start).
    pub(crate) fn end(&mut self, applied: &Applied) {
        faults::end(&mut self.scene(), applied);
    }

    /// What starting or ending a fault now acts on.
    fn scene(&mut self) -> Scene<'_, 'a> {
        Scene {
            now: self.now(),
            sim: &mut self.sim,
            hosts: &mut self.handles,
            history: &self.history,
            length: None,
            base: self.base_latency,
        }
    }
}
