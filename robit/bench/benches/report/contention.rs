//! Scenario (c): 8 tasks on one key, each holding it about 1 ms, then asking again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::lockers::{
    Locker, RSLOCK_DELAYS, Robit, Rslock, WAIT_BUDGET, cycle, rslock_attempts, rslock_manager,
};
use crate::meter::{Measure, Metered, Work};
use crate::table::{Table, Unit, percentile};
use crate::{RSLOCK, Setup, scale};

/// How long each contender holds the lock (a tokio sleep, which rounds up).
pub(crate) const HOLD: Duration = Duration::from_millis(1);
/// Tasks, all on one key.
pub(crate) const CONTENDERS: usize = 8;

/// One acquisition: who, when it was asked for, when it was granted.
struct Record {
    task: usize,
    asked: Instant,
    acquired: Instant,
}

/// One library's run. Every task keeps cycling until all of them have seen the end of
/// the measured window, so that a request made inside the window waits against full
/// contention however long it takes. Acquisitions and shares count those granted inside
/// the window; waits, the requests made inside it; the work, everything.
pub(crate) struct Contended {
    records: Vec<Record>,
    /// Requests made inside the window that gave up after the wait budget.
    pub(crate) gave_up: usize,
    pub(crate) window: Duration,
    stop_at: Instant,
    pub(crate) work: Work,
}

/// Runs `lockers`, one task each, all on one key, for `window`, measured by `meter`;
/// see [`Contended`].
pub(crate) async fn contend<L: Locker>(
    lockers: Vec<L>,
    meter: &mut impl Measure,
    window: Duration,
) -> Contended {
    let past_window = Arc::new(AtomicUsize::new(0));
    meter.reset().await;
    let stop_at = Instant::now() + window;
    let handles: Vec<_> = lockers
        .into_iter()
        .enumerate()
        .map(|(task, locker)| {
            tokio::spawn(contender(task, locker, stop_at, Arc::clone(&past_window)))
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
        window,
        stop_at,
        work: meter.read().await,
    }
}

/// One task of [`contend`]: its acquisitions, and how often it gave up inside the window.
async fn contender<L: Locker>(
    task: usize,
    mut locker: L,
    stop_at: Instant,
    past_window: Arc<AtomicUsize>,
) -> (Vec<Record>, usize) {
    let (mut records, mut gave_up, mut past) = (Vec::new(), 0, false);
    loop {
        let asked = Instant::now();
        if asked >= stop_at && !past {
            past = true;
            past_window.fetch_add(1, Ordering::Relaxed);
        }
        if past && past_window.load(Ordering::Relaxed) == CONTENDERS {
            break;
        }
        let Some(held) = locker.lock().await else {
            gave_up += usize::from(asked < stop_at);
            continue;
        };
        let acquired = Instant::now();
        tokio::time::sleep(HOLD).await;
        locker.unlock(held).await;
        records.push(Record {
            task,
            asked,
            acquired,
        });
    }
    (records, gave_up)
}

impl Contended {
    /// Each task's acquisitions granted inside the window.
    pub(crate) fn shares(&self) -> [usize; CONTENDERS] {
        let mut per_task = [0_usize; CONTENDERS];
        for record in self.records.iter().filter(|r| r.acquired <= self.stop_at) {
            per_task[record.task] += 1;
        }
        per_task
    }

    /// The waits (request → grant) of the requests made inside the window, sorted.
    pub(crate) fn waits(&self) -> Vec<Duration> {
        let mut waits: Vec<Duration> = self
            .records
            .iter()
            .filter(|r| r.asked < self.stop_at)
            .map(|r| r.acquired - r.asked)
            .collect();
        waits.sort();
        waits
    }

    /// Every acquisition, inside the window or after it: what the work is spread over.
    pub(crate) fn acquisitions(&self) -> usize {
        self.records.len()
    }

    fn figures(self) -> Vec<f64> {
        let per_task = self.shares();
        let acquired: usize = per_task.iter().sum();
        let mean = acquired as f64 / CONTENDERS as f64;
        let (min, max) = (
            per_task.iter().min().unwrap(),
            per_task.iter().max().unwrap(),
        );
        let waits = self.waits();
        let mut figures = self.work.per(self.acquisitions()).to_vec();
        figures.extend([
            acquired as f64 / self.window.as_secs_f64(),
            *min as f64,
            *max as f64,
            f64::from(u8::from(*min as f64 >= mean / 2.0)),
            self.gave_up as f64,
            percentile(&waits, 0.5),
            percentile(&waits, 0.99),
            waits.last().map_or(f64::NAN, Duration::as_secs_f64),
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
    let window = Duration::from_secs_f64(3.0 * scale());
    println!(
        "\n## (c) Contention: {CONTENDERS} tasks, one key, each holding it ~{} ms\n",
        HOLD.as_millis()
    );
    let secs = window.as_secs_f64();
    println!("Each library runs {secs:.1} s. Both wait up to {WAIT_BUDGET:?}: robit with");
    println!("`Wait::Timeout` and its queue; rslock sleeping a random 0..d ms between");
    let tries = RSLOCK_DELAYS.map(rslock_attempts);
    println!("attempts, {tries:?} attempts for d = {RSLOCK_DELAYS:?} ms: as many as make");
    println!("the budget on average. A wait is request → grant.\n");

    let mut table = Table::new(&[
        ("round trips/acquisition", Unit::Fraction),
        ("Redis commands/acquisition", Unit::Fraction),
        ("server CPU/acquisition", Unit::Micros),
        ("client CPU/acquisition", Unit::Micros),
        ("acquisitions/s", Unit::Count),
        ("acquisitions/task, min", Unit::Count),
        ("acquisitions/task, max", Unit::Count),
        ("every task ≥ half the mean", Unit::YesNo),
        ("gave up", Unit::Count),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
        ("wait max", Unit::Millis),
    ]);
    // Warm up: connections, script caches.
    cycle(&mut Robit::new(driver, "contended")).await;
    let robit = (0..CONTENDERS)
        .map(|_| Robit::new(driver, "contended"))
        .collect();
    let run = contend(
        robit,
        &mut Metered {
            meter,
            trips: robit_trips,
        },
        window,
    )
    .await;
    table.column("robit", run.figures());
    for delay in RSLOCK_DELAYS {
        let manager = rslock_manager(vec![server.url()], delay);
        cycle(&mut Rslock::new(&manager, "contended")).await;
        let rslock = (0..CONTENDERS)
            .map(|_| Rslock::new(&manager, "contended"))
            .collect();
        let run = contend(
            rslock,
            &mut Metered {
                meter,
                trips: &RSLOCK,
            },
            window,
        )
        .await;
        table.column(format!("rslock, d = {delay} ms"), run.figures());
    }
    table.print(&[(0, 1), (0, 2)]);
}
