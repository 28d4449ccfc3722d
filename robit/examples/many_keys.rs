//! Lock by formatted key from many tasks — one lock per job, one per tenant — without a
//! map of mutexes, and get every failure back as a typed error rather than a log line.
//!
//! Run with `cargo run -p robit --example many_keys` (set `REDIS_URL` to use Redis).

#![allow(clippy::print_stdout)]

mod support;

use std::time::Duration;

use robit::{Locker, Wait};

#[tokio::main]
async fn main() -> Result<(), robit::BoxError> {
    let locker = Locker::builder(support::driver()?)
        .ttl(Duration::from_secs(60))
        .wait(Wait::Timeout(Duration::from_secs(5)))
        .build()?;

    // Two deliveries of each job: only one worker at a time processes a given job.
    let workers = [1, 2, 3, 1, 2, 3].map(|job| {
        let locker = locker.clone();
        tokio::spawn(async move {
            let key = format!("job:processing:{job}");
            locker
                .with_lock(key, async |guard| process(job, guard.fence()))
                .await
        })
    });
    for worker in workers {
        worker.await??;
    }
    let tenant = "tenant-123";
    let key = format!("tenant:{tenant}:settings:update");
    locker
        .with_lock(key, async |_| println!("updating {tenant}"))
        .await?;
    println!("{:?}", locker.stats());
    Ok(())
}

fn process(job: u32, fence: robit::FenceToken) {
    println!("processed job {job} under fencing token {fence}");
}
