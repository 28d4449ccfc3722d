//! The smallest complete use: lock, do the work only one process may do, unlock.
//!
//! Run with `cargo run -p robit --example quickstart` (set `REDIS_URL` to use Redis).

#![allow(clippy::print_stdout)]

mod support;

use std::time::Duration;

use robit::Mutex;

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    let mutex = Mutex::builder("order-lock", support::driver()?)
        .ttl(Duration::from_secs(30))
        .build()?;
    let guard = mutex.lock().await?;
    // Only one holder at a time gets here: process the order, fencing its writes.
    println!("processing the order under fencing token {}", guard.fence());
    guard.unlock().await?;
    Ok(())
}
