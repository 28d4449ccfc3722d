//! The tick sweep: which simulation ticks keep every scenario's verdict and every
//! planted bug caught, and what a scenario-seed costs at each. Not part of the main
//! job (it runs every scenario many times over); run it with
//!
//! ```sh
//! ROBIT_MUTANTS=1 cargo test -p robit-sim --release --test conformance -- tick_sweep --ignored --nocapture
//! ```
//!
//! `ROBIT_SWEEP_TICKS` (milliseconds, comma-separated; default `1,5,10,20,25,30`) and
//! `ROBIT_SWEEP_SEEDS` (default 10) choose the sweep. For each tick it prints the CPU
//! time per scenario-seed (the process's user and system time, read from
//! `/proc/self/stat`, over all runs at that tick), the runs whose verdict failed, and
//! for every planted bug — in a driver, in the mutex, in robit's scripts — the first
//! seed (up to 3) and scenario that caught it. The test fails if the coarsest tick
//! asked for loses a verdict, or a bug the finest tick's scenarios catch (three of the
//! planted driver bugs are caught by the contract, not the scenarios, at any tick).
//!
//! The default tick (25 ms) comes from this sweep: below the coarsest tick at which
//! every verdict and every catch holds (30 ms), with room to spare (from 35 ms,
//! `long-hold`, whose TTL is 600 ms, loses renewals to the quantised round trips; add
//! 35 to the list to see it).

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::planted::{DRIVER_BUGS, LIBRARY_BUGS, PlantedDriver, SCRIPT_CHANGES};
use robit_sim::{Backend, DriverFactory, Scenario, load_scenarios, run, run_batch, run_driver};

fn env_list(name: &str, default: &str) -> Vec<u64> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .filter_map(|item| item.trim().parse().ok())
        .collect()
}

/// The process's CPU time so far (user and system), or zero where it cannot be read.
fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // The fields after the command name, which is in parentheses: utime is the 14th
    // field and stime the 15th, in clock ticks of 1/100 s.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse().ok())
        .collect();
    Duration::from_millis(fields.iter().sum::<u64>() * 10)
}

fn scenarios(tick: Duration) -> Vec<Scenario> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_scenarios(&[root])
        .expect("the scenarios load")
        .into_iter()
        .map(|scenario| scenario.with_tick(tick).expect("a tick in range"))
        .collect()
}

/// The first seed (up to 3) and scenario that fails `run`; the scenarios that do not
/// lose the backend's state only, as the conformance suite does for in-memory bugs.
fn caught(scenarios: &[Scenario], run: impl Fn(&Scenario, u64) -> bool) -> Option<String> {
    (1..=3).find_map(|seed| {
        scenarios
            .iter()
            .find(|scenario| !run(scenario, seed))
            .map(|scenario| format!("seed {seed}, {}", scenario.name()))
    })
}

/// Every planted bug, and what caught it at this tick (`None`: nothing did).
fn planted_bugs(scenarios: &[Scenario]) -> Vec<(String, Option<String>)> {
    let kept: Vec<Scenario> = scenarios
        .iter()
        // A quorum's scenarios have no one backend host to serve a driver from.
        .filter(|scenario| !scenario.loses_backend_state() && scenario.servers() == 1)
        .cloned()
        .collect();
    let passes = |scenario: &Scenario, seed, driver: &DriverFactory| {
        run_driver(scenario, seed, driver).is_ok_and(|run| run.verdict.passed())
    };
    let mut found = Vec::new();
    for bug in DRIVER_BUGS {
        let driver = DriverFactory::new(move |clock| PlantedDriver::new(bug, Arc::new(clock)));
        let by = caught(&kept, |scenario, seed| passes(scenario, seed, &driver));
        found.push((format!("driver: {bug:?}"), by));
    }
    let local = DriverFactory::local();
    for mutant in LIBRARY_BUGS {
        let by = caught(&kept, |scenario, seed| {
            passes(&scenario.clone().with_mutant(mutant), seed, &local)
        });
        found.push((format!("mutex: {mutant:?}"), by));
    }
    let redis: Vec<Scenario> = scenarios
        .iter()
        .filter(|scenario| scenario.backend() == Backend::Redis)
        .cloned()
        .collect();
    for (_, find, replace) in SCRIPT_CHANGES {
        let by = caught(&redis, |scenario, seed| {
            let edited = scenario.clone().with_script_edit(find, replace);
            run(&edited, seed).is_ok_and(|run| run.verdict.passed())
        });
        found.push((format!("script: {replace}"), by));
    }
    found
}

#[test]
#[ignore = "a measurement: runs every scenario many times at every tick"]
fn a_tick_sweep_shows_which_ticks_keep_every_verdict_and_every_planted_bug() {
    let ticks = env_list("ROBIT_SWEEP_TICKS", "1,5,10,20,25,30");
    let seeds = env_list("ROBIT_SWEEP_SEEDS", "10")
        .first()
        .copied()
        .unwrap_or(10);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut caught_at_finest: Option<Vec<String>> = None;
    let mut last = (0, Vec::new(), Vec::new());
    for &ms in &ticks {
        let tick = Duration::from_millis(ms);
        let scenarios = scenarios(tick);
        let before = cpu_time();
        let outcomes = run_batch(scenarios.clone(), 1..=seeds, threads, |_| {});
        let per_run = (cpu_time() - before) / u32::try_from(outcomes.len()).unwrap_or(1);
        let failed: Vec<String> = outcomes
            .iter()
            .filter(|outcome| !outcome.passed())
            .map(|outcome| format!("{} seed {}", outcome.scenario.name(), outcome.seed))
            .collect();
        println!(
            "tick {ms} ms: {} runs, {:.1} ms CPU per scenario-seed, {} failed {failed:?}",
            outcomes.len(),
            per_run.as_secs_f64() * 1e3,
            failed.len()
        );
        let bugs = planted_bugs(&scenarios);
        for (bug, by) in &bugs {
            println!("  {bug}: {}", by.as_deref().unwrap_or("NOT CAUGHT"));
        }
        let caught: Vec<String> = bugs
            .iter()
            .filter(|(_, by)| by.is_some())
            .map(|(bug, _)| bug.clone())
            .collect();
        let finest = caught_at_finest.get_or_insert_with(|| caught.clone());
        let missed = finest.iter().filter(|bug| !caught.contains(bug)).cloned();
        last = (ms, failed, missed.collect());
    }
    let (ms, failed, missed) = last;
    assert!(
        failed.is_empty() && missed.is_empty(),
        "at a tick of {ms} ms, runs failed: {failed:?}; bugs no longer caught: {missed:?}"
    );
}
