//! Timed figures, on criterion: one uncontended lock + unlock cycle, robit's Redis
//! driver next to rslock (Redlock, on one server), against the same `redis-server`
//! (started by the bench on a free port), with the same TTL, on the same runtime.
//!
//! `cargo bench -p robit-bench --bench lock_cycle`. What each cycle costs the server and the
//! client, and how the two behave under contention, is the `report` bench's.
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use robit::Mutex;
use robit::redis::RedisDriver;
use robit_test_support::bench::{TTL, runtime};
use robit_test_support::redis::RedisServer;
use rslock::LockManager;

fn lock_cycle(c: &mut Criterion) {
    let server = RedisServer::start();
    let runtime = runtime();
    let driver = RedisDriver::builder(&server.url()).build().unwrap();
    let mutex = Mutex::builder("criterion", driver)
        .ttl(TTL)
        .build()
        .unwrap();
    let manager = LockManager::new(vec![server.url()]);

    let mut group = c.benchmark_group("uncontended lock + unlock");
    group.bench_function("robit", |b| {
        b.to_async(&runtime)
            .iter(|| async { mutex.lock().await.unwrap().unlock().await.unwrap() });
    });
    group.bench_function("rslock", |b| {
        b.to_async(&runtime).iter(|| async {
            let lock = manager.lock("rslock:criterion", TTL).await.unwrap();
            manager.unlock(&lock).await;
        });
    });
    group.finish();
}

/// Short runs: the machine these run on is shared, and the figures that hold there are
/// the report's counts; these timings are the second reading.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = lock_cycle
}
criterion_main!(benches);
