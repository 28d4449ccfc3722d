//! The SVG timeline: a lane per client on one time axis.
//!
//! Hand-written SVG: rectangles, lines, paths and text, every text escaped. Dense runs
//! stay readable because marks that would land on the same pixel of a lane are drawn
//! once, and violations beyond the first hundred are listed but not drawn.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use super::{Timeline, secs};
use crate::EventKind;
use crate::check::End;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 24.0;
const LANE: f64 = 30.0;
const FAULT_ROW: f64 = 15.0;
const MAX_FAULT_ROWS: usize = 8;
const MAX_VIOLATIONS_DRAWN: usize = 100;
const MAX_VIOLATIONS_LISTED: usize = 8;

const HELD: &str = "#3b6fc4";
const WAIT: &str = "#9e9e9e";
const LOST: &str = "#e8871e";
const CRASH: &str = "#222222";
const RESTART: &str = "#2e9d4a";
const ACCEPTED: &str = "#43a047";
const REJECTED: &str = "#c2185b";
const FAULT: &str = "#f2b705";
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
    let end = timeline.end.max(Duration::from_millis(1));
    let plot = WIDTH - LEFT - RIGHT;
    let x = |at: Duration| LEFT + plot * (at.as_secs_f64() / end.as_secs_f64()).clamp(0.0, 1.0);

    let mut s = String::new();
    let header = if timeline.title.is_some() { 30.0 } else { 8.0 };

    // Fault labels, packed on rows above the lanes.
    let faults = timeline.faults();
    let extents: Vec<(f64, f64)> = faults
        .iter()
        .map(|fault| {
            let start = x(fault.start);
            let stop = if fault.instant {
                start
            } else {
                x(fault.end.unwrap_or(end))
            };
            (start, stop.max(start + text_width(&fault.what) + 8.0))
        })
        .collect();
    let rows = pack(&extents, MAX_FAULT_ROWS);
    let fault_rows = rows.iter().max().map_or(0, |row| row + 1);
    let faults_top = header;
    let marks_top = faults_top + fault_rows as f64 * FAULT_ROW;
    let lanes_top = marks_top + 16.0;
    let lanes_bottom = lanes_top + timeline.clients.len() as f64 * LANE;
    let lanes = Lanes {
        index: timeline
            .clients
            .iter()
            .enumerate()
            .map(|(index, client)| (client.as_str(), index))
            .collect(),
        top: lanes_top,
    };
    let legend_top = lanes_bottom + 30.0;
    let listed = timeline.violations.len().min(MAX_VIOLATIONS_LISTED);
    let list_lines = match timeline.violations.len() {
        0 => 0,
        n if n > listed => listed + 2,
        _ => listed + 1,
    };
    let height = legend_top + 24.0 + list_lines as f64 * 15.0 + 8.0;

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
    if let Some(title) = &timeline.title {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"20\" font-size=\"13\" font-weight=\"bold\">{}</text>",
            escape(title)
        );
    }

    // Lane backgrounds, then the grid and the fault bands over them.
    for (index, _) in timeline.clients.iter().enumerate() {
        let top = lanes_top + index as f64 * LANE;
        let fill = if index % 2 == 0 { "#f4f6f9" } else { "#ffffff" };
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top:.1}\" width=\"{plot:.1}\" height=\"{LANE}\" fill=\"{fill}\"/>"
        );
    }
    let step = tick_step(end);
    let ticks = (end.as_secs_f64() / step).floor() as u64;
    let _ = writeln!(s, "<g class=\"axis\" stroke=\"#d0d0d0\">");
    for tick in 0..=ticks {
        let seconds = tick as f64 * step;
        let at = x(Duration::from_secs_f64(seconds));
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
    for ((fault, row), (start, _)) in faults.iter().zip(&rows).zip(&extents) {
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
            "<text x=\"{:.1}\" y=\"{:.1}\">{what}</text>",
            start + 3.0,
            row_top + 10.5
        );
    }
    let _ = writeln!(s, "</g>");

    lanes_content(timeline, &mut s, &x, &lanes);
    violations(timeline, &mut s, &x, &lanes, marks_top, lanes_bottom);
    legend(&mut s, legend_top);

    for (index, violation) in timeline.violations.iter().take(listed).enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\" fill=\"{VIOLATION}\">{}. {}</text>",
            legend_top + 30.0 + index as f64 * 15.0,
            index + 1,
            escape(&violation.to_string())
        );
    }
    if timeline.violations.len() > listed {
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{:.1}\" fill=\"{VIOLATION}\">… and {} more</text>",
            legend_top + 30.0 + listed as f64 * 15.0,
            timeline.violations.len() - listed
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Where each client's lane is.
struct Lanes<'a> {
    index: BTreeMap<&'a str, usize>,
    top: f64,
}

