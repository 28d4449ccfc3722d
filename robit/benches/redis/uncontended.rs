//! Uncontended lock + unlock, one task: robit and the two baselines, turn by turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use robit::Mutex;

use crate::common::scaled;
use crate::contenders::{
    Baseline, Caller, Counted, Latencies, LeanBaseline, ms, percentile, robit_driver,
};
use crate::support::RedisServer;

pub(crate) async fn uncontended(server: &RedisServer) {
    // Every contender's connection counts its round trips, so that each pays for the
    // count (robit's driver also clones its connection, counter and all, for each
    // command, as it does any connection) and each figure in the table is measured.
    let round_trips: [Arc<AtomicU64>; 3] = Default::default();
    let driver = robit_driver(server, &round_trips[0]);
    let mutex = Mutex::builder("solo", driver).build().unwrap();
    let baseline = Baseline::new(server).await;
    let lean = LeanBaseline::new(&baseline, "solo-lean");
    // A connection each, as robit's driver has its own, so that every contender's
    // connection sits idle while the others take their turns.
    let mut connection = Counted::counting(baseline.connection.clone(), &round_trips[1]);
    let mut lean_connection = Counted::counting(Baseline::connect(server).await, &round_trips[2]);
    let who = Caller::new(1);
    // Warm up all three (connections, script cache).
    for _ in 0..200 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
        baseline.cycle(&mut connection, "solo-baseline", &who).await;
        lean.cycle(&mut lean_connection, &who).await;
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let mut elapsed = [Duration::ZERO; 3];
    // Each round's cycles/s, per contender: the ratio is taken round by round.
    let mut rates: [Vec<f64>; 3] = Default::default();
    let before = round_trips
        .each_ref()
        .map(|trips| trips.load(Ordering::Relaxed));
    // Many short rounds. Inside a round the contenders take turns cycle by cycle, the
    // order rotating, so that drift in the machine's load — which moves a round's rate
    // by several percent here — and any cost of going first or last hit all alike.
    let active = CONTENDERS.map(runs);
    for round in 0..ROUNDS {
        let mut took = [Duration::ZERO; 3];
        for cycle in 0..scaled(250) {
            for turn in 0..3 {
                let contender = (round + cycle + turn) % 3;
                if !active[contender] {
                    continue;
                }
                let t = Instant::now();
                match contender {
                    0 => mutex.lock().await.unwrap().unlock().await.unwrap(),
                    1 => {
                        baseline.cycle(&mut connection, "solo-baseline", &who).await;
                    }
                    _ => lean.cycle(&mut lean_connection, &who).await,
                }
                let t = t.elapsed();
                samples[contender].push(t);
                took[contender] += t;
            }
        }
        for contender in (0..3).filter(|&contender| active[contender]) {
            elapsed[contender] += took[contender];
            rates[contender].push(scaled(250) as f64 / took[contender].as_secs_f64());
        }
    }
    let trips: [u64; 3] =
        std::array::from_fn(|at| round_trips[at].load(Ordering::Relaxed) - before[at]);
    let [ours, theirs, lean] = samples;
    let ours = Latencies::new(ours, elapsed[0]);
    let theirs = Latencies::new(theirs, elapsed[1]);
    let lean = Latencies::new(lean, elapsed[2]);
    println!("\n## Uncontended lock + unlock, one task\n");
    println!("| | cycles/s | p50 | p99 | round trips/cycle |");
    println!("|---|---:|---:|---:|---:|");
    for (label, run, trips) in [
        ("robit", &ours, trips[0]),
        ("baseline (same scripts, redis::Script)", &theirs, trips[1]),
        (
            "lean baseline (same commands, encoded as robit does)",
            &lean,
            trips[2],
        ),
    ] {
        println!(
            "| {label} | {:.0} | {} | {} | {:.2} |",
            run.per_second(),
            ms(percentile(&run.sorted, 0.5)),
            ms(percentile(&run.sorted, 0.99)),
            trips as f64 / run.cycles as f64
        );
    }
    println!(
        "\nrobit / baseline cycles/s: **{:.3}×**; robit / lean baseline: **{:.3}×**",
        ours.per_second() / theirs.per_second(),
        ours.per_second() / lean.per_second()
    );
    for (label, against) in [("baseline", &rates[1]), ("lean baseline", &rates[2])] {
        let (low, median, high) = ratio_quartiles(&rates[0], against);
        println!(
            "robit / {label}, round by round ({ROUNDS} rounds): median **{median:.3}×**, \
             middle half {low:.3}–{high:.3}×"
        );
    }
}

/// Interleaved rounds per contender in the uncontended phase.
pub(crate) const ROUNDS: usize = 40;

/// The uncontended phase's contenders, as `ROBIT_BENCH_ONLY` names them.
pub(crate) const CONTENDERS: [&str; 3] = ["robit", "baseline", "lean"];

/// Whether `contender` is to run: all of them, unless `ROBIT_BENCH_ONLY` names one.
pub(crate) fn runs(contender: &str) -> bool {
    std::env::var("ROBIT_BENCH_ONLY").map_or(true, |only| only == contender)
}

/// The quartiles of the round-by-round ratios `ours[i] / theirs[i]`.
pub(crate) fn ratio_quartiles(ours: &[f64], theirs: &[f64]) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |p: f64| ratios[((ratios.len() - 1) as f64 * p).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}
