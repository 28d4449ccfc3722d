//! The harness's own tests: its checkers, simulated clocks and Redis, faults, the quorum
//! backend, model checking, determinism and scenario errors. One module per area.

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
