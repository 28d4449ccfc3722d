//! Drawing what frames the lanes: the picture's header, the lanes' backgrounds and the
//! time axis, the fault bands and their labels, and the list of violations under the
//! legend — each where the [`Layout`] put it.

use std::fmt::Write as _;

use super::layout::Layout;
use super::{FAULT, FAULT_ROW, LANE, LEFT, QUARANTINE, VIOLATION, WIDTH, escape};
use crate::timeline::{Timeline, secs};

/// The opening `<svg>`, its title, white background and the quarantine's hatching, and
/// the timeline's title, if it has one.
pub(super) fn header(s: &mut String, timeline: &Timeline, layout: &Layout<'_>) {
    let height = layout.height;
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
}

/// The lanes' backgrounds, striped, then the axis's ticks and grid lines over them.
pub(super) fn grid(s: &mut String, layout: &Layout<'_>) {
    let (lanes_top, lanes_bottom) = (layout.lanes.top, layout.lanes_bottom);
    let plot = layout.axis.plot;
    for index in 0..layout.lanes.names.len() {
        let top = lanes_top + index as f64 * LANE;
        let fill = if index % 2 == 0 { "#f4f6f9" } else { "#ffffff" };
        let _ = writeln!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top:.1}\" width=\"{plot:.1}\" height=\"{LANE}\" fill=\"{fill}\"/>"
        );
    }
    let _ = writeln!(s, "<g class=\"axis\" stroke=\"#d0d0d0\">");
    for (at, label) in layout.axis.ticks() {
        let _ = writeln!(
            s,
            "<line x1=\"{at:.1}\" y1=\"{lanes_top:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\"/>\
             <text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\" stroke=\"none\" fill=\"#444\">{label}</text>",
            lanes_bottom + 4.0,
            lanes_bottom + 16.0,
        );
    }
    let _ = writeln!(s, "</g>");
}

/// Each fault: a band on its label's row and across the lanes (a dashed line, for one
/// that happens at an instant), and its label.
pub(super) fn faults(s: &mut String, layout: &Layout<'_>) {
    let (lanes_top, lanes_bottom) = (layout.lanes.top, layout.lanes_bottom);
    let _ = writeln!(s, "<g class=\"faults\">");
    for placed in &layout.faults {
        let fault = &placed.fault;
        let start = layout.axis.x(fault.start);
        let row_top = layout.faults_top + placed.row as f64 * FAULT_ROW;
        let what = escape(&fault.what);
        if fault.instant {
            let _ = writeln!(
                s,
                "<line x1=\"{start:.1}\" y1=\"{row_top:.1}\" x2=\"{start:.1}\" y2=\"{lanes_bottom:.1}\" \
                 stroke=\"#b8860b\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>{what} at {}s</title></line>",
                secs(fault.start)
            );
        } else {
            let stop = layout.axis.x(fault.end.unwrap_or(layout.axis.end));
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
            placed.label,
            row_top + 10.5
        );
    }
    let _ = writeln!(s, "</g>");
}

/// The first violations in words, numbered, and how many more there are.
pub(super) fn violation_list(s: &mut String, timeline: &Timeline, layout: &Layout<'_>) {
    let (list_top, listed) = (layout.list_top, layout.listed);
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
}
