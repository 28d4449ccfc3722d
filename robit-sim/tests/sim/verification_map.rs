//! docs/verification.md's promise-by-driver map: every test it names exists and is a
//! test, and every cell of it names a test or says why it has none.
//!
//! The map is how a reader finds what attacks a promise on a driver; a name in it that a
//! rename left behind would send them to nothing, and an empty cell would look like a
//! promise nobody checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The map's columns: every driver robit ships, in the order the map lists them.
const DRIVERS: [&str; 7] = [
    "local",
    "Redis on one server",
    "Redis with Sentinel",
    "Redis Cluster",
    "Redlock",
    "etcd",
    "Postgres",
];

/// The map's rows: the promises and the documented behaviours.
const ROWS: [&str; 15] = [
    "P1 Mutual exclusion",
    "P2 Loss notification, early",
    "P3 No spurious loss on a healthy network",
    "P4 Fencing",
    "P5 Liveness",
    "P6 Safe release",
    "Jeopardy",
    "Hold cap",
    "Lock-delay",
    "Refresh",
    "First use",
    "Quarantine",
    "Failover detection",
    "Fair hand-off",
    "Force release",
];

const MAP_HEADING: &str = "## Promise-by-driver map";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("robit-sim sits in the workspace")
        .to_path_buf()
}

/// The map's text: from its heading to the next heading of the same level.
fn map_text() -> String {
    let doc = std::fs::read_to_string(workspace().join("docs/verification.md"))
        .expect("docs/verification.md is readable");
    let start = doc
        .find(MAP_HEADING)
        .expect("docs/verification.md has a promise-by-driver map");
    let rest = &doc[start + MAP_HEADING.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// Each row's cells: row heading → driver → cell text.
fn cells(map: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut rows = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            current = Some(heading.trim().to_owned());
            rows.insert(heading.trim().to_owned(), BTreeMap::new());
            continue;
        }
        let (Some(row), Some(inner)) = (&current, line.strip_prefix('|')) else {
            continue;
        };
        let mut parts = inner.splitn(2, '|');
        let (Some(driver), Some(cell)) = (parts.next(), parts.next()) else {
            continue;
        };
        let driver = driver.trim();
        if DRIVERS.contains(&driver) {
            let cell = cell.trim().trim_end_matches('|').trim().to_owned();
            rows.get_mut(row)
                .expect("row inserted")
                .insert(driver.to_owned(), cell);
        }
    }
    rows
}

/// The references in a cell: `path.rs::function` or `scenarios/name.toml`.
fn references(cell: &str) -> Vec<&str> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.contains(".rs::") || span.starts_with("scenarios/"))
        .collect()
}

/// Why a reference does not name a test, if it does not.
fn check_reference(reference: &str) -> Result<(), String> {
    if let Some(scenario) = reference.strip_prefix("scenarios/") {
        return match scenario.ends_with(".toml") && workspace().join(reference).is_file() {
            true => Ok(()),
            false => Err(format!("{reference}: no such scenario file")),
        };
    }
    let (path, function) = reference
        .split_once("::")
        .ok_or_else(|| format!("{reference}: not `path.rs::function`"))?;
    let source = std::fs::read_to_string(workspace().join(path))
        .map_err(|err| format!("{reference}: cannot read {path}: {err}"))?;
    let lines: Vec<&str> = source.lines().collect();
    let at = lines
        .iter()
        .position(|line| declares(line, function))
        .ok_or_else(|| format!("{reference}: {path} has no `fn {function}`"))?;
    // A test is marked as one by the attributes just above it (`#[test]`,
    // `#[tokio::test(...)]`), and not ignored.
    let attributes: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .map(|line| line.trim_start())
        .take_while(|line| line.starts_with("#[") || line.starts_with("///"))
        .filter(|line| line.starts_with("#["))
        .collect();
    if attributes
        .iter()
        .any(|attribute| attribute.starts_with("#[ignore"))
    {
        return Err(format!("{reference}: `fn {function}` is ignored"));
    }
    match attributes
        .iter()
        .any(|attribute| *attribute == "#[test]" || attribute.contains("::test"))
    {
        true => Ok(()),
        false => Err(format!(
            "{reference}: `fn {function}` is not marked as a test"
        )),
    }
}

fn declares(line: &str, function: &str) -> bool {
    line.split("fn ").skip(1).any(|after| {
        after
            .strip_prefix(function)
            .is_some_and(|rest| rest.starts_with(['(', '<']))
    })
}

#[test]
fn every_test_the_promise_by_driver_map_names_exists_and_is_a_test() {
    let map = map_text();
    let all: Vec<&str> = map
        .lines()
        .filter(|line| line.starts_with('|'))
        .flat_map(references)
        .collect();
    assert!(all.len() > 100, "the map names only {} tests", all.len());
    let broken: Vec<String> = all
        .iter()
        .filter_map(|r| check_reference(r).err())
        .collect();
    assert!(
        broken.is_empty(),
        "the map names tests that do not exist:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_cell_of_the_promise_by_driver_map_names_a_test_or_says_why_not() {
    let rows = cells(&map_text());
    let names: Vec<&String> = rows.keys().collect();
    let mut empty = Vec::new();
    for row in ROWS {
        let by_driver = rows
            .get(row)
            .unwrap_or_else(|| panic!("the map has no row `### {row}` (it has {names:?})"));
        for driver in DRIVERS {
            let cell = by_driver
                .get(driver)
                .map(String::as_str)
                .unwrap_or_default();
            let argued = ["n/a — ", "gap — "]
                .iter()
                .any(|word| cell.strip_prefix(word).is_some_and(|why| why.len() > 40));
            if references(cell).is_empty() && !argued {
                empty.push(format!("{row} × {driver}: {cell:?}"));
            }
        }
    }
    assert!(
        empty.is_empty(),
        "cells that neither name a test nor say why they cannot (\"n/a — why\" or \"gap — what is \
         missing\"):\n{}",
        empty.join("\n")
    );
}

#[test]
fn the_map_s_checks_reject_a_missing_test_and_an_empty_cell() {
    assert!(check_reference("robit/tests/mutex/api.rs::no_such_test_anywhere").is_err());
    assert!(check_reference("scenarios/no-such-scenario.toml").is_err());
    // A helper, not a test.
    assert!(check_reference("robit-sim/tests/sim/verification_map.rs::workspace").is_err());
    assert!(
        check_reference(
            "robit-sim/tests/sim/verification_map.rs::the_map_s_checks_reject_a_missing_test_and_an_empty_cell"
        )
        .is_ok()
    );
    let map = "### P1 Mutual exclusion\n| Driver | Tests |\n|---|---|\n| local | |\n";
    assert_eq!(cells(map)["P1 Mutual exclusion"]["local"], "");
}
