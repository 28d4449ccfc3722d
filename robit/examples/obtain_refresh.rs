//! Obtain a short lease, check the time left, refresh it, and watch it run out: the
//! obtain / TTL / refresh / release pattern, with no watchdog renewing behind your back.
//!
//! Run with `cargo run -p robit --example obtain_refresh` (set `REDIS_URL` to use Redis).

#![allow(clippy::print_stdout)]

mod support;

use std::time::Duration;

use robit::{LockError, Mutex};

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    let ttl = Duration::from_millis(100);
    let lock = Mutex::builder("my-key", support::driver()?)
        .ttl(ttl)
        .watchdog(false)
        .build()?;

    let guard = match lock.try_lock().await {
        Err(LockError::Contended { .. }) => {
            println!("Could not obtain lock!");
            return Ok(());
        }
        obtained => obtained?,
    };
    println!("I have a lock!");

    tokio::time::sleep(Duration::from_millis(50)).await;
    if !guard.valid_for().is_zero() {
        println!(
            "Yay, I still have my lock! {} ms left",
            guard.valid_for().as_millis()
        );
    }

    guard.refresh(ttl).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    if guard.valid_for().is_zero() {
        println!("Now, my lock has expired!");
    }
    let _ = guard.unlock().await; // reports the expiry as a loss: nothing left to release
    Ok(())
}
