//! Phase 2: many tasks, each on its own key.

use std::time::{Duration, Instant};

use robit::redis::RedisDriver;
use rslock::LockManager;

use crate::common::scaled;
use crate::lockers::{Locker, Robit, Rslock, cycle};
use crate::meter::{Meter, Work};
use crate::support::RedisServer;
use crate::table::{Table, Unit};
use crate::{ROBIT_SENDS, RSLOCK_SENDS};

/// Tasks in the throughput phase, each on its own key.
const TASKS: usize = 64;

/// Cycles, time and server work of one library, over the measured rounds.
#[derive(Default)]
struct Many {
    cycles: usize,
    elapsed: Duration,
    work: Work,
}

impl Many {
    /// One round: `lockers` each loop lock + unlock `cycles` times, concurrently.
    async fn round<L: Locker>(
        &mut self,
        lockers: Vec<L>,
        cycles: usize,
        stats: &mut Meter,
        sends: &[&str],
    ) {
        stats.reset().await;
        let start = Instant::now();
        let tasks: Vec<_> = lockers
            .into_iter()
            .map(|mut locker| {
                tokio::spawn(async move {
                    for _ in 0..cycles {
                        cycle(&mut locker).await;
                    }
                })
            })
            .collect();
        let total = tasks.len() * cycles;
        for task in tasks {
            task.await.unwrap();
        }
        self.elapsed += start.elapsed();
        self.cycles += total;
        self.work += stats.read(sends).await;
    }

    fn figures(&self) -> Vec<f64> {
        let mut figures = vec![self.cycles as f64 / self.elapsed.as_secs_f64()];
        figures.extend(self.work.per(self.cycles));
        figures
    }
}

pub(crate) async fn throughput(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let cycles = scaled(300);
    let manager = LockManager::new(vec![server.url()]);
    let (mut ours, mut theirs) = (Many::default(), Many::default());
    for round in 0..5 {
        let robit: Vec<_> = (0..TASKS)
            .map(|task| Robit::new(driver, &format!("many-{task}")))
            .collect();
        let rslock: Vec<_> = (0..TASKS)
            .map(|task| Rslock::new(&manager, &format!("many-{task}")))
            .collect();
        if round == 0 {
            // Warm-up.
            Many::default()
                .round(robit, cycles, stats, ROBIT_SENDS)
                .await;
            Many::default()
                .round(rslock, cycles, stats, RSLOCK_SENDS)
                .await;
        } else if round % 2 == 0 {
            ours.round(robit, cycles, stats, ROBIT_SENDS).await;
            theirs.round(rslock, cycles, stats, RSLOCK_SENDS).await;
        } else {
            theirs.round(rslock, cycles, stats, RSLOCK_SENDS).await;
            ours.round(robit, cycles, stats, ROBIT_SENDS).await;
        }
    }
    println!("\n## Throughput: {TASKS} tasks, each on its own key\n");
    let mut table = Table::new(&[
        ("cycles/s", Unit::Rate),
        ("requests/cycle", Unit::Fraction),
        ("commands/cycle", Unit::Fraction),
        ("command time/cycle", Unit::Micros),
        ("server CPU/cycle", Unit::Micros),
        ("client busy/cycle", Unit::Micros),
    ]);
    table.row("robit", ours.figures());
    table.row("rslock", theirs.figures());
    table.print(&[(0, 1, "robit / rslock".to_owned())]);
}
