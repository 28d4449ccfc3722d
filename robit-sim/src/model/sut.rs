//! The system under test: a simulated world driven one operation at a time.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest_state_machine::StateMachineTest;

use super::current::config;
use super::ops::{RefState, Reference};
use super::{ModelConfig, Op, SETTLE};
use crate::faults::{
    Action, Applied, BackendRestart, Crash, Drift, Partition, PartitionOneway, Pause,
};
use crate::scenario::{Fault, Target};
use crate::world::{Command, SimWorld};
use crate::{CheckConfig, EventKind, Promise, Violation, check};

pub(crate) struct Sut {
    world: SimWorld<'static>,
    config: ModelConfig,
    /// By client host.
    partitions: BTreeMap<usize, Applied>,
    /// By client host.
    crashes: BTreeMap<usize, Applied>,
    /// Pauses still to be undone: (when, the pause).
    ends: Vec<(Duration, Applied)>,
    /// Every pause: (client, from, to). A paused client's clock stopped, which is
    /// outside P1 and P2's hypothesis (drift within the bound).
    paused: Vec<(String, Duration, Duration)>,
}

use super::current::{client_name as name, clients_of, host_name};

/// The servers `on` names restart at once, losing their state or not.
fn restart(lose_state: bool, on: Target) -> Action {
    Action::BackendRestart(BackendRestart {
        lose_state,
        on,
        from_snapshot: false,
    })
}

impl Sut {
    fn fault(&mut self, length: Option<Duration>, action: Action) -> Applied {
        let fault = Fault {
            at: self.world.now(),
            length,
            action,
            when_held: false,
        };
        self.world.start(&fault)
    }

    /// Carries `op` out, at the world's current time.
    fn perform(&mut self, op: Op) {
        // A fault strikes a client host: every mutex it runs over its driver.
        let client = |h: usize| Target::Client(host_name(h));
        let tenths = |n: u16| Duration::from_millis(100) * u32::from(n);
        match op {
            Op::Lock(c) => self.world.send(&name(c), Command::Lock { try_only: false }),
            Op::TryLock(c) => self.world.send(&name(c), Command::Lock { try_only: true }),
            Op::Unlock(c) => self.world.send(&name(c), Command::Unlock),
            Op::Write(c) => self.world.send(&name(c), Command::Write),
            Op::Advance(n) => self.advance(tenths(n)),
            Op::Partition(c) => {
                self.cut_off(c, Action::Partition(Partition(client(c), Target::Backend)));
            }
            Op::PartitionToBackend(c) => self.cut_off(
                c,
                Action::PartitionOneway(PartitionOneway {
                    from: client(c),
                    to: Target::Backend,
                }),
            ),
            Op::PartitionFromBackend(c) => self.cut_off(
                c,
                Action::PartitionOneway(PartitionOneway {
                    from: Target::Backend,
                    to: client(c),
                }),
            ),
            Op::PartitionServer(c, s) => {
                let server = Target::Servers(vec![s]);
                self.cut_off(c, Action::Partition(Partition(client(c), server)));
            }
            Op::RestartServer(s, lose_state) => {
                self.fault(None, restart(lose_state, Target::Servers(vec![s])));
            }
            Op::Repair(c) => {
                if let Some(applied) = self.partitions.remove(&c) {
                    self.world.end(&applied);
                }
            }
            Op::Pause(c, n) => self.pause(c, tenths(n)),
            Op::Drift(c, thousandths) => {
                let drift = f64::from(thousandths) / 1000.0;
                self.fault(None, Action::Drift(Drift(client(c), drift)));
            }
            Op::Crash(c) => {
                let applied = self.fault(None, Action::Crash(Crash(client(c))));
                self.crashes.insert(c, applied);
            }
            Op::Restart(c) => {
                if let Some(applied) = self.crashes.remove(&c) {
                    self.world.end(&applied);
                }
            }
            Op::RestartBackend(lose_state) => {
                self.fault(None, restart(lose_state, Target::Backend));
            }
        }
    }

    /// Starts the partition `action` of client host `c`, until a repair.
    fn cut_off(&mut self, c: usize, action: Action) {
        let applied = self.fault(None, action);
        self.partitions.insert(c, applied);
    }

