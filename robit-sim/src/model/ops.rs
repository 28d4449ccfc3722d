//! The operations of the model, and the reference state that keeps sequences valid.

use std::collections::BTreeSet;
use std::fmt;

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest_state_machine::ReferenceStateMachine;

/// One step of a model-checking sequence. Clients are numbered from 0 (`c1` is 0). A
/// command (lock, try-lock, unlock, write) names a client; a fault (a partition, a
/// repair, a pause, drift, a crash, a restart) names a client host, and strikes every
/// client it runs. They are the same but in a world whose hosts run several mutexes over
/// their one driver ([`ModelConfig::redis_shared`](crate::ModelConfig::redis_shared)),
/// where client `c1#2` is host `c1`'s second.
///
/// # Example
///
/// ```
/// use robit_sim::Op;
///
/// assert_eq!(Op::Pause(1, 15).to_string(), "pause c2 for 1.5s");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// The client calls `lock()` (waiting up to three TTLs).
    Lock(usize),
    /// The client calls `try_lock()`.
    TryLock(usize),
    /// The client unlocks what it holds.
    Unlock(usize),
    /// The client sends a fenced write with its latest token.
    Write(usize),
    /// Time passes: tenths of a second.
    Advance(u16),
    /// The client and the backend are cut off from each other.
    Partition(usize),
    /// Messages from the client to the backend are dropped.
    PartitionToBackend(usize),
    /// Messages from the backend to the client are dropped.
    PartitionFromBackend(usize),
    /// The client's partitions are repaired.
    Repair(usize),
    /// The client is paused for tenths of a second.
    Pause(usize, u16),
    /// The client's clock drifts, in thousandths (within the lock's 1 % bound).
    Drift(usize, i8),
    /// The client crashes.
    Crash(usize),
    /// The crashed client restarts.
    Restart(usize),
    /// The backend restarts, losing its data if true.
    RestartBackend(bool),
    /// The client (first) and one of a quorum's servers (second, from 0: `backend1` is
    /// 0) are cut off from each other.
    PartitionServer(usize, usize),
    /// One of a quorum's servers restarts, losing its data if true.
    RestartServer(usize, bool),
}

use super::current::{client_name as client, host_name as host};

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tenths = |n: u16| format!("{}.{}s", n / 10, n % 10);
        match *self {
            Self::Lock(c) => write!(f, "lock {}", client(c)),
            Self::TryLock(c) => write!(f, "try-lock {}", client(c)),
            Self::Unlock(c) => write!(f, "unlock {}", client(c)),
            Self::Write(c) => write!(f, "write {}", client(c)),
            Self::Advance(n) => write!(f, "advance {}", tenths(n)),
            Self::Partition(c) => write!(f, "partition {} | backend", host(c)),
            Self::PartitionToBackend(c) => write!(f, "partition {} -> backend", host(c)),
            Self::PartitionFromBackend(c) => write!(f, "partition backend -> {}", host(c)),
            Self::Repair(c) => write!(f, "repair {}", host(c)),
            Self::Pause(c, n) => write!(f, "pause {} for {}", host(c), tenths(n)),
            Self::Drift(c, d) => write!(f, "drift {} {:+.3}", host(c), f64::from(d) / 1000.0),
            Self::Crash(c) => write!(f, "crash {}", host(c)),
            Self::Restart(c) => write!(f, "restart {}", host(c)),
            Self::RestartBackend(lose) => {
                write!(
                    f,
                    "restart backend{}",
                    if lose { " losing state" } else { "" }
                )
            }
            Self::PartitionServer(c, s) => write!(f, "partition {} | backend{}", host(c), s + 1),
            Self::RestartServer(s, lose) => {
                write!(
                    f,
                    "restart backend{}{}",
                    s + 1,
                    if lose { " losing state" } else { "" }
                )
            }
        }
    }
}

/// What the generator needs to know to keep a sequence valid.
#[derive(Debug, Clone)]
pub(crate) struct RefState {
    /// Clients, which commands name.
    pub(crate) clients: usize,
    /// Client hosts, which faults name (`crashed` and `cut` hold hosts).
    pub(crate) hosts: usize,
    pub(crate) crashed: BTreeSet<usize>,
    pub(crate) cut: BTreeSet<usize>,
    /// Whether the backend may lose its state (only one with a quarantine survives it).
    pub(crate) state_loss: bool,
    /// How many backend servers: more than one for a quorum.
    pub(crate) servers: usize,
}

/// Operations to choose from, each with its weight. Their order is part of what a seed
/// generates: a new one goes last.
type Choices = Vec<(u32, BoxedStrategy<Op>)>;

