//! Scenario (a): one task, one key, lock + unlock in a loop.

use std::time::{Duration, Instant};

use rslock::LockManager;

use crate::lockers::{Locker, Robit, Rslock, cycle};
use crate::meter::{Meter, RoundTrips, Work};
use crate::table::{Table, Unit, percentile};
use crate::{RSLOCK, Setup, scaled};

/// Measured rounds per library, alternating which goes first.
pub(crate) const ROUNDS: usize = 10;

/// One library's cycles, one after another, over the measured rounds.
#[derive(Default)]
pub(crate) struct Solo {
    samples: Vec<Duration>,
    elapsed: Duration,
    work: Work,
    /// How long a round waits, its time taken, before it reads the meter.
    settle: Duration,
}

impl Solo {
    /// One whose rounds wait `settle` before they read the meter: for a quorum, whose
    /// last servers' answers may still come, and their grants be given back, after a
    /// cycle returned.
    pub(crate) fn settling(settle: Duration) -> Self {
        Self {
            settle,
            ..Self::default()
        }
    }

    pub(crate) async fn round(
        &mut self,
        locker: &mut impl Locker,
        meter: &mut Meter,
        trips: &RoundTrips,
    ) {
        meter.reset(trips).await;
        let start = Instant::now();
        for _ in 0..scaled(500) {
            let t = Instant::now();
            cycle(locker).await;
            self.samples.push(t.elapsed());
        }
        self.elapsed += start.elapsed();
        if !self.settle.is_zero() {
            tokio::time::sleep(self.settle).await;
        }
        self.work += meter.read(trips).await;
    }

    /// Round trips, commands, server CPU and client CPU per cycle, then cycles/s and
    /// the cycle's p50 and p99.
    pub(crate) fn figures(mut self) -> Vec<f64> {
        self.samples.sort();
        let n = self.samples.len();
        let mut figures = self.work.per(n).to_vec();
        figures.extend([
            n as f64 / self.elapsed.as_secs_f64(),
            percentile(&self.samples, 0.5),
            percentile(&self.samples, 0.99),
        ]);
        figures
    }
}

pub(crate) async fn run(setup: &mut Setup) {
    let Setup {
        server,
        driver,
        robit: robit_trips,
        meter,
        ..
    } = setup;
    let mut robit = Robit::new(driver, "solo");
    let mut rslock = Rslock::new(&LockManager::new(vec![server.url()]), "solo");
    // Warm up both: connections, script caches.
    for _ in 0..200 {
        cycle(&mut robit).await;
        cycle(&mut rslock).await;
    }
    let (mut ours, mut theirs) = (Solo::default(), Solo::default());
    // Interleaved rounds, alternating which goes first, so that drift in the machine's
    // load hits both alike.
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            ours.round(&mut robit, meter, robit_trips).await;
            theirs.round(&mut rslock, meter, &RSLOCK).await;
        } else {
            theirs.round(&mut rslock, meter, &RSLOCK).await;
            ours.round(&mut robit, meter, robit_trips).await;
        }
    }
    println!("\n## (a) Uncontended: one task, one key, lock + unlock\n");
    let mut table = Table::new(&[
        ("round trips/cycle", Unit::Fraction),
        ("Redis commands/cycle", Unit::Fraction),
        ("server CPU/cycle", Unit::Micros),
        ("client CPU/cycle", Unit::Micros),
        ("cycles/s", Unit::Count),
        ("cycle p50", Unit::Millis),
        ("cycle p99", Unit::Millis),
    ]);
    table.column("robit", ours.figures());
    table.column("rslock", theirs.figures());
    table.print(&[(0, 1)]);
}
