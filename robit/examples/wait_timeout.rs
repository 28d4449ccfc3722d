//! Wait a bounded time for a lock someone else holds, and tell a timeout from other
//! failures.
//!
//! Run with `cargo run -p robit --example wait_timeout` (set `REDIS_URL` to use Redis).

#![allow(clippy::print_stdout)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use robit::{LockError, Mutex, Wait};

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    let driver = support::driver()?;
    let holder = Mutex::builder("my-lock", Arc::clone(&driver)).build()?;
    let waiter = Mutex::builder("my-lock", driver) // a TTL of 30 s, the default
        .wait(Wait::Timeout(Duration::from_millis(500)))
        .build()?;

    let guard = holder.lock().await?;
    match waiter.lock().await {
        Err(LockError::Timeout { waited, .. }) => println!("waited {}ms", waited.as_millis()),
        other => drop(other?), // another failure, or (not here) the lock
    }
    guard.unlock().await?;
    Ok(())
}
