//! The SVG timeline: a lane per client on one time axis.
//!
//! Hand-written SVG: rectangles, lines, paths and text, every text escaped. Dense runs
//! stay readable because marks that would land on the same pixel of a lane are drawn
//! once, and violations beyond the first hundred are listed but not drawn.

use std::fmt::Write as _;
use std::time::Duration;

mod lanes;
mod overlay;
#[cfg(test)]
mod tests;

use self::lanes::{Lanes, lanes_content};
use self::overlay::{legend, violations};
use super::{Timeline, secs};

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 24.0;
const LANE: f64 = 30.0;
const FAULT_ROW: f64 = 15.0;
const MAX_FAULT_ROWS: usize = 8;
const MAX_VIOLATIONS_DRAWN: usize = 100;
const MAX_VIOLATIONS_LISTED: usize = 8;

const HELD: &str = "#3b6fc4";
const GRANTED: &str = "#8e9ec4";
/// The name of the lane of the backend's own grants.
const BACKEND_LANE: &str = "backend";
const WAIT: &str = "#9e9e9e";
const LOST: &str = "#e8871e";
const FAILED: &str = "#7b5a3a";
const CRASH: &str = "#222222";
const RESTART: &str = "#2e9d4a";
const ACCEPTED: &str = "#43a047";
const REJECTED: &str = "#c2185b";
const STALE: &str = "#d62728";
const FAULT: &str = "#f2b705";
const QUARANTINE: &str = "#8d6e63";
const VIOLATION: &str = "#d62728";

/// Escapes text for SVG content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// About how wide `text` is at 11px sans-serif.
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 6.2
}

/// The tick step: a round number of seconds giving at most a dozen ticks.
fn tick_step(end: Duration) -> f64 {
    let end = end.as_secs_f64();
    [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    ]
    .into_iter()
    .find(|step| end / step <= 12.0)
    .unwrap_or(900.0)
}

fn tick_label(seconds: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{seconds:.0}s")
    } else if step >= 0.1 {
        format!("{seconds:.1}s")
    } else {
        format!("{seconds:.2}s")
    }
}

/// Places labels of `[start, end)` extents on rows, first fit; returns each one's row.
fn pack(extents: &[(f64, f64)], max_rows: usize) -> Vec<usize> {
    let mut row_ends: Vec<f64> = Vec::new();
    extents
        .iter()
        .map(|&(start, end)| {
            let row = match row_ends.iter().position(|row_end| *row_end <= start) {
                Some(row) => row,
                None if row_ends.len() < max_rows => {
                    row_ends.push(f64::MIN);
                    row_ends.len() - 1
                }
                None => max_rows.saturating_sub(1),
            };
            if let Some(row_end) = row_ends.get_mut(row) {
                *row_end = row_end.max(end);
            }
            row
        })
        .collect()
}

