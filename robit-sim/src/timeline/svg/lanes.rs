//! The lanes: each client's waits and held intervals, the backend's grants and
//! quarantines, and the point marks (`marks`) laid on them.

use std::fmt::Write as _;
use std::time::Duration;

use super::marks::point_marks;
use super::{BACKEND_LANE, GRANTED, HELD, LANE, LEFT, QUARANTINE, WAIT, escape, text_width};
use crate::check::End;
use crate::history::host_of;
use crate::timeline::backend_view::ServerGrant;
use crate::timeline::{Timeline, secs};

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

    /// The lanes a mark on `host` goes on: its own, or, for a host that runs several
    /// mutexes, each of theirs.
    pub(super) fn of(&self, host: &str) -> Vec<(usize, f64)> {
        match self.get(host) {
            Some(lane) => vec![lane],
            None => self
                .names
                .iter()
                .filter(|lane| host_of(lane) == host)
                .filter_map(|lane| self.get(lane))
                .collect(),
        }
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
    if let Some((out, top)) = body(&mut content, lanes, BACKEND_LANE) {
        quarantine_bands(out, timeline, x, top);
        server_bars(out, timeline, x, server, top);
    }
    wait_lines(&mut content, timeline, x, lanes);
    held_bars(&mut content, timeline, x, lanes);
    point_marks(&mut content, timeline, x, lanes);
    for (&client, body) in lanes.names.iter().zip(content) {
        lane_group(s, lanes, client, &body);
    }
}

/// The body of lane `name`, out of `content`, and the y of its top edge.
fn body<'c>(
    content: &'c mut [String],
    lanes: &Lanes<'_>,
    name: &str,
) -> Option<(&'c mut String, f64)> {
    let (index, top) = lanes.get(name)?;
    Some((content.get_mut(index)?, top))
}

/// A lane drawn: its label, then its body.
fn lane_group(s: &mut String, lanes: &Lanes<'_>, client: &str, body: &str) {
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
    s.push_str(body);
    s.push_str("</g>\n");
}

/// Each client's waits for the lock, as dashed lines across its lane.
fn wait_lines(
    content: &mut [String],
    timeline: &Timeline,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
) {
    for (client, start, stop) in timeline.waits() {
        let Some((out, top)) = body(content, lanes, &client) else {
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
}

/// Each lease a client believed it held, as a bar on its lane.
fn held_bars(
    content: &mut [String],
    timeline: &Timeline,
    x: &dyn Fn(Duration) -> f64,
    lanes: &Lanes<'_>,
) {
    for held in timeline.held() {
        let Some((out, top)) = body(content, lanes, &held.client) else {
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
