//! Stop the work when the lease is lost, and export the mutex's counters.
//!
//! No token to cancel from a callback and poll between steps: the guard's lost signal
//! ends the work at the loss. The counters go out in the text format metrics scrapers
//! read.
//!
//! Run with `cargo run -p robit --example on_lost` (set `REDIS_URL` to use Redis).

#![allow(clippy::print_stdout)]

mod support;

use robit::Mutex;

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    let mutex = Mutex::builder("critical-task", support::driver()?)
        .on_lost(|event| println!("lock lost ({}); stopping work", event.reason))
        .build()?; // a TTL of 30 s, the default

    let guard = mutex.lock().await?;
    for step in 1..=3 {
        tokio::select! {
            () = guard.lost() => return Ok(()), // the work is no longer exclusive
            () = do_some_work() => println!("step {step} done"),
        }
    }
    guard.unlock().await?;

    let stats = mutex.stats();
    let held = stats.total_hold_time.as_secs_f64();
    println!("robit_lock_acquired_total {}", stats.acquired);
    println!("robit_lock_lost_total {}", stats.lost);
    println!("robit_lock_hold_seconds_total {held}");
    Ok(())
}

async fn do_some_work() {
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
}
