//! Scenario (d): a quorum of three servers. robit's `RedlockDriver` and rslock's
//! `LockManager` over the same three `redis-server`s of the bench's own, next to robit's
//! single-server driver on the bench's first server: one task on one key, then
//! [`CONTENDERS`] tasks on one key.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use robit::redis::{QuorumStats, RedlockDriver};
use robit_test_support::bench::robit_driver;
use robit_test_support::redis::{CountingConnector, RedisServer};
use rslock::LockManager;

use crate::contention::{CONTENDERS, Contended, HOLD, contend};
use crate::lockers::{RSLOCK_DELAYS, Robit, Rslock, cycle, rslock_manager};
use crate::meter::{Meter, Metered, RoundTrips};
use crate::table::{Table, Unit, percentile};
use crate::uncontended::{ROUNDS, Solo};
use crate::{RSLOCK, Setup, scale, scaled};

/// Servers in the quorum.
const SERVERS: usize = 3;
/// How long a run waits, its time taken, for a quorum's late answers and give-backs,
/// so that they are counted in its work and not in the next run's.
const SETTLE: Duration = Duration::from_millis(20);

/// The three servers, robit's quorum over them and the meter that sums their work.
struct Quorum {
    servers: Vec<RedisServer>,
    /// Over one [`robit_driver`] per server: one counted command connection and one
    /// pub/sub connection each.
    driver: RedlockDriver<CountingConnector>,
    /// robit's round trips, counted on its three command connections together.
    trips: RoundTrips,
    /// The counter behind `trips`, for drivers of other processes, as it were.
    round_trips: Arc<AtomicU64>,
    meter: Meter,
}

impl Quorum {
    async fn start() -> Self {
        let servers: Vec<RedisServer> = (0..SERVERS).map(|_| RedisServer::start()).collect();
        let round_trips = Arc::new(AtomicU64::new(0));
        let members = servers
            .iter()
            .map(|server| robit_driver(server, &round_trips))
            .collect();
        Self {
            driver: RedlockDriver::new(members).unwrap(),
            trips: RoundTrips::Client(Arc::clone(&round_trips)),
            round_trips,
            meter: Meter::new(&servers).await,
            servers,
        }
    }

    /// Another quorum driver over the same servers, with connections of its own, as
    /// another process has; its round trips are counted with the first's.
    fn another_driver(&self) -> RedlockDriver<CountingConnector> {
        let members = self
            .servers
            .iter()
            .map(|server| robit_driver(server, &self.round_trips))
            .collect();
        RedlockDriver::new(members).unwrap()
    }

    fn urls(&self) -> Vec<String> {
        self.servers.iter().map(RedisServer::url).collect()
    }
}

/// What the quorum did between two readings of its stats.
fn stats_since(before: QuorumStats, after: QuorumStats) -> [u64; 3] {
    [
        after.attempts - before.attempts,
        after.split - before.split,
        after.raised - before.raised,
    ]
}

/// The quorum's rows for robit's quorum, per `acquisitions`: attempts per acquisition,
/// split votes, raised grants. NaN for the others.
fn quorum_rows(stats: Option<[u64; 3]>, acquisitions: usize) -> [f64; 3] {
    stats.map_or([f64::NAN; 3], |[attempts, split, raised]| {
        [
            attempts as f64 / acquisitions.max(1) as f64,
            split as f64,
            raised as f64,
        ]
    })
}

/// The figures that hold on a busy machine first: commands, server CPU, client CPU,
/// round trips; then the wall-clock ones. `figures` starts with the meter's
/// `[round trips, commands, server CPU, client CPU]`.
fn steady_first(mut figures: Vec<f64>) -> Vec<f64> {
    figures[..4].rotate_left(1);
    figures
}

const STEADY_ROWS: [(&str, Unit); 4] = [
    ("Redis commands/cycle, all servers", Unit::Fraction),
    ("Redis CPU/cycle, all servers", Unit::Micros),
    ("client CPU/cycle", Unit::Micros),
    ("round trips/cycle, all servers", Unit::Fraction),
];

const QUORUM_ROWS: [(&str, Unit); 3] = [
    ("quorum attempts/acquisition", Unit::Fraction),
    ("split votes", Unit::Count),
    ("grants raised (2nd round trip)", Unit::Count),
];

