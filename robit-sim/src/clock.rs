//! Per-host clocks: drift and stop-the-world pauses on top of turmoil's virtual time.
//!
//! turmoil gives every host the same virtual time. Real hosts disagree: their clocks run
//! fast or slow, and a process can stop (a GC pause, a VM migration) while its clock goes
//! on. [`SimClock`] is robit's injected [`Clock`] for a simulated host: its readings
//! follow a piecewise-linear *plan* of true time, and its timers never fire during a
//! pause of the host.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use robit::sources::Clock;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A simulated host's clock.
///
/// Its *local* reading starts equal to true time (the simulation's elapsed time) and
/// runs at `1 + drift` local seconds per true second, where the drift can change during
/// the run. While the host is paused, the clock keeps running but nothing on the host
/// wakes up: [`sleep_until`](Clock::sleep_until) returns no earlier than the pause's end.
///
/// Clones share one plan, so the simulation driver changes the clock that the host's
/// mutexes read.
///
/// # Example
///
/// ```
/// use robit_sim::SimClock;
/// use std::time::Duration;
///
/// let clock = SimClock::new();
/// clock.set_drift(Duration::from_secs(10), 0.5); // from t = 10 s, 50 % fast
/// assert_eq!(clock.local_at(Duration::from_secs(12)), Duration::from_secs(13));
/// // A timer set for local 13 s fires at true 12 s (rounded up to the nanosecond).
/// let fires = clock.true_at(Duration::from_secs(13));
/// assert!(fires >= Duration::from_secs(12) && fires < Duration::from_secs_f64(12.000_001));
/// ```
#[derive(Clone)]
pub struct SimClock {
    plan: Arc<Mutex<Plan>>,
    changed: Arc<Notify>,
    anchor: Instant,
}

impl Default for SimClock {
    fn default() -> Self {
        Self {
            plan: Arc::default(),
            changed: Arc::default(),
            anchor: Instant::now(),
        }
    }
}

/// From `since` (true time) on, local time is `local + (t - since) * rate`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    since: Duration,
    local: Duration,
    rate: f64,
}

#[derive(Debug, Default)]
struct Plan {
    segments: Vec<Segment>,
    pauses: Vec<(Duration, Duration)>,
}

impl SimClock {
    /// A clock that agrees with true time until told otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// From true instant `at` on, the clock runs at `1 + drift` local seconds per true
    /// second (`drift` of 0.01 is 1 % fast, -0.01 is 1 % slow). The reading stays
    /// continuous. Drifts at or below -1 are taken as -0.999 (a clock that stops entirely
    /// is a pause, not a drift).
    pub fn set_drift(&self, at: Duration, drift: f64) {
        let rate = if drift.is_finite() {
            (1.0 + drift).max(0.001)
        } else {
            1.0
        };
        let mut plan = self.lock();
        let local = plan.local_at(at);
        plan.segments.retain(|segment| segment.since < at);
        plan.segments.push(Segment {
            since: at,
            local,
            rate,
        });
        drop(plan);
        self.changed.notify_waiters();
    }

    /// Stops the host's world from true instant `from` for `length`: no timer on the host
    /// fires inside the window. (Its network is held separately, by the simulation.)
    pub fn pause(&self, from: Duration, length: Duration) {
        self.lock().pauses.push((from, from + length));
        self.changed.notify_waiters();
    }

    /// The local reading at true instant `at`.
    pub fn local_at(&self, at: Duration) -> Duration {
        self.lock().local_at(at)
    }

    /// The earliest true instant at which the local reading reaches `local`.
    pub fn true_at(&self, local: Duration) -> Duration {
        self.lock().true_at(local)
    }

    /// The local reading now, as elapsed local time since the simulation started. Unlike
    /// [`Clock::now`], this is comparable across restarts of the host.
    pub fn local_elapsed(&self) -> Duration {
        self.local_at(true_now())
    }

    /// The earliest true instant, at or after `at`, when the host is not paused.
    fn resumed_at(&self, at: Duration) -> Duration {
        let plan = self.lock();
        let mut at = at;
        // Pauses may overlap or chain; settle on a point outside all of them.
        while let Some(&(_, end)) = plan
            .pauses
            .iter()
            .find(|&&(start, end)| start <= at && at < end)
        {
            at = end;
        }
        at
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Plan {
    fn segment_at(&self, at: Duration) -> Segment {
        self.segments
            .iter()
            .rev()
            .find(|segment| segment.since <= at)
            .copied()
            .unwrap_or(Segment {
                since: Duration::ZERO,
                local: Duration::ZERO,
                rate: 1.0,
            })
    }

    fn local_at(&self, at: Duration) -> Duration {
        let segment = self.segment_at(at);
        segment.local + (at - segment.since).mul_f64(segment.rate)
    }

    fn true_at(&self, local: Duration) -> Duration {
        let mut found = Segment {
            since: Duration::ZERO,
            local: Duration::ZERO,
            rate: 1.0,
        };
        for segment in &self.segments {
            if segment.local <= local {
                found = *segment;
            }
        }
        // Round up: the true instant must not come before the local one is reached.
        let offset = (local - found.local).as_secs_f64() / found.rate;
        found.since + Duration::from_secs_f64(offset) + Duration::from_nanos(1)
    }
}

/// True time: the simulation's elapsed virtual time, as seen by the current host.
pub fn true_now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

#[async_trait]
impl Clock for SimClock {
    /// `anchor + local reading`: readings stay comparable across restarts of the host,
    /// whose tokio runtimes each start from their own base instant.
    fn now(&self) -> Instant {
        self.anchor + self.local_elapsed()
    }

    async fn sleep_until(&self, deadline: Instant) {
        let local_deadline = deadline.saturating_duration_since(self.anchor);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();

            let now = true_now();
            let wake = self.resumed_at(self.true_at(local_deadline).max(now));
            if wake <= now {
                return;
            }
            // Sleep by duration: this host's tokio instants have their own base.
            tokio::select! {
                biased;
                () = &mut changed => {}
                () = tokio::time::sleep(wake - now) => {}
            }
        }
    }
}

impl fmt::Debug for SimClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = self.lock();
        f.debug_struct("SimClock")
            .field("segments", &plan.segments)
            .field("pauses", &plan.pauses)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn an_undrifted_clock_reads_true_time() {
        let clock = SimClock::new();
        assert_eq!(clock.local_at(secs(7.0)), secs(7.0));
    }

    #[test]
    fn drift_changes_the_rate_but_keeps_the_reading_continuous() {
        let clock = SimClock::new();
        clock.set_drift(secs(10.0), -0.5);
        assert_eq!(clock.local_at(secs(10.0)), secs(10.0));
        assert_eq!(clock.local_at(secs(14.0)), secs(12.0));
        clock.set_drift(secs(14.0), 0.0);
        assert_eq!(clock.local_at(secs(15.0)), secs(13.0));
        let back = clock.true_at(secs(12.0));
        assert!(back >= secs(14.0) && back < secs(14.0) + Duration::from_micros(1));
    }

    #[test]
    fn a_paused_host_resumes_only_after_every_overlapping_pause() {
        let clock = SimClock::new();
        clock.pause(secs(5.0), secs(2.0));
        clock.pause(secs(6.5), secs(2.0));
        assert_eq!(clock.resumed_at(secs(5.5)), secs(8.5));
        assert_eq!(clock.resumed_at(secs(4.0)), secs(4.0));
    }
}
