//! Simulated clocks inside a turmoil world: drift changes when timers fire in true time,
//! and a paused host's timers wait for the end of the pause.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use robit::sources::Clock;
use robit_sim::{SimClock, true_now};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs a host that sleeps `local` on `clock` and reports the true instant it woke.
fn wake_time(clock: SimClock, local: Duration) -> Duration {
    let woke = Arc::new(Mutex::new(None));
    let mut sim = turmoil::Builder::new().build();
    let (report, host_clock) = (Arc::clone(&woke), clock);
    sim.client("host", async move {
        let deadline = host_clock.now() + local;
        host_clock.sleep_until(deadline).await;
        *report.lock().expect("not poisoned") = Some(true_now());
        Ok(())
    });
    sim.run().expect("the simulation runs");
    let reported = *woke.lock().expect("not poisoned");
    reported.expect("the host woke")
}

#[test]
fn a_fast_clock_fires_its_timers_early_in_true_time() {
    let clock = SimClock::new();
    clock.set_drift(Duration::ZERO, 1.0);
    let woke = wake_time(clock, ms(1000));
    assert!(woke >= ms(500) && woke <= ms(502), "woke at {woke:?}");
}

#[test]
fn a_slow_clock_fires_its_timers_late_in_true_time() {
    let clock = SimClock::new();
    clock.set_drift(Duration::ZERO, -0.5);
    let woke = wake_time(clock, ms(1000));
    assert!(woke >= ms(2000) && woke <= ms(2002), "woke at {woke:?}");
}

#[test]
fn a_timer_due_during_a_pause_fires_when_the_pause_ends() {
    let clock = SimClock::new();
    clock.pause(ms(300), ms(1700));
    let woke = wake_time(clock, ms(1000));
    assert!(woke >= ms(2000) && woke <= ms(2002), "woke at {woke:?}");
}

#[test]
fn a_timer_due_after_a_pause_is_not_delayed_by_it() {
    let clock = SimClock::new();
    clock.pause(ms(100), ms(200));
    let woke = wake_time(clock, ms(1000));
    assert!(woke >= ms(1000) && woke <= ms(1002), "woke at {woke:?}");
}

#[test]
fn a_drift_set_while_a_host_sleeps_moves_its_wake_up() {
    let clock = SimClock::new();
    let woke = Arc::new(Mutex::new(None));
    let mut sim = turmoil::Builder::new().build();
    let (report, host_clock) = (Arc::clone(&woke), clock.clone());
    sim.client("host", async move {
        let deadline = host_clock.now() + ms(1000);
        host_clock.sleep_until(deadline).await;
        *report.lock().expect("not poisoned") = Some(true_now());
        Ok(())
    });
    // Half-way, the clock starts running at double speed: the remaining 500 ms of local
    // time pass in 250 ms of true time.
    while sim.elapsed() < ms(500) {
        sim.step().expect("the simulation steps");
    }
    clock.set_drift(ms(500), 1.0);
    sim.run().expect("the simulation runs");
    let woke = woke.lock().expect("not poisoned").expect("the host woke");
    assert!(woke >= ms(750) && woke <= ms(752), "woke at {woke:?}");
}
