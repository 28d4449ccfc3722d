//! The `robit-sim` binary, end to end: its reports, exit statuses and error lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A healthy run: two clients, a few simulated seconds, every promise kept.
const HEALTHY: &str = r#"
name = "healthy pair"
duration = "3s"
backend = "local"

[lock]
ttl = "1s"

[[clients]]
name = "c"
count = 2
hold = ["20ms", "80ms"]
think = ["0ms", "50ms"]
writes = 1
"#;

/// The holder is cut off from the backend for longer than the TTL: it loses its lease.
const PARTITIONED: &str = r#"
name = "holder partitioned"
duration = "6s"
backend = "local"

[lock]
ttl = "1s"

[[clients]]
name = "c"
count = 3
hold = ["1500ms", "2500ms"]
think = ["0ms", "100ms"]
writes = 2

[[faults]]
at = "1s"
kind = "partition"
between = ["holder", "backend"]
for = "2s"
"#;

/// Expects fencing to break on a healthy run, which cannot happen: every run fails.
fn impossible_expectation() -> String {
    HEALTHY.replace(
        "backend = \"local\"",
        "backend = \"local\"\nexpect = [\"P4\"]",
    )
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn robit_sim(dir: &Path, args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_robit-sim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary starts");
    let run = Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "robit-sim {args:?} panicked:\n{}",
        run.stderr
    );
    run
}

fn scenario(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("the scenario is written");
    path
}

/// Checks that every tag opened is closed, in order.
fn assert_well_formed(svg: &str) {
    assert!(svg.starts_with("<svg "), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("every tag ends") + start;
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "a closing tag matches its opening");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().expect("a tag name"));
        }
        assert!(
            !rest[start + 1..end].contains('<'),
            "text is escaped: {tag}"
        );
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

/// Bad input: exit status 2 and exactly one `error:` line on standard error.
fn assert_bad_input(run: &Run, mentions: &str) {
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(
        lines[0].contains(mentions),
        "{} should mention {mentions:?}",
        lines[0]
    );
}

#[test]
fn a_passing_scenario_prints_the_verdict_table_and_exits_zero() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "healthy.toml", HEALTHY);
    let run = robit_sim(
        dir.path(),
        &["run", "healthy.toml", "--seeds", "2", "--threads", "1"],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let header = run
        .stdout
        .lines()
        .find(|line| line.starts_with("scenario"))
        .expect("a table header");
    for column in ["runs", "passed", "failed", "expected seen", "slowest"] {
        assert!(header.contains(column), "{header}");
    }
    let row = run
        .stdout
        .lines()
        .find(|line| line.starts_with("healthy "))
        .expect("a row for the scenario");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..5], ["2", "2", "0", "-"], "{row}");
    assert!(run.stdout.contains("all 2 runs passed"), "{}", run.stdout);
}

#[test]
fn the_scenarios_directory_is_the_default() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir(dir.path().join("scenarios")).unwrap();
    std::fs::write(dir.path().join("scenarios/healthy.toml"), HEALTHY).unwrap();
    let run = robit_sim(dir.path(), &["run", "--seeds", "1"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 scenario(s) × 1 seed(s) (1..=1)"));
}

#[test]
fn a_failing_run_exits_one_with_its_replay_command_and_timeline() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "impossible.toml", &impossible_expectation());
    let run = robit_sim(
        dir.path(),
        &[
            "run",
            "impossible.toml",
            "--seeds",
            "2",
            "--first-seed",
            "5",
            "--timeline",
            "svg",
        ],
    );
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let row = run
        .stdout
        .lines()
        .find(|line| line.starts_with("impossible "))
        .expect("a row for the scenario");
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[1..6],
        ["2", "0", "2", "P4", "0/2"]
    );
    assert!(run.stdout.contains("2 failing run(s):"));
    assert!(
        run.stdout
            .contains("verdict: FAIL: expected P4 (fencing) to be broken")
    );
    for seed in [5, 6] {
        let replay =
            format!("replay: cargo run -p robit-sim -- replay impossible.toml --seed {seed}");
        assert!(run.stdout.contains(&replay), "{}", run.stdout);
        let svg =
            std::fs::read_to_string(dir.path().join(format!("svg/impossible-seed-{seed}.svg")))
                .expect("a timeline per failing run");
        assert_well_formed(&svg);
    }
}