impl Lanes<'_> {
    /// The lane's index and the y of its top edge.
    fn get(&self, client: &str) -> Option<(usize, f64)> {
        self.index
            .get(client)
            .map(|&index| (index, self.top + index as f64 * LANE))
    }
}

/// Each lane: its label, waits, held intervals, losses, crashes, restarts and writes.
fn lanes_content(
    timeline: &Timeline,
    s: &mut String,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
) {
    let mut content = vec![String::new(); timeline.clients.len()];
    for (client, start, stop) in timeline.waits() {
        let Some((index, top)) = lanes.get(&client) else {
            continue;
        };
        let Some(out) = content.get_mut(index) else {
            continue;
        };
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" y1=\"{mid:.1}\" x2=\"{:.1}\" y2=\"{mid:.1}\" stroke=\"{WAIT}\" \
             stroke-width=\"2\" stroke-dasharray=\"3 2\"/>",
            x(start),
            x(stop).max(x(start) + 1.0),
            mid = top + LANE / 2.0,
        );
    }
    for held in timeline.held() {
        let Some((index, top)) = lanes.get(&held.client) else {
            continue;
        };
        let Some(out) = content.get_mut(index) else {
            continue;
        };
        let (start, stop) = (x(held.start), x(held.end));
        let width = (stop - start).max(1.0);
        let how = match held.how {
            End::Unlock => "unlocked",
            End::Lost => "lost",
            End::Crash => "crashed",
            End::StillHeld => "still held at the end",
        };
        let _ = write!(
            out,
            "<rect x=\"{start:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"14\" fill=\"{HELD}\" \
             stroke=\"#ffffff\" stroke-width=\"0.6\">\
             <title>{} lease {}, token {}: {}s to {}s ({how})</title></rect>",
            top + 8.0,
            escape(&held.client),
            held.lease,
            held.token,
            secs(held.start),
            secs(held.end)
        );
        let label = format!("t{}", held.token);
        if width >= text_width(&label) + 4.0 {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#ffffff\" \
                 font-size=\"10\">{label}</text>",
                start + width / 2.0,
                top + 19.0
            );
        }
        out.push('\n');
    }
    // Marks that would land on the same pixel of a lane are drawn once (accepted writes,
    // the densest, once per two pixels).
    let mut drawn: BTreeSet<(usize, Mark, i64)> = BTreeSet::new();
    for event in &timeline.events {
        let (client, mark) = match &event.kind {
            EventKind::Lost { .. } => (&event.who, Mark::Lost),
            EventKind::Crashed => (&event.who, Mark::Crash),
            EventKind::Restarted => (&event.who, Mark::Restart),
            EventKind::WriteAccepted { from, .. } if timeline.writes => (from, Mark::Accepted),
            EventKind::WriteRejected { from, .. } if timeline.writes => (from, Mark::Rejected),
            _ => continue,
        };
        let Some((index, top)) = lanes.get(client) else {
            continue;
        };
        let at = x(event.at);
        let pixel = if mark == Mark::Accepted { at / 2.0 } else { at };
        if !drawn.insert((index, mark, pixel as i64)) {
            continue;
        }
        let Some(out) = content.get_mut(index) else {
            continue;
        };
        let title = escape(&format!(
            "{}s {}",
            secs(event.at),
            super::describe(&event.kind)
        ));
        let bottom = top + LANE;
        let _ = match mark {
            Mark::Lost => writeln!(
                out,
                "<g><title>{title}</title><path d=\"M{:.1} {:.1}h10l-5 9z\" fill=\"{LOST}\"/>\
                 <line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{LOST}\" \
                 stroke-width=\"2\"/></g>",
                at - 5.0,
                top + 1.0,
                top + 8.0,
                top + 22.0
            ),
            Mark::Crash => writeln!(
                out,
                "<path d=\"M{:.1} {:.1}l10 18m0 -18l-10 18\" stroke=\"{CRASH}\" stroke-width=\"2.5\">\
                 <title>{title}</title></path>",
                at - 5.0,
                top + 6.0
            ),
            Mark::Restart => writeln!(
                out,
                "<path d=\"M{at:.1} {:.1}v14l9 -7z\" fill=\"{RESTART}\"><title>{title}</title></path>",
                top + 8.0
            ),
            Mark::Accepted => writeln!(
                out,
                "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{ACCEPTED}\">\
                 <title>{title}</title></line>",
                bottom - 6.0,
                bottom - 1.0
            ),
            Mark::Rejected => writeln!(
                out,
                "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{REJECTED}\" \
                 stroke-width=\"2\"><title>{title}</title></line>",
                top + 3.0,
                bottom - 1.0
            ),
        };
    }
    for (client, body) in timeline.clients.iter().zip(content) {
        let top = lanes.get(client).map_or(lanes.top, |(_, top)| top);
        let _ = writeln!(
            s,
            "<g class=\"lane\" data-client=\"{name}\">\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{name}</text>",
            LEFT - 8.0,
            top + LANE / 2.0 + 4.0,
            name = escape(client)
        );
        s.push_str(&body);
        s.push_str("</g>\n");
    }
}

