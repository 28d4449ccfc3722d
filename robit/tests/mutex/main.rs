//! The mutex's integration tests that need no server: the local driver, a fault-injecting
//! driver over it, and paused tokio time. One test binary, one module per area.

mod api;
mod call_limit;
mod config;
mod contention;
mod driver_contract;
mod fencing;
mod force_release;
mod handed;
mod hold_cap;
mod inspect;
mod jeopardy;
mod lock_delay;
mod locker;
mod loss_signal;
mod messages;
mod quarantine;
mod refresh;
mod renewal;
mod renewal_panics;
mod shared_driver;
mod time_left;
mod tracing;
mod watchdog;
mod watchdog_wakes;