    /// Pauses client host `c` for `length`: its end is due then, and the pause excuses
    /// what its stopped clock breaks, for every client it runs.
    fn pause(&mut self, c: usize, length: Duration) {
        let now = self.world.now();
        let host = Target::Client(host_name(c));
        let applied = self.fault(Some(length), Action::Pause(Pause(host)));
        self.ends.push((now + length, applied));
        for client in clients_of(c) {
            self.paused.push((name(client), now, now + length));
        }
    }

    #[allow(clippy::panic)] // How proptest learns the sequence failed.
    fn advance(&mut self, length: Duration) {
        let until = self.world.now() + length;
        while self.world.now() < until {
            let now = self.world.now();
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ends)
                .into_iter()
                .partition(|(at, _)| *at <= now);
            self.ends = later;
            for (_, applied) in due {
                self.world.end(&applied);
            }
            if let Err(error) = self.world.step() {
                panic!("{error}");
            }
        }
    }

    fn excused(&self, violation: &Violation) -> bool {
        if !matches!(
            violation.promise,
            Promise::MutualExclusion | Promise::EarlyLoss
        ) {
            return false;
        }
        let ttl = self.config.world.lock.ttl;
        let from = violation
            .instants
            .first()
            .copied()
            .unwrap_or_default()
            .saturating_sub(ttl);
        let to = violation.instants.last().copied().unwrap_or_default();
        self.paused.iter().any(|(who, start, end)| {
            violation.clients.contains(who) && *start <= to && *end >= from
        })
    }

    fn violations(&self, promises: &[Promise]) -> Vec<Violation> {
        let config = CheckConfig::new(self.config.world.lock.ttl, self.world.now())
            .with_servers(self.config.world.servers);
        check(self.world.history(), &config, promises)
            .into_iter()
            .filter(|violation| !self.excused(violation))
            .collect()
    }
}

pub(crate) struct ModelTest;

// proptest's state-machine hooks report a broken invariant by panicking: the panics
// below are how a failing sequence is found, shrunk and reported.

impl StateMachineTest for ModelTest {
    type SystemUnderTest = Sut;
    type Reference = Reference;

    fn init_test(_: &RefState) -> Sut {
        let config = config();
        let world = SimWorld::new(&config.world, 1, true, config.driver.as_ref());
        Sut {
            world,
            config,
            partitions: BTreeMap::new(),
            crashes: BTreeMap::new(),
            ends: Vec::new(),
            paused: Vec::new(),
        }
    }

    fn apply(mut sut: Sut, _: &RefState, op: Op) -> Sut {
        sut.perform(op);
        sut.advance(SETTLE);
        sut
    }

    #[allow(clippy::panic)] // How proptest learns the sequence failed.
    fn check_invariants(sut: &Sut, _: &RefState) {
        let safety = [
            Promise::MutualExclusion,
            Promise::EarlyLoss,
            Promise::Fencing,
            Promise::SafeRelease,
        ];
        let violations = sut.violations(&safety);
        if let Some(first) = violations.first() {
            panic!("{first} ({} violation(s) in all)", violations.len());
        }
    }

    fn teardown(mut sut: Sut, state: RefState) {
        // Heal everything, let every client ask for the lock, and expect someone to get
        // it within the liveness bound of the last ask (P5).
        for applied in std::mem::take(&mut sut.partitions).into_values() {
            sut.world.end(&applied);
        }
        for applied in std::mem::take(&mut sut.crashes).into_values() {
            sut.world.end(&applied);
        }
        let ttl = sut.config.world.lock.ttl;
        sut.advance(ttl * 4);
        let healed = sut.world.now();
        for c in 0..state.clients {
            sut.world.send(&name(c), Command::Unlock);
            sut.world.send(&name(c), Command::Lock { try_only: false });
        }
        sut.advance(ttl * 3);
        let acquired =
            sut.world.history().events().iter().any(|event| {
                event.at >= healed && matches!(event.kind, EventKind::Acquired { .. })
            });
        assert!(
            acquired,
            "P5 (liveness): every fault healed at {:.3}s, every client asked for the lock, and none got it within {:?}",
            healed.as_secs_f64(),
            ttl * 3
        );
        Self::check_invariants(&sut, &state);
    }
}

impl std::fmt::Debug for Sut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sut")
            .field("now", &self.world.now())
            .finish_non_exhaustive()
    }
}
