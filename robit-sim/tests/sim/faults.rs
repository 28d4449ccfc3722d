//! Faults aimed at the holder land where they bite, or the run says they never did.

use robit_sim::{Scenario, run};

#[test]
fn a_fault_that_never_finds_a_holder_to_land_on_fails_the_run() {
    // Holds far shorter than the TTL: no holder is ever a TTL from the end of its hold,
    // so a partition of the holder waits for one until the run ends.
    let text = r#"
name = "no holder to cut off"
duration = "5s"

[lock]
ttl = "2s"

[[clients]]
name = "c"
count = 2
hold = ["10ms", "20ms"]

[[faults]]
at = "1s"
kind = "partition"
between = ["holder", "backend"]
for = "1s"
"#;
    let scenario = Scenario::parse("s.toml", text).expect("valid");
    let run = run(&scenario, 1).expect("the run completes");
    assert!(!run.verdict.passed());
    let verdict = run.verdict.to_string();
    assert!(
        verdict.contains("fault 1 never started: no holder to land on"),
        "{verdict}"
    );
}
