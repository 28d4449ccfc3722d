//! Where everything goes in the SVG timeline: the time axis's scale and ticks, the rows
//! of the fault labels, the lanes, the legend and the list of violations, worked out
//! from the timeline before anything is drawn.

use std::time::Duration;

use super::lanes::Lanes;
use super::overlay::{LEGEND_ROW, legend_rows};
use super::{BACKEND_LANE, FAULT_ROW, LANE, LEFT, MAX_FAULT_ROWS, MAX_VIOLATIONS_LISTED, RIGHT};
use super::{WIDTH, text_width};
use crate::timeline::backend_view::ServerGrant;
use crate::timeline::{FaultWindow, Timeline};

/// The time axis: where an instant goes across the plot.
pub(super) struct Axis {
    /// The time at the axis's left end.
    origin: Duration,
    /// The time at its right end (after the origin).
    pub(super) end: Duration,
    /// The width of the plot, between the margins.
    pub(super) plot: f64,
}

impl Axis {
    /// The axis of `timeline`'s window.
    fn of(timeline: &Timeline) -> Self {
        let origin = timeline.start;
        Self {
            origin,
            end: timeline.end.max(origin + Duration::from_millis(1)),
            plot: WIDTH - LEFT - RIGHT,
        }
    }

    /// The x of `seconds` on the axis (clamped to the plot).
    pub(super) fn at_seconds(&self, seconds: f64) -> f64 {
        let span = (self.end - self.origin).as_secs_f64();
        LEFT + self.plot * ((seconds - self.origin.as_secs_f64()) / span).clamp(0.0, 1.0)
    }

    /// The x of the instant `at`.
    pub(super) fn x(&self, at: Duration) -> f64 {
        self.at_seconds(at.as_secs_f64())
    }

    /// The ticks on the axis: each one's x and label.
    pub(super) fn ticks(&self) -> Vec<(f64, String)> {
        let step = tick_step(self.end - self.origin);
        let first = (self.origin.as_secs_f64() / step).ceil() as u64;
        let last = (self.end.as_secs_f64() / step).floor() as u64;
        (first..=last)
            .map(|tick| {
                let seconds = tick as f64 * step;
                (self.at_seconds(seconds), tick_label(seconds, step))
            })
            .collect()
    }
}

/// The picture's geometry: every position the drawing needs, top to bottom.
pub(super) struct Layout<'a> {
    pub(super) axis: Axis,
    /// The faults, each with its label's row and left edge.
    pub(super) faults: Vec<PlacedFault>,
    /// The top of the fault labels' rows.
    pub(super) faults_top: f64,
    /// The top of the violations' numbers, just above the lanes.
    pub(super) marks_top: f64,
    pub(super) lanes: Lanes<'a>,
    pub(super) lanes_bottom: f64,
    /// The backend's grants, drawn on its lane (which is there if they are).
    pub(super) server: Vec<ServerGrant>,
    pub(super) legend_top: f64,
    /// The first line of the list of violations.
    pub(super) list_top: f64,
    /// How many violations the list shows.
    pub(super) listed: usize,
    /// The height of the whole picture.
    pub(super) height: f64,
}

/// A fault window and where its label goes.
pub(super) struct PlacedFault {
    pub(super) fault: FaultWindow,
    pub(super) row: usize,
    /// The label's left edge.
    pub(super) label: f64,
}

impl<'a> Layout<'a> {
    /// The layout of `timeline`'s picture.
    pub(super) fn of(timeline: &'a Timeline) -> Self {
        let axis = Axis::of(timeline);
        let faults = place_faults(&axis, timeline.faults());
        let faults_top = if timeline.title.is_some() { 30.0 } else { 8.0 };
        let fault_rows = faults.iter().map(|placed| placed.row + 1).max();
        let marks_top = faults_top + fault_rows.unwrap_or(0) as f64 * FAULT_ROW;
        // The clients' lanes, then the backend's, if it made grants that show.
        let server = timeline.server_grants();
        let mut names: Vec<&str> = timeline.clients.iter().map(String::as_str).collect();
        if !server.is_empty() || !timeline.quarantines().is_empty() {
            names.push(BACKEND_LANE);
        }
        let lanes = Lanes {
            top: marks_top + 16.0,
            names,
        };
        let lanes_bottom = lanes.top + lanes.names.len() as f64 * LANE;
        let legend_top = lanes_bottom + 30.0;
        let listed = timeline.violations.len().min(MAX_VIOLATIONS_LISTED);
        let list_lines = match timeline.violations.len() {
            0 => 0,
            n if n > listed => listed + 2,
            _ => listed + 1,
        };
        let legend_extra = (legend_rows() - 1) as f64 * LEGEND_ROW;
        let list_top = legend_top + 30.0 + legend_extra;
        Self {
            axis,
            faults,
            faults_top,
            marks_top,
            lanes,
            lanes_bottom,
            server,
            legend_top,
            list_top,
            listed,
            height: list_top - 6.0 + list_lines as f64 * 15.0 + 8.0,
        }
    }
}

/// The fault labels, packed on rows above the lanes; a label that would run off the
/// right edge ends there instead.
fn place_faults(axis: &Axis, faults: Vec<FaultWindow>) -> Vec<PlacedFault> {
    let labels: Vec<f64> = faults
        .iter()
        .map(|fault| (axis.x(fault.start) + 3.0).min(WIDTH - 4.0 - text_width(&fault.what)))
        .collect();
    let extents: Vec<(f64, f64)> = faults
        .iter()
        .zip(&labels)
        .map(|(fault, label)| {
            let start = axis.x(fault.start);
            let stop = if fault.instant {
                start
            } else {
                axis.x(fault.end.unwrap_or(axis.end))
            };
            (
                start.min(*label),
                stop.max(label + text_width(&fault.what) + 5.0),
            )
        })
        .collect();
    let rows = pack(&extents, MAX_FAULT_ROWS);
    faults
        .into_iter()
        .zip(rows)
        .zip(labels)
        .map(|((fault, row), label)| PlacedFault { fault, row, label })
        .collect()
}

/// The tick step: a round number of seconds giving at most a dozen ticks.
pub(super) fn tick_step(end: Duration) -> f64 {
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
pub(super) fn pack(extents: &[(f64, f64)], max_rows: usize) -> Vec<usize> {
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
