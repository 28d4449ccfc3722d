//! The backend host: a driver served over the simulated network, or the simulated
//! Redis, and the driver each client uses to reach it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use robit::Driver;
use robit::redis::{FirstUse, RedisDriver, RedlockDriver};
use turmoil::Sim;

use super::BACKEND;
use crate::redis::{
    DEFAULT_PORT, LockEvent, LockEventKind, Peer, RedisState, SimConnector, SimRedis,
};
use crate::remote::{BackendLog, DriverFactory, RemoteDriver, ServedDriver, serve_driver};
use crate::scenario::Backend;
use crate::{EventKind, History, Scenario, SimClock};

const DRIVER_PORT: u16 = 7070;
/// The fencing counter of the Redis driver's default namespace: present from the start,
/// written by the server's first life, as on a Redis that has served locks before, so
/// the first lock is not quarantined.
const FENCE_KEY: &[u8] = b"{robit}:fence";

/// One backend server: its host's name, its state and its clock. A scenario has one,
/// named `backend`, or a quorum of them, `backend1` … `backendN`.
pub(crate) struct Server {
    pub(crate) host: String,
    pub(crate) state: BackendState,
    pub(crate) clock: SimClock,
}

/// The backend servers of `scenario`, or the one serving the driver `driver` builds.
pub(crate) fn servers(
    scenario: &Scenario,
    seed: u64,
    driver: Option<&DriverFactory>,
) -> Vec<Server> {
    let hosts: Vec<String> = match (driver, scenario.backend) {
        (None, Backend::Redlock) => (1..=scenario.servers)
            .map(|n| format!("{BACKEND}{n}"))
            .collect(),
        _ => vec![BACKEND.to_owned()],
    };
    hosts
        .into_iter()
        .map(|host| {
            let clock = SimClock::new();
            Server {
                host,
                state: BackendState::new(scenario, seed, driver, &clock),
                clock,
            }
        })
        .collect()
}

/// The backend's state, kept outside its host so it can survive (or not) a restart.
pub(crate) enum BackendState {
    Served {
        served: Rc<RefCell<ServedDriver>>,
        factory: DriverFactory,
        seed: u64,
        /// How many times the backend lost its state.
        boots: u32,
    },
    Redis(RedisState),
}

fn served(factory: &DriverFactory, clock: &SimClock, seed: u64, boot: u32) -> ServedDriver {
    ServedDriver::new(factory.build(clock.clone()), seed ^ u64::from(boot), boot)
}

impl BackendState {
    /// The state for `scenario`'s backend, or for the driver `driver` builds.
    pub(crate) fn new(
        scenario: &Scenario,
        seed: u64,
        driver: Option<&DriverFactory>,
        clock: &SimClock,
    ) -> Self {
        match (driver, scenario.backend) {
            (None, Backend::Redis | Backend::Redlock) => {
                let state = RedisState::new();
                if let Some(window) = scenario.replica_window() {
                    state.replicate(window);
                }
                let peer = Peer::new(([0, 0, 0, 0], 0).into(), Some("world".to_owned()));
                state.execute(
                    &peer,
                    Duration::ZERO,
                    &[
                        b"SET".to_vec(),
                        FENCE_KEY.to_vec(),
                        format!("1{}", RedisState::robit_identity(1)).into_bytes(),
                    ],
                );
                #[cfg(robit_mutants)]
                for (find, replace) in &scenario.script_edits {
                    state.plant_script_edit(find, replace);
                }
                Self::Redis(state)
            }
            (driver, _) => {
                let factory = driver.cloned().unwrap_or_else(DriverFactory::local);
                Self::Served {
                    served: Rc::new(RefCell::new(served(&factory, clock, seed, 0))),
                    factory,
                    seed,
                    boots: 0,
                }
            }
        }
    }

    /// Forgets everything: a restart that loses the backend's data.
    pub(crate) fn lose(&mut self, clock: &SimClock) {
        match self {
            Self::Served {
                served,
                factory,
                seed,
                boots,
            } => {
                *boots += 1;
                *served.borrow_mut() = self::served(factory, clock, *seed, *boots);
            }
            Self::Redis(state) => state.wipe(),
        }
    }

    /// Saves the simulated Redis's state (scenarios that snapshot are refused for the
    /// other backends).
    pub(crate) fn snapshot(&mut self) {
        if let Self::Redis(state) = self {
            state.save();
        }
    }

    /// Promotes the simulated Redis's replica, `lag` behind at its local time `now`.
    pub(crate) fn fail_over(&mut self, now: Duration, lag: Duration) {
        if let Self::Redis(state) = self {
            state.fail_over(now, lag);
        }
    }

    /// Puts back the simulated Redis's last saved state.
    pub(crate) fn restore(&mut self) {
        if let Self::Redis(state) = self {
            state.restore();
        }
    }