impl RefState {
    /// What the clients do, and the time passing, always possible; and the backend's
    /// restart that keeps its state.
    fn client_ops(&self) -> Choices {
        let every = 0..self.clients;
        let hosts = 0..self.hosts;
        vec![
            (6, every.clone().prop_map(Op::Lock).boxed()),
            (2, every.clone().prop_map(Op::TryLock).boxed()),
            (4, every.clone().prop_map(Op::Unlock).boxed()),
            (3, every.prop_map(Op::Write).boxed()),
            (5, (1..=30_u16).prop_map(Op::Advance).boxed()),
            (
                1,
                (hosts.clone(), 1..=30_u16)
                    .prop_map(|(h, t)| Op::Pause(h, t))
                    .boxed(),
            ),
            (
                1,
                (hosts, -9..=9_i8)
                    .prop_map(|(h, d)| Op::Drift(h, d))
                    .boxed(),
            ),
            (1, Just(Op::RestartBackend(false)).boxed()),
        ]
    }

    /// The backend's restarts losing its state, if it may, and a quorum's servers'.
    fn backend_restarts(&self, choices: &mut Choices) {
        if self.state_loss {
            choices.push((1, Just(Op::RestartBackend(true)).boxed()));
        }
        if self.servers > 1 {
            let lose = if self.state_loss {
                proptest::bool::ANY.boxed()
            } else {
                Just(false).boxed()
            };
            choices.push((
                2,
                (0..self.servers, lose)
                    .prop_map(|(s, lose)| Op::RestartServer(s, lose))
                    .boxed(),
            ));
        }
    }

    /// Partitions of the client hosts not cut off, repairs of those that are, crashes of
    /// those up and restarts of those crashed.
    fn cuts_and_crashes(&self, choices: &mut Choices) {
        let n = self.hosts;
        let up: Vec<usize> = (0..n).filter(|c| !self.crashed.contains(c)).collect();
        let whole: Vec<usize> = (0..n).filter(|c| !self.cut.contains(c)).collect();
        let cut: Vec<usize> = self.cut.iter().copied().collect();
        let crashed: Vec<usize> = self.crashed.iter().copied().collect();
        if !whole.is_empty() {
            let pick = proptest::sample::select(whole);
            choices.push((1, pick.clone().prop_map(Op::Partition).boxed()));
            choices.push((1, pick.clone().prop_map(Op::PartitionToBackend).boxed()));
            choices.push((1, pick.clone().prop_map(Op::PartitionFromBackend).boxed()));
            if self.servers > 1 {
                choices.push((
                    3,
                    (pick, 0..self.servers)
                        .prop_map(|(c, s)| Op::PartitionServer(c, s))
                        .boxed(),
                ));
            }
        }
        if !cut.is_empty() {
            choices.push((
                3,
                proptest::sample::select(cut).prop_map(Op::Repair).boxed(),
            ));
        }
        if !up.is_empty() {
            choices.push((1, proptest::sample::select(up).prop_map(Op::Crash).boxed()));
        }
        if !crashed.is_empty() {
            choices.push((
                3,
                proptest::sample::select(crashed)
                    .prop_map(Op::Restart)
                    .boxed(),
            ));
        }
    }
}

pub(crate) struct Reference;

impl ReferenceStateMachine for Reference {
    type State = RefState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<RefState> {
        let shape = super::current::shape();
        Just(RefState {
            clients: shape.clients,
            hosts: shape.hosts(),
            crashed: BTreeSet::new(),
            cut: BTreeSet::new(),
            state_loss: shape.state_loss,
            servers: shape.servers,
        })
        .boxed()
    }

    fn transitions(state: &RefState) -> BoxedStrategy<Op> {
        let mut choices = state.client_ops();
        state.backend_restarts(&mut choices);
        state.cuts_and_crashes(&mut choices);
        Union::new_weighted(choices).boxed()
    }

    fn preconditions(state: &RefState, op: &Op) -> bool {
        match *op {
            Op::Partition(c) | Op::PartitionToBackend(c) | Op::PartitionFromBackend(c) => {
                !state.cut.contains(&c)
            }
            Op::PartitionServer(c, s) => !state.cut.contains(&c) && s < state.servers,
            Op::RestartServer(s, lose) => s < state.servers && (!lose || state.state_loss),
            Op::Repair(c) => state.cut.contains(&c),
            Op::Crash(c) => !state.crashed.contains(&c),
            Op::Restart(c) => state.crashed.contains(&c),
            Op::RestartBackend(lose) => !lose || state.state_loss,
            _ => true,
        }
    }

    fn apply(mut state: RefState, op: &Op) -> RefState {
        match *op {
            Op::Partition(c)
            | Op::PartitionToBackend(c)
            | Op::PartitionFromBackend(c)
            | Op::PartitionServer(c, _) => {
                state.cut.insert(c);
            }
            Op::Repair(c) => {
                state.cut.remove(&c);
            }
            Op::Crash(c) => {
                state.crashed.insert(c);
            }
            Op::Restart(c) => {
                state.crashed.remove(&c);
            }
            _ => {}
        }
        state
    }
}
