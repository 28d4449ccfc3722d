//! Several mutexes on one host share its driver, so a release can hand the lock to a
//! waiter of the same process directly. The scenarios that attack that path must
//! actually take it: consecutive holders that are two mutexes of one host.

use std::path::Path;

use robit_sim::{EventKind, History, Scenario, Timeline, run};

fn scenario(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    Scenario::load(path).expect("the scenario loads")
}

/// Acquisitions, and those whose previous holder was another mutex of the same host.
fn hand_offs(history: &History) -> (usize, usize) {
    let host = |who: &str| who.split_once('#').map_or(who, |(host, _)| host).to_owned();
    let (mut acquired, mut within_host) = (0, 0);
    let mut previous: Option<String> = None;
    for event in history.events() {
        if let EventKind::Acquired { .. } = event.kind {
            acquired += 1;
            if let Some(previous) = &previous
                && *previous != event.who
                && host(previous) == host(&event.who)
            {
                within_host += 1;
            }
            previous = Some(event.who.clone());
        }
    }
    (acquired, within_host)
}

#[test]
fn mutexes_sharing_a_driver_hand_the_lock_to_each_other_and_keep_every_promise() {
    let scenario = scenario("shared-driver.toml");
    let run = run(&scenario, 1).expect("the run completes");
    assert!(run.verdict.passed(), "{:?}", run.violations);
    let (acquired, within_host) = hand_offs(&run.history);
    assert!(acquired >= 500, "only {acquired} acquisitions");
    // Three of a host's mutexes wait behind each grant: a good share of hand-offs stay
    // inside one process.
    assert!(
        within_host * 5 >= acquired,
        "{within_host} of {acquired} hand-offs stayed inside a host"
    );
    let lanes = Timeline::of_run(&scenario, &run).clients().to_vec();
    assert_eq!(lanes, ["c1#1", "c1#2", "c1#3", "c2#1", "c2#2", "c2#3"]);
}

#[test]
fn mutexes_sharing_a_driver_keep_every_promise_under_faults() {
    let scenario = scenario("shared-driver-faults.toml");
    for seed in 1..=2 {
        let run = run(&scenario, seed).expect("the run completes");
        assert!(run.verdict.passed(), "seed {seed}: {:?}", run.violations);
        let (acquired, within_host) = hand_offs(&run.history);
        assert!(
            within_host >= 10,
            "seed {seed}: {within_host} of {acquired} hand-offs stayed inside a host"
        );
    }
}
