//! Phase 3: contention on one key.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use robit::redis::RedisDriver;
use rslock::LockManager;

use crate::common::scale;
use crate::lockers::{
    Locker, Robit, Rslock, cycle, rslock_attempts, rslock_delays, rslock_mean_sleep,
};
use crate::meter::{Meter, Work};
use crate::support::RedisServer;
use crate::table::{Table, Unit, percentile};
use crate::{ROBIT_SENDS, RSLOCK_SENDS, WAIT_BUDGET};

/// How long each contender holds the lock (a tokio sleep, which rounds up).
const HOLD: Duration = Duration::from_millis(1);
/// Tasks in the contention phase, all on one key.
const CONTENDERS: usize = 8;

struct Record {
    task: usize,
    asked: Instant,
    acquired: Instant,
    released: Instant,
}

/// One library's contention run. Every task keeps cycling until all of them have seen
/// the end of the measured window, so that a request made inside the window waits
/// against full contention however long it takes; what tasks do after their last
/// request inside the window is load, not measured (but its commands are counted, with
/// its acquisitions).
struct Contended {
    records: Vec<Record>,
    /// Requests made inside the window that gave up.
    gave_up: usize,
    start: Instant,
    stop_at: Instant,
    work: Work,
}

async fn contend<L: Locker>(
    lockers: Vec<L>,
    stats: &mut Meter,
    sends: &[&str],
    run_for: Duration,
) -> Contended {
    let tasks = lockers.len();
    let past_window = Arc::new(AtomicUsize::new(0));
    stats.reset().await;
    let start = Instant::now();
    let stop_at = start + run_for;
    let handles: Vec<_> = lockers
        .into_iter()
        .enumerate()
        .map(|(task, mut locker)| {
            let past_window = Arc::clone(&past_window);
            tokio::spawn(async move {
                let (mut records, mut gave_up, mut past) = (Vec::new(), 0, false);
                loop {
                    let asked = Instant::now();
                    if asked >= stop_at && !past {
                        past = true;
                        past_window.fetch_add(1, Ordering::Relaxed);
                    }
                    if past && past_window.load(Ordering::Relaxed) == tasks {
                        break;
                    }
                    let Some(held) = locker.lock().await else {
                        gave_up += usize::from(asked < stop_at);
                        continue;
                    };
                    let acquired = Instant::now();
                    tokio::time::sleep(HOLD).await;
                    let released = Instant::now();
                    locker.unlock(held).await;
                    records.push(Record {
                        task,
                        asked,
                        acquired,
                        released,
                    });
                }
                (records, gave_up)
            })
        })
        .collect();
    let (mut records, mut gave_up) = (Vec::new(), 0);
    for handle in handles {
        let (more, gave) = handle.await.unwrap();
        records.extend(more);
        gave_up += gave;
    }
    Contended {
        records,
        gave_up,
        start,
        stop_at,
        work: stats.read(sends).await,
    }
}

impl Contended {
    /// The figures of both contention tables: (rates and costs, latencies). Rates,
    /// shares and hand-offs count acquisitions inside the window; waits, the requests
    /// made inside it.
    fn figures(mut self) -> (Vec<f64>, Vec<f64>) {
        self.records.sort_by_key(|r| r.acquired);
        let window = (self.stop_at - self.start).as_secs_f64();
        let inside: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.acquired <= self.stop_at)
            .collect();
        let held: Duration = inside
            .iter()
            .map(|r| r.released.min(self.stop_at) - r.acquired)
            .sum();
        let mut waits: Vec<Duration> = self
            .records
            .iter()
            .filter(|r| r.asked < self.stop_at)
            .map(|r| r.acquired - r.asked)
            .collect();
        waits.sort();
        let mut handoffs: Vec<Duration> = inside
            .windows(2)
            .filter(|w| w[0].task != w[1].task)
            .map(|w| w[1].acquired.saturating_duration_since(w[0].released))
            .collect();
        handoffs.sort();
        let mut per_task = [0_usize; CONTENDERS];
        for record in &inside {
            per_task[record.task] += 1;
        }
        let mut costs = vec![
            inside.len() as f64 / window,
            held.as_secs_f64() / window,
            handoffs.len() as f64 / (inside.len() as f64 - 1.0).max(1.0),
            *per_task.iter().min().unwrap() as f64,
            *per_task.iter().max().unwrap() as f64,
            self.gave_up as f64,
        ];
        costs.extend(self.work.per(self.records.len()));
        let latencies = vec![
            percentile(&handoffs, 0.5),
            percentile(&handoffs, 0.99),
            handoffs.last().map_or(f64::NAN, Duration::as_secs_f64),
            percentile(&waits, 0.5),
            percentile(&waits, 0.99),
            waits.last().map_or(f64::NAN, Duration::as_secs_f64),
        ];
        (costs, latencies)
    }
}

