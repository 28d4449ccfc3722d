//! The watch over one hold: renewals on time, jeopardy, and the loss signal at the
//! deadline. The loop only sleeps and asks the hold's [`Timing`] what is due.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;

use tokio::time::Instant;

use super::super::Core;
use super::super::timing::Verdict;
use super::wake::Wake;
use super::{Watched, look};
use crate::driver::{DriverError, Renewal};
use crate::loss::LossReason;

/// What the watchdog does next for the hold it watches.
enum Next {
    /// Go on watching.
    Watch,
    /// The hold ended without a loss, or is no longer this watchdog's to watch.
    Stop,
    /// The hold is lost: signal it.
    Lose(LossReason),
}

/// What ended a renew attempt.
enum Attempt {
    Done(Result<Renewal, DriverError>),
    Stopped,
    DriverSignalled,
    /// The attempt's timer fired: its timeout, or the validity deadline if that is sooner.
    TimedOut,
}

/// Keeps one hold's lease alive until the hold ends, and signals jeopardy and loss.
///
/// With the watchdog turned off ([`Config::watchdog`](super::Config)), it renews
/// nothing: its next renewal is the deadline itself, which a manual refresh moves — and
/// wakes it to re-read, since the move may be earlier than its timer.
pub(super) async fn watch(core: &Arc<Core>, wake: &Wake, hold: Watched) {
    let lease = Arc::clone(&hold.lease);
    let mut driver_lost = pin!(lease.lost());
    let mut watch = HoldWatch { core, wake, hold };
    let reason = loop {
        match watch.step(&mut driver_lost).await {
            Next::Watch => {}
            Next::Stop => break None,
            Next::Lose(reason) => break Some(reason),
        }
    };
    if let Some(reason) = reason {
        core.lose_and_free(watch.hold.id, reason);
    }
}

/// One hold under watch.
struct HoldWatch<'a> {
    core: &'a Arc<Core>,
    wake: &'a Wake,
    hold: Watched,
}

impl HoldWatch<'_> {
    /// Sleeps until the hold's next instant (or a wake, or the driver's loss signal),
    /// then does what is due: signal a loss, jeopardy, or renew.
    async fn step<L: Future<Output = ()>>(&mut self, driver_lost: &mut Pin<&mut L>) -> Next {
        let config = &self.core.config;
        let wake_at = self
            .hold
            .timing
            .wake_at(config, self.hold.signals.in_jeopardy());
        tokio::select! {
            biased;
            () = self.wake.woken() => return self.reread(),
            () = driver_lost.as_mut() => return Next::Lose(LossReason::DriverSignalled),
            () = config.clock.sleep_until(wake_at) => {}
        }
        // Only a refresh moves the deadline behind the watchdog's back.
        if !config.watchdog
            && let Next::Stop = self.reread_deadline()
        {
            return Next::Stop;
        }
        let now = config.clock.now();
        let timing = &self.hold.timing;
        if let Some(reason) = timing.over_at(now) {
            return Next::Lose(reason);
        }
        // Into jeopardy, if it is due by the deadline as it stands: the mutex decides, under
        // its lock, so that a refresh's new deadline is seen.
        self.core.endanger(self.hold.id, now);
        if !timing.renew_due(config, now) {
            return Next::Watch;
        }
        self.renew(now, driver_lost).await
    }

    /// Woken: looks at the mutex, and re-reads the hold's deadline if it is still to be
    /// watched.
    fn reread(&mut self) -> Next {
        if !look(self.core).keeps(self.hold.id) {
            return Next::Stop;
        }
        self.reread_deadline()
    }

    /// Re-reads the hold's deadline, which a refresh may have moved: stops if the hold
    /// has ended.
    fn reread_deadline(&mut self) -> Next {
        match self.core.deadline(self.hold.id) {
            Some(deadline) => {
                self.hold.timing.reread(&self.core.config, deadline);
                Next::Watch
            }
            None => Next::Stop,
        }
    }

    /// Renews the lease, sent at `sent`, and acts on what the answer means.
    async fn renew<L: Future<Output = ()>>(
        &mut self,
        sent: Instant,
        driver_lost: &mut Pin<&mut L>,
    ) -> Next {
        let (core, config) = (self.core, &self.core.config);
        let attempt_end = self.hold.timing.attempt_end(config, sent);
        let jeopardy_at = self
            .hold
            .timing
            .jeopardy_due(config, self.hold.signals.in_jeopardy());
        // Dropped, unfinished, only once the outcome is dealt with.
        let mut renew = pin!(self.hold.lease.renew(config.ttl));
        let attempt = self
            .renew_once(&mut renew, driver_lost, attempt_end, jeopardy_at)
            .await;
        let now = config.clock.now();
        let answer = match attempt {
            Attempt::Stopped => return Next::Stop,
            Attempt::DriverSignalled => return Next::Lose(LossReason::DriverSignalled),
            Attempt::TimedOut => Err(DriverError::Timeout(attempt_end - sent)),
            Attempt::Done(answer) => answer,
        };
        match self
            .hold
            .timing
            .judge(config, answer, sent, now, config.validity)
        {
            Verdict::Renewed { deadline, slack } => {
                if !core.extend(self.hold.id, deadline, now) {
                    return Next::Stop;
                }
                core.stats.renewed(slack);
                self.hold.timing.renewed(config, sent, deadline);
                tracing::trace!(target: "robit", ?slack, "renewed");
            }
            Verdict::Failed(error) => {
                core.stats.renew_failed();
                let left = self.hold.timing.retry(config, config.clock.now());
                tracing::warn!(target: "robit", %error, ?left, "renew failed; retrying before the validity deadline");
            }
            Verdict::Lost(reason) => return Next::Lose(reason),
        }
        Next::Watch
    }

    /// Waits for what ends one renew: its answer, its timer, a wake that finds the hold
    /// ended, or the driver's own loss signal — and puts the hold into jeopardy if the
    /// renew is still out at the instant `jeopardy_at`. The caller owns the renew's
    /// future, so that an unfinished renew is dropped where it always was: after the
    /// caller has dealt with the outcome.
    async fn renew_once<R, L>(
        &self,
        renew: &mut Pin<&mut R>,
        driver_lost: &mut Pin<&mut L>,
        attempt_end: Instant,
        mut jeopardy_at: Option<Instant>,
    ) -> Attempt
    where
        R: Future<Output = Result<Renewal, DriverError>>,
        L: Future<Output = ()>,
    {
        let (core, id) = (self.core, self.hold.id);
        let clock = &core.config.clock;
        loop {
            tokio::select! {
                biased;
                () = self.wake.woken() => {
                    if !look(core).keeps(id) {
                        return Attempt::Stopped;
                    }
                }
                () = driver_lost.as_mut() => return Attempt::DriverSignalled,
                result = renew.as_mut() => return Attempt::Done(result),
                () = clock.sleep_until(attempt_end) => return Attempt::TimedOut,
                () = clock.sleep_until(jeopardy_at.unwrap_or(attempt_end)), if jeopardy_at.is_some() => {
                    core.endanger(id, clock.now());
                    jeopardy_at = None;
                }
            }
        }
    }
}