pub(crate) async fn run(setup: &mut Setup) {
    let mut quorum = Quorum::start().await;
    println!("\n## (d) A quorum of {SERVERS} servers\n");
    println!("robit's `RedlockDriver` over {SERVERS} `redis-server`s of the bench's own, each");
    println!("member a driver as above; rslock's `LockManager` over the same {SERVERS}; robit's");
    println!("single-server driver, on the server of (a)–(c), for comparison. Commands,");
    println!("Redis CPU and round trips are summed over the servers a library used: a");
    println!("quorum's claims go to every server at once, so its round trips are not");
    println!("sequential. Split votes and raised grants are robit's `driver.stats()`.");
    solo(setup, &mut quorum).await;
    contended(setup, &mut quorum).await;
}

/// One task, one key, lock + unlock: the three libraries in turns, each round in a
/// different order.
async fn solo(setup: &mut Setup, quorum: &mut Quorum) {
    let mut robit3 = Robit::new(&quorum.driver, "quorum-solo");
    let mut rslock3 = Rslock::new(&LockManager::new(quorum.urls()), "quorum-solo");
    let mut robit1 = Robit::new(&setup.driver, "quorum-solo");
    // Warm up: connections, script caches, every member's namespace.
    for _ in 0..200 {
        cycle(&mut robit3).await;
        cycle(&mut rslock3).await;
        cycle(&mut robit1).await;
    }
    tokio::time::sleep(SETTLE).await;
    let mut solos = [(); 3].map(|()| Solo::settling(SETTLE));
    let before = quorum.driver.stats();
    for round in 0..ROUNDS {
        for turn in 0..3 {
            let (meter, trips) = (&mut quorum.meter, &quorum.trips);
            match (round + turn) % 3 {
                0 => solos[0].round(&mut robit3, meter, trips).await,
                1 => solos[1].round(&mut rslock3, meter, &RSLOCK).await,
                _ => {
                    solos[2]
                        .round(&mut robit1, &mut setup.meter, &setup.robit)
                        .await
                }
            }
        }
    }
    let stats = stats_since(before, quorum.driver.stats());
    let cycles = ROUNDS * scaled(500);
    println!("\n### (d1) Uncontended: one task, one key, lock + unlock\n");
    let mut rows = STEADY_ROWS.to_vec();
    rows.extend([
        ("cycles/s", Unit::Count),
        ("cycle p50", Unit::Millis),
        ("cycle p99", Unit::Millis),
    ]);
    rows.extend(QUORUM_ROWS);
    let mut table = Table::new(&rows);
    let labels = ["robit, 3 servers", "rslock, 3 servers", "robit, 1 server"];
    for (index, (label, solo)) in labels.into_iter().zip(solos).enumerate() {
        let mut figures = steady_first(solo.figures());
        figures.extend(quorum_rows((index == 0).then_some(stats), cycles));
        table.column(label, figures);
    }
    table.print(&[(0, 1), (0, 2)]);
}

/// One contended run's figures, in the order of [`contended`]'s rows.
fn contended_figures(run: &Contended, stats: Option<[u64; 3]>) -> Vec<f64> {
    let shares = run.shares();
    let acquired: usize = shares.iter().sum();
    let mean = acquired as f64 / CONTENDERS as f64;
    let min = *shares.iter().min().unwrap() as f64;
    let max = *shares.iter().max().unwrap() as f64;
    let waits = run.waits();
    let mut figures = steady_first(run.work.per(run.acquisitions()).to_vec());
    figures.extend([
        acquired as f64 / run.window.as_secs_f64(),
        min,
        mean,
        max,
        min / mean,
        run.gave_up as f64,
        percentile(&waits, 0.5),
        percentile(&waits, 0.99),
    ]);
    figures.extend(quorum_rows(stats, run.acquisitions()));
    figures
}

