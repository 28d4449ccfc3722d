//! Feeds arbitrary text to the scenario parser, `robit_sim::Scenario::parse`: it must
//! answer a scenario or an error that points into the text, and never panic.
//!
//! For an error it checks that the line and column point inside the input (the line
//! exists, the column is at most one past its end) and that the message names the file
//! and the position. For a scenario, that it kept the file name and passed the basic
//! validation (a non-empty name, a duration above zero, at least one client).
#![no_main]

use libfuzzer_sys::fuzz_target;
use robit_sim::{Scenario, ScenarioError};

const FILE: &str = "fuzz.toml";

fn check_error(text: &str, error: &ScenarioError) {
    let shown = error.to_string();
    assert!(!shown.is_empty(), "an error with an empty message");
    assert!(
        shown.starts_with(FILE),
        "the error does not start with the file name: {shown:?}"
    );
    let (Some(line), Some(column)) = (error.line(), error.column()) else {
        // Only a read error has no position, and parse reads nothing.
        panic!("parse returned an error without a position: {shown:?}");
    };
    let lines = text.lines().count();
    assert!(
        (1..=lines + 1).contains(&line),
        "line {line} outside a text of {lines} lines: {shown:?}"
    );
    assert!(column >= 1, "column {column} is not 1-based: {shown:?}");
    // Columns count bytes from 1: at most one past the end of the line they point into.
    let line_len = text.split('\n').nth(line - 1).map_or(0, str::len);
    assert!(
        column <= line_len + 1,
        "column {column} past the end of line {line} ({line_len} bytes): {shown:?}"
    );
    let position = format!("{FILE}:{line}:{column}: ");
    assert!(
        shown.starts_with(&position) && shown.len() > position.len(),
        "the message does not start with {position:?} and go on: {shown:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(FILE, text) {
        Ok(scenario) => {
            assert_eq!(scenario.file().to_str(), Some(FILE));
            assert!(
                !scenario.name().trim().is_empty(),
                "a scenario without a name"
            );
            assert!(
                !scenario.duration().is_zero(),
                "a scenario of zero duration"
            );
            assert!(
                !scenario.client_names().is_empty(),
                "a scenario without clients"
            );
        }
        Err(error) => check_error(text, &error),
    }
});