    /// Registers the backend host `host`, reporting to `history`.
    pub(crate) fn install(
        &self,
        sim: &mut Sim<'_>,
        history: &History,
        clock: &SimClock,
        host: &str,
    ) {
        match self {
            Self::Served { served, .. } => {
                let (served, log) = (
                    Rc::clone(served),
                    BackendLog::new(history.clone(), clock.clone()),
                );
                sim.host(host, move || {
                    let (driver, log) = (served.borrow().clone(), log.clone());
                    async move {
                        serve_driver(driver, DRIVER_PORT, log)
                            .await
                            .map_err(Into::into)
                    }
                });
            }
            Self::Redis(state) => {
                observe(state, history, clock, host);
                let (state, clock) = (state.clone(), clock.clone());
                sim.host(host, move || {
                    let server = SimRedis::new(state.clone(), clock.clone());
                    async move { server.serve(DEFAULT_PORT).await.map_err(Into::into) }
                });
            }
        }
    }

    /// How the clients reach this backend, on the hosts `hosts` (a quorum's servers, or
    /// the one backend).
    pub(crate) fn client_driver(&self, scenario: &Scenario, hosts: Vec<String>) -> ClientDriver {
        let ttl = scenario.lock.ttl;
        let timeout = (ttl / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        match self {
            Self::Served { .. } => ClientDriver::Served { timeout },
            Self::Redis(_) => ClientDriver::Redis {
                hosts,
                quarantine: scenario.quarantine.unwrap_or(ttl * 2),
                command_timeout: scenario.command_timeout.unwrap_or(timeout),
                detect_failover: scenario.detect_failover,
            },
        }
    }
}

/// Records the simulated Redis's grants, renewals and releases in true time.
fn observe(state: &RedisState, history: &History, clock: &SimClock, host: &str) {
    let (history, clock, host) = (history.clone(), clock.clone(), host.to_owned());
    // Renewals and releases name the owner; the checkers want the grant's token.
    let tokens: Mutex<BTreeMap<Vec<u8>, u64>> = Mutex::new(BTreeMap::new());
    state.on_event(move |event: &LockEvent| {
        let at = clock.true_at(event.at);
        let who = event
            .peer
            .host
            .clone()
            .unwrap_or_else(|| event.peer.addr.to_string());
        let mut tokens = tokens.lock().unwrap_or_else(PoisonError::into_inner);
        let kind = match &event.kind {
            LockEventKind::Granted {
                owner, fence, ttl, ..
            } => {
                let token = u64::try_from(*fence).unwrap_or_default();
                tokens.insert(owner.clone(), token);
                EventKind::BackendGranted {
                    to: who,
                    token,
                    until: clock.true_at(event.at + *ttl),
                }
            }
            LockEventKind::Renewed { owner, ttl, .. } => EventKind::BackendRenewed {
                by: who,
                token: tokens.get(owner).copied().unwrap_or_default(),
                until: clock.true_at(event.at + *ttl),
            },
            LockEventKind::Released { owner, .. } => EventKind::BackendReleased {
                by: who,
                token: tokens.get(owner).copied().unwrap_or_default(),
            },
            LockEventKind::Quarantined { ttl, .. } => EventKind::BackendQuarantined {
                by: who,
                until: clock.true_at(event.at + *ttl),
            },
        };
        history.record_at(at, &host, kind);
    });
}

/// The driver a client builds, in each of its incarnations.
#[derive(Debug, Clone)]
pub(crate) enum ClientDriver {
    Served {
        timeout: Duration,
    },
    /// The simulated Redis on each of `hosts`: one, or a quorum's.
    Redis {
        hosts: Vec<String>,
        quarantine: Duration,
        command_timeout: Duration,
        detect_failover: bool,
    },
}

impl ClientDriver {
    pub(crate) fn build(&self) -> Result<Arc<dyn Driver>, robit::BoxError> {
        Ok(match self {
            Self::Served { timeout } => Arc::new(RemoteDriver::new(BACKEND, DRIVER_PORT, *timeout)),
            Self::Redis { hosts, .. } if hosts.len() == 1 => Arc::new(self.redis(&hosts[0])?),
            Self::Redis { hosts, .. } => Arc::new(RedlockDriver::new(
                hosts
                    .iter()
                    .map(|host| self.redis(host))
                    .collect::<Result<Vec<_>, _>>()?,
            )?),
        })
    }

    /// robit's Redis driver to the simulated Redis on `host`.
    fn redis(
        &self,
        host: &str,
    ) -> Result<RedisDriver<SimConnector>, robit::redis::RedisConfigError> {
        let (quarantine, command_timeout, detect_failover) = match self {
            Self::Redis {
                quarantine,
                command_timeout,
                detect_failover,
                ..
            } => (*quarantine, *command_timeout, *detect_failover),
            Self::Served { timeout } => (Duration::ZERO, *timeout, true),
        };
        // Strict about first use: a client process that starts after a loss of state
        // would otherwise take the namespace for a new one (docs/safety.md, "First
        // use"), and the checkers hold every client to the promises.
        RedisDriver::with_connector(SimConnector::new(host, DEFAULT_PORT))
            .quarantine(quarantine)
            .first_use(FirstUse::Quarantine)
            .command_timeout(command_timeout)
            .detect_failover(detect_failover)
            .build()
    }
}
