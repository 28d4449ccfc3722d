//! Model checking: random sequences of client commands and faults, applied to the
//! simulated world, with the safety promises checked after every step.
//!
//! proptest generates the sequences from a small reference model (which clients are
//! crashed, which are cut off), runs each against a fresh world, and checks P1, P2, P4
//! and P6 on the history after each operation; at the end it heals every fault and
//! checks that a waiter gets the lock (P5). A failing sequence is shrunk to a minimal
//! one, saved in a regression file (so the next run replays it first), and reported
//! with the command that replays it.

mod current;
mod ops;
mod sut;

use std::fmt;
use std::time::Duration;

use proptest::test_runner::{Config, FileFailurePersistence, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

pub use self::ops::Op;
use self::ops::Reference;
use self::sut::ModelTest;
use crate::{DriverFactory, Scenario};

/// How a model-checking run is set up.
///
/// # Example
///
/// ```
/// use robit_sim::ModelConfig;
///
/// let config = ModelConfig::local().cases(8).regressions("proptest-regressions/model.txt");
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub(crate) world: Scenario,
    pub(crate) cases: u32,
    pub(crate) max_ops: usize,
    pub(crate) regressions: Option<&'static str>,
    pub(crate) replay: String,
    pub(crate) driver: Option<DriverFactory>,
}

/// The world every model run starts from: three clients, a 1 s TTL.
const WORLD: &str = r#"
name = "model"
duration = "1h"
[lock]
ttl = "1s"
[[clients]]
name = "c"
count = 3
hold = ["1ms", "1ms"]
"#;

impl ModelConfig {
    /// Three clients over robit's local driver, served over the simulated network.
    pub fn local() -> Self {
        Self::with_backend("local")
    }

    /// Three clients over the simulated Redis, through robit's Redis driver.
    pub fn redis() -> Self {
        Self::with_backend("redis")
    }

    /// Two client hosts over the simulated Redis, each running two mutexes over its one
    /// Redis driver: their calls meet on the driver's connection and go out in batches
    /// of several callers (`c1#1` and `c1#2` share host `c1`; a fault strikes both).
    pub fn redis_shared() -> Self {
        let world = WORLD.replace("count = 3", "count = 2\nmutexes = 2");
        Self::with_world("backend = \"redis\"\n", &world)
    }

    /// Three clients over `servers` simulated Redis servers (3 to 9), each its own host,
    /// through robit's `RedlockDriver`. The sequences also cut a client off from one
    /// server, and restart one server (losing its data or not).
    pub fn redlock(servers: usize) -> Self {
        let servers = servers.clamp(3, 9);
        Self::with_header(&format!("backend = \"redlock\"\nservers = {servers}\n"))
    }

    fn with_backend(backend: &str) -> Self {
        Self::with_header(&format!("backend = \"{backend}\"\n"))
    }

    fn with_header(header: &str) -> Self {
        Self::with_world(header, WORLD)
    }

    fn with_world(header: &str, world: &str) -> Self {
        let text = format!("{header}{world}");
        #[allow(clippy::expect_used)] // A constant: tested below.
        let world = Scenario::parse("model", &text).expect("the model's world parses");
        Self {
            world,
            cases: cases_from_env(),
            max_ops: 40,
            regressions: None,
            replay: "ROBIT_MUTANTS=1 cargo test -p robit-sim --test sim -- model::".to_owned(),
            driver: None,
        }
    }

    /// Three clients over the driver `driver` builds, served over the simulated network
    /// (the conformance suite's model check). The backend keeps its state across
    /// restarts: a served in-memory driver cannot survive losing it.
    pub fn driver(driver: DriverFactory) -> Self {
        let mut config = Self::local();
        config.driver = Some(driver);
        config
    }

    /// Plants `mutant` in every client's mutex (for the conformance tests).
    #[doc(hidden)]
    #[cfg(robit_mutants)]
    pub fn mutant(mut self, mutant: robit::Mutant) -> Self {
        self.world = self.world.with_mutant(mutant);
        self
    }

    /// How many random sequences to try (default: `ROBIT_MODEL_CASES`, or 24).
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases.max(1);
        self
    }

    /// The longest operation sequence generated (default 40).
    pub fn max_ops(mut self, max_ops: usize) -> Self {
        self.max_ops = max_ops.max(1);
        self
    }

    /// Where failing sequences are saved and replayed from first (default: nowhere).
    pub fn regressions(mut self, path: &'static str) -> Self {
        self.regressions = Some(path);
        self
    }

    /// The command printed for replaying a failure.
    pub fn replay_command(mut self, command: impl Into<String>) -> Self {
        self.replay = command.into();
        self
    }
}

