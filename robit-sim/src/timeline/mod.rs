//! Timelines of a run, for people: as text (what `robit-sim replay` prints) and as an
//! SVG picture with one lane per client.
//!
//! Both are built from the same [`Timeline`]: the run's events, the violations the
//! checkers found, and the run's length. They only read the history; building one never
//! changes a run.

mod backend_view;
mod describe;
mod filter;
mod svg;
mod text;
mod tokens;

use std::collections::BTreeMap;
use std::time::Duration;

use self::describe::describe;
use self::tokens::Grants;
use crate::check::{Beliefs, End};
use crate::history::host_of;
use crate::{Event, EventKind, History, Run, Scenario, Verdict, Violation};

/// Hosts that are not clients: they have no lane.
const NOT_CLIENTS: [&str; 3] = ["backend", "storage", "world"];

/// A run laid out for reading: its events, its violations and its length, with the
/// clients that get a lane each.
///
/// # Example
///
/// ```
/// use robit_sim::{EventKind, History, Timeline};
/// use std::time::Duration;
///
/// let history = History::new();
/// let ms = Duration::from_millis;
/// history.record_at(ms(100), "c1", EventKind::LockCalled);
/// history.record_at(ms(150), "c1", EventKind::Acquired { lease: 1, token: 7 });
/// history.record_at(ms(900), "c1", EventKind::UnlockCalled { lease: 1 });
///
/// let timeline = Timeline::new(&history, &[], Duration::from_secs(2));
/// assert!(timeline.text().contains("acquired lease 1, token 7"));
/// let svg = timeline.svg();
/// assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
/// ```
#[derive(Debug, Clone)]
pub struct Timeline {
    events: Vec<Event>,
    violations: Vec<Violation>,
    /// The start of the time axis: zero, unless a window was chosen.
    start: Duration,
    end: Duration,
    /// The end of the run, whatever the window.
    run_end: Duration,
    /// Every grant of the run, whatever is shown: short labels for tokens, and the
    /// grants against which a write is stale.
    grants: Grants,
    clients: Vec<String>,
    title: Option<String>,
    verdict: Option<Verdict>,
    writes: bool,
}

impl Timeline {
    /// The timeline of `history`, with `violations` marked, over a run of `duration`.
    /// Every host other than `backend`, `storage` and `world` that appears in the history
    /// gets a lane, in natural order (`c2` before `c10`).
    pub fn new(history: &History, violations: &[Violation], duration: Duration) -> Self {
        let events = history.events();
        let end = events.last().map_or(duration, |last| last.at.max(duration));
        let mut clients: Vec<String> = Vec::new();
        for event in &events {
            let who = match &event.kind {
                EventKind::WriteAccepted { from, .. } | EventKind::WriteRejected { from, .. } => {
                    from
                }
                _ => &event.who,
            };
            let server = crate::scenario::is_server_name(who);
            if !NOT_CLIENTS.contains(&who.as_str()) && !server && !clients.contains(who) {
                clients.push(who.clone());
            }
        }
        clients.sort_by(|a, b| natural_key(a).cmp(&natural_key(b)));
        Self {
            grants: Grants::of(&events),
            events,
            violations: violations.to_vec(),
            start: Duration::ZERO,
            end,
            run_end: end,
            clients,
            title: None,
            verdict: None,
            writes: true,
        }
    }

