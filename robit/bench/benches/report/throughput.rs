//! Scenario (b): 64 tasks, each looping lock + unlock on a key of its own, all over one
//! command connection per library: robit through a `Mutex` per task and through one
//! shared `Locker`, and rslock.

use std::time::{Duration, Instant};

use rslock::LockManager;

use crate::lockers::{ByName, Locker, Robit, Rslock, cycle, robit_locker};
use crate::meter::{Meter, RoundTrips, Work};
use crate::table::{Table, Unit};
use crate::{RSLOCK, Setup, scaled};
use robit::redis::RedisDriver;
use robit_test_support::bench::robit_driver_batching;
use robit_test_support::redis::CountingConnector;

/// Tasks, each on its own key.
const TASKS: usize = 64;
/// Measured rounds per library, after a warm-up round, turning which goes first.
const ROUNDS: usize = 6;

/// Cycles, time and work of one library, over the measured rounds.
#[derive(Default)]
struct Many {
    cycles: usize,
    elapsed: Duration,
    work: Work,
}

impl Many {
    /// One round: `lockers` each loop lock + unlock `cycles` times, concurrently.
    async fn round<L: Locker>(
        &mut self,
        lockers: Vec<L>,
        cycles: usize,
        meter: &mut Meter,
        trips: &RoundTrips,
    ) {
        meter.reset(trips).await;
        let start = Instant::now();
        let tasks: Vec<_> = lockers
            .into_iter()
            .map(|mut locker| {
                tokio::spawn(async move {
                    for _ in 0..cycles {
                        cycle(&mut locker).await;
                    }
                })
            })
            .collect();
        let total = tasks.len() * cycles;
        for task in tasks {
            task.await.unwrap();
        }
        self.elapsed += start.elapsed();
        self.cycles += total;
        self.work += meter.read(trips).await;
    }

    fn add(&mut self, other: Self) {
        self.cycles += other.cycles;
        self.elapsed += other.elapsed;
        self.work += other.work;
    }

    fn figures(&self) -> Vec<f64> {
        let mut figures = self.work.per(self.cycles).to_vec();
        figures.push(self.cycles as f64 / self.elapsed.as_secs_f64());
        figures
    }
}

/// The libraries measured, in the order of the table's columns.
#[derive(Clone, Copy)]
enum Library {
    /// A `Mutex` per task, locked again and again.
    Mutex,
    /// One shared `Locker`, each task locking its name through it.
    Locker,
    /// A `Mutex` per task over a driver that sends every call alone (`max_batch(1)`).
    Unbatched,
    Rslock,
}

const LIBRARIES: [Library; 4] = [
    Library::Mutex,
    Library::Locker,
    Library::Unbatched,
    Library::Rslock,
];

/// What each library runs on, and its figures so far.
struct Bench<'a> {
    setup: &'a mut Setup,
    locker: robit::Locker,
    /// A driver on the same server that batches nothing, its round trips counted with
    /// the setup driver's.
    unbatched: RedisDriver<CountingConnector>,
    manager: LockManager,
    cycles: usize,
    /// One per library, in the order of [`LIBRARIES`].
    many: [Many; 4],
}

impl Bench<'_> {
    /// One round of `library`, counted in its figures or, for a warm-up, not.
    async fn round(&mut self, library: Library, counted: bool) {
        let names = (0..TASKS).map(|task| format!("many-{task}"));
        let Setup {
            driver,
            robit: trips,
            meter,
            ..
        } = &mut *self.setup;
        let mut many = Many::default();
        match library {
            Library::Mutex => {
                let lockers = names.map(|name| Robit::new(driver, &name)).collect();
                many.round::<Robit>(lockers, self.cycles, meter, trips)
                    .await;
            }
            Library::Locker => {
                let lockers = names.map(|name| ByName::new(&self.locker, &name)).collect();
                many.round::<ByName>(lockers, self.cycles, meter, trips)
                    .await;
            }
            Library::Unbatched => {
                let lockers = names
                    .map(|name| Robit::new(&self.unbatched, &name))
                    .collect();
                many.round::<Robit>(lockers, self.cycles, meter, trips)
                    .await;
            }
            Library::Rslock => {
                let lockers = names
                    .map(|name| Rslock::new(&self.manager, &name))
                    .collect();
                many.round::<Rslock>(lockers, self.cycles, meter, &RSLOCK)
                    .await;
            }
        }
        if counted {
            self.many[library as usize].add(many);
        }
    }
}

pub(crate) async fn run(setup: &mut Setup) {
    let mut bench = Bench {
        locker: robit_locker(&setup.driver),
        unbatched: robit_driver_batching(&setup.server, &setup.round_trips, 1),
        manager: LockManager::new(vec![setup.server.url()]),
        setup,
        cycles: scaled(300),
        many: Default::default(),
    };
    for library in LIBRARIES {
        // Warm-up, not counted.
        bench.round(library, false).await;
    }
    // Which goes first turns with each round, so that drift in the machine's load hits
    // every library alike.
    for round in 0..ROUNDS {
        for turn in 0..LIBRARIES.len() {
            let library = LIBRARIES[(round + turn) % LIBRARIES.len()];
            bench.round(library, true).await;
        }
    }
    println!("\n## (b) Throughput: {TASKS} tasks, each on its own key, one connection\n");
    println!("robit's `Mutex`: one per task, locked again and again; its `Locker`: one,");
    println!("shared by the tasks, each locking its own name through it; `Mutex`, alone:");
    println!("as the first, over a driver that sends every call on its own (`max_batch(1)`).\n");
    let mut table = Table::new(&[
        ("round trips/cycle", Unit::Fraction),
        ("Redis commands/cycle", Unit::Fraction),
        ("server CPU/cycle", Unit::Micros),
        ("client CPU/cycle", Unit::Micros),
        ("cycles/s", Unit::Count),
    ]);
    let [mutex, locker, unbatched, rslock] = &bench.many;
    table.column("robit Mutex", mutex.figures());
    table.column("robit Locker", locker.figures());
    table.column("robit Mutex, alone", unbatched.figures());
    table.column("rslock", rslock.figures());
    table.print(&[(0, 3), (1, 3), (0, 2)]);
}