fn cases_from_env() -> u32 {
    std::env::var("ROBIT_MODEL_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(24)
}

/// A sequence that broke a promise, shrunk as far as proptest could.
///
/// # Example
///
/// ```no_run
/// use robit_sim::{ModelConfig, check_model};
///
/// if let Err(failure) = check_model(&ModelConfig::local()) {
///     panic!("{failure}");
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ModelFailure {
    /// The minimal operations.
    pub ops: Vec<Op>,
    /// What broke.
    pub reason: String,
    /// How to replay it.
    pub replay: String,
}

impl fmt::Display for ModelFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.reason)?;
        writeln!(f, "minimal sequence ({} operations):", self.ops.len())?;
        for (index, op) in self.ops.iter().enumerate() {
            writeln!(f, "  {:>2}. {op}", index + 1)?;
        }
        write!(f, "replay: {}", self.replay)
    }
}

impl std::error::Error for ModelFailure {}

/// Runs the model check `config` describes.
///
/// # Errors
///
/// A [`ModelFailure`] with the shrunk sequence if some sequence broke a promise.
pub fn check_model(config: &ModelConfig) -> Result<(), ModelFailure> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(ModelFailure {
            ops: Vec::new(),
            reason: crate::RunError::InsideRuntime.to_string(),
            replay: config.replay.clone(),
        });
    }
    let mut proptest = Config::with_cases(config.cases);
    proptest.failure_persistence = Some(Box::new(match config.regressions {
        Some(path) => FileFailurePersistence::Direct(path),
        None => FileFailurePersistence::Off,
    }));
    proptest.max_shrink_iters = 2048;
    let mut runner = TestRunner::new(proptest.clone());
    current::install(config);
    quiet::begin();
    let strategy = Reference::sequential_strategy(1..config.max_ops);
    let result = runner.run(&strategy, |(state, ops, seen)| {
        ModelTest::test_sequential(proptest.clone(), state, ops, seen);
        Ok(())
    });
    quiet::end();
    current::uninstall();
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, (_, ops, _))) => Err(ModelFailure {
            ops,
            reason: reason.to_string(),
            replay: config.replay.clone(),
        }),
        Err(TestError::Abort(reason)) => Err(ModelFailure {
            ops: Vec::new(),
            reason: format!("the model check gave up: {reason}"),
            replay: config.replay.clone(),
        }),
    }
}

/// Keeps the panics of the sequences proptest tries (and shrinks) off the terminal:
/// the failure that matters is reported once, with its minimal sequence.
mod quiet {
    use std::cell::Cell;
    use std::sync::Once;

    thread_local! {
        static QUIET: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn begin() {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(Cell::get) {
                    previous(info);
                }
            }));
        });
        QUIET.with(|quiet| quiet.set(true));
    }

    pub(super) fn end() {
        QUIET.with(|quiet| quiet.set(false));
    }
}

/// Simulated time each operation is followed by, so its effects can happen.
pub(crate) const SETTLE: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_worlds_parse() {
        assert_eq!(
            ModelConfig::local().world.client_names(),
            ["c1", "c2", "c3"]
        );
        assert_eq!(ModelConfig::redis().world.client_names().len(), 3);
        let shared = ModelConfig::redis_shared().world;
        assert_eq!(shared.client_names(), ["c1", "c2"]);
        assert_eq!(shared.lanes(), ["c1#1", "c1#2", "c2#1", "c2#2"]);
        assert_eq!(ModelConfig::redlock(5).world.servers(), 5);
    }

    #[test]
    fn the_model_names_each_client_and_host_as_its_world_does() {
        // A command sent to a name the world does not know would be dropped unseen.
        for config in [ModelConfig::redis(), ModelConfig::redis_shared()] {
            current::install(&config);
            let shape = current::shape();
            let clients: Vec<String> = (0..shape.clients).map(current::client_name).collect();
            let hosts: Vec<String> = (0..shape.hosts()).map(current::host_name).collect();
            current::uninstall();
            assert_eq!(clients, config.world.lanes());
            assert_eq!(hosts, config.world.client_names());
        }
    }
}
