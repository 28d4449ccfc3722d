//! Jeopardy in the simulation: holders cut off from the backend are warned while their
//! hold is still valid, and a scenario's `forbid` catches the loss of one that ignores
//! the warning.

use std::time::Duration;

use robit_sim::{EventKind, Scenario, run};

/// A holder cut off for three TTLs; its clients heed jeopardy or not.
fn partitioned(heed: bool) -> Scenario {
    let text = format!(
        r#"
name = "partitioned holder"
duration = "12s"
require = ["jeopardy"]
forbid = ["lost"]

[lock]
ttl = "1s"

[[clients]]
name = "c"
count = 2
hold = ["4s", "5s"]
heed_jeopardy = {heed}

[[faults]]
at = "2s"
kind = "partition"
between = ["holder", "backend"]
for = "3s"
"#
    );
    Scenario::parse("partitioned.toml", &text).expect("valid")
}

#[test]
fn a_holder_that_heeds_jeopardy_unlocks_before_any_loss() {
    for seed in 1..=10 {
        let run = run(&partitioned(true), seed).expect("the run completes");
        assert!(run.verdict.passed(), "seed {seed}: {}", run.verdict);
        let events = run.history.events();
        let (at, who, lease) = events
            .iter()
            .find_map(|event| match event.kind {
                EventKind::Jeopardy {
                    lease,
                    cleared: false,
                } => Some((event.at, event.who.clone(), lease)),
                _ => None,
            })
            .expect("a jeopardy event");
        // The holder unlocks once its write in flight is done, before the deadline:
        // jeopardy came 321 ms before it (a TTL of 1 s less 1 % drift, a 2 ms margin, a
        // renew period and a renew timeout of 333 ms each).
        let unlocked = events.iter().any(|event| {
            event.at >= at
                && event.at < at + Duration::from_millis(321)
                && event.who == who
                && event.kind == EventKind::UnlockCalled { lease }
        });
        assert!(unlocked, "seed {seed}: {}", run.history.render());
    }
}

#[test]
fn a_holder_that_ignores_jeopardy_is_caught_losing_its_lease() {
    let run = run(&partitioned(false), 1).expect("the run completes");
    assert!(!run.verdict.passed());
    let verdict = run.verdict.to_string();
    assert!(
        verdict.contains("the scenario forbids \"lost\" events, and one happened"),
        "{verdict}"
    );
    let history = run.history.render();
    let warned = history.find(" jeopardy lease=").expect("warned first");
    assert!(warned < history.find(" lost lease=").expect("then lost"));
}
