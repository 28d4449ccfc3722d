//! The text timeline: one aligned line per event, violations marked where they happen.

use std::fmt::Write as _;
use std::time::Duration;

use super::{Timeline, secs};
use crate::{Event, EventKind, Violation};

/// The mark in the first column: what kind of line this is, at a glance.
fn mark(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Acquired { .. } => "+",
        EventKind::Lost { .. }
        | EventKind::Crashed
        | EventKind::LockFailed { .. }
        | EventKind::WriteRejected { .. } => "!",
        EventKind::Unlocked { outcome, .. } if outcome != "ok" => "!",
        EventKind::Fault { .. } => "~",
        _ => "",
    }
}

/// One line of the body: the mark, the time (blank when it repeats), the host, what.
struct Line {
    mark: &'static str,
    at: String,
    host: String,
    what: String,
}

pub(super) fn render(timeline: &Timeline) -> String {
    let mut out = String::new();
    header(&mut out, timeline);
    body(&mut out, &lines(timeline));
    out.push('\n');
    if timeline.violations.is_empty() {
        let _ = writeln!(out, "violations: none");
    } else {
        let _ = writeln!(out, "violations ({}):", timeline.violations.len());
        for (number, violation) in timeline.violations.iter().enumerate() {
            let _ = writeln!(out, "  {}. {violation}", number + 1);
        }
    }
    if let Some(verdict) = &timeline.verdict {
        let _ = writeln!(out, "verdict: {verdict}");
    }
    out
}

/// The lines above the body: the title, the run's length and clients, what is left out,
/// and what the marks mean.
fn header(out: &mut String, timeline: &Timeline) {
    if let Some(title) = &timeline.title {
        let _ = writeln!(out, "{title}");
    }
    let shown = if (timeline.start, timeline.end) == (Duration::ZERO, timeline.run_end) {
        String::new()
    } else {
        format!(
            ", shown from {}s to {}s",
            secs(timeline.start),
            secs(timeline.end)
        )
    };
    let _ = writeln!(
        out,
        "{}s simulated{shown}; clients: {}",
        secs(timeline.run_end),
        if timeline.clients.is_empty() {
            "none".to_owned()
        } else {
            timeline.clients.join(", ")
        }
    );
    if !timeline.writes {
        let _ = writeln!(out, "(fenced writes not shown)");
    }
    let _ = writeln!(
        out,
        "marks: + acquired, ! lost, crashed, failed or rejected, ~ fault, !! violation"
    );
    out.push('\n');
}

/// The body: a heading, then `lines` in aligned columns, each time shown once.
fn body(out: &mut String, lines: &[Line]) {
    let time_width = lines
        .iter()
        .map(|line| line.at.len())
        .chain([4])
        .max()
        .unwrap_or(4);
    let host_width = lines
        .iter()
        .map(|line| line.host.len())
        .chain([4])
        .max()
        .unwrap_or(4);
    let _ = writeln!(
        out,
        "   {:>time_width$}  {:<host_width$}  what",
        "time", "host"
    );
    let mut previous_at = String::new();
    for line in lines {
        let at = if line.at == previous_at && line.mark != "!!" {
            ""
        } else {
            line.at.as_str()
        };
        let row = format!(
            "{:<2} {at:>time_width$}  {:<host_width$}  {}",
            line.mark, line.host, line.what
        );
        let _ = writeln!(out, "{}", row.trim_end());
        previous_at.clone_from(&line.at);
    }
}

/// The body's lines: the shown events, with each violation inserted after the events
/// at its first instant.
fn lines(timeline: &Timeline) -> Vec<Line> {
    let mut violations: Vec<(usize, &Violation)> = timeline.violations.iter().enumerate().collect();
    violations.sort_by_key(|(_, violation)| violation.instants.first().copied());
    let mut pending = violations.into_iter().peekable();
    let mut lines = Vec::new();
    let violation_line = |number: usize, violation: &Violation| Line {
        mark: "!!",
        at: violation
            .instants
            .first()
            .map_or_else(|| "?".to_owned(), |at| secs(*at)),
        host: violation.promise.code().to_owned(),
        what: format!(
            "violation {}: {} broken [{}]: {}",
            number + 1,
            violation.promise.title(),
            violation.clients.join(", "),
            violation.message
        ),
    };
    for event in timeline.shown_events() {
        while let Some((number, violation)) = pending.next_if(|(_, violation)| {
            violation
                .instants
                .first()
                .is_some_and(|instant| *instant < event.at)
        }) {
            lines.push(violation_line(number, violation));
        }
        lines.push(event_line(timeline, event));
    }
    lines.extend(pending.map(|(number, violation)| violation_line(number, violation)));
    lines
}

