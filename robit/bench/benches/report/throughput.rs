//! Scenario (b): 64 tasks, each looping lock + unlock on a key of its own, all over one
//! command connection per library.

use std::time::{Duration, Instant};

use rslock::LockManager;

use crate::lockers::{Locker, Robit, Rslock, cycle};
use crate::meter::{Meter, RoundTrips, Work};
use crate::table::{Table, Unit};
use crate::{RSLOCK, Setup, scaled};

/// Tasks, each on its own key.
const TASKS: usize = 64;
/// Measured rounds per library, after a warm-up round, alternating which goes first.
const ROUNDS: usize = 4;

/// Cycles, time and work of one library, over the measured rounds.
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
        meter: &mut Meter,
        trips: &RoundTrips,
    ) {
        meter.reset(trips).await;
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
        self.work += meter.read(trips).await;
    }

    fn figures(&self) -> Vec<f64> {
        let mut figures = self.work.per(self.cycles).to_vec();
        figures.push(self.cycles as f64 / self.elapsed.as_secs_f64());
        figures
    }
}

pub(crate) async fn run(setup: &mut Setup) {
    let Setup {
        server,
        driver,
        robit: robit_trips,
        meter,
    } = setup;
    let cycles = scaled(300);
    let manager = LockManager::new(vec![server.url()]);
    let (mut ours, mut theirs) = (Many::default(), Many::default());
    for round in 0..=ROUNDS {
        let robit: Vec<_> = (0..TASKS)
            .map(|task| Robit::new(driver, &format!("many-{task}")))
            .collect();
        let rslock: Vec<_> = (0..TASKS)
            .map(|task| Rslock::new(&manager, &format!("many-{task}")))
            .collect();
        if round == 0 {
            // Warm-up, not counted.
            let mut warm_up = Many::default();
            warm_up.round(robit, cycles, meter, robit_trips).await;
            warm_up.round(rslock, cycles, meter, &RSLOCK).await;
        } else if round % 2 == 0 {
            ours.round(robit, cycles, meter, robit_trips).await;
            theirs.round(rslock, cycles, meter, &RSLOCK).await;
        } else {
            theirs.round(rslock, cycles, meter, &RSLOCK).await;
            ours.round(robit, cycles, meter, robit_trips).await;
        }
    }
    println!("\n## (b) Throughput: {TASKS} tasks, each on its own key, one connection\n");
    let mut table = Table::new(&[
        ("round trips/cycle", Unit::Fraction),
        ("Redis commands/cycle", Unit::Fraction),
        ("server CPU/cycle", Unit::Micros),
        ("client CPU/cycle", Unit::Micros),
        ("cycles/s", Unit::Count),
    ]);
    table.column("robit", ours.figures());
    table.column("rslock", theirs.figures());
    table.print(&[(0, 1)]);
}
