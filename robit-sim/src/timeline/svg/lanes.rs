//! The lanes: each client's waits, held intervals and point marks.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use super::{
    ACCEPTED, BACKEND_LANE, CRASH, FAILED, GRANTED, HELD, LANE, LEFT, LOST, QUARANTINE, REJECTED,
    RESTART, STALE, WAIT, escape, text_width,
};
use crate::EventKind;
use crate::check::End;
use crate::history::host_of;
use crate::timeline::backend_view::ServerGrant;
use crate::timeline::{Timeline, describe, secs};

/// The lanes, top to bottom: each client's, then the backend's if it has one.
pub(super) struct Lanes<'a> {
    pub(super) names: Vec<&'a str>,
    pub(super) top: f64,
}

impl Lanes<'_> {
    /// The lane's index and the y of its top edge.
    pub(super) fn get(&self, name: &str) -> Option<(usize, f64)> {
        self.names
            .iter()
            .position(|lane| *lane == name)
            .map(|index| (index, self.top + index as f64 * LANE))
    }
}

/// Each lane: its label, waits, held intervals, losses, crashes, restarts and writes.
pub(super) fn lanes_content(
    timeline: &Timeline,
    s: &mut String,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
    server: &[ServerGrant],
) {
    let mut content = vec![String::new(); lanes.names.len()];
    if let Some((index, top)) = lanes.get(BACKEND_LANE)
        && let Some(out) = content.get_mut(index)
    {
        quarantine_bands(out, timeline, x, top);
        server_bars(out, timeline, x, server, top);
    }
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
        let how = match held.how {
            End::Unlock => "unlocked",
            End::Lost => "lost",
            End::Dropped => "dropped, no longer held",
            End::Crash => "crashed",
            End::StillHeld => "still held at the end",
        };
        // Tokens can be large numbers (a Redis fence counter); the bar shows the grant's
        // place in the run, the tooltip the token itself.
        let label = format!("#{}", timeline.grants.ordinal(held.token));
        let title = format!(
            "{label}: {} lease {}, token {}: {}s to {}s ({how})",
            escape(&held.client),
            held.lease,
            held.token,
            secs(held.start),
            secs(held.end)
        );
        let span = (x(held.start), x(held.end));
        bar(out, span, top, HELD, &title, &label);
    }
    // Marks that would land on the same pixel of a lane are drawn once (accepted writes,
    // the densest, once per two pixels).
    let mut drawn: BTreeSet<(usize, Mark, i64)> = BTreeSet::new();
    // A host that runs several mutexes has a lane per mutex (`c1#2`): its crashes and
    // restarts go on all of them, and a write on the lane of the mutex that sent it.
    let mut writers: BTreeMap<u64, &str> = BTreeMap::new();
    for event in &timeline.events {
        let (client, mark) = match &event.kind {
            EventKind::WriteSent { token, .. } => {
                writers.insert(*token, &event.who);
                continue;
            }
            EventKind::Lost { .. } => (event.who.as_str(), Mark::Lost),
            EventKind::LockFailed { .. } => (event.who.as_str(), Mark::Failed),
            EventKind::Crashed => (event.who.as_str(), Mark::Crash),
            EventKind::Restarted => (event.who.as_str(), Mark::Restart),
            EventKind::WriteAccepted { from, token } if timeline.writes => {
                let mark = if timeline.grants.stale(*token, event.at) {
                    Mark::StaleAccepted
                } else {
                    Mark::Accepted
                };
                (writers.get(token).copied().unwrap_or(from), mark)
            }
            EventKind::WriteRejected { from, token, .. } if timeline.writes => {
                (writers.get(token).copied().unwrap_or(from), Mark::Rejected)
            }
            _ => continue,
        };
        if !timeline.shows(event.at) {
            continue;
        }
        let targets: Vec<(usize, f64)> = match lanes.get(client) {
            Some(lane) => vec![lane],
            None => lanes
                .names
                .iter()
                .filter(|lane| host_of(lane) == client)
                .filter_map(|lane| lanes.get(lane))
                .collect(),
        };
        for (index, top) in targets {
            mark_lane(&mut content, &mut drawn, x, event, mark, (index, top));
        }
    }
    for (&client, body) in lanes.names.iter().zip(content) {
        let top = lanes.get(client).map_or(lanes.top, |(_, top)| top);
        // The backend's lane is not a client's: it says whose it is another way.
        let whose = if client == BACKEND_LANE {
            "class=\"backend-lane\" data-host"
        } else {
            "class=\"lane\" data-client"
        };
        let _ = writeln!(
            s,
            "<g {whose}=\"{name}\">\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{name}</text>",
            LEFT - 8.0,
            top + LANE / 2.0 + 4.0,
            name = escape(client)
        );
        s.push_str(&body);
        s.push_str("</g>\n");
    }
}

