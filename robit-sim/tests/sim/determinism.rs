//! A run is a pure function of (scenario, seed): the same seed gives a byte-identical
//! history.

use std::path::PathBuf;

use robit_sim::{Scenario, run};

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    Scenario::load(path).expect("the scenario parses")
}

fn fingerprint(scenario: &Scenario, seed: u64) -> (String, usize) {
    let history = run(scenario, seed)
        .expect("the run completes")
        .history
        .render();
    (
        sha1_smol::Sha1::from(&history).digest().to_string(),
        history.len(),
    )
}

#[test]
fn the_same_seed_gives_a_byte_identical_history() {
    for name in [
        "steady-contention-local.toml",
        "message-loss.toml",
        "holder-crash.toml",
    ] {
        let scenario = scenario(name);
        let first = fingerprint(&scenario, 7);
        let second = fingerprint(&scenario, 7);
        assert!(
            first.1 > 1000,
            "{name}: the history is too short to mean anything"
        );
        assert_eq!(first, second, "{name}: two runs with seed 7 differ");
    }
}

#[test]
fn different_seeds_give_different_histories() {
    let scenario = scenario("steady-contention-local.toml");
    assert_ne!(fingerprint(&scenario, 1), fingerprint(&scenario, 2));
}
