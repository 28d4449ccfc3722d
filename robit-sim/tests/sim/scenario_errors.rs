//! A malformed scenario gets an error naming the file, line and column, and what was
//! expected; never a panic.

use robit_sim::Scenario;

const GOOD: &str = r#"name = "ok"
duration = "10s"

[lock]
ttl = "1s"

[[clients]]
name = "c"
count = 2
hold = ["10ms", "20ms"]
"#;

fn error(text: &str) -> String {
    Scenario::parse("s.toml", text)
        .expect_err("the scenario is invalid")
        .to_string()
}

#[test]
fn a_valid_scenario_parses() {
    let scenario = Scenario::parse("s.toml", GOOD).expect("valid");
    assert_eq!(scenario.client_names(), ["c1", "c2"]);
    assert_eq!(scenario.checked().len(), 6);
}

#[test]
fn a_bad_duration_names_its_line_and_column() {
    let text = GOOD.replace("ttl = \"1s\"", "ttl = \"one second\"");
    let message = error(&text);
    assert!(
        message.starts_with("s.toml:5:7: invalid duration \"one second\""),
        "{message}"
    );
}

#[test]
fn an_unknown_field_is_refused_with_the_fields_expected() {
    let message = error(&format!("{GOOD}colour = \"blue\"\n"));
    assert!(message.contains("unknown field `colour`"), "{message}");
    assert!(message.starts_with("s.toml:11:1"), "{message}");
}

#[test]
fn a_fault_naming_an_unknown_client_says_which_hosts_exist() {
    let text = format!(
        "{GOOD}\n[[faults]]\nat = \"1s\"\nkind = \"partition\"\nbetween = [\"c9\", \"backend\"]\n"
    );
    let message = error(&text);
    assert!(
        message.starts_with("s.toml:12:1: fault 1 (partition): unknown host \"c9\""),
        "{message}"
    );
    assert!(message.contains("c1, c2"), "{message}");
}

#[test]
fn an_unknown_fault_kind_lists_the_kinds() {
    let text = format!("{GOOD}\n[[faults]]\nat = \"1s\"\nkind = \"meteor\"\n");
    assert!(error(&text).contains("unknown kind \"meteor\": expected one of partition"));
}

#[test]
fn a_field_that_does_not_apply_to_a_fault_kind_is_refused() {
    let text =
        format!("{GOOD}\n[[faults]]\nat = \"1s\"\nkind = \"loss\"\nrate = 0.1\nhost = \"c1\"\n");
    assert!(error(&text).contains("`host` does not apply"));
}

#[test]
fn a_fault_outside_the_run_is_refused() {
    let text = format!("{GOOD}\n[[faults]]\nat = \"30s\"\nkind = \"backend-crash\"\n");
    assert!(error(&text).contains("is not inside the run"));
}

#[test]
fn an_invalid_lock_configuration_reports_the_library_s_reason() {
    let text = GOOD.replace("ttl = \"1s\"", "ttl = \"1s\"\ndrift_factor = 0.9");
    let message = error(&text);
    assert!(message.contains("[lock]"), "{message}");
    assert!(message.contains("drift"), "{message}");
}

#[test]
fn expecting_a_violation_of_an_unchecked_promise_is_refused() {
    let text = GOOD.replace(
        "duration = \"10s\"",
        "duration = \"10s\"\ncheck = [\"P1\"]\nexpect = [\"P4\"]",
    );
    assert!(
        error(&text).contains("expects P4 (fencing) to be broken, but `check` does not include it")
    );
}

#[test]
fn unknown_promises_and_required_events_are_refused() {
    assert!(
        error(&GOOD.replace("duration = \"10s\"", "duration = \"10s\"\ncheck = [\"P9\"]"))
            .contains("unknown promise \"P9\"")
    );
    assert!(
        error(&GOOD.replace(
            "duration = \"10s\"",
            "duration = \"10s\"\nrequire = [\"explosion\"]"
        ))
        .contains("unknown event \"explosion\"")
    );
    assert!(
        error(&GOOD.replace(
            "duration = \"10s\"",
            "duration = \"10s\"\nforbid = [\"implosion\"]"
        ))
        .contains("`forbid`: unknown event \"implosion\"")
    );
}

#[test]
fn duplicate_and_reserved_client_names_are_refused() {
    let dup = format!("{GOOD}\n[[clients]]\nname = \"c1\"\nhold = [\"1ms\", \"2ms\"]\n");
    assert!(error(&dup).contains("two clients are named \"c1\""));
    assert!(
        error(&GOOD.replace("name = \"c\"", "name = \"backend\""))
            .contains("client name \"backend\"")
    );
}

#[test]
fn a_missing_file_is_a_read_error() {
    let error = Scenario::load("no/such/scenario.toml").expect_err("missing");
    assert!(
        error
            .to_string()
            .starts_with("no/such/scenario.toml: cannot read the scenario")
    );
    assert_eq!(error.line(), None);
}