pub(crate) async fn contention(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let run_for = Duration::from_secs_f64(3.0 * scale());
    let delays = rslock_delays();
    println!(
        "\n## Contention: {CONTENDERS} tasks, one key, each holding it ~{} ms\n",
        HOLD.as_millis()
    );
    println!(
        "Each library is measured over {:.1} s (every task keeps contending until all have",
        run_for.as_secs_f64()
    );
    println!(
        "seen the window end). robit waits with `Wait::Timeout({WAIT_BUDGET:?})` and its default"
    );
    println!("backoff; rslock with each retry delay d sleeps uniformly 0..d−1 ms between");
    println!("attempts, as many attempts as make the same budget on average:");
    for &delay in &delays {
        println!(
            "- d = {delay} ms: {} attempts (mean sleep {:.1} ms)",
            rslock_attempts(delay),
            rslock_mean_sleep(delay).as_secs_f64() * 1e3
        );
    }
    println!();
    println!("\"of ceiling\" is the share of the window the lock was held (acquisitions/s over");
    println!("the ceiling 1/mean hold); \"switches\" is the share of acquisitions that went to a");
    println!("different task than the one before; hand-off is release → next acquire when the");
    println!("next holder is a different task. Waits are those of requests made in the window.\n");

    // Warm up: connections, script caches.
    cycle(&mut Robit::new(driver, "contended")).await;
    let robit = (0..CONTENDERS)
        .map(|_| Robit::new(driver, "contended"))
        .collect();
    let mut runs = vec![(
        "robit (fair hand-off)".to_owned(),
        contend(robit, stats, ROBIT_SENDS, run_for).await,
    )];
    for &delay in &delays {
        let mut manager = LockManager::new(vec![server.url()]);
        manager.set_retry(rslock_attempts(delay), Duration::from_millis(delay));
        cycle(&mut Rslock::new(&manager, "contended")).await;
        let rslock = (0..CONTENDERS)
            .map(|_| Rslock::new(&manager, "contended"))
            .collect();
        runs.push((
            format!("rslock, d = {delay} ms"),
            contend(rslock, stats, RSLOCK_SENDS, run_for).await,
        ));
    }

    let mut costs = Table::new(&[
        ("acq/s", Unit::Rate),
        ("of ceiling", Unit::Fraction),
        ("switches", Unit::Fraction),
        ("acq/task min", Unit::Count),
        ("acq/task max", Unit::Count),
        ("gave up", Unit::Count),
        ("requests/acq", Unit::Fraction),
        ("commands/acq", Unit::Fraction),
        ("command time/acq", Unit::Micros),
        ("server CPU/acq", Unit::Micros),
        ("client busy/acq", Unit::Micros),
    ]);
    let mut latencies = Table::new(&[
        ("hand-off p50", Unit::Millis),
        ("hand-off p99", Unit::Millis),
        ("hand-off max", Unit::Millis),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
        ("wait max", Unit::Millis),
    ]);
    for (label, run) in runs {
        let (cost, latency) = run.figures();
        costs.row(label.as_str(), cost);
        latencies.row(label, latency);
    }
    let ratios: Vec<_> = delays
        .iter()
        .enumerate()
        .map(|(i, delay)| (0, i + 1, format!("robit / rslock, d = {delay} ms")))
        .collect();
    costs.print(&ratios);
    println!();
    latencies.print(&ratios);
}