    /// The timeline of `run`, a run of `scenario`: one lane per client of the scenario,
    /// titled with its name and seed, ending with its verdict.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use robit_sim::{Scenario, Timeline, run};
    ///
    /// let scenario = Scenario::load("scenarios/holder-crash.toml")?;
    /// let run = run(&scenario, 3)?;
    /// std::fs::write("holder-crash-3.svg", Timeline::of_run(&scenario, &run).svg())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of_run(scenario: &Scenario, run: &Run) -> Self {
        let mut timeline = Self::new(&run.history, &run.violations, scenario.duration())
            .with_clients(scenario.lanes())
            .with_title(format!(
                "{} ({}), seed {}",
                scenario.name(),
                scenario.file().display(),
                run.seed
            ));
        timeline.verdict = Some(run.verdict.clone());
        timeline
    }

    /// Gives a lane to exactly these clients, in this order (events of other hosts still
    /// show in the text).
    pub fn with_clients(mut self, clients: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.clients = clients.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the title shown above the timeline.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Leaves out fenced writes (sent, accepted and rejected), which can outnumber every
    /// other event.
    pub fn without_writes(mut self) -> Self {
        self.writes = false;
        self
    }

    /// The clients with a lane, in order.
    pub fn clients(&self) -> &[String] {
        &self.clients
    }

    /// The end of the time axis: the run's length, or its last event if later.
    pub fn end(&self) -> Duration {
        self.end
    }

    /// The timeline as text: one line per event in time order, aligned in columns (time,
    /// host, what happened), with violations marked where they happen and listed at the
    /// end, then the verdict (for [`of_run`](Self::of_run)).
    pub fn text(&self) -> String {
        text::render(self)
    }

    /// The timeline as an SVG picture: a lane per client on one time axis, with held
    /// intervals, losses, crashes, writes, fault windows and violations, and a legend.
    pub fn svg(&self) -> String {
        svg::render(self)
    }

    fn is_write(event: &Event) -> bool {
        matches!(
            event.kind,
            EventKind::WriteSent { .. }
                | EventKind::WriteAccepted { .. }
                | EventKind::WriteRejected { .. }
        )
    }

    /// The events shown, in time order.
    fn shown_events(&self) -> impl Iterator<Item = &Event> {
        self.events
            .iter()
            .filter(|event| self.shows(event.at))
            .filter(|event| self.writes || !Self::is_write(event))
    }

    /// What `event` says, for a person. Mostly the event alone says it; a dropped lease
    /// also says whether its loss had been signalled by then.
    fn describe(&self, event: &Event) -> String {
        match &event.kind {
            EventKind::Dropped { lease } if self.lost_before(event, *lease) => {
                format!("dropped lease {lease}, whose loss was signalled before")
            }
            kind => describe(kind),
        }
    }

    /// Whether `event`'s host was told of the loss of `lease` before `event`.
    fn lost_before(&self, event: &Event, lease: u64) -> bool {
        self.events
            .iter()
            .take_while(|earlier| !std::ptr::eq(*earlier, event))
            .any(|earlier| {
                earlier.who == event.who
                    && matches!(&earlier.kind, EventKind::Lost { lease: lost, .. } if *lost == lease)
            })
    }

    /// The intervals in which each client believed it held the lock.
    fn held(&self) -> Vec<Held> {
        Beliefs::from_events(&self.events, self.end)
            .beliefs
            .into_iter()
            .filter(|belief| belief.end >= self.start && belief.start <= self.end)
            .map(|belief| Held {
                client: belief.client,
                lease: belief.lease,
                token: belief.token,
                start: belief.start,
                end: belief.end,
                how: belief.how,
            })
            .collect()
    }

    /// The intervals in which each client waited in `lock()`.
    fn waits(&self) -> Vec<(String, Duration, Duration)> {
        let mut open: BTreeMap<&str, Duration> = BTreeMap::new();
        let mut waits = Vec::new();
        for event in &self.events {
            match event.kind {
                EventKind::LockCalled => {
                    open.insert(&event.who, event.at);
                }
                EventKind::Acquired { .. } | EventKind::LockFailed { .. } => {
                    if let Some(start) = open.remove(event.who.as_str()) {
                        waits.push((event.who.clone(), start, event.at));
                    }
                }
                // A crash ends the waits of the host's every mutex.
                EventKind::Crashed => open.retain(|who, start| {
                    let ended = host_of(who) == event.who;
                    if ended {
                        waits.push(((*who).to_owned(), *start, event.at));
                    }
                    !ended
                }),
                _ => {}
            }
        }
        waits.extend(
            open.into_iter()
                .map(|(who, start)| (who.to_owned(), start, self.end)),
        );
        waits.retain(|(_, start, stop)| *stop >= self.start && *start <= self.end);
        waits
    }

    /// The fault windows, in order of their start.
    fn faults(&self) -> Vec<FaultWindow> {
        let mut windows: Vec<FaultWindow> = Vec::new();
        for event in &self.events {
            let EventKind::Fault { what, ended } = &event.kind else {
                continue;
            };
            if *ended {
                if let Some(open) = windows
                    .iter_mut()
                    .find(|window| window.what == *what && window.end.is_none() && !window.instant)
                {
                    open.end = Some(event.at);
                }
            } else {
                windows.push(FaultWindow {
                    what: what.clone(),
                    start: event.at,
                    end: None,
                    // A restart happens at an instant and is never repaired.
                    instant: what.starts_with("backend restart"),
                });
            }
        }
        windows.retain(|window| {
            window.start <= self.end && window.end.is_none_or(|end| end >= self.start)
        });
        windows
    }
}