#[test]
fn arbitrary_garbage_is_an_error_not_a_panic() {
    for text in [
        "",
        "\u{0}\u{1}",
        "[[clients]]\n",
        "name = 3",
        "duration = \"-1s\"",
        "[lock]\nttl = []",
    ] {
        assert!(Scenario::parse("g.toml", text).is_err(), "{text:?}");
    }
}

#[test]
fn an_enormous_client_count_is_refused_before_anything_is_allocated() {
    let text = GOOD.replace("count = 2", "count = 4294967295");
    let message = error(&text);
    assert!(message.contains("at most 200 clients"), "{message}");
    let many =
        format!("{GOOD}\n[[clients]]\nname = \"d\"\ncount = 199\nhold = [\"1ms\", \"2ms\"]\n");
    assert!(error(&many).contains("this entry would make 201"));
}

#[test]
fn absurdly_long_holds_are_refused() {
    let text = GOOD.replace(
        "hold = [\"10ms\", \"20ms\"]",
        "hold = [\"10ms\", \"1000years\"]",
    );
    assert!(error(&text).contains("at most 1h"), "{}", error(&text));
}

#[test]
fn a_host_with_several_mutexes_is_still_one_host_to_the_faults() {
    let text = GOOD.replace("count = 2", "count = 2\nmutexes = 2");
    let scenario = Scenario::parse("s.toml", &text).expect("valid");
    assert_eq!(scenario.client_names(), ["c1", "c2"]);
}

#[test]
fn a_mutex_count_of_zero_or_above_sixteen_is_refused() {
    for bad in ["0", "17", "4294967295"] {
        let text = GOOD.replace("count = 2", &format!("count = 2\nmutexes = {bad}"));
        let message = error(&text);
        assert!(
            message.contains("`mutexes` must be between 1 and 16"),
            "{bad}: {message}"
        );
    }
}

#[test]
fn a_bad_value_inside_a_fault_names_the_values_own_line_and_column() {
    let text = format!(
        "{GOOD}\n[[faults]]\nat = \"1s\"\nkind = \"pause\"\nhost = \"c1\"\nfor = \"a while\"\n"
    );
    let message = error(&text);
    assert!(
        message.starts_with("s.toml:16:7: fault 1 (pause): invalid duration \"a while\""),
        "{message}"
    );
}

#[test]
fn a_value_of_the_wrong_type_inside_a_fault_names_its_line_and_column() {
    let text = format!(
        "{GOOD}\n[[faults]]\nat = \"1s\"\nkind = \"loss\"\nrate = \"often\"\nfor = \"1s\"\n"
    );
    let message = error(&text);
    assert!(
        message.starts_with("s.toml:15:8: fault 1 (loss):"),
        "{message}"
    );
}

#[test]
fn a_fault_s_when_is_held_or_an_error_that_says_so() {
    let fault = "\n[[faults]]\nat = \"1s\"\nkind = \"latency\"\nlatency = [\"1ms\", \"2ms\"]\n";
    let held = format!("{GOOD}{fault}when = \"held\"\n");
    assert!(Scenario::parse("s.toml", &held).is_ok());
    let soon = error(&format!("{GOOD}{fault}when = \"soon\"\n"));
    assert_eq!(
        soon,
        "s.toml:16:8: fault 1 (latency): `when` must be \"held\" (wait for a holder), not \"soon\""
    );
    let crash = "\n[[faults]]\nat = \"1s\"\nkind = \"crash\"\nhost = \"c1\"\nwhen = \"held\"\n";
    let message = error(&format!("{GOOD}{crash}"));
    assert!(
        message.contains("`when` does not apply to this kind"),
        "{message}"
    );
}

#[test]
fn a_restart_from_a_snapshot_needs_one_taken_before_it_and_the_simulated_redis() {
    let restore = "\n[[faults]]\nat = \"2s\"\nkind = \"backend-restart\"\nfrom_snapshot = true\n";
    let snapshot = "\n[[faults]]\nat = \"1s\"\nkind = \"backend-snapshot\"\n";
    let message = error(&format!("{GOOD}{restore}"));
    assert!(
        message.starts_with(
            "s.toml:12:1: fault 1: a restart `from_snapshot` needs a `backend-snapshot` fault \
             before it"
        ),
        "{message}"
    );
    let late = snapshot.replace("1s", "3s");
    let message = error(&format!("{GOOD}{restore}{late}"));
    assert!(message.contains("needs a `backend-snapshot`"), "{message}");
    let local = GOOD.replace("duration", "backend = \"local\"\nduration");
    let message = error(&format!("{local}{snapshot}{restore}"));
    assert!(
        message.contains("fault 1: snapshots are the simulated Redis's"),
        "{message}"
    );
    let both = restore.replace("from_snapshot", "lose_state = true\nfrom_snapshot");
    let message = error(&format!("{GOOD}{snapshot}{both}"));
    assert!(
        message.contains("a restart loses its state or restores a snapshot, not both"),
        "{message}"
    );
    Scenario::parse("s.toml", &format!("{GOOD}{snapshot}{restore}")).expect("valid");
}
