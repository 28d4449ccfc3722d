//! Where an uncontended cycle's time goes. Each contender's commands go through a
//! connection that notes the moment a command is handed to it and the moment its answer
//! is back, which cuts a lock + unlock cycle into five parts: the client's work before
//! the acquire, the acquire's round trip, the client's work between the answer and the
//! release, the release's round trip, and the client's work after the release's answer.
//! A round trip here includes the connection's own task writing the command and reading
//! the answer, and any timer the caller arms around it; the rest is the caller's.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use robit::Mutex;

use crate::common::scaled;
use crate::contenders::{Baseline, Caller, Counted, LeanBaseline, robit_driver_noting};
use crate::support::RedisServer;

thread_local! {
    /// The moments noted during the current cycle (the runtime has one thread).
    static MOMENTS: RefCell<Vec<Instant>> = const { RefCell::new(Vec::new()) };
}

/// Notes the current moment for the cycle under way.
pub(crate) fn note() {
    MOMENTS.with(|moments| moments.borrow_mut().push(Instant::now()));
}

const PARTS: [&str; 5] = [
    "before the acquire",
    "acquire round trip",
    "between acquire and release",
    "release round trip",
    "after the release",
];

pub(crate) async fn segments(server: &RedisServer) {
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver_noting(server, &round_trips, true);
    let mutex = Mutex::builder("parts", driver).build().unwrap();
    let baseline = Baseline::new(server).await;
    let lean = LeanBaseline::new(&baseline, "parts-lean");
    let noting = |inner| Counted {
        inner,
        round_trips: Arc::clone(&round_trips),
        notes: true,
    };
    let mut baseline_connection = noting(Baseline::connect(server).await);
    let mut lean_connection = noting(Baseline::connect(server).await);
    let who = Caller::new(2);
    let warm_up = 200;
    let cycles = scaled(10_000);
    // Per contender, per part: the sum of its durations, in seconds.
    let mut sums = [[0.0_f64; 5]; 3];
    for cycle in 0..warm_up + cycles {
        for turn in 0..3 {
            let contender = (cycle + turn) % 3;
            MOMENTS.with(|moments| moments.borrow_mut().clear());
            let start = Instant::now();
            match contender {
                0 => mutex.lock().await.unwrap().unlock().await.unwrap(),
                1 => {
                    baseline
                        .cycle(&mut baseline_connection, "parts-baseline", &who)
                        .await;
                }
                _ => lean.cycle(&mut lean_connection, &who).await,
            }
            let end = Instant::now();
            if cycle < warm_up {
                continue;
            }
            let moments = MOMENTS.with(|moments| moments.borrow().clone());
            assert_eq!(moments.len(), 4, "a cycle is two commands");
            let cuts = [start, moments[0], moments[1], moments[2], moments[3], end];
            for (part, pair) in cuts.windows(2).enumerate() {
                sums[contender][part] += (pair[1] - pair[0]).as_secs_f64();
            }
        }
    }
    let micros = |sum: f64| sum / cycles as f64 * 1e6;
    println!("\n## Where an uncontended cycle's time goes\n");
    println!("Mean µs per cycle over {cycles} turn-by-turn cycles each. A round trip runs from");
    println!("the command's hand-over to the connection until its answer is back.\n");
    println!("| part | robit | baseline | lean baseline | robit − lean |");
    println!("|---|---:|---:|---:|---:|");
    for (part, label) in PARTS.iter().enumerate() {
        let [ours, theirs, lean] = [0, 1, 2].map(|c| micros(sums[c][part]));
        println!(
            "| {label} | {ours:.2} | {theirs:.2} | {lean:.2} | {:+.2} |",
            ours - lean
        );
    }
    let totals = sums.map(|parts| micros(parts.iter().sum()));
    println!(
        "| **cycle** | {:.2} | {:.2} | {:.2} | {:+.2} |",
        totals[0],
        totals[1],
        totals[2],
        totals[0] - totals[2]
    );
    let client = |c: usize| micros(sums[c][0] + sums[c][2] + sums[c][4]);
    println!(
        "\nEach contender's own work (the three parts outside the round trips): robit \
         {:.2} µs, baseline {:.2} µs, lean baseline {:.2} µs.",
        client(0),
        client(1),
        client(2)
    );
}
