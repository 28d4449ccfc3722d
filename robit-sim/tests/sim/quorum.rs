//! The quorum backend (`backend = "redlock"`): robit's `RedlockDriver` over three or five
//! simulated Redis servers, each its own host with its own clock, through the
//! `redlock-*` scenarios over a few seeds. `tests/scenarios.rs` runs them over twenty.

use std::path::PathBuf;

use robit_sim::{Backend, Promise, Scenario, run};

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    Scenario::load(path).expect("the scenario loads")
}

/// Runs `name` over seeds 1 to 3 and answers the promises broken in each run, asserting
/// that each run passed.
fn passes(name: &str) -> Vec<Vec<Promise>> {
    let scenario = scenario(name);
    assert_eq!(scenario.backend(), Backend::Redlock, "{name}");
    (1..=3)
        .map(|seed| {
            let run = run(&scenario, seed).expect("the run completes");
            assert!(run.verdict.passed(), "{name} seed {seed}: {}", run.verdict);
            let mut broken: Vec<Promise> = run.violations.iter().map(|v| v.promise).collect();
            broken.dedup();
            broken
        })
        .collect()
}

#[test]
fn three_and_five_servers_keep_every_promise_under_steady_contention() {
    for name in [
        "redlock-steady-contention-3.toml",
        "redlock-steady-contention-5.toml",
    ] {
        assert!(passes(name).iter().all(Vec::is_empty), "{name}");
    }
}

#[test]
fn a_minority_of_servers_cut_off_or_slow_or_lossy_keeps_every_promise() {
    for name in [
        "redlock-minority-partitioned-3.toml",
        "redlock-minority-partitioned-5.toml",
        "redlock-loss-latency.toml",
    ] {
        assert!(passes(name).iter().all(Vec::is_empty), "{name}");
    }
}

#[test]
fn a_holder_cut_off_from_a_majority_is_told_before_a_rival_holds() {
    assert!(
        passes("redlock-holder-partitioned.toml")
            .iter()
            .all(Vec::is_empty)
    );
}

#[test]
fn a_server_that_loses_its_data_is_survived_with_the_quarantine_and_not_without() {
    for name in [
        "redlock-restart-state-loss.toml",
        "redlock-restart-quarantined.toml",
    ] {
        assert!(passes(name).iter().all(Vec::is_empty), "{name}");
    }
    let broken = passes("redlock-restart-no-quarantine.toml");
    let both = [Promise::MutualExclusion, Promise::EarlyLoss];
    assert!(
        broken.iter().all(|promises| promises == &both),
        "{broken:?}"
    );
}

#[test]
fn a_server_clock_fast_beyond_the_drift_bound_breaks_mutual_exclusion_and_within_it_does_not() {
    let beyond = passes("redlock-clock-fast-beyond.toml");
    let both = [Promise::MutualExclusion, Promise::EarlyLoss];
    assert!(
        beyond.iter().all(|promises| promises == &both),
        "{beyond:?}"
    );
    assert!(
        passes("redlock-clock-fast-within.toml")
            .iter()
            .all(Vec::is_empty)
    );
}

#[test]
fn a_fault_may_name_a_server_only_in_a_quorum_and_a_quorum_has_three_to_nine() {
    let text = |head: &str, host: &str| {
        format!(
            "name = \"q\"\nduration = \"10s\"\n{head}\n[lock]\nttl = \"1s\"\n[[clients]]\n\
             name = \"c\"\nhold = [\"1ms\", \"2ms\"]\n[[faults]]\nat = \"1s\"\n\
             kind = \"partition\"\nbetween = [\"clients\", \"{host}\"]\nfor = \"1s\"\n"
        )
    };
    let error = |head: &str, host: &str| {
        Scenario::parse("q.toml", &text(head, host))
            .expect_err("invalid")
            .to_string()
    };
    let quorum = "backend = \"redlock\"\nservers = 3";
    assert!(Scenario::parse("q.toml", &text(quorum, "backend1+backend3")).is_ok());
    assert!(
        error(quorum, "backend4").contains("unknown host \"backend4\""),
        "{}",
        error(quorum, "backend4")
    );
    assert!(error(quorum, "backend1+backend1").contains("twice"));
    assert!(error("backend = \"redis\"", "backend1").contains("unknown host \"backend1\""));
    assert!(
        error("backend = \"redlock\"\nservers = 2", "backend").contains("between 3 and 9"),
        "{}",
        error("backend = \"redlock\"\nservers = 2", "backend")
    );
    assert!(error("servers = 3", "backend").contains("needs `backend = \"redlock\"`"));
    let negative = error("backend = \"redlock\"\nservers = -1", "backend");
    assert!(
        negative.starts_with("q.toml:4:11: invalid value"),
        "{negative}"
    );
}
