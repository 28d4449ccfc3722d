//! The quorum's arithmetic: what the servers' answers to one acquire add up to.

use std::time::Duration;

use crate::driver::{Acquire, DriverError};

/// The smallest number of servers out of `servers` that any two such sets share one of.
pub(super) fn majority(servers: usize) -> usize {
    servers / 2 + 1
}

/// The answers of the servers to one acquire, as they come in.
pub(super) struct Tally {
    servers: usize,
    granted: usize,
    /// For every server that did not grant: how soon it could, and why not now.
    refused: Vec<Refusal>,
    failed: Vec<DriverError>,
}

/// Why a server did not grant, and how soon it might.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Refusal {
    /// Held by another, for this long (`None`: no expiry).
    Held(Option<Duration>),
    /// Quarantined for this long.
    Quarantined(Duration),
}

impl Tally {
    pub(super) fn new(servers: usize) -> Self {
        Self {
            servers,
            granted: 0,
            refused: Vec::new(),
            failed: Vec::new(),
        }
    }

    pub(super) fn granted(&mut self) {
        self.granted += 1;
    }

    /// A refusal: [`Acquire::Held`] or [`Acquire::Quarantined`].
    pub(super) fn refused(&mut self, answer: &Acquire) {
        self.refused.push(match answer {
            Acquire::Quarantined { left } => Refusal::Quarantined(*left),
            Acquire::Held { expires_in } => Refusal::Held(*expires_in),
            // A member never answers a grant as a refusal.
            Acquire::Granted(_) | Acquire::Handed(_) => Refusal::Held(None),
        });
    }

    pub(super) fn failed(&mut self, err: DriverError) {
        self.failed.push(err);
    }

    /// Whether a majority granted.
    pub(super) fn won(&self) -> bool {
        self.granted >= majority(self.servers)
    }

    /// Whether the answers so far decide the attempt, with `pending` servers still to
    /// answer: a majority granted, or can no longer.
    pub(super) fn decided(&self, pending: usize) -> bool {
        self.won() || self.granted + pending < majority(self.servers)
    }

    /// Whether some server granted although no majority did: a split vote, whose grants
    /// are given back.
    pub(super) fn split(&self) -> bool {
        !self.won() && self.granted > 0
    }

    /// What a lost attempt tells the waiter. The lock can be had once a majority is free:
    /// the waiter is told the majority-th soonest of the servers' waits (the ones that
    /// granted count as free now), as a quarantine if that server is quarantined. When
    /// too many servers failed for any majority to answer, the attempt failed: the error
    /// says how many, and the first one's cause.
    pub(super) fn verdict(self, pending: usize) -> Result<Acquire, DriverError> {
        let need = majority(self.servers);
        if self.servers - self.failed.len() < need {
            return Err(self.failure(pending));
        }
        let mut waits: Vec<(Option<Duration>, bool)> = self
            .refused
            .iter()
            .map(|refusal| match refusal {
                Refusal::Held(left) => (*left, false),
                Refusal::Quarantined(left) => (Some(*left), true),
            })
            .chain(std::iter::repeat_n(
                (Some(Duration::ZERO), false),
                self.granted,
            ))
            .collect();
        // Sooner first; no expiry last.
        waits.sort_by_key(|(left, _)| (left.is_none(), *left));
        // Fewer answers than a majority (the rest failed or did not answer in time): the
        // longest wait known.
        match waits.get(need - 1).or(waits.last()) {
            Some((Some(left), true)) => Ok(Acquire::Quarantined { left: *left }),
            Some((expires_in, _)) => Ok(Acquire::Held {
                expires_in: *expires_in,
            }),
            None => Err(self.failure(pending)),
        }
    }

