//! Several mutexes on one host share its driver, so a release can hand the lock to a
//! waiter of the same process directly. The scenarios that attack that path must
//! actually take it: the driver's direct wakes are counted (from its trace events), and
//! consecutive holders are often two mutexes of one host.

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use robit_sim::{EventKind, History, Run, Scenario, Timeline, run};
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Counts the Redis driver's direct wakes of its own waiters.
#[derive(Clone, Default)]
struct DirectWakes(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> Layer<S> for DirectWakes {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        struct Message(bool);
        impl Visit for Message {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    let text = format!("{value:?}");
                    self.0 = text.starts_with("woke the ");
                }
            }
        }
        let mut message = Message(false);
        event.record(&mut message);
        if event.metadata().target() == "robit" && message.0 {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// Where the direct wakes seen on this thread go, while a counted run is on it.
    static COUNTING: RefCell<Option<DirectWakes>> = const { RefCell::new(None) };
}

/// The process's one subscriber: it hands robit's events to the counter of the thread
/// they happen on, if that thread is in a counted run (a simulated run happens on the
/// thread that called it), and ignores everything else.
///
/// A subscriber per run (`tracing::subscriber::with_default`) would not do in a test
/// binary shared with other tests: tracing caches, per callsite, whether any subscriber
/// wants it, and a callsite first reached by another test, on a thread without one, at
/// the moment a run's subscriber was being set up, could be cached as wanted by none,
/// and its events missed. With one global subscriber that answers "sometimes", every
/// callsite asks [`Layer::enabled`] every time.
struct ThreadCounters;

impl<S: tracing::Subscriber> Layer<S> for ThreadCounters {
    fn register_callsite(&self, metadata: &'static tracing::Metadata<'static>) -> Interest {
        if metadata.is_event() && metadata.target() == "robit" {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, _: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        COUNTING.with(|counting| counting.borrow().is_some())
    }

    fn on_event(&self, event: &tracing::Event<'_>, context: Context<'_, S>) {
        COUNTING.with(|counting| {
            if let Some(wakes) = &*counting.borrow() {
                wakes.on_event(event, context);
            }
        });
    }
}

/// Counts on this thread until dropped.
struct Counting;

impl Counting {
    fn start(wakes: &DirectWakes) -> Self {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            tracing::subscriber::set_global_default(
                tracing_subscriber::registry().with(ThreadCounters),
            )
            .expect("nothing else in this test binary sets a global subscriber");
        });
        COUNTING.with(|counting| *counting.borrow_mut() = Some(wakes.clone()));
        Self
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        COUNTING.with(|counting| *counting.borrow_mut() = None);
    }
}

/// Runs `scenario` with `seed`, counting the driver's direct wakes.
fn counted_run(scenario: &Scenario, seed: u64) -> (Run, usize) {
    let wakes = DirectWakes::default();
    let counting = Counting::start(&wakes);
    let run = run(scenario, seed).expect("the run completes");
    drop(counting);
    (run, wakes.0.load(Ordering::Relaxed))
}

fn scenario(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    Scenario::load(path).expect("the scenario loads")
}

/// Acquisitions, and those whose previous holder was another mutex of the same host.
fn hand_offs(history: &History) -> (usize, usize) {
    let host = |who: &str| who.split_once('#').map_or(who, |(host, _)| host).to_owned();
    let (mut acquired, mut within_host) = (0, 0);
    let mut previous: Option<String> = None;
    for event in history.events() {
        if let EventKind::Acquired { .. } = event.kind {
            acquired += 1;
            if let Some(previous) = &previous
                && *previous != event.who
                && host(previous) == host(&event.who)
            {
                within_host += 1;
            }
            previous = Some(event.who.clone());
        }
    }
    (acquired, within_host)
}

#[test]
fn mutexes_sharing_a_driver_hand_the_lock_to_each_other_and_keep_every_promise() {
    // At a 5 ms tick rather than the default 25 ms: hand-offs between hosts take a round
    // trip, which the default tick rounds up to 50 ms, far from the scenario's 1-5 ms
    // latency; the hand-off counts below are about the latency, not the tick.
    let scenario = scenario("shared-driver.toml")
        .with_tick(Duration::from_millis(5))
        .expect("a tick in range");
    let (run, wakes) = counted_run(&scenario, 1);
    assert!(run.verdict.passed(), "{:?}", run.violations);
    let (acquired, within_host) = hand_offs(&run.history);
    assert!(acquired >= 500, "only {acquired} acquisitions");
    // Nearly every hand-off inside a host is a direct wake. (The second wake, on the
    // release's answer, mostly finds the waiter's watch not yet registered, its claim in
    // flight: it is kept for the watch, and not counted.)
    assert!(
        wakes * 10 >= within_host * 9,
        "{wakes} direct wakes for {within_host} hand-offs inside a host"
    );
    // Three of a host's mutexes wait behind each grant: a good share of hand-offs stay
    // inside one process.
    assert!(
        within_host * 5 >= acquired,
        "{within_host} of {acquired} hand-offs stayed inside a host"
    );
    let lanes = Timeline::of_run(&scenario, &run).clients().to_vec();
    assert_eq!(lanes, ["c1#1", "c1#2", "c1#3", "c2#1", "c2#2", "c2#3"]);
}

#[test]
fn mutexes_sharing_a_driver_keep_every_promise_under_faults() {
    let scenario = scenario("shared-driver-faults.toml");
    for seed in 1..=2 {
        let (run, wakes) = counted_run(&scenario, seed);
        assert!(run.verdict.passed(), "seed {seed}: {:?}", run.violations);
        let (acquired, within_host) = hand_offs(&run.history);
        assert!(
            wakes >= 10,
            "seed {seed}: {wakes} direct wakes, {within_host} of {acquired} hand-offs inside a host"
        );
    }
}
