//! The point marks on the lanes: losses, failed calls, crashes and restarts of a
//! client's host, and what the storage did with its writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::time::Duration;

use super::lanes::Lanes;
use super::{ACCEPTED, CRASH, FAILED, LANE, LOST, REJECTED, RESTART, STALE, escape};
use crate::EventKind;
use crate::timeline::{Timeline, describe, secs};

/// The point marks: losses, failures, crashes, restarts and writes, each on its lane.
pub(super) fn point_marks(
    content: &mut [String],
    timeline: &Timeline,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
) {
    // Marks that would land on the same pixel of a lane are drawn once (accepted writes,
    // the densest, once per two pixels).
    let mut drawn: BTreeSet<(usize, Mark, i64)> = BTreeSet::new();
    // A host that runs several mutexes has a lane per mutex (`c1#2`): its crashes and
    // restarts go on all of them, and a write on the lane of the mutex that sent it.
    let mut writers: BTreeMap<u64, &str> = BTreeMap::new();
    for event in &timeline.events {
        if let EventKind::WriteSent { token, .. } = &event.kind {
            writers.insert(*token, &event.who);
            continue;
        }
        let Some((client, mark)) = Mark::of(timeline, event, &writers) else {
            continue;
        };
        if !timeline.shows(event.at) {
            continue;
        }
        for (index, top) in lanes.of(client) {
            mark_lane(content, &mut drawn, x, event, mark, (index, top));
        }
    }
}

/// The point marks on a lane: what happened to its host, or to a write it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Host(HostMark),
    Write(WriteMark),
}

/// What happened to a lane's host, marked across the lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum HostMark {
    Lost,
    Failed,
    Crash,
    Restart,
}

/// What the storage did with a write the lane's mutex sent, marked at the lane's bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum WriteMark {
    Accepted,
    StaleAccepted,
    Rejected,
}

impl Mark {
    /// The mark `event` leaves, if any, and the host or mutex lane it goes on: a write's
    /// is the lane of the mutex that sent it (`writers`, by token), when known.
    fn of<'e>(
        timeline: &Timeline,
        event: &'e crate::Event,
        writers: &BTreeMap<u64, &'e str>,
    ) -> Option<(&'e str, Self)> {
        let host = |mark| Some((event.who.as_str(), Self::Host(mark)));
        let write = |from: &'e str, token: &u64, mark| {
            Some((
                writers.get(token).copied().unwrap_or(from),
                Self::Write(mark),
            ))
        };
        match &event.kind {
            EventKind::Lost { .. } => host(HostMark::Lost),
            EventKind::LockFailed { .. } => host(HostMark::Failed),
            EventKind::Crashed => host(HostMark::Crash),
            EventKind::Restarted => host(HostMark::Restart),
            EventKind::WriteAccepted { from, token } if timeline.writes => {
                if timeline.grants.stale(*token, event.at) {
                    write(from, token, WriteMark::StaleAccepted)
                } else {
                    write(from, token, WriteMark::Accepted)
                }
            }
            EventKind::WriteRejected { from, token, .. } if timeline.writes => {
                write(from, token, WriteMark::Rejected)
            }
            _ => None,
        }
    }
}

/// Draws `mark` for `event` on lane `index` (top edge at `top`), once per pixel.
fn mark_lane(
    content: &mut [String],
    drawn: &mut BTreeSet<(usize, Mark, i64)>,
    x: &dyn Fn(Duration) -> f64,
    event: &crate::Event,
    mark: Mark,
    (index, top): (usize, f64),
) {
    let at = x(event.at);
    let pixel = if mark == Mark::Write(WriteMark::Accepted) {
        at / 2.0
    } else {
        at
    };
    if !drawn.insert((index, mark, pixel as i64)) {
        return;
    }
    let Some(out) = content.get_mut(index) else {
        return;
    };
    let title = escape(&format!("{}s {}", secs(event.at), describe(&event.kind)));
    let _ = match mark {
        Mark::Host(mark) => host_mark(out, mark, at, top, &title),
        Mark::Write(mark) => write_mark(out, mark, at, top, &title),
    };
}

/// Draws a host's `mark` at x `at` on a lane whose top edge is at `top`.
fn host_mark(out: &mut String, mark: HostMark, at: f64, top: f64, title: &str) -> fmt::Result {
    match mark {
        HostMark::Lost => writeln!(
            out,
            "<g><title>{title}</title><path d=\"M{:.1} {:.1}h10l-5 9z\" fill=\"{LOST}\"/>\
                 <line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{LOST}\" \
                 stroke-width=\"2\"/></g>",
            at - 5.0,
            top + 1.0,
            top + 8.0,
            top + 22.0
        ),
        HostMark::Failed => writeln!(
            out,
            "<path d=\"M{at:.1} {:.1}l4 4l-4 4l-4 -4z\" fill=\"#ffffff\" stroke=\"{FAILED}\" \
                 stroke-width=\"1.5\"><title>{title}</title></path>",
            top + LANE / 2.0 - 4.0
        ),
        HostMark::Crash => writeln!(
            out,
            "<path d=\"M{:.1} {:.1}l10 18m0 -18l-10 18\" stroke=\"{CRASH}\" stroke-width=\"2.5\">\
                 <title>{title}</title></path>",
            at - 5.0,
            top + 6.0
        ),
        HostMark::Restart => writeln!(
            out,
            "<path d=\"M{at:.1} {:.1}v14l9 -7z\" fill=\"{RESTART}\"><title>{title}</title></path>",
            top + 8.0
        ),
    }
}

/// Draws a write's `mark` at x `at` along the bottom of a lane whose top edge is at `top`.
fn write_mark(out: &mut String, mark: WriteMark, at: f64, top: f64, title: &str) -> fmt::Result {
    let bottom = top + LANE;
    match mark {
        WriteMark::Accepted => writeln!(
            out,
            "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{ACCEPTED}\">\
                 <title>{title}</title></line>",
            bottom - 6.0,
            bottom - 1.0
        ),
        WriteMark::StaleAccepted => writeln!(
            out,
            "<path d=\"M{:.1} {:.1}h8l-4 7z\" fill=\"{STALE}\"><title>STALE: {title}</title></path>",
            at - 4.0,
            bottom - 8.0
        ),
        WriteMark::Rejected => writeln!(
            out,
            "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"{REJECTED}\" \
                 stroke-width=\"2\"><title>{title}</title></line>",
            top + 3.0,
            bottom - 1.0
        ),
    }
}
