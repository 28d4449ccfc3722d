//! Phase 1: one task, one key.

use std::time::{Duration, Instant};

use robit::redis::RedisDriver;
use rslock::LockManager;

use crate::common::scaled;
use crate::lockers::{Locker, Robit, Rslock, cycle};
use crate::meter::{Meter, Work};
use crate::support::RedisServer;
use crate::table::{Table, Unit, percentile};
use crate::{ROBIT_SENDS, RSLOCK_SENDS};

struct Solo {
    samples: Vec<Duration>,
    elapsed: Duration,
    work: Work,
}

impl Solo {
    fn new() -> Self {
        Self {
            samples: Vec::new(),
            elapsed: Duration::ZERO,
            work: Work::default(),
        }
    }

    async fn round(&mut self, locker: &mut impl Locker, stats: &mut Meter, sends: &[&str]) {
        stats.reset().await;
        let start = Instant::now();
        for _ in 0..scaled(1_000) {
            let t = Instant::now();
            cycle(locker).await;
            self.samples.push(t.elapsed());
        }
        self.elapsed += start.elapsed();
        self.work += stats.read(sends).await;
    }

    fn figures(mut self) -> Vec<f64> {
        self.samples.sort();
        let n = self.samples.len();
        let mut figures = vec![
            n as f64 / self.elapsed.as_secs_f64(),
            percentile(&self.samples, 0.5),
            percentile(&self.samples, 0.99),
        ];
        // One task waits on every round trip: the client's busy time says little here.
        figures.extend(&self.work.per(n)[..4]);
        figures
    }
}

pub(crate) async fn uncontended(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let mut robit = Robit::new(driver, "solo");
    let mut rslock = Rslock::new(&LockManager::new(vec![server.url()]), "solo");
    // Warm up both: connections, script caches.
    for _ in 0..200 {
        cycle(&mut robit).await;
        cycle(&mut rslock).await;
    }
    let (mut ours, mut theirs) = (Solo::new(), Solo::new());
    // Interleaved rounds, alternating which goes first, so that drift in the machine's
    // load hits both alike.
    for round in 0..10 {
        if round % 2 == 0 {
            ours.round(&mut robit, stats, ROBIT_SENDS).await;
            theirs.round(&mut rslock, stats, RSLOCK_SENDS).await;
        } else {
            theirs.round(&mut rslock, stats, RSLOCK_SENDS).await;
            ours.round(&mut robit, stats, ROBIT_SENDS).await;
        }
    }
    println!("\n## Uncontended lock + unlock, one task, one key\n");
    let mut table = Table::new(&[
        ("cycles/s", Unit::Rate),
        ("p50", Unit::Millis),
        ("p99", Unit::Millis),
        ("requests/cycle", Unit::Fraction),
        ("commands/cycle", Unit::Fraction),
        ("command time/cycle", Unit::Micros),
        ("server CPU/cycle", Unit::Micros),
    ]);
    table.row("robit", ours.figures());
    table.row("rslock", theirs.figures());
    table.print(&[(0, 1, "robit / rslock".to_owned())]);
}
