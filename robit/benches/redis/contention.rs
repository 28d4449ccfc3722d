//! Contention: 8 tasks on one key, robit's fair hand-off next to a polling peer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::Script;
use redis::aio::ConnectionManager;
use robit::{Mutex, Wait};

use crate::common::scale;
use crate::contenders::{ms, percentile, robit_driver};
use crate::support::RedisServer;

/// One contended run's record: (task, acquired, released, waited).
type Record = (usize, Instant, Instant, Duration);

/// Every task's records, once all have finished.
async fn gather(tasks: Vec<tokio::task::JoinHandle<Vec<Record>>>) -> Vec<Record> {
    let mut records = Vec::new();
    for task in tasks {
        records.extend(task.await.unwrap());
    }
    records
}

fn report_contention(
    label: &str,
    mut records: Vec<Record>,
    elapsed: Duration,
    trips: Option<u64>,
    tasks: usize,
) {
    records.sort_by_key(|r| r.1);
    let n = records.len();
    let hold: Duration = records.iter().map(|r| r.2 - r.1).sum();
    let mean_hold = hold / n.max(1) as u32;
    let mut waits: Vec<Duration> = records.iter().map(|r| r.3).collect();
    waits.sort();
    let mut handoffs: Vec<Duration> = records
        .windows(2)
        .filter(|w| w[0].0 != w[1].0)
        .map(|w| w[1].1.saturating_duration_since(w[0].2))
        .collect();
    handoffs.sort();
    let mut per_task = vec![0_usize; tasks];
    for r in &records {
        per_task[r.0] += 1;
    }
    let rate = n as f64 / elapsed.as_secs_f64();
    let ceiling = 1.0 / mean_hold.as_secs_f64();
    println!(
        "| {label} | {rate:.0} | {:.2} | {} | {} | {} | {} | {} | {}–{} (mean {:.0}) | {} |",
        rate / ceiling,
        ms(mean_hold),
        ms(percentile(&handoffs, 0.5)),
        ms(percentile(&waits, 0.5)),
        ms(percentile(&waits, 0.99)),
        ms(*waits.last().unwrap_or(&Duration::ZERO)),
        per_task.iter().min().unwrap(),
        per_task.iter().max().unwrap(),
        n as f64 / tasks as f64,
        trips.map_or("—".to_owned(), |t| format!("{:.2}", t as f64 / n as f64)),
    );
}

pub(crate) async fn contention(server: &RedisServer) {
    const TASKS: usize = 8;
    let run_for = Duration::from_secs_f64(3.0 * scale());
    let hold = Duration::from_millis(1);
    println!("\n## Contention: {TASKS} tasks, one key, each holding it ~1 ms\n");
    println!("Utilisation is acquisitions/s over the ceiling 1/mean hold (the hold is a tokio");
    println!("sleep of 1 ms, which the timer rounds up). Hand-off is release → next acquire when");
    println!("the next holder is a different task.\n");
    println!(
        "| | acq/s | of ceiling | mean hold | hand-off p50 | wait p50 | wait p99 | wait max | acq/task min–max | round trips/acq |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");

    // robit.
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    Mutex::builder("contended", driver.clone())
        .build()
        .unwrap()
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    let before = round_trips.load(Ordering::Relaxed);
    let start = Instant::now();
    let stop_at = start + run_for;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let driver = driver.clone();
            tokio::spawn(async move {
                let mutex = Mutex::builder("contended", driver)
                    .wait(Wait::Forever)
                    .build()
                    .unwrap();
                let mut records = Vec::new();
                while Instant::now() < stop_at {
                    let asked = Instant::now();
                    let guard = mutex.lock().await.unwrap();
                    let acquired = Instant::now();
                    tokio::time::sleep(hold).await;
                    let released = Instant::now();
                    guard.unlock().await.unwrap();
                    records.push((task, acquired, released, acquired - asked));
                }
                records
            })
        })
        .collect();
    let records = gather(tasks).await;
    let elapsed = start.elapsed();
    let trips = round_trips.load(Ordering::Relaxed) - before;
    report_contention(
        "robit (fair hand-off)",
        records,
        elapsed,
        Some(trips),
        TASKS,
    );

    // A polling peer: SET NX PX, retry every 1 ms, owner-checked DEL.
    let client = redis::Client::open(server.url()).unwrap();
    let connection = ConnectionManager::new(client).await.unwrap();
    let unlock = Arc::new(Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
    ));
    let trips = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let stop_at = start + run_for;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (mut connection, unlock, trips) =
                (connection.clone(), Arc::clone(&unlock), Arc::clone(&trips));
            tokio::spawn(async move {
                let owner = format!("{task:032x}");
                let mut records = Vec::new();
                while Instant::now() < stop_at {
                    let asked = Instant::now();
                    loop {
                        trips.fetch_add(1, Ordering::Relaxed);
                        let set: Option<String> = redis::cmd("SET")
                            .arg("polling")
                            .arg(&owner)
                            .arg("NX")
                            .arg("PX")
                            .arg(30_000)
                            .query_async(&mut connection)
                            .await
                            .unwrap();
                        if set.is_some() {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    let acquired = Instant::now();
                    tokio::time::sleep(hold).await;
                    let released = Instant::now();
                    trips.fetch_add(1, Ordering::Relaxed);
                    let _: i64 = unlock
                        .key("polling")
                        .arg(&owner)
                        .invoke_async(&mut connection)
                        .await
                        .unwrap();
                    records.push((task, acquired, released, acquired - asked));
                }
                records
            })
        })
        .collect();
    let records = gather(tasks).await;
    report_contention(
        "polling peer (SET NX, 1 ms retry)",
        records,
        start.elapsed(),
        Some(trips.load(Ordering::Relaxed)),
        TASKS,
    );
}
