//! What lies over and under the lanes: violations, and the legend.

use std::fmt::Write as _;
use std::time::Duration;

use super::lanes::Lanes;
use super::{
    ACCEPTED, CRASH, FAILED, FAULT, GRANTED, HELD, LANE, LEFT, LOST, MAX_VIOLATIONS_DRAWN,
    QUARANTINE, REJECTED, RESTART, RIGHT, STALE, VIOLATION, WAIT, WIDTH, escape, text_width,
};
use crate::Violation;
use crate::timeline::Timeline;

/// Violations: a red line at each one's first instant, a marker on each client's lane
/// at each of its instants, and its number above the lanes.
pub(super) fn violations(
    timeline: &Timeline,
    s: &mut String,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
    marks_top: f64,
    lanes_bottom: f64,
) {
    let _ = writeln!(s, "<g class=\"violations\" fill=\"{VIOLATION}\">");
    // Numbers are placed where they do not cover one another, and skipped where they
    // would.
    let mut labels: Vec<f64> = Vec::new();
    for (index, violation) in timeline
        .violations
        .iter()
        .enumerate()
        .take(MAX_VIOLATIONS_DRAWN)
    {
        let Some(first) = violation.instants.first() else {
            continue;
        };
        if !timeline.shows(*first) {
            continue;
        }
        let title = escape(&format!("{}. {violation}", index + 1));
        let at = x(*first);
        let _ = writeln!(
            s,
            "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{lanes_bottom:.1}\" stroke=\"{VIOLATION}\" \
             stroke-width=\"1.5\" stroke-opacity=\"0.7\"><title>{title}</title></line>",
            marks_top + 13.0
        );
        if labels.iter().all(|label| (label - at).abs() >= 12.0) {
            let _ = writeln!(
                s,
                "<text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}<title>{title}</title></text>",
                marks_top + 11.0,
                index + 1
            );
            labels.push(at);
        }
        client_markers(s, timeline, x, lanes, violation, &title);
    }
    let _ = writeln!(s, "</g>");
}

/// A marker on each of `violation`'s clients' lanes at each of its first instants shown.
fn client_markers(
    s: &mut String,
    timeline: &Timeline,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
    violation: &Violation,
    title: &str,
) {
    for instant in violation
        .instants
        .iter()
        .take(4)
        .filter(|at| timeline.shows(**at))
    {
        for client in &violation.clients {
            if let Some((_, top)) = lanes.get(client) {
                let _ = writeln!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" stroke=\"#ffffff\"><title>{title}</title></circle>",
                    x(*instant),
                    top + LANE / 2.0
                );
            }
        }
    }
}

/// The legend: one swatch per kind of mark, in rows as wide as the drawing.
pub(super) fn legend(s: &mut String, top: f64) {
    let _ = writeln!(s, "<g class=\"legend\">");
    for ((label, swatch), (left, row)) in legend_items().into_iter().zip(legend_places()) {
        let _ = writeln!(
            s,
            "<g transform=\"translate({left:.1} {:.1})\">{swatch}<text x=\"24\">{}</text></g>",
            top + row as f64 * LEGEND_ROW,
            escape(label)
        );
    }
    let _ = writeln!(s, "</g>");
}

/// How far apart the legend's rows are.
pub(super) const LEGEND_ROW: f64 = 18.0;

/// How many rows the legend takes.
pub(super) fn legend_rows() -> usize {
    legend_places().last().map_or(1, |(_, row)| row + 1)
}

/// Where each legend item goes: its left edge and its row.
fn legend_places() -> Vec<(f64, usize)> {
    let mut places = Vec::new();
    let (mut left, mut row) = (LEFT, 0);
    for (label, _) in legend_items() {
        let width = 24.0 + text_width(label);
        if left > LEFT && left + width > WIDTH - RIGHT {
            (left, row) = (LEFT, row + 1);
        }
        places.push((left, row));
        left += width + 18.0;
    }
    places
}

/// The legend's items, a label and its swatch each: the spans on a lane, the marks of
/// what happened to a host and to a write, and what lies over and under the lanes.
fn legend_items() -> Vec<(&'static str, String)> {
    let mut items = Vec::new();
    items.extend(span_swatches());
    items.extend(host_mark_swatches());
    items.extend(write_mark_swatches());
    items.extend(band_swatches());
    items
}

/// The spans on a lane: a lease held, a grant as the backend saw it, a wait.
fn span_swatches() -> [(&'static str, String); 3] {
    [
        (
            "held (#n: nth grant)",
            format!("<rect width=\"18\" height=\"10\" y=\"-9\" fill=\"{HELD}\"/>"),
        ),
        (
            "granted, as the backend saw it",
            format!("<rect width=\"18\" height=\"10\" y=\"-9\" fill=\"{GRANTED}\"/>"),
        ),
        (
            "waiting in lock()",
            format!(
                "<line x2=\"18\" y1=\"-4\" y2=\"-4\" stroke=\"{WAIT}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/>"
            ),
        ),
    ]
}

/// The marks of what happened to a lane's host.
fn host_mark_swatches() -> [(&'static str, String); 4] {
    [
        (
            "lock() failed",
            format!(
                "<path d=\"M9 -8l4 4l-4 4l-4 -4z\" fill=\"#ffffff\" stroke=\"{FAILED}\" stroke-width=\"1.5\"/>"
            ),
        ),
        (
            "loss signalled",
            format!("<path d=\"M4 -10h10l-5 9z\" fill=\"{LOST}\"/>"),
        ),
        (
            "crash",
            format!("<path d=\"M4 -10l8 10m0 -10l-8 10\" stroke=\"{CRASH}\" stroke-width=\"2\"/>"),
        ),
        (
            "restart",
            format!("<path d=\"M5 -10v10l8 -5z\" fill=\"{RESTART}\"/>"),
        ),
    ]
}

/// The marks of what the storage did with a write.
fn write_mark_swatches() -> [(&'static str, String); 3] {
    [
        (
            "write accepted",
            format!(
                "<line x1=\"9\" x2=\"9\" y1=\"-6\" y2=\"0\" stroke=\"{ACCEPTED}\" stroke-width=\"2\"/>"
            ),
        ),
        (
            "stale write accepted",
            format!("<path d=\"M5 -9h8l-4 7z\" fill=\"{STALE}\"/>"),
        ),
        (
            "write rejected",
            format!(
                "<line x1=\"9\" x2=\"9\" y1=\"-11\" y2=\"0\" stroke=\"{REJECTED}\" stroke-width=\"2\"/>"
            ),
        ),
    ]
}

/// What lies over and under the lanes: quarantines, fault windows, violations.
fn band_swatches() -> [(&'static str, String); 3] {
    [
        (
            "quarantine",
            format!(
                "<rect width=\"18\" height=\"10\" y=\"-9\" fill=\"url(#quarantine)\" \
                 stroke=\"{QUARANTINE}\" stroke-width=\"0.8\"/>"
            ),
        ),
        (
            "fault window",
            format!(
                "<rect width=\"18\" height=\"10\" y=\"-9\" fill=\"{FAULT}\" fill-opacity=\"0.45\"/>"
            ),
        ),
        (
            "violation",
            format!("<circle cx=\"9\" cy=\"-4\" r=\"4\" fill=\"{VIOLATION}\"/>"),
        ),
    ]
}
