//! Section (f): many locks held at once. 100,000 locks taken by one process through one
//! `Locker` and kept for a minute while the watchdog renews them: what a hold costs in
//! memory, what a renewal costs the client and the server, and what the holds do to the
//! latency of one more lock + unlock beside them. rslock has no watchdog, so this section
//! has no peer: its figures are robit's own, to compare a later design with.
//!
//! `ROBIT_BENCH_HOLDS=N` takes N locks instead; `ROBIT_BENCH_SCALE` scales the time they
//! are kept and, below 1, the TTL with it, so that a short run still sees every hold
//! renewed (`ROBIT_BENCH_HOLDS=1000 ROBIT_BENCH_SCALE=0.1` runs in seconds). Renewals
//! then come 1/scale times as often, so only figures at scale 1 make a baseline.

use std::time::{Duration, Instant};

use robit::sources::{Entropy, SeededEntropy};
use robit::{Guard, Locker, Stats};
use tokio::task::JoinSet;

use crate::meter::{Meter, RoundTrips, client_rss};
use crate::table::{Table, Unit, percentile};
use crate::{Setup, scale};

/// Locks held, unless `ROBIT_BENCH_HOLDS` says otherwise.
const HOLDS: usize = 100_000;
/// Their TTL at scale 1 (robit's default); the watchdog renews every third of it.
const TTL: Duration = Duration::from_secs(30);
/// How long they are kept, measured, at scale 1.
const KEPT: Duration = Duration::from_secs(60);
/// Locks taken (and released) at a time.
const AT_A_TIME: usize = 256;
/// How often the probe locks and unlocks its own key, on average: often enough for a
/// p99, seldom enough that its cost stays small next to the renewals'. The gaps are
/// random (from half to one and a half of this), so that the probe samples every phase
/// of the watchdog's 10 ms renewal grid rather than one.
const PROBE_EVERY: Duration = Duration::from_millis(10);
/// The probe's key; the holds are `held-0`, `held-1`, ….
const PROBE: &str = "probe";

