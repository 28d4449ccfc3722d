//! Three workers share one lock; each writes to a fenced resource while holding it; then
//! a holder loses its lease and is told at once.
//!
//! Run with `cargo run -p robit --example workers`.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use robit::{FenceGate, LocalDriver, Mutex};

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    // The in-process backend; in production, every process would point at the same
    // Redis instead.
    let driver = LocalDriver::new();
    // The protected resource remembers the highest fencing token it has seen.
    let resource = Arc::new(FenceGate::new());

    let mut workers = Vec::new();
    for id in 1..=3 {
        let mutex = Mutex::builder("nightly-report", driver.clone())
            .ttl(Duration::from_secs(2))
            .on_lost(move |event| println!("worker {id}: lease lost ({})", event.reason))
            .build()?;
        let resource = Arc::clone(&resource);
        workers.push(tokio::spawn(async move {
            for _ in 0..2 {
                let guard = mutex.lock().await?;
                resource.check(guard.fence())?;
                println!("worker {id}: writing with fencing token {}", guard.fence());
                tokio::time::sleep(Duration::from_millis(20)).await;
                guard.unlock().await?;
            }
            Ok::<_, robit::BoxError>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }

    // A lease lost underneath its holder (here: the backend evicts the grant) is
    // signalled at once, before anyone else can take the lock.
    let mutex = Mutex::builder("nightly-report", driver.clone()).build()?;
    let guard = mutex.lock().await?;
    driver.evict(mutex.name());
    guard.lost().await;
    println!("holder told of the loss; is_held() = {}", guard.is_held());
    match guard.unlock().await {
        Err(robit::UnlockError::Lost(reason)) => println!("unlock reports the loss: {reason}"),
        other => println!("unexpected: {other:?}"),
    }
    println!("stats: {:?}", mutex.stats());
    Ok(())
}