/// One lease as its client saw it.
#[derive(Debug, Clone)]
struct Held {
    client: String,
    lease: u64,
    token: u64,
    start: Duration,
    end: Duration,
    how: End,
}

/// A fault, from its start to its repair (`None`: never repaired).
#[derive(Debug, Clone)]
struct FaultWindow {
    what: String,
    start: Duration,
    end: Option<Duration>,
    instant: bool,
}

/// Seconds with millisecond precision: `12.345`.
fn secs(at: Duration) -> String {
    format!("{:.3}", at.as_secs_f64())
}

/// Sorts `c2` before `c10`: the name without its trailing digits, then their value.
fn natural_key(name: &str) -> (&str, u128, &str) {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &name[stem.len()..];
    (stem, digits.parse().unwrap_or(0), digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_ordered_naturally_and_exclude_the_other_hosts() {
        let history = History::new();
        for who in ["c10", "backend", "c2", "world", "c1"] {
            history.record_at(Duration::ZERO, who, EventKind::LockCalled);
        }
        history.record_at(
            Duration::ZERO,
            "storage",
            EventKind::WriteAccepted {
                from: "w".into(),
                token: 1,
            },
        );
        let timeline = Timeline::new(&history, &[], Duration::from_secs(1));
        assert_eq!(timeline.clients(), ["c1", "c2", "c10", "w"]);
    }

    #[test]
    fn a_fault_lasts_until_its_repair_and_a_restart_is_instant() {
        let history = History::new();
        let s = Duration::from_secs;
        let fault = |what: &str, ended| EventKind::Fault {
            what: what.into(),
            ended,
        };
        history.record_at(s(1), "world", fault("partition c1 | backend", false));
        history.record_at(s(2), "world", fault("backend restart", false));
        history.record_at(s(3), "world", fault("partition c1 | backend", true));
        history.record_at(s(4), "world", fault("loss 0.1", false));
        let faults = Timeline::new(&history, &[], s(10)).faults();
        let summary: Vec<_> = faults
            .iter()
            .map(|f| (f.what.as_str(), f.start, f.end, f.instant))
            .collect();
        assert_eq!(
            summary,
            [
                ("partition c1 | backend", s(1), Some(s(3)), false),
                ("backend restart", s(2), None, true),
                ("loss 0.1", s(4), None, false),
            ]
        );
    }

    #[test]
    fn the_axis_ends_at_the_last_event_when_it_is_after_the_duration() {
        let history = History::new();
        history.record_at(Duration::from_secs(11), "c1", EventKind::LockCalled);
        let timeline = Timeline::new(&history, &[], Duration::from_secs(10));
        assert_eq!(timeline.end(), Duration::from_secs(11));
    }
}
