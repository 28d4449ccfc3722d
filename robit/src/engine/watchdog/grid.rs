//! The renewal grid: where in time the watchdog puts a hold's next renewal.
//!
//! A renewal is due a renew period after the send of the last. The watchdog moves it back
//! onto a grid of [`MAX_STEP`] steps (or a sixteenth of the period, if that is shorter),
//! counted from when the watchdog was made, so that renewals due within one step are
//! taken out together and go out as one batch. And it keeps count of the renewals placed
//! in each step still to come: a step that already has more than a crowd (half again
//! the average share of the holds the lane watches, and a few more) sends the renewal to
//! the latest earlier step with room, up to half a period early. Holds taken together
//! then spread over that half period, a little more at each renewal, rather than
//! renewing in one burst that holds up every other call on the driver's connection. A
//! lone hold is never moved off its step: it renews a period after its last renewal, to
//! within a step.
//!
//! Renewing early is always safe: validity counts from each renewal's send.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

/// The longest step of the grid: how much earlier than due a renewal may go out so that
/// it joins others (besides the spreading of a crowd).
pub(super) const MAX_STEP: Duration = Duration::from_millis(10);

/// When a renewal of a hold whose last acquire or renewal was sent at `sent` is due, and
/// the earliest it may go out: a renew `period` after, and half a period after.
pub(crate) fn window(sent: Instant, period: Duration) -> (Instant, Instant) {
    (sent + period, sent + period / 2)
}

/// The renewals placed in each step still to come, by the step's start.
#[derive(Debug, Default)]
pub(super) struct Grid {
    load: BTreeMap<Instant, u32>,
}

impl Grid {
    /// Places a renewal due at `target` (see the module's rule), for a lane of `holds`
    /// holds renewed every `period`, on the grid starting at `epoch`.
    pub(super) fn place(
        &mut self,
        epoch: Instant,
        target: Instant,
        earliest: Instant,
        period: Duration,
        holds: usize,
    ) -> Instant {
        let step = (period / 16).min(MAX_STEP);
        if step.is_zero() {
            return target;
        }
        let crowd = crowd(holds, step, period);
        let mut at = on_grid(epoch, target, step);
        loop {
            let earlier = at.checked_sub(step).filter(|earlier| *earlier >= earliest);
            let load = self.load.entry(at).or_default();
            if *load < crowd || earlier.is_none() {
                *load += 1;
                return at;
            }
            at = earlier.unwrap_or(at);
        }
    }

    /// A renewal placed at `at` will not go out there after all: its hold ended.
    pub(super) fn unplace(&mut self, at: Instant) {
        if let Some(load) = self.load.get_mut(&at) {
            *load -= 1;
            if *load == 0 {
                self.load.remove(&at);
            }
        }
    }

    /// The steps that start at `now` or before have passed.
    pub(super) fn passed(&mut self, now: Instant) {
        let after = now + Duration::from_nanos(1);
        self.load = self.load.split_off(&after);
    }
}

/// How many renewals a step takes before the next goes to an earlier step: half again
/// the share of `holds` renewed every `period` that falls in one `step`, and a few more.
fn crowd(holds: usize, step: Duration, period: Duration) -> u32 {
    let share = (holds as u128 * step.as_nanos()) / period.as_nanos().max(1);
    u32::try_from(share + share / 2 + 8).unwrap_or(u32::MAX)
}

/// The start of the step of the grid (from `epoch`, in `step`s) that `at` falls in.
fn on_grid(epoch: Instant, at: Instant, step: Duration) -> Instant {
    let since = at.saturating_duration_since(epoch).as_nanos();
    let step_nanos = step.as_nanos();
    let back = u64::try_from(since % step_nanos).unwrap_or(0);
    at - Duration::from_nanos(back)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Grid, MAX_STEP, window};

    const PERIOD: Duration = Duration::from_secs(10);

    #[test]
    fn a_renewal_is_due_a_period_after_the_last_send_and_may_go_half_a_period_early() {
        let sent = Instant::now();
        let (due, earliest) = window(sent, PERIOD);
        assert_eq!(due, sent + PERIOD);
        assert_eq!(earliest, sent + PERIOD / 2);
    }

    #[test]
    fn a_lone_renewal_goes_out_at_the_start_of_its_step() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let target = epoch + PERIOD + Duration::from_millis(7);
        let at = grid.place(epoch, target, target - PERIOD / 4, PERIOD, 1);
        assert_eq!(at, epoch + PERIOD);
    }

    #[test]
    fn a_crowd_due_together_spreads_back_over_the_steps_before_it() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let target = epoch + PERIOD;
        let earliest = target - PERIOD / 4;
        // 1000 holds: a share of one per step, a crowd of 9.
        let placed: Vec<Instant> = (0..100)
            .map(|_| grid.place(epoch, target, earliest, PERIOD, 1000))
            .collect();
        for (nth, at) in placed.iter().enumerate() {
            let steps_back = u32::try_from(nth / 9).unwrap();
            assert_eq!(*at, target - MAX_STEP * steps_back, "renewal {nth}");
        }
    }

    #[test]
    fn a_crowd_never_goes_out_sooner_than_the_earliest_it_may() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let target = epoch + PERIOD;
        let earliest = target - MAX_STEP * 2;
        let placed: Vec<Instant> = (0..40)
            .map(|_| grid.place(epoch, target, earliest, PERIOD, 1000))
            .collect();
        assert!(placed.iter().all(|at| *at >= earliest && *at <= target));
        assert_eq!(placed.iter().filter(|at| **at == earliest).count(), 40 - 18);
    }

    #[test]
    fn a_short_period_s_grid_has_steps_of_a_sixteenth_of_it() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let period = Duration::from_millis(80);
        let target = epoch + Duration::from_millis(87);
        let at = grid.place(epoch, target, target - period / 2, period, 1);
        assert_eq!(at, epoch + Duration::from_millis(85));
    }

    #[test]
    fn a_renewal_taken_back_frees_its_place_and_no_other() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let target = epoch + PERIOD;
        // No holds: a crowd of 8.
        let placed: Vec<Instant> = (0..8)
            .map(|_| grid.place(epoch, target, epoch, PERIOD, 0))
            .collect();
        assert!(placed.iter().all(|at| *at == target));
        grid.unplace(target);
        assert_eq!(grid.place(epoch, target, epoch, PERIOD, 0), target);
        assert_eq!(
            grid.place(epoch, target, epoch, PERIOD, 0),
            target - MAX_STEP,
            "the step forgot the renewals still placed there"
        );
    }

    #[test]
    fn steps_that_passed_are_forgotten() {
        let epoch = Instant::now();
        let mut grid = Grid::default();
        let target = epoch + PERIOD;
        for _ in 0..9 {
            grid.place(epoch, target, epoch, PERIOD, 1000);
        }
        grid.passed(target);
        let again = grid.place(epoch, target, epoch, PERIOD, 1000);
        assert_eq!(again, target, "a step that passed still counted as full");
    }
}
