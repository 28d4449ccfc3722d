//! The SVG timeline: a lane per client on one time axis.
//!
//! `layout` works out where everything goes; `frame`, `lanes` and `overlay` draw it.
//! Hand-written SVG: rectangles, lines, paths and text, every text escaped. Dense runs
//! stay readable because marks that would land on the same pixel of a lane are drawn
//! once, and violations beyond the first hundred are listed but not drawn.

use std::time::Duration;

mod frame;
mod lanes;
mod layout;
mod marks;
mod overlay;
#[cfg(test)]
mod tests;

use self::lanes::lanes_content;
use self::layout::Layout;
use self::overlay::{legend, violations};
use super::Timeline;

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

/// The picture: laid out first, then drawn back to front.
pub(super) fn render(timeline: &Timeline) -> String {
    let layout = Layout::of(timeline);
    let x = |at: Duration| layout.axis.x(at);
    let mut s = String::new();
    frame::header(&mut s, timeline, &layout);
    frame::grid(&mut s, &layout);
    frame::faults(&mut s, &layout);
    lanes_content(timeline, &mut s, &x, &layout.lanes, &layout.server);
    let (marks_top, lanes_bottom) = (layout.marks_top, layout.lanes_bottom);
    violations(timeline, &mut s, &x, &layout.lanes, marks_top, lanes_bottom);
    legend(&mut s, layout.legend_top);
    frame::violation_list(&mut s, timeline, &layout);
    s.push_str("</svg>\n");
    s
}