    fn failure(mut self, pending: usize) -> DriverError {
        let servers = self.servers;
        let failed = self.failed.len();
        let summary = format!(
            "no majority of the {servers} servers could answer ({failed} failed, {pending} \
             did not answer in time, {} granted, {} refused)",
            self.granted,
            self.refused.len()
        );
        // Permanent once the servers that refuse for good (a wrong password, a missing
        // permission) leave too few for a majority ever to grant: retrying cannot help.
        let permanent = self.failed.iter().filter(|err| !err.is_transient()).count();
        if servers - permanent < majority(servers)
            && let Some(err) = self.failed.iter().find(|err| !err.is_transient())
        {
            return DriverError::rejected(format!("{summary}: {err}"));
        }
        match self.failed.pop() {
            Some(err) => DriverError::unavailable(format!("{summary}: {err}")),
            None => DriverError::unavailable(summary),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(secs: u64) -> Acquire {
        Acquire::Held {
            expires_in: Some(Duration::from_secs(secs)),
        }
    }

    #[test]
    fn a_majority_is_more_than_half() {
        assert_eq!(
            [3, 4, 5, 7].map(majority),
            [2, 3, 3, 4],
            "any two majorities share a server"
        );
    }

    #[test]
    fn an_attempt_is_decided_once_a_majority_granted_or_cannot() {
        let mut tally = Tally::new(5);
        tally.granted();
        tally.granted();
        assert!(!tally.decided(3));
        tally.refused(&held(1));
        tally.refused(&held(1));
        assert!(!tally.decided(1), "the last server may still grant");
        tally.failed(DriverError::Timeout(Duration::from_secs(1)));
        assert!(tally.decided(0) && !tally.won() && tally.split());
        let mut tally = Tally::new(3);
        tally.granted();
        tally.granted();
        assert!(tally.decided(1) && tally.won() && !tally.split());
    }

    #[test]
    fn a_lost_attempt_waits_for_the_majority_th_soonest_server() {
        let mut tally = Tally::new(5);
        tally.granted();
        tally.refused(&held(9));
        tally.refused(&held(4));
        tally.refused(&Acquire::Quarantined {
            left: Duration::from_secs(2),
        });
        tally.refused(&Acquire::Held { expires_in: None });
        // Free now, in 2 s (quarantined), 4 s, 9 s, never: the third is 4 s.
        assert!(matches!(
            tally.verdict(0),
            Ok(Acquire::Held { expires_in: Some(left) }) if left == Duration::from_secs(4)
        ));
        let mut tally = Tally::new(3);
        tally.refused(&held(9));
        tally.refused(&Acquire::Quarantined {
            left: Duration::from_secs(2),
        });
        tally.granted();
        assert!(matches!(
            tally.verdict(0),
            Ok(Acquire::Quarantined { left }) if left == Duration::from_secs(2)
        ));
    }

    #[test]
    fn a_held_lock_with_one_server_failed_and_one_unanswered_is_held() {
        let mut tally = Tally::new(3);
        tally.failed(DriverError::unavailable("connection refused"));
        tally.refused(&held(3));
        assert!(tally.decided(1));
        assert!(matches!(
            tally.verdict(1),
            Ok(Acquire::Held { expires_in: Some(left) }) if left == Duration::from_secs(3)
        ));
    }

    #[test]
    fn too_many_failures_for_a_majority_are_an_error_that_counts_them() {
        let mut tally = Tally::new(3);
        tally.granted();
        tally.failed(DriverError::Timeout(Duration::from_secs(1)));
        tally.failed(DriverError::unavailable("connection refused"));
        let err = tally.verdict(0).unwrap_err();
        assert!(err.is_transient());
        let text = err.to_string();
        assert!(
            text.contains("no majority of the 3 servers") && text.contains("2 failed"),
            "{text}"
        );
        let mut tally = Tally::new(3);
        for _ in 0..3 {
            tally.failed(DriverError::rejected("WRONGPASS"));
        }
        assert!(!tally.verdict(0).unwrap_err().is_transient());
        let mut tally = Tally::new(3);
        tally.refused(&held(1));
        tally.failed(DriverError::rejected("NOPERM"));
        tally.failed(DriverError::unavailable("connection refused"));
        assert!(
            tally.verdict(0).unwrap_err().is_transient(),
            "one server's refusal of the user is not all servers'"
        );
        let mut tally = Tally::new(3);
        tally.refused(&held(1));
        tally.failed(DriverError::unavailable("connection refused"));
        tally.failed(DriverError::rejected("NOPERM"));
        assert!(
            tally.verdict(0).unwrap_err().is_transient(),
            "one server's refusal of the user, heard last, is not all servers'"
        );
        // Two servers of three that refuse the user for good leave no majority that
        // could grant, whatever the third says, and in any order.
        for third in 0..3 {
            let mut tally = Tally::new(3);
            for server in 0..3 {
                tally.failed(if server == third {
                    DriverError::unavailable("connection refused")
                } else {
                    DriverError::rejected("NOPERM")
                });
            }
            let err = tally.verdict(0).unwrap_err();
            assert!(!err.is_transient(), "{err}");
            assert!(err.to_string().contains("NOPERM"), "{err}");
        }
    }
}