pub(super) fn render(timeline: &Timeline) -> String {
    let origin = timeline.start;
    let end = timeline.end.max(origin + Duration::from_millis(1));
    let plot = WIDTH - LEFT - RIGHT;
    let span = (end - origin).as_secs_f64();
    let at_seconds =
        |seconds: f64| LEFT + plot * ((seconds - origin.as_secs_f64()) / span).clamp(0.0, 1.0);
    let x = |at: Duration| at_seconds(at.as_secs_f64());

    let mut s = String::new();
    let header = if timeline.title.is_some() { 30.0 } else { 8.0 };

    // Fault labels, packed on rows above the lanes; a label that would run off the right
    // edge ends there instead.
    let faults = timeline.faults();
    let labels: Vec<f64> = faults
        .iter()
        .map(|fault| (x(fault.start) + 3.0).min(WIDTH - 4.0 - text_width(&fault.what)))
        .collect();
    let extents: Vec<(f64, f64)> = faults
        .iter()
        .zip(&labels)
        .map(|(fault, label)| {
            let start = x(fault.start);
            let stop = if fault.instant {
                start
            } else {
                x(fault.end.unwrap_or(end))
            };
            (
                start.min(*label),
                stop.max(label + text_width(&fault.what) + 5.0),
            )
        })
        .collect();
    let rows = pack(&extents, MAX_FAULT_ROWS);
    let fault_rows = rows.iter().max().map_or(0, |row| row + 1);
    let faults_top = header;
    let marks_top = faults_top + fault_rows as f64 * FAULT_ROW;
    let lanes_top = marks_top + 16.0;
    // The clients' lanes, then the backend's, if it made grants that show.
    let server = timeline.server_grants();
    let mut names: Vec<&str> = timeline.clients.iter().map(String::as_str).collect();
    if !server.is_empty() || !timeline.quarantines().is_empty() {
        names.push(BACKEND_LANE);
    }
    let lanes_bottom = lanes_top + names.len() as f64 * LANE;
    let lanes = Lanes {
        names,
        top: lanes_top,
    };
    let legend_top = lanes_bottom + 30.0;
    let listed = timeline.violations.len().min(MAX_VIOLATIONS_LISTED);
    let list_lines = match timeline.violations.len() {
        0 => 0,
        n if n > listed => listed + 2,
        _ => listed + 1,
    };
    let legend_extra = (overlay::legend_rows() - 1) as f64 * overlay::LEGEND_ROW;
    let list_top = legend_top + 30.0 + legend_extra;
    let height = list_top - 6.0 + list_lines as f64 * 15.0 + 8.0;

    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        s,
        "<title>{}</title>",
        escape(timeline.title.as_deref().unwrap_or("robit-sim timeline"))
    );
    let _ = writeln!(
        s,
        "<rect width=\"{WIDTH}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    // The hatching of a quarantine band (and of its legend entry).
    let _ = writeln!(
        s,
        "<defs><pattern id=\"quarantine\" width=\"6\" height=\"6\" \
         patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
         <rect width=\"6\" height=\"6\" fill=\"#efe6e2\"/><line x1=\"0\" y1=\"0\" x2=\"0\" \
         y2=\"6\" stroke=\"{QUARANTINE}\" stroke-width=\"2\"/></pattern></defs>"
    );
    if let Some(title) = &timeline.title {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"20\" font-size=\"13\" font-weight=\"bold\">{}</text>",
            escape(title)
        );
    }

    // Lane backgrounds, then the grid and the fault bands over them.
    for index in 0..lanes.names.len() {
        let top = lanes_top + index as f64 * LANE;
        let fill = if index % 2 == 0 { "#f4f6f9" } else { "#ffffff" };
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top:.1}\" width=\"{plot:.1}\" height=\"{LANE}\" fill=\"{fill}\"/>"
        );
    }
    let step = tick_step(end - origin);
    let first = (origin.as_secs_f64() / step).ceil() as u64;
    let ticks = (end.as_secs_f64() / step).floor() as u64;
    let _ = writeln!(s, "<g class=\"axis\" stroke=\"#d0d0d0\">");
    for tick in first..=ticks {
        let seconds = tick as f64 * step;
        let at = at_seconds(seconds);
        let _ = writeln!(
            s,
            "<line x1=\"{at:.1}\" y1=\"{lanes_top:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\"/>\
             <text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\" stroke=\"none\" fill=\"#444\">{}</text>",
            lanes_bottom + 4.0,
            lanes_bottom + 16.0,
            tick_label(seconds, step)
        );
    }
    let _ = writeln!(s, "</g>");

    let _ = writeln!(s, "<g class=\"faults\">");
    for ((fault, row), label) in faults.iter().zip(&rows).zip(&labels) {
        let start = x(fault.start);
        let row_top = faults_top + *row as f64 * FAULT_ROW;
        let what = escape(&fault.what);
        if fault.instant {
            let _ = writeln!(
                s,
                "<line x1=\"{start:.1}\" y1=\"{row_top:.1}\" x2=\"{start:.1}\" y2=\"{lanes_bottom:.1}\" \
                 stroke=\"#b8860b\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>{what} at {}s</title></line>",
                secs(fault.start)
            );
        } else {
            let stop = x(fault.end.unwrap_or(end));
            let width = (stop - start).max(1.0);
            let until = fault
                .end
                .map_or_else(|| "the end".to_owned(), |at| format!("{}s", secs(at)));
            let _ = writeln!(
                s,
                "<rect x=\"{start:.1}\" y=\"{row_top:.1}\" width=\"{width:.1}\" height=\"{:.1}\" \
                 fill=\"{FAULT}\" fill-opacity=\"0.45\"/>\
                 <rect x=\"{start:.1}\" y=\"{lanes_top:.1}\" width=\"{width:.1}\" height=\"{:.1}\" \
                 fill=\"{FAULT}\" fill-opacity=\"0.16\"><title>{what}: {}s to {until}</title></rect>",
                FAULT_ROW - 2.0,
                lanes_bottom - lanes_top,
                secs(fault.start)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{label:.1}\" y=\"{:.1}\">{what}</text>",
            row_top + 10.5
        );
    }
    let _ = writeln!(s, "</g>");

    lanes_content(timeline, &mut s, &x, &lanes, &server);
    violations(timeline, &mut s, &x, &lanes, marks_top, lanes_bottom);
    legend(&mut s, legend_top);

    for (index, violation) in timeline.violations.iter().take(listed).enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\" fill=\"{VIOLATION}\">{}. {}</text>",
            list_top + index as f64 * 15.0,
            index + 1,
            escape(&violation.to_string())
        );
    }
    if timeline.violations.len() > listed {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\" fill=\"{VIOLATION}\">… and {} more</text>",
            list_top + listed as f64 * 15.0,
            timeline.violations.len() - listed
        );
    }
    s.push_str("</svg>\n");
    s
}