#[test]
fn many_seeds_run_in_chunks_and_are_reported_in_seed_order() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "impossible.toml", &impossible_expectation());
    scenario(&dir, "healthy.toml", HEALTHY);
    let run = robit_sim(
        dir.path(),
        &[
            "run",
            "impossible.toml",
            "healthy.toml",
            "--seeds",
            "70",
            "--threads",
            "2",
        ],
    );
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("70 failing run(s):"));
    let seeds: Vec<u64> = run
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("healthy pair (impossible.toml), seed "))
        .map(|seed| seed.parse().unwrap())
        .collect();
    assert_eq!(seeds, (1..=70).collect::<Vec<_>>());
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|line| line.split_whitespace().take(4).collect::<Vec<_>>())
        .filter(|row| {
            ["impossible", "healthy"].contains(&row[..].first().copied().unwrap_or_default())
                && row.get(1).is_some_and(|runs| runs.parse::<u64>().is_ok())
        })
        .collect();
    assert_eq!(
        rows,
        [
            ["impossible", "70", "0", "70"],
            ["healthy", "70", "70", "0"]
        ]
    );
}

#[test]
fn replay_prints_the_events_in_order_and_the_verdict() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "partitioned.toml", PARTITIONED);
    let run = robit_sim(dir.path(), &["replay", "partitioned.toml", "--seed", "3"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .starts_with("holder partitioned (partitioned.toml), seed 3\n")
    );
    assert!(run.stdout.contains("acquired lease 1, token"));
    assert!(run.stdout.contains("fault begins: partition c"));
    assert!(run.stdout.contains("lost lease"), "{}", run.stdout);
    assert!(run.stdout.contains("violations: none"));
    assert_eq!(run.stdout.lines().last(), Some("verdict: pass"));
}

#[test]
fn replay_writes_a_well_formed_svg_with_a_lane_per_client() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "partitioned.toml", PARTITIONED);
    let run = robit_sim(
        dir.path(),
        &[
            "replay",
            "partitioned.toml",
            "--seed",
            "3",
            "--timeline",
            "out.svg",
        ],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.ends_with("timeline: out.svg\n"));
    let svg = std::fs::read_to_string(dir.path().join("out.svg")).unwrap();
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<g class=\"lane\"").count(), 3);
    for client in ["c1", "c2", "c3"] {
        assert!(svg.contains(&format!("data-client=\"{client}\"")));
    }
    assert!(svg.contains(">partition c"), "the fault band's description");
    assert!(svg.contains("holder partitioned (partitioned.toml), seed 3"));
}

#[test]
fn replay_of_a_failing_run_exits_one() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "impossible.toml", &impossible_expectation());
    let run = robit_sim(dir.path(), &["replay", "impossible.toml", "--seed", "1"]);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("verdict: FAIL: expected P4"), "{last}");
}

#[test]
fn help_explains_the_exit_statuses() {
    let dir = TempDir::new().unwrap();
    for args in [&["--help"][..], &["run", "--help"], &["replay", "--help"]] {
        let run = robit_sim(dir.path(), args);
        assert_eq!(run.code, Some(0));
        assert!(run.stdout.contains("Exit status:"), "{}", run.stdout);
        assert!(run.stdout.contains("2  bad input"));
    }
}

#[test]
fn a_missing_file_is_bad_input() {
    let dir = TempDir::new().unwrap();
    let run = robit_sim(dir.path(), &["run", "nowhere.toml"]);
    assert_bad_input(&run, "nowhere.toml: no such file or directory");
    let run = robit_sim(dir.path(), &["replay", "nowhere.toml", "--seed", "1"]);
    assert_bad_input(&run, "nowhere.toml: cannot read the scenario");
}

