//! The harness's own tests: its checkers, simulated clocks and Redis, faults, the quorum
//! backend, model checking, determinism, scenario errors, and the promise-by-driver map
//! in docs/verification.md. One module per area.

mod checkers;
mod clock;
mod determinism;
mod faults;
mod jeopardy;
mod model;
mod quorum;
mod scenario_errors;
mod shared_driver;
mod sim_redis;
mod verification_map;