/// The point marks on a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Lost,
    Crash,
    Restart,
    Accepted,
    Rejected,
}

/// Violations: a red line at each one's first instant, a marker on each client's lane
/// at each of its instants, and its number above the lanes.
fn violations(
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
        for instant in violation.instants.iter().take(4) {
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
    let _ = writeln!(s, "</g>");
}

/// The legend: one swatch per kind of mark.
fn legend(s: &mut String, top: f64) {
    let items: [(&str, String); 9] = [
        (
            "held (token)",
            format!("<rect width=\"18\" height=\"10\" y=\"-9\" fill=\"{HELD}\"/>"),
        ),
        (
            "waiting in lock()",
            format!(
                "<line x2=\"18\" y1=\"-4\" y2=\"-4\" stroke=\"{WAIT}\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/>"
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
        (
            "write accepted",
            format!(
                "<line x1=\"9\" x2=\"9\" y1=\"-6\" y2=\"0\" stroke=\"{ACCEPTED}\" stroke-width=\"2\"/>"
            ),
        ),
        (
            "write rejected",
            format!(
                "<line x1=\"9\" x2=\"9\" y1=\"-11\" y2=\"0\" stroke=\"{REJECTED}\" stroke-width=\"2\"/>"
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
    ];
    let _ = writeln!(s, "<g class=\"legend\">");
    let mut left = LEFT;
    for (label, swatch) in items {
        let _ = writeln!(
            s,
            "<g transform=\"translate({left:.1} {top:.1})\">{swatch}<text x=\"24\">{}</text></g>",
            escape(label)
        );
        left += 24.0 + text_width(label) + 18.0;
    }
    let _ = writeln!(s, "</g>");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{escape, pack, tick_step};
    use crate::{EventKind, History, Promise, Timeline, Violation};

    fn history() -> History {
        let history = History::new();
        let ms = Duration::from_millis;
        history.record_at(ms(0), "c1", EventKind::LockCalled);
        history.record_at(
            ms(100),
            "c1",
            EventKind::Acquired {
                lease: 1,
                token: 41,
            },
        );
        history.record_at(ms(200), "c2", EventKind::LockCalled);
        history.record_at(
            ms(1000),
            "world",
            EventKind::Fault {
                what: "partition c1 | backend <&>".into(),
                ended: false,
            },
        );
        history.record_at(
            ms(2500),
            "c1",
            EventKind::Lost {
                lease: 1,
                reason: "expired".into(),
            },
        );
        history.record_at(
            ms(2600),
            "c2",
            EventKind::Acquired {
                lease: 1,
                token: 42,
            },
        );
        history.record_at(
            ms(3000),
            "world",
            EventKind::Fault {
                what: "partition c1 | backend <&>".into(),
                ended: true,
            },
        );
        history.record_at(ms(3500), "c1", EventKind::Crashed);
        history.record_at(ms(4500), "c1", EventKind::Restarted);
        history.record_at(
            ms(5000),
            "storage",
            EventKind::WriteRejected {
                from: "c1".into(),
                token: 41,
                highest: 42,
            },
        );
        // A thousand writes within one millisecond land on one pixel.
        for n in 0..1000 {
            history.record_at(
                ms(6000) + Duration::from_nanos(n),
                "storage",
                EventKind::WriteAccepted {
                    from: "c2".into(),
                    token: 42,
                },
            );
        }
        history
    }

    fn violation() -> Violation {
        Violation {
            promise: Promise::Fencing,
            clients: vec!["c1".into(), "c2".into()],
            instants: vec![Duration::from_secs(5)],
            message: "a stale write was accepted".into(),
        }
    }

    fn svg() -> String {
        Timeline::new(&history(), &[violation()], Duration::from_secs(10))
            .with_title("two <clients>")
            .svg()
    }

    #[test]
    fn each_client_gets_one_lane_with_its_label() {
        let svg = svg();
        assert!(svg.starts_with("<svg "));
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<g class=\"lane\"").count(), 2);
        assert!(svg.contains("data-client=\"c1\""));
        assert!(svg.contains(">c2</text>"));
    }

    #[test]
    fn held_intervals_are_bars_labelled_with_their_token() {
        let svg = svg();
        assert_eq!(svg.matches("height=\"14\" fill=\"#3b6fc4\"").count(), 2);
        assert!(svg.contains(">t41</text>"));
        assert!(svg.contains("c1 lease 1, token 41: 0.100s to 2.500s (lost)"));
        assert!(svg.contains("c2 lease 1, token 42: 2.600s to 10.000s (still held at the end)"));
    }

    #[test]
    fn losses_crashes_restarts_and_writes_have_their_own_marks() {
        let svg = svg();
        assert!(svg.contains("<g><title>2.500s lost lease 1: expired</title><path"));
        assert!(svg.contains("<title>3.500s CRASHED</title>"));
        assert!(svg.contains("<title>4.500s restarted</title>"));
        assert_eq!(svg.matches("REJECTED as stale").count(), 1);
        // The thousand accepted writes on one pixel are drawn once.
        assert_eq!(svg.matches("write from c2 accepted").count(), 1);
    }

    #[test]
    fn fault_windows_are_bands_with_their_escaped_description() {
        let svg = svg();
        assert!(svg.contains(">partition c1 | backend &lt;&amp;&gt;</text>"));
        assert!(
            svg.contains("<title>partition c1 | backend &lt;&amp;&gt;: 1.000s to 3.000s</title>")
        );
        assert!(svg.contains("<title>two &lt;clients&gt;</title>"));
        assert!(!svg.contains("<&>") && !svg.contains("<clients>"));
    }

    #[test]
    fn violations_are_red_markers_at_their_instants_and_listed() {
        let svg = svg();
        // One marker per client involved, a line across the lanes, a number.
        assert_eq!(
            svg.matches("<circle cx=\"").count(),
            2 + 1,
            "and one in the legend"
        );
        assert!(
            svg.contains(">1. P4 (fencing) at 5.000s [c1, c2]: a stale write was accepted</text>")
        );
    }

    #[test]
    fn the_axis_has_round_tick_labels_in_seconds() {
        let svg = svg();
        for label in ["0s", "1s", "5s", "10s"] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert_eq!(tick_step(Duration::from_secs(60)), 5.0);
        assert_eq!(tick_step(Duration::from_millis(300)), 0.05);
    }

    #[test]
    fn the_legend_names_every_mark() {
        let svg = svg();
        for name in [
            "held (token)",
            "loss signalled",
            "crash",
            "restart",
            "write accepted",
            "write rejected",
            "fault window",
            "violation",
        ] {
            assert!(svg.contains(&format!(">{name}</text>")), "{name}");
        }
    }

    #[test]
    fn fault_labels_that_would_overlap_go_on_separate_rows() {
        assert_eq!(
            pack(&[(0.0, 50.0), (10.0, 60.0), (55.0, 90.0), (61.0, 70.0)], 8),
            [0, 1, 0, 1]
        );
        assert_eq!(
            pack(&[(0.0, 50.0), (10.0, 60.0), (20.0, 70.0)], 2),
            [0, 1, 1]
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
    }
}