/// `ROBIT_BENCH_HOLDS`, or [`HOLDS`].
fn holds() -> usize {
    std::env::var("ROBIT_BENCH_HOLDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(HOLDS)
}

/// A stretch of the probe's cycles, and what everything in the stretch cost.
struct Window {
    /// The probe's lock + unlock times, sorted.
    samples: Vec<Duration>,
    /// Round trips, commands, server CPU and client CPU in the window, in total.
    work: [f64; 4],
}

impl Window {
    /// Probes for `length`: one lock + unlock through `locker` every [`PROBE_EVERY`] on
    /// average, metering the whole window.
    async fn probe(
        locker: &Locker,
        length: Duration,
        meter: &mut Meter,
        trips: &RoundTrips,
    ) -> Self {
        // Seeded: every run probes at the same gaps.
        let gaps = SeededEntropy::new(7);
        let spread = u64::try_from(PROBE_EVERY.as_nanos()).unwrap_or(u64::MAX);
        let mut samples = Vec::new();
        meter.reset(trips).await;
        let start = Instant::now();
        let mut next = tokio::time::Instant::now();
        while start.elapsed() < length {
            next += PROBE_EVERY / 2 + Duration::from_nanos(gaps.below_or_equal(spread));
            tokio::time::sleep_until(next.max(tokio::time::Instant::now())).await;
            let cycle = Instant::now();
            let guard = locker.lock(PROBE).await.unwrap();
            guard.unlock().await.unwrap();
            samples.push(cycle.elapsed());
        }
        let work = meter.read(trips).await.per(1);
        samples.sort();
        Self { samples, work }
    }

    fn p(&self, quantile: f64) -> f64 {
        percentile(&self.samples, quantile)
    }

    /// Per renewal: the work of this window, less the probe's own (`alone`'s, per probe
    /// cycle, times this window's cycles), over `renewals`.
    fn per_renewal(&self, alone: &Self, renewals: u64) -> Vec<f64> {
        let probes = self.samples.len() as f64 / alone.samples.len().max(1) as f64;
        self.work
            .iter()
            .zip(alone.work)
            .map(|(all, probe)| (all - probe * probes) / renewals as f64)
            .collect()
    }
}

/// Locks `held-0` … `held-{holds - 1}` through `locker`, [`AT_A_TIME`] at a time.
async fn take(locker: &Locker, holds: usize) -> Vec<Guard> {
    let mut guards = Vec::with_capacity(holds);
    let mut taking = JoinSet::new();
    for hold in 0..holds {
        if taking.len() >= AT_A_TIME {
            guards.push(taking.join_next().await.unwrap().unwrap());
        }
        let locker = locker.clone();
        taking.spawn(async move { locker.lock(format!("held-{hold}")).await.unwrap() });
    }
    while let Some(guard) = taking.join_next().await {
        guards.push(guard.unwrap());
    }
    guards
}

/// Unlocks `guards`, [`AT_A_TIME`] at a time.
async fn release(guards: Vec<Guard>) {
    let mut releasing = JoinSet::new();
    for guard in guards {
        if releasing.len() >= AT_A_TIME {
            releasing.join_next().await.unwrap().unwrap();
        }
        releasing.spawn(async move { guard.unlock().await.unwrap() });
    }
    while let Some(done) = releasing.join_next().await {
        done.unwrap();
    }
}

/// What the run saw, for the table.
struct Seen {
    holds: usize,
    /// Resident memory grown over the taking, in bytes.
    grown: f64,
    alone: Window,
    beside: Window,
    /// The locker's counters at the start and the end of the measured window.
    before: Stats,
    after: Stats,
    kept: Duration,
}

pub(crate) async fn run(setup: &mut Setup) {
    let Setup {
        driver,
        robit: trips,
        meter,
        ..
    } = setup;
    let (holds, ttl) = (holds(), TTL.mul_f64(scale().min(1.0)));
    let kept = KEPT.mul_f64(scale());
    let locker = robit::Locker::builder(driver.clone())
        .ttl(ttl)
        .build()
        .unwrap();
    // Warm-up, not counted: the probe's key and its first cycles.
    Window::probe(&locker, Duration::from_millis(200), meter, trips).await;
    let alone = Window::probe(&locker, kept, meter, trips).await;
    let rss = client_rss();
    let taking = Instant::now();
    let guards = take(&locker, holds).await;
    let taken_in = taking.elapsed();
    let grown = client_rss() - rss;
    // Every hold renewed once before the window: the renewals' steady state.
    tokio::time::sleep(ttl / 3).await;
    let before = locker.stats();
    let beside = Window::probe(&locker, kept, meter, trips).await;
    let after = locker.stats();
    release(guards).await;
    print_header(holds, ttl, kept, taken_in);
    print_table(&Seen {
        holds,
        grown,
        alone,
        beside,
        before,
        after,
        kept,
    });
}

fn print_header(holds: usize, ttl: Duration, kept: Duration, taken_in: Duration) {
    println!("\n## (f) Many holds: {holds} locks held through one `Locker`\n");
    println!(
        "TTL {ttl:?}, renewed every {:?}; taken {AT_A_TIME} at a time,",
        ttl / 3
    );
    println!(
        "in {:.1} s ({:.0} locks/s); the window, {kept:?}, starts a renew period after",
        taken_in.as_secs_f64(),
        holds as f64 / taken_in.as_secs_f64()
    );
    println!("the last was taken. A probe locks and unlocks a key of its own through the");
    println!("same `Locker` at random gaps, {PROBE_EVERY:?} on average: first with nothing");
    println!("held, then beside the holds; its own work, as measured with nothing held, is");
    println!("taken out of the per-renewal figures. Memory per hold is approximate: this");
    println!("process's resident memory (VmRSS) grown over the taking, over the holds.");
    println!("rslock renews nothing by itself, so there is no peer column.\n");
    if scale() < 1.0 {
        println!(
            "The TTL is scaled too: renewals come {:.1}× as often as at",
            1.0 / scale()
        );
        println!("scale 1, whose figures these do not compare with.\n");
    }
}

fn print_table(seen: &Seen) {
    let Seen { before, after, .. } = seen;
    let renewals = after.renew_success - before.renew_success;
    let failed = (after.renew_failed - before.renew_failed) + (after.lost - before.lost);
    let nothing = f64::NAN;
    let mut table = Table::new(&[
        ("resident memory/hold", Unit::Bytes),
        ("renewals in the window", Unit::Count),
        ("renewals/s", Unit::Count),
        ("renewals failed, holds lost", Unit::Count),
        ("round trips/renewal", Unit::Fraction),
        ("Redis commands/renewal", Unit::Fraction),
        ("server CPU/renewal", Unit::Micros),
        ("client CPU/renewal", Unit::Micros),
        ("probe lock + unlock p50", Unit::Millis),
        ("probe lock + unlock p99", Unit::Millis),
    ]);
    table.column(
        "nothing held",
        [nothing; 8]
            .into_iter()
            .chain([seen.alone.p(0.5), seen.alone.p(0.99)])
            .collect(),
    );
    let mut held = vec![
        seen.grown / seen.holds as f64,
        renewals as f64,
        renewals as f64 / seen.kept.as_secs_f64(),
        failed as f64,
    ];
    held.extend(seen.beside.per_renewal(&seen.alone, renewals));
    held.extend([seen.beside.p(0.5), seen.beside.p(0.99)]);
    table.column(format!("{} held", seen.holds), held);
    table.print(&[(1, 0)]);
}