fn event_line(timeline: &Timeline, event: &Event) -> Line {
    Line {
        mark: mark(&event.kind),
        at: secs(event.at),
        host: event.who.clone(),
        what: timeline.describe(event),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{EventKind, History, Promise, Timeline, Verdict, Violation};

    fn history() -> History {
        let history = History::new();
        let ms = Duration::from_millis;
        history.record_at(ms(0), "c1", EventKind::LockCalled);
        history.record_at(ms(0), "c2", EventKind::LockCalled);
        history.record_at(ms(5), "c1", EventKind::Acquired { lease: 1, token: 1 });
        history.record_at(
            ms(1000),
            "world",
            EventKind::Fault {
                what: "partition c1 | backend".into(),
                ended: false,
            },
        );
        history.record_at(
            ms(1800),
            "c1",
            EventKind::Lost {
                lease: 1,
                reason: "renewal failed".into(),
            },
        );
        history.record_at(ms(2100), "c2", EventKind::Acquired { lease: 1, token: 2 });
        history.record_at(ms(2200), "c2", EventKind::WriteSent { lease: 1, token: 2 });
        history
    }

    fn violation() -> Violation {
        Violation {
            promise: Promise::EarlyLoss,
            clients: vec!["c1".into()],
            instants: vec![Duration::from_millis(1500)],
            message: "lost too late".into(),
        }
    }

    #[test]
    fn every_event_gets_an_aligned_line_in_time_order() {
        let text = Timeline::new(&history(), &[], Duration::from_secs(3)).text();
        let body: Vec<&str> = text
            .lines()
            .skip_while(|line| !line.contains("time"))
            .skip(1)
            .take_while(|line| !line.is_empty())
            .collect();
        assert_eq!(body.len(), 7, "{text}");
        assert!(body[2].starts_with("+ ") && body[2].contains("acquired lease 1, token 1"));
        assert!(body[3].starts_with("~ ") && body[3].contains("fault begins: partition"));
        assert!(body[4].starts_with("! ") && body[4].contains("lost lease 1: renewal failed"));
        // The host column starts at the same place on every line.
        let column = body[0].find("c1").expect("the host column");
        assert!(body.iter().all(|line| line.len() > column));
        assert_eq!(&body[1][column..column + 2], "c2");
        assert_eq!(&body[3][column..column + 5], "world");
    }

    #[test]
    fn a_repeated_instant_is_shown_once() {
        let text = Timeline::new(&history(), &[], Duration::from_secs(3)).text();
        let second = text
            .lines()
            .find(|line| line.contains("c2") && line.contains("lock() called"))
            .expect("c2's lock call");
        assert!(!second.contains("0.000"), "{second}");
    }

    #[test]
    fn violations_are_marked_at_their_instant_and_listed_with_the_verdict() {
        let violations = [violation()];
        let mut timeline = Timeline::new(&history(), &violations, Duration::from_secs(3));
        timeline.verdict = Some(Verdict::judge(&violations, &[]));
        let text = timeline.text();
        let lines: Vec<&str> = text.lines().collect();
        let inline = lines
            .iter()
            .position(|line| line.starts_with("!!"))
            .expect("an inline violation");
        assert!(lines[inline].contains("1.500") && lines[inline].contains("P2"));
        assert!(lines[inline - 1].contains("fault begins"));
        assert!(lines[inline + 1].contains("lost lease 1"));
        assert!(text.contains("violations (1):\n  1. P2 (early loss notification) at 1.500s"));
        let last = lines.last().expect("a last line");
        assert!(last.starts_with("verdict: FAIL"), "{last}");
    }

    #[test]
    fn writes_can_be_left_out() {
        let text = Timeline::new(&history(), &[], Duration::from_secs(3))
            .without_writes()
            .text();
        assert!(!text.contains("write sent"));
        assert!(text.contains("(fenced writes not shown)"));
    }

    #[test]
    fn a_dropped_lease_says_whether_its_loss_was_signalled_before() {
        let history = History::new();
        let ms = Duration::from_millis;
        history.record_at(ms(5), "c1", EventKind::Acquired { lease: 1, token: 1 });
        history.record_at(ms(6), "c2", EventKind::Acquired { lease: 2, token: 2 });
        let lost = EventKind::Lost {
            lease: 1,
            reason: "the validity deadline passed".into(),
        };
        history.record_at(ms(10), "c1", lost);
        history.record_at(ms(11), "c1", EventKind::Dropped { lease: 1 });
        history.record_at(ms(12), "c2", EventKind::Dropped { lease: 2 });
        let text = Timeline::new(&history, &[], Duration::from_secs(1)).text();
        let line = |host: &str, what: &str| {
            text.lines()
                .any(|line| line.contains(&format!(" {host} ")) && line.ends_with(what))
        };
        assert!(
            line("c1", "dropped lease 1, whose loss was signalled before"),
            "{text}"
        );
        assert!(
            line(
                "c2",
                "dropped lease 2: no longer held, loss not signalled yet"
            ),
            "{text}"
        );
        assert_eq!(text.matches("loss not signalled yet").count(), 1, "{text}");
    }

    #[test]
    fn only_some_clients_keeps_their_events_and_refuses_an_unknown_name() {
        let timeline = Timeline::new(&history(), &[], Duration::from_secs(3));
        let text = timeline
            .clone()
            .only_clients(&["c2".to_owned()])
            .unwrap()
            .text();
        assert!(text.contains("clients: c2\n"), "{text}");
        // No line is c1's (the fault that names it is the world's).
        assert!(!text.contains("  c1  "), "{text}");
        assert!(text.contains("partition c1 | backend"), "{text}");
        let error = timeline.only_clients(&["c9".to_owned()]).unwrap_err();
        assert!(
            error.starts_with("unknown client \"c9\": the run's clients are c1, c2"),
            "{error}"
        );
    }

    #[test]
    fn a_window_shows_only_its_events_and_says_which_it_is() {
        let ms = Duration::from_millis;
        let timeline = Timeline::new(&history(), &[], Duration::from_secs(3));
        let all = timeline.clone().text();
        let text = timeline
            .clone()
            .window(ms(6), Some(ms(2000)))
            .unwrap()
            .text();
        assert!(
            text.contains("3.000s simulated, shown from 0.006s to 2.000s"),
            "{text}"
        );
        assert!(all.contains("   0.000  "), "{all}");
        assert!(
            !text.contains("   0.000  ") && !text.contains("   0.005  "),
            "{text}"
        );
        let error = timeline.window(ms(2000), Some(ms(2000))).unwrap_err();
        assert!(error.contains("is empty"), "{error}");
    }

    #[test]
    fn only_one_mutex_of_a_host_keeps_its_grants_and_its_hosts_crash() {
        let history = History::new();
        let ms = Duration::from_millis;
        history.record_at(ms(1), "c1#1", EventKind::LockCalled);
        history.record_at(ms(2), "c2", EventKind::LockCalled);
        let granted = EventKind::BackendGranted {
            to: "c1#2".into(),
            token: 3,
            until: ms(900),
        };
        history.record_at(ms(3), "backend", granted);
        history.record_at(ms(4), "c1#2", EventKind::Acquired { lease: 1, token: 3 });
        history.record_at(ms(5), "c1", EventKind::Crashed);
        let text = Timeline::new(&history, &[], Duration::from_secs(1))
            .only_clients(&["c1#2".to_owned()])
            .unwrap()
            .text();
        assert!(text.contains("granted to c1#2, token 3"), "{text}");
        assert!(text.contains("acquired lease 1, token 3"), "{text}");
        assert!(text.contains("CRASHED"), "{text}");
        assert!(!text.contains("c1#1") && !text.contains("  c2  "), "{text}");
    }
}