#[test]
fn a_directory_without_scenarios_is_bad_input() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let run = robit_sim(dir.path(), &["run", "empty"]);
    assert_bad_input(&run, "empty: no scenario files (*.toml) in this directory");
    let run = robit_sim(dir.path(), &["run"]);
    assert_bad_input(&run, "there is no `scenarios` directory here");
}

#[test]
fn a_malformed_scenario_is_bad_input_with_its_line_and_column() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "bad.toml", "name = \"x\"\nduration = \"soon\"\n");
    let run = robit_sim(dir.path(), &["run", "bad.toml"]);
    assert_bad_input(&run, "bad.toml:2:12: invalid duration \"soon\"");
    let run = robit_sim(dir.path(), &["replay", "bad.toml", "--seed", "1"]);
    assert_bad_input(&run, "bad.toml:2:12:");
}

#[test]
fn an_unknown_client_in_a_fault_is_bad_input() {
    let dir = TempDir::new().unwrap();
    let text = PARTITIONED.replace("[\"holder\", \"backend\"]", "[\"c9\", \"backend\"]");
    scenario(&dir, "typo.toml", &text);
    let run = robit_sim(dir.path(), &["run", "typo.toml"]);
    assert_bad_input(&run, "unknown host \"c9\"");
}

#[test]
fn zero_seeds_or_threads_and_seeds_past_the_largest_are_bad_input() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "healthy.toml", HEALTHY);
    let run = robit_sim(dir.path(), &["run", "healthy.toml", "--seeds", "0"]);
    assert_bad_input(&run, "at least one seed is needed");
    let run = robit_sim(dir.path(), &["run", "healthy.toml", "--threads", "0"]);
    assert_bad_input(&run, "at least one thread is needed");
    let largest = u64::MAX.to_string();
    let run = robit_sim(
        dir.path(),
        &[
            "run",
            "healthy.toml",
            "--first-seed",
            &largest,
            "--seeds",
            "2",
        ],
    );
    assert_bad_input(&run, "goes past the largest seed");
    let run = robit_sim(dir.path(), &["replay", "healthy.toml"]);
    assert_bad_input(&run, "required arguments were not provided: --seed <S>");
    let run = robit_sim(dir.path(), &["run", "--bogus"]);
    assert_bad_input(&run, "--bogus");
}

#[test]
fn an_unwritable_timeline_path_is_bad_input() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "healthy.toml", HEALTHY);
    let run = robit_sim(
        dir.path(),
        &[
            "replay",
            "healthy.toml",
            "--seed",
            "1",
            "--timeline",
            "missing/out.svg",
        ],
    );
    assert_bad_input(&run, "cannot write missing/out.svg");
    assert!(
        run.stdout.is_empty(),
        "refused before running: {}",
        run.stdout
    );
    std::fs::write(dir.path().join("file"), "").unwrap();
    let run = robit_sim(dir.path(), &["run", "healthy.toml", "--timeline", "file"]);
    assert_bad_input(&run, "cannot write file");
}

#[test]
fn replay_can_narrow_the_timeline_to_some_clients_and_a_window() {
    let dir = TempDir::new().unwrap();
    scenario(&dir, "partitioned.toml", PARTITIONED);
    let args = [
        "replay",
        "partitioned.toml",
        "--seed",
        "3",
        "--client",
        "c2",
    ];
    let run = robit_sim(
        dir.path(),
        &[&args[..], &["--from", "1s", "--to", "4s"]].concat(),
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("6.000s simulated, shown from 1.000s to 4.000s; clients: c2\n"),
        "{}",
        run.stdout
    );
    let svg = dir.path().join("narrow.svg");
    let svg_arg = svg.to_str().unwrap();
    let unknown = [
        "replay",
        "partitioned.toml",
        "--seed",
        "3",
        "--client",
        "c9",
    ];
    let run = robit_sim(
        dir.path(),
        &[&unknown[..], &["--timeline", svg_arg]].concat(),
    );
    assert_bad_input(
        &run,
        "unknown client \"c9\": the run's clients are c1, c2, c3",
    );
    assert!(!svg.exists(), "no timeline is left behind for bad input");
}
