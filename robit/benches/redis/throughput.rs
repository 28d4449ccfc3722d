//! 64 tasks on distinct keys over one multiplexed connection.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use robit::Mutex;

use crate::common::scaled;
use crate::contenders::{Baseline, Caller, Counted, robit_driver};
use crate::support::RedisServer;
use crate::uncontended::{ratio_quartiles, runs};

pub(crate) async fn throughput(server: &RedisServer) {
    const TASKS: usize = 64;
    const ROUNDS: usize = 8;
    let cycles = scaled(300);
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    let baseline = Arc::new(Baseline::new(server).await);
    // The baseline's connection counts its round trips too, so both pay for the count.
    let baseline_trips = Arc::new(AtomicU64::new(0));
    let mutexes: Vec<Arc<Mutex>> = (0..TASKS)
        .map(|task| {
            let mutex = Mutex::builder(format!("many-{task}"), driver.clone()).build();
            Arc::new(mutex.unwrap())
        })
        .collect();
    let ours = || async {
        if !runs("robit") {
            return f64::NAN;
        }
        let start = Instant::now();
        let tasks: Vec<_> = mutexes
            .iter()
            .map(|mutex| {
                let mutex = Arc::clone(mutex);
                tokio::spawn(async move {
                    for _ in 0..cycles {
                        mutex.lock().await.unwrap().unlock().await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (TASKS * cycles) as f64 / start.elapsed().as_secs_f64()
    };
    let theirs = || async {
        if !runs("baseline") {
            return f64::NAN;
        }
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let baseline = Arc::clone(&baseline);
                let mut connection =
                    Counted::counting(baseline.connection.clone(), &baseline_trips);
                tokio::spawn(async move {
                    let who = Caller::new(task as u128);
                    for _ in 0..cycles {
                        baseline
                            .cycle(&mut connection, &format!("many-baseline-{task}"), &who)
                            .await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (TASKS * cycles) as f64 / start.elapsed().as_secs_f64()
    };
    // A warm-up round, then rounds in alternating order.
    ours().await;
    theirs().await;
    let mut ours_rate = Vec::new();
    let mut theirs_rate = Vec::new();
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            ours_rate.push(ours().await);
            theirs_rate.push(theirs().await);
        } else {
            theirs_rate.push(theirs().await);
            ours_rate.push(ours().await);
        }
    }
    let ours = ours_rate.iter().sum::<f64>() / ours_rate.len() as f64;
    let theirs = theirs_rate.iter().sum::<f64>() / theirs_rate.len() as f64;
    println!("\n## Throughput: {TASKS} tasks, distinct keys, one multiplexed connection\n");
    println!("| | cycles/s |");
    println!("|---|---:|");
    println!("| robit | {ours:.0} |");
    println!("| baseline | {theirs:.0} |");
    println!("\nrobit / baseline: **{:.3}×**", ours / theirs);
    let (low, median, high) = ratio_quartiles(&ours_rate, &theirs_rate);
    println!(
        "robit / baseline, round by round ({ROUNDS} rounds): median **{median:.3}×**, \
         middle half {low:.3}–{high:.3}×"
    );
}