/// [`CONTENDERS`] tasks on one key, as in (c): robit on the quorum, rslock on the quorum
/// at both retry delays, robit on one server.
async fn contended(setup: &mut Setup, quorum: &mut Quorum) {
    let window = Duration::from_secs_f64(3.0 * scale());
    println!(
        "\n### (d2) Contention: {CONTENDERS} tasks, one key, each holding it ~{} ms\n",
        HOLD.as_millis()
    );
    println!(
        "As (c), {:.1} s per library. Acquisitions per task count those granted",
        window.as_secs_f64()
    );
    println!("inside the run; min / mean is the least-served task's share of the mean (1 is");
    println!("fair). Per acquisition: everything the run did, over every acquisition.\n");
    let mut table = Table::new(&contended_rows());
    cycle(&mut Robit::new(&quorum.driver, "quorum-contended")).await;
    tokio::time::sleep(SETTLE).await;
    let robit: Vec<_> = (0..CONTENDERS)
        .map(|_| Robit::new(&quorum.driver, "quorum-contended"))
        .collect();
    let before = quorum.driver.stats();
    let run = contend(
        robit,
        &mut Metered {
            meter: &mut quorum.meter,
            trips: &quorum.trips,
        },
        window,
    )
    .await;
    let stats = stats_since(before, quorum.driver.stats());
    table.column("robit, 3 servers", contended_figures(&run, Some(stats)));
    for delay in RSLOCK_DELAYS {
        tokio::time::sleep(SETTLE).await;
        let manager = rslock_manager(quorum.urls(), delay);
        let run = contend_rslock(&manager, &mut quorum.meter, window).await;
        table.column(
            format!("rslock, 3 servers, d = {delay} ms"),
            contended_figures(&run, None),
        );
    }
    cycle(&mut Robit::new(&setup.driver, "quorum-contended")).await;
    let robit: Vec<_> = (0..CONTENDERS)
        .map(|_| Robit::new(&setup.driver, "quorum-contended"))
        .collect();
    let run = contend(
        robit,
        &mut Metered {
            meter: &mut setup.meter,
            trips: &setup.robit,
        },
        window,
    )
    .await;
    table.column("robit, 1 server", contended_figures(&run, None));
    tokio::time::sleep(SETTLE).await;
    let (run, stats) = contend_apart(quorum, window).await;
    table.column(
        "robit, 3 servers, a driver per task",
        contended_figures(&run, Some(stats)),
    );
    table.print(&[(0, 1), (0, 2), (0, 3)]);
}

/// robit on the quorum with a driver per task, as separate processes have: each task's
/// claims reach the servers on connections of its own, so the servers may queue the
/// waiters in different orders, and votes split more often than when one driver's
/// connections carry every task's claims in one order.
async fn contend_apart(quorum: &mut Quorum, window: Duration) -> (Contended, [u64; 3]) {
    let drivers: Vec<_> = (0..CONTENDERS).map(|_| quorum.another_driver()).collect();
    for driver in &drivers {
        cycle(&mut Robit::new(driver, "quorum-contended")).await;
    }
    tokio::time::sleep(SETTLE).await;
    let before: Vec<_> = drivers.iter().map(RedlockDriver::stats).collect();
    let robit: Vec<_> = drivers
        .iter()
        .map(|driver| Robit::new(driver, "quorum-contended"))
        .collect();
    let run = contend(
        robit,
        &mut Metered {
            meter: &mut quorum.meter,
            trips: &quorum.trips,
        },
        window,
    )
    .await;
    let mut stats = [0; 3];
    for (driver, before) in drivers.iter().zip(before) {
        let since = stats_since(before, driver.stats());
        for (total, one) in stats.iter_mut().zip(since) {
            *total += one;
        }
    }
    (run, stats)
}

async fn contend_rslock(manager: &LockManager, meter: &mut Meter, window: Duration) -> Contended {
    cycle(&mut Rslock::new(manager, "quorum-contended")).await;
    let lockers: Vec<_> = (0..CONTENDERS)
        .map(|_| Rslock::new(manager, "quorum-contended"))
        .collect();
    contend(
        lockers,
        &mut Metered {
            meter,
            trips: &RSLOCK,
        },
        window,
    )
    .await
}

fn contended_rows() -> Vec<(&'static str, Unit)> {
    let mut rows = vec![
        ("Redis commands/acquisition, all servers", Unit::Fraction),
        ("Redis CPU/acquisition, all servers", Unit::Micros),
        ("client CPU/acquisition", Unit::Micros),
        ("round trips/acquisition, all servers", Unit::Fraction),
        ("acquisitions/s", Unit::Count),
        ("acquisitions/task, min", Unit::Count),
        ("acquisitions/task, mean", Unit::Fraction),
        ("acquisitions/task, max", Unit::Count),
        ("min / mean", Unit::Fraction),
        ("gave up", Unit::Count),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
    ];
    rows.extend(QUORUM_ROWS);
    rows
}
