//! How fast the simulation runs: seeds per second of the 5-client steady-contention
//! scenario (60 simulated seconds), on one thread.
//!
//! `cargo bench -p robit-sim --bench sim_speed`; `ROBIT_BENCH_SEEDS` sets how many seeds
//! (default 20). Each line reports one scenario at one simulation tick. First, the same
//! for a world of seven hosts that do nothing: the simulator's own cost, which bounds
//! what any seven-host scenario can reach.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use robit_sim::{Scenario, run};

/// Seeds per second of a world of `hosts` hosts that do nothing for 60 s: the
/// simulator's own cost per step, the ceiling for any scenario with that many hosts.
fn idle_world(hosts: usize, tick: Duration, runs: u64) -> f64 {
    let started = Instant::now();
    for _ in 0..runs {
        let mut sim = turmoil::Builder::new()
            .simulation_duration(Duration::from_secs(3600))
            .tick_duration(tick)
            .build();
        for host in 0..hosts {
            sim.host(format!("h{host}"), || async {
                loop {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
            });
        }
        while sim.elapsed() < Duration::from_secs(60) {
            if sim.step().is_err() {
                break;
            }
        }
    }
    runs as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let seeds: u64 = std::env::var("ROBIT_BENCH_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    println!(
        "{:<34} {:>6} {:>7} {:>10}",
        "idle world (7 hosts, 60 s)", "tick", "runs", "seeds/s"
    );
    for tick in [1, 10, 50] {
        let rate = idle_world(7, Duration::from_millis(tick), 5);
        println!(
            "{:<34} {:>6} {:>7} {rate:>10.2}",
            "",
            format!("{tick}ms"),
            5
        );
    }
    println!();
    println!(
        "{:<34} {:>6} {:>7} {:>10} {:>10}",
        "scenario", "tick", "seeds", "seeds/s", "sim-x"
    );
    for file in ["steady-contention.toml", "steady-contention-local.toml"] {
        let text = match std::fs::read_to_string(root.join(file)) {
            Ok(text) => text,
            Err(error) => {
                println!("{file}: {error}");
                continue;
            }
        };
        for tick in ["1ms", "10ms", "25ms", "50ms"] {
            let text = format!("tick = \"{tick}\"\n{text}");
            let scenario = match Scenario::parse(file, &text) {
                Ok(scenario) => scenario,
                Err(error) => {
                    println!("{error}");
                    continue;
                }
            };
            let started = Instant::now();
            let mut failed = 0;
            for seed in 1..=seeds {
                match run(&scenario, seed) {
                    Ok(outcome) if outcome.verdict.passed() => {}
                    _ => failed += 1,
                }
            }
            let elapsed = started.elapsed().max(Duration::from_nanos(1));
            let rate = seeds as f64 / elapsed.as_secs_f64();
            let speedup = scenario.duration().as_secs_f64() * rate;
            println!(
                "{file:<34} {tick:>6} {seeds:>7} {rate:>10.2} {speedup:>9.0}x{}",
                if failed > 0 {
                    format!("  ({failed} failed)")
                } else {
                    String::new()
                }
            );
        }
    }
}