/// The backend's quarantines as hatched bands across its lane: no grant is made in them.
fn quarantine_bands(out: &mut String, timeline: &Timeline, x: &dyn Fn(Duration) -> f64, top: f64) {
    for quarantine in timeline.quarantines() {
        let (start, stop) = (x(quarantine.start), x(quarantine.end));
        let _ = writeln!(
            out,
            "<rect class=\"quarantine\" x=\"{start:.1}\" y=\"{:.1}\" width=\"{:.1}\" \
             height=\"{:.1}\" fill=\"url(#quarantine)\" stroke=\"{QUARANTINE}\" \
             stroke-width=\"0.8\"><title>backend: quarantine, no grants from {}s to {}s \
             (state found lost by {})</title></rect>",
            top + 3.0,
            (stop - start).max(1.0),
            LANE - 6.0,
            secs(quarantine.start),
            secs(quarantine.end),
            escape(&quarantine.by)
        );
    }
}

/// The backend's grants as bars on its lane: what the server believed, beside what each
/// client believed.
fn server_bars(
    out: &mut String,
    timeline: &Timeline,
    x: &dyn Fn(Duration) -> f64,
    server: &[ServerGrant],
    top: f64,
) {
    for grant in server {
        let label = format!("#{} {}", timeline.grants.ordinal(grant.token), grant.to);
        let title = format!(
            "backend: granted to {}, token {} ({}): {}s to {}s ({})",
            escape(&grant.to),
            grant.token,
            escape(&label),
            secs(grant.start),
            secs(grant.end),
            grant.how
        );
        bar(
            out,
            (x(grant.start), x(grant.end)),
            top,
            GRANTED,
            &title,
            &label,
        );
    }
}

/// A bar on a lane (top edge at `top`) between the x positions `span`, filled with
/// `fill`, with `title` (escaped already) as its tooltip and `label` inside it when it
/// fits.
fn bar(
    out: &mut String,
    (start, stop): (f64, f64),
    top: f64,
    fill: &str,
    title: &str,
    label: &str,
) {
    let width = (stop - start).max(1.0);
    let _ = write!(
        out,
        "<rect x=\"{start:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"14\" fill=\"{fill}\" \
         stroke=\"#ffffff\" stroke-width=\"0.6\"><title>{title}</title></rect>",
        top + 8.0,
    );
    if width >= text_width(label) + 4.0 {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#ffffff\" \
             font-size=\"10\">{}</text>",
            start + width / 2.0,
            top + 19.0,
            escape(label)
        );
    }
    out.push('\n');
}

/// The point marks on a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Lost,
    Failed,
    Crash,
    Restart,
    Accepted,
    StaleAccepted,
    Rejected,
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
    let pixel = if mark == Mark::Accepted { at / 2.0 } else { at };
    if !drawn.insert((index, mark, pixel as i64)) {
        return;
    }
    let Some(out) = content.get_mut(index) else {
        return;
    };
    let title = escape(&format!("{}s {}", secs(event.at), describe(&event.kind)));
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
        Mark::Failed => writeln!(
            out,
            "<path d=\"M{at:.1} {:.1}l4 4l-4 4l-4 -4z\" fill=\"#ffffff\" stroke=\"{FAILED}\" \
                 stroke-width=\"1.5\"><title>{title}</title></path>",
            top + LANE / 2.0 - 4.0
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
        Mark::StaleAccepted => writeln!(
            out,
            "<path d=\"M{:.1} {:.1}h8l-4 7z\" fill=\"{STALE}\"><title>STALE: {title}</title></path>",
            at - 4.0,
            bottom - 8.0
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
