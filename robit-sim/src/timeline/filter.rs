//! What `replay` may narrow a timeline to: some clients, a window of time.

use std::time::Duration;

use super::{NOT_CLIENTS, Timeline, secs};
use crate::EventKind;
use crate::history::host_of;

impl Timeline {
    /// Shows only `clients`, in this order: their lanes, and in the text their events,
    /// the faults, and what the backend and the resource did for them.
    ///
    /// # Errors
    ///
    /// A name that is not one of the run's clients, with the names there are.
    pub fn only_clients(mut self, clients: &[String]) -> Result<Self, String> {
        if let Some(unknown) = clients.iter().find(|name| !self.clients.contains(name)) {
            return Err(format!(
                "unknown client {unknown:?}: the run's clients are {}",
                self.clients.join(", ")
            ));
        }
        self.clients = clients.to_vec();
        // A lane's own events, and its host's (a host with several mutexes, `c1#2`,
        // crashes and restarts as `c1`).
        let keep = |who: &str| {
            clients
                .iter()
                .any(|client| client == who || host_of(client) == who)
        };
        self.events.retain(|event| match &event.kind {
            EventKind::BackendGranted { to: who, .. }
            | EventKind::BackendRenewed { by: who, .. }
            | EventKind::BackendReleased { by: who, .. }
            | EventKind::WriteAccepted { from: who, .. }
            | EventKind::WriteRejected { from: who, .. } => keep(who),
            _ => NOT_CLIENTS.contains(&event.who.as_str()) || keep(&event.who),
        });
        Ok(self)
    }

    /// Shows only the time from `from` to `to` (or to the end of the run).
    ///
    /// # Errors
    ///
    /// A window that is empty or starts after the run's end.
    pub fn window(mut self, from: Duration, to: Option<Duration>) -> Result<Self, String> {
        let to = to.unwrap_or(self.end).min(self.end);
        if from >= to {
            return Err(format!(
                "the window {}s to {}s is empty (the run ends at {}s)",
                secs(from),
                secs(to),
                secs(self.end)
            ));
        }
        (self.start, self.end) = (from, to);
        Ok(self)
    }

    /// Whether `at` is inside the time shown.
    pub(super) fn shows(&self, at: Duration) -> bool {
        (self.start..=self.end).contains(&at)
    }
}
