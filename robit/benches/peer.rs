//! robit's Redis driver next to rslock, the Redlock crate, measured in the same run
//! against the same redis-server (started by the bench on a free port).
//!
//! `cargo bench -p robit --bench peer` — a bench binary, not a test: it reports, it does
//! not assert. `ROBIT_BENCH_SCALE=0.2` shortens every phase; `ROBIT_BENCH_PHASES=
//! uncontended,throughput,contention` picks phases; `ROBIT_BENCH_RSLOCK_DELAYS=10,200`
//! sets the retry delays (in ms, at least 2) that rslock runs the contention phase with.
//!
//! Both libraries get the same TTL, and in the contention phase the same wait budget:
//! robit waits with `Wait::Timeout`, rslock retries often enough that its sleeps add up to
//! the budget on average. Redis commands are counted by the server (`INFO commandstats`
//! after `CONFIG RESETSTAT`), so both libraries are counted the same way.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used
)]

mod common;
#[path = "../tests/support/mod.rs"]
mod support;

use common::{scale, scaled};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use robit::redis::RedisDriver;
use robit::{Guard, LockError, Mutex, Wait};
use rslock::LockManager;
use support::RedisServer;

/// The lease TTL, for both libraries.
const TTL: Duration = Duration::from_secs(10);
/// How long a contended lock call may wait before giving up, for both libraries.
const WAIT_BUDGET: Duration = Duration::from_secs(2);
/// How long each contender holds the lock (a tokio sleep, which rounds up).
const HOLD: Duration = Duration::from_millis(1);
/// Tasks in the throughput phase, each on its own key.
const TASKS: usize = 64;
/// Tasks in the contention phase, all on one key.
const CONTENDERS: usize = 8;

/// The commands robit's driver sends itself: its scripts by hash (and the load that
/// follows a `NOSCRIPT`), and the subscription's own commands. Every other command in
/// the server's stats ran inside one of its scripts.
const ROBIT_SENDS: &[&str] = &["evalsha", "eval", "script|load", "subscribe", "ping"];
/// The commands rslock sends itself: `SET NX PX` to acquire, its unlock script by hash.
/// Its script calls `GET` and `DEL` inside.
const RSLOCK_SENDS: &[&str] = &["set", "evalsha", "eval", "script|load"];

/// rslock's retry delays for the contention phase, in ms.
fn rslock_delays() -> Vec<u64> {
    let delays: Vec<u64> = std::env::var("ROBIT_BENCH_RSLOCK_DELAYS")
        .unwrap_or_else(|_| "10,200".to_owned())
        .split(',')
        .map(|d| {
            d.trim()
                .parse()
                .expect("ROBIT_BENCH_RSLOCK_DELAYS: milliseconds")
        })
        .collect();
    // rslock sleeps a random whole number of ms in [0, delay): 1 ms would never sleep,
    // 0 ms panics.
    assert!(
        delays.iter().all(|&d| d >= 2),
        "rslock retry delays must be at least 2 ms"
    );
    delays
}

/// rslock's mean sleep between attempts for a retry delay: uniform over the whole
/// milliseconds `0..delay`.
fn rslock_mean_sleep(delay_ms: u64) -> Duration {
    Duration::from_secs_f64((delay_ms - 1) as f64 / 2.0 / 1e3)
}

/// rslock's attempt count (its "retry count" counts every attempt, the first included)
/// for the sleeps between them to add up to the wait budget on average.
fn rslock_attempts(delay_ms: u64) -> u32 {
    (WAIT_BUDGET.as_secs_f64() / rslock_mean_sleep(delay_ms).as_secs_f64()).round() as u32 + 1
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank].as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// The two libraries behind one interface.

/// One lock, as a contender in a loop sees it.
trait Locker: Send + 'static {
    type Held: Send;

    /// Acquires, waiting up to the library's budget; `None` if it gave up.
    fn lock(&mut self) -> impl Future<Output = Option<Self::Held>> + Send;

    fn unlock(&mut self, held: Self::Held) -> impl Future<Output = ()> + Send;
}

struct Robit(Mutex);

impl Robit {
    fn new(driver: &RedisDriver, name: &str) -> Self {
        Self(
            Mutex::builder(name, driver.clone())
                .ttl(TTL)
                .wait(Wait::Timeout(WAIT_BUDGET))
                .build()
                .unwrap(),
        )
    }
}

impl Locker for Robit {
    type Held = Guard;

    async fn lock(&mut self) -> Option<Guard> {
        match self.0.lock().await {
            Ok(guard) => Some(guard),
            Err(LockError::Timeout { .. }) => None,
            Err(err) => panic!("robit lock failed: {err}"),
        }
    }

    async fn unlock(&mut self, guard: Guard) {
        guard.unlock().await.unwrap();
    }
}

struct Rslock {
    manager: LockManager,
    key: String,
}

impl Rslock {
    fn new(manager: &LockManager, key: &str) -> Self {
        Self {
            manager: manager.clone(),
            key: format!("rslock:{key}"),
        }
    }
}

impl Locker for Rslock {
    type Held = rslock::Lock;

    async fn lock(&mut self) -> Option<rslock::Lock> {
        match self.manager.lock(self.key.as_str(), TTL).await {
            Ok(lock) => Some(lock),
            Err(rslock::LockError::Unavailable) => None,
            Err(err) => panic!("rslock lock failed: {err}"),
        }
    }

    async fn unlock(&mut self, lock: rslock::Lock) {
        // Best effort, like rslock's own release: it reports nothing.
        self.manager.unlock(&lock).await;
    }
}

/// One lock + unlock.
async fn cycle(locker: &mut impl Locker) {
    let held = locker.lock().await.expect("uncontended lock gave up");
    locker.unlock(held).await;
}

// ---------------------------------------------------------------------------------------
// Measuring what the server and the client did.

/// What the server and the client did for one library over a measured stretch.
#[derive(Debug, Default, Clone, Copy)]
struct Work {
    /// Commands the client sent: one round trip each.
    requests: u64,
    /// Every command the server ran, those inside scripts included.
    executed: u64,
    /// Time the server spent executing the commands the client sent (scripts included),
    /// in µs, as `INFO commandstats` reports it.
    command_us: u64,
    /// CPU time of the whole server process, in s (`INFO cpu`): command execution plus
    /// reading, parsing and answering requests.
    cpu: f64,
    /// Time the client's runtime thread was busy, in s (tokio's worker busy duration):
    /// the client's own work, plus any time the machine ran something else meanwhile.
    client_busy: f64,
}

impl std::ops::AddAssign for Work {
    fn add_assign(&mut self, other: Self) {
        self.requests += other.requests;
        self.executed += other.executed;
        self.command_us += other.command_us;
        self.cpu += other.cpu;
        self.client_busy += other.client_busy;
    }
}

impl Work {
    /// Requests, commands, command time, server CPU and client busy time per operation.
    fn per(&self, operations: usize) -> [f64; 5] {
        let n = operations.max(1) as f64;
        [
            self.requests as f64 / n,
            self.executed as f64 / n,
            self.command_us as f64 / 1e6 / n,
            self.cpu / n,
            self.client_busy / n,
        ]
    }
}

/// Measures the server's work, from its statistics read over a connection of the
/// bench's own, and the client's busy time.
struct Meter {
    admin: MultiplexedConnection,
    /// The server's CPU time at the last reset.
    cpu_at_reset: f64,
    /// The client's busy time at the last reset.
    busy_at_reset: Duration,
}

/// A field (`name:value` line) of an `INFO` answer.
fn info_field<'a>(info: &'a str, name: &str) -> &'a str {
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_default()
        .trim()
}

/// How long the current runtime's threads have been busy.
fn client_busy() -> Duration {
    let metrics = tokio::runtime::Handle::current().metrics();
    (0..metrics.num_workers())
        .map(|worker| metrics.worker_total_busy_duration(worker))
        .sum()
}

impl Meter {
    async fn new(server: &RedisServer) -> Self {
        Self {
            admin: server.admin().await,
            cpu_at_reset: 0.0,
            busy_at_reset: Duration::ZERO,
        }
    }

    async fn info(&mut self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query_async(&mut self.admin)
            .await
            .unwrap()
    }

    async fn version(&mut self) -> String {
        info_field(&self.info("server").await, "redis_version").to_owned()
    }

    /// The server process's CPU time so far, in s.
    async fn cpu(&mut self) -> f64 {
        let info = self.info("cpu").await;
        ["used_cpu_sys", "used_cpu_user"]
            .iter()
            .map(|name| info_field(&info, name).parse::<f64>().unwrap())
            .sum()
    }

    async fn reset(&mut self) {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut self.admin)
            .await
            .unwrap();
        self.cpu_at_reset = self.cpu().await;
        self.busy_at_reset = client_busy();
    }

    /// The server's work since the last reset, but for the bench's own `INFO` and
    /// `CONFIG`; `sends` names the commands the library sends itself.
    async fn read(&mut self, sends: &[&str]) -> Work {
        let client_busy = (client_busy() - self.busy_at_reset).as_secs_f64();
        let cpu = self.cpu().await - self.cpu_at_reset;
        let info = self.info("commandstats").await;
        // name → (calls, µs)
        let stats: BTreeMap<&str, (u64, u64)> = info
            .lines()
            .filter_map(|line| {
                let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let field = |key: &str| {
                    fields
                        .split(',')
                        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))?
                        .parse()
                        .ok()
                };
                Some((name, (field("calls")?, field("usec")?)))
            })
            .filter(|(name, _)| *name != "info" && !name.starts_with("config|"))
            .collect();
        let sent = sends.iter().filter_map(|name| stats.get(name));
        Work {
            requests: sent.clone().map(|(calls, _)| calls).sum(),
            executed: stats.values().map(|(calls, _)| calls).sum(),
            command_us: sent.map(|(_, us)| us).sum(),
            cpu,
            client_busy,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reporting: aligned Markdown tables, each figure of robit over the peer's.

#[derive(Debug, Clone, Copy)]
enum Unit {
    /// Per second, whole.
    Rate,
    /// Two decimals.
    Fraction,
    /// Seconds, shown in ms.
    Millis,
    /// Seconds, shown in µs.
    Micros,
    /// A whole count.
    Count,
}

impl Unit {
    fn show(self, value: f64) -> String {
        if !value.is_finite() {
            return "—".to_owned();
        }
        match self {
            Self::Rate | Self::Count => format!("{value:.0}"),
            Self::Fraction => format!("{value:.2}"),
            Self::Millis => format!("{:.3} ms", value * 1e3),
            Self::Micros => format!("{:.1} µs", value * 1e6),
        }
    }
}

/// A ratio with two significant digits at least, or a dash where it has no meaning.
fn show_ratio(ratio: f64) -> String {
    if !ratio.is_finite() {
        "—".to_owned()
    } else if ratio >= 10.0 {
        format!("{ratio:.0}×")
    } else if ratio >= 0.1 || ratio == 0.0 {
        format!("{ratio:.2}×")
    } else {
        let decimals = (1.0 - ratio.log10().floor()) as usize;
        format!("{ratio:.decimals$}×")
    }
}

struct Table {
    columns: Vec<(&'static str, Unit)>,
    rows: Vec<(String, Vec<f64>)>,
}

impl Table {
    fn new(columns: &[(&'static str, Unit)]) -> Self {
        Self {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, label: impl Into<String>, values: Vec<f64>) {
        assert_eq!(values.len(), self.columns.len());
        self.rows.push((label.into(), values));
    }

    /// Prints the rows, then for each `(ours, theirs, label)` a row of ratios.
    fn print(&self, ratios: &[(usize, usize, String)]) {
        let mut lines: Vec<Vec<String>> = vec![
            std::iter::once(String::new())
                .chain(self.columns.iter().map(|(name, _)| (*name).to_owned()))
                .collect(),
        ];
        for (label, values) in &self.rows {
            lines.push(
                std::iter::once(label.clone())
                    .chain(
                        values
                            .iter()
                            .zip(&self.columns)
                            .map(|(value, (_, unit))| unit.show(*value)),
                    )
                    .collect(),
            );
        }
        for (ours, theirs, label) in ratios {
            let (ours, theirs) = (&self.rows[*ours].1, &self.rows[*theirs].1);
            lines.push(
                std::iter::once(format!("**{label}**"))
                    .chain(ours.iter().zip(theirs).map(|(a, b)| show_ratio(a / b)))
                    .collect(),
            );
        }
        let widths: Vec<usize> = (0..lines[0].len())
            .map(|column| {
                lines
                    .iter()
                    .map(|line| line[column].chars().count())
                    .max()
                    .unwrap()
                    .max(3)
            })
            .collect();
        let print_line = |line: &[String]| {
            let cells: Vec<String> = line
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(column, (cell, &width))| {
                    let pad = " ".repeat(width - cell.chars().count());
                    if column == 0 {
                        format!("{cell}{pad}")
                    } else {
                        format!("{pad}{cell}")
                    }
                })
                .collect();
            println!("| {} |", cells.join(" | "));
        };
        print_line(&lines[0]);
        let rule: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(column, &width)| {
                if column == 0 {
                    "-".repeat(width + 2)
                } else {
                    format!("{}:", "-".repeat(width + 1))
                }
            })
            .collect();
        println!("|{}|", rule.join("|"));
        for line in &lines[1..] {
            print_line(line);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Phase 1: one task, one key.

struct Solo {
    samples: Vec<Duration>,
    elapsed: Duration,
    work: Work,
}

impl Solo {
    fn new() -> Self {
        Self {
            samples: Vec::new(),
            elapsed: Duration::ZERO,
            work: Work::default(),
        }
    }

    async fn round(&mut self, locker: &mut impl Locker, stats: &mut Meter, sends: &[&str]) {
        stats.reset().await;
        let start = Instant::now();
        for _ in 0..scaled(1_000) {
            let t = Instant::now();
            cycle(locker).await;
            self.samples.push(t.elapsed());
        }
        self.elapsed += start.elapsed();
        self.work += stats.read(sends).await;
    }

    fn figures(mut self) -> Vec<f64> {
        self.samples.sort();
        let n = self.samples.len();
        let mut figures = vec![
            n as f64 / self.elapsed.as_secs_f64(),
            percentile(&self.samples, 0.5),
            percentile(&self.samples, 0.99),
        ];
        // One task waits on every round trip: the client's busy time says little here.
        figures.extend(&self.work.per(n)[..4]);
        figures
    }
}

async fn uncontended(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let mut robit = Robit::new(driver, "solo");
    let mut rslock = Rslock::new(&LockManager::new(vec![server.url()]), "solo");
    // Warm up both: connections, script caches.
    for _ in 0..200 {
        cycle(&mut robit).await;
        cycle(&mut rslock).await;
    }
    let (mut ours, mut theirs) = (Solo::new(), Solo::new());
    // Interleaved rounds, alternating which goes first, so that drift in the machine's
    // load hits both alike.
    for round in 0..10 {
        if round % 2 == 0 {
            ours.round(&mut robit, stats, ROBIT_SENDS).await;
            theirs.round(&mut rslock, stats, RSLOCK_SENDS).await;
        } else {
            theirs.round(&mut rslock, stats, RSLOCK_SENDS).await;
            ours.round(&mut robit, stats, ROBIT_SENDS).await;
        }
    }
    println!("\n## Uncontended lock + unlock, one task, one key\n");
    let mut table = Table::new(&[
        ("cycles/s", Unit::Rate),
        ("p50", Unit::Millis),
        ("p99", Unit::Millis),
        ("requests/cycle", Unit::Fraction),
        ("commands/cycle", Unit::Fraction),
        ("command time/cycle", Unit::Micros),
        ("server CPU/cycle", Unit::Micros),
    ]);
    table.row("robit", ours.figures());
    table.row("rslock", theirs.figures());
    table.print(&[(0, 1, "robit / rslock".to_owned())]);
}

// ---------------------------------------------------------------------------------------
// Phase 2: many tasks, each on its own key.

/// Cycles, time and server work of one library, over the measured rounds.
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
        stats: &mut Meter,
        sends: &[&str],
    ) {
        stats.reset().await;
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
        self.work += stats.read(sends).await;
    }

    fn figures(&self) -> Vec<f64> {
        let mut figures = vec![self.cycles as f64 / self.elapsed.as_secs_f64()];
        figures.extend(self.work.per(self.cycles));
        figures
    }
}

async fn throughput(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let cycles = scaled(300);
    let manager = LockManager::new(vec![server.url()]);
    let (mut ours, mut theirs) = (Many::default(), Many::default());
    for round in 0..5 {
        let robit: Vec<_> = (0..TASKS)
            .map(|task| Robit::new(driver, &format!("many-{task}")))
            .collect();
        let rslock: Vec<_> = (0..TASKS)
            .map(|task| Rslock::new(&manager, &format!("many-{task}")))
            .collect();
        if round == 0 {
            // Warm-up.
            Many::default()
                .round(robit, cycles, stats, ROBIT_SENDS)
                .await;
            Many::default()
                .round(rslock, cycles, stats, RSLOCK_SENDS)
                .await;
        } else if round % 2 == 0 {
            ours.round(robit, cycles, stats, ROBIT_SENDS).await;
            theirs.round(rslock, cycles, stats, RSLOCK_SENDS).await;
        } else {
            theirs.round(rslock, cycles, stats, RSLOCK_SENDS).await;
            ours.round(robit, cycles, stats, ROBIT_SENDS).await;
        }
    }
    println!("\n## Throughput: {TASKS} tasks, each on its own key\n");
    let mut table = Table::new(&[
        ("cycles/s", Unit::Rate),
        ("requests/cycle", Unit::Fraction),
        ("commands/cycle", Unit::Fraction),
        ("command time/cycle", Unit::Micros),
        ("server CPU/cycle", Unit::Micros),
        ("client busy/cycle", Unit::Micros),
    ]);
    table.row("robit", ours.figures());
    table.row("rslock", theirs.figures());
    table.print(&[(0, 1, "robit / rslock".to_owned())]);
}

// ---------------------------------------------------------------------------------------
// Phase 3: contention on one key.

struct Record {
    task: usize,
    asked: Instant,
    acquired: Instant,
    released: Instant,
}

/// One library's contention run. Every task keeps cycling until all of them have seen
/// the end of the measured window, so that a request made inside the window waits
/// against full contention however long it takes; what tasks do after their last
/// request inside the window is load, not measured (but its commands are counted, with
/// its acquisitions).
struct Contended {
    records: Vec<Record>,
    /// Requests made inside the window that gave up.
    gave_up: usize,
    start: Instant,
    stop_at: Instant,
    work: Work,
}

async fn contend<L: Locker>(
    lockers: Vec<L>,
    stats: &mut Meter,
    sends: &[&str],
    run_for: Duration,
) -> Contended {
    let tasks = lockers.len();
    let past_window = Arc::new(AtomicUsize::new(0));
    stats.reset().await;
    let start = Instant::now();
    let stop_at = start + run_for;
    let handles: Vec<_> = lockers
        .into_iter()
        .enumerate()
        .map(|(task, mut locker)| {
            let past_window = Arc::clone(&past_window);
            tokio::spawn(async move {
                let (mut records, mut gave_up, mut past) = (Vec::new(), 0, false);
                loop {
                    let asked = Instant::now();
                    if asked >= stop_at && !past {
                        past = true;
                        past_window.fetch_add(1, Ordering::Relaxed);
                    }
                    if past && past_window.load(Ordering::Relaxed) == tasks {
                        break;
                    }
                    let Some(held) = locker.lock().await else {
                        gave_up += usize::from(asked < stop_at);
                        continue;
                    };
                    let acquired = Instant::now();
                    tokio::time::sleep(HOLD).await;
                    let released = Instant::now();
                    locker.unlock(held).await;
                    records.push(Record {
                        task,
                        asked,
                        acquired,
                        released,
                    });
                }
                (records, gave_up)
            })
        })
        .collect();
    let (mut records, mut gave_up) = (Vec::new(), 0);
    for handle in handles {
        let (more, gave) = handle.await.unwrap();
        records.extend(more);
        gave_up += gave;
    }
    Contended {
        records,
        gave_up,
        start,
        stop_at,
        work: stats.read(sends).await,
    }
}

impl Contended {
    /// The figures of both contention tables: (rates and costs, latencies). Rates,
    /// shares and hand-offs count acquisitions inside the window; waits, the requests
    /// made inside it.
    fn figures(mut self) -> (Vec<f64>, Vec<f64>) {
        self.records.sort_by_key(|r| r.acquired);
        let window = (self.stop_at - self.start).as_secs_f64();
        let inside: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.acquired <= self.stop_at)
            .collect();
        let held: Duration = inside
            .iter()
            .map(|r| r.released.min(self.stop_at) - r.acquired)
            .sum();
        let mut waits: Vec<Duration> = self
            .records
            .iter()
            .filter(|r| r.asked < self.stop_at)
            .map(|r| r.acquired - r.asked)
            .collect();
        waits.sort();
        let mut handoffs: Vec<Duration> = inside
            .windows(2)
            .filter(|w| w[0].task != w[1].task)
            .map(|w| w[1].acquired.saturating_duration_since(w[0].released))
            .collect();
        handoffs.sort();
        let mut per_task = [0_usize; CONTENDERS];
        for record in &inside {
            per_task[record.task] += 1;
        }
        let mut costs = vec![
            inside.len() as f64 / window,
            held.as_secs_f64() / window,
            handoffs.len() as f64 / (inside.len() as f64 - 1.0).max(1.0),
            *per_task.iter().min().unwrap() as f64,
            *per_task.iter().max().unwrap() as f64,
            self.gave_up as f64,
        ];
        costs.extend(self.work.per(self.records.len()));
        let latencies = vec![
            percentile(&handoffs, 0.5),
            percentile(&handoffs, 0.99),
            handoffs.last().map_or(f64::NAN, Duration::as_secs_f64),
            percentile(&waits, 0.5),
            percentile(&waits, 0.99),
            waits.last().map_or(f64::NAN, Duration::as_secs_f64),
        ];
        (costs, latencies)
    }
}

async fn contention(server: &RedisServer, driver: &RedisDriver, stats: &mut Meter) {
    let run_for = Duration::from_secs_f64(3.0 * scale());
    let delays = rslock_delays();
    println!(
        "\n## Contention: {CONTENDERS} tasks, one key, each holding it ~{} ms\n",
        HOLD.as_millis()
    );
    println!(
        "Each library is measured over {:.1} s (every task keeps contending until all have",
        run_for.as_secs_f64()
    );
    println!(
        "seen the window end). robit waits with `Wait::Timeout({WAIT_BUDGET:?})` and its default"
    );
    println!("backoff; rslock with each retry delay d sleeps uniformly 0..d−1 ms between");
    println!("attempts, as many attempts as make the same budget on average:");
    for &delay in &delays {
        println!(
            "- d = {delay} ms: {} attempts (mean sleep {:.1} ms)",
            rslock_attempts(delay),
            rslock_mean_sleep(delay).as_secs_f64() * 1e3
        );
    }
    println!();
    println!("\"of ceiling\" is the share of the window the lock was held (acquisitions/s over");
    println!("the ceiling 1/mean hold); \"switches\" is the share of acquisitions that went to a");
    println!("different task than the one before; hand-off is release → next acquire when the");
    println!("next holder is a different task. Waits are those of requests made in the window.\n");

    // Warm up: connections, script caches.
    cycle(&mut Robit::new(driver, "contended")).await;
    let robit = (0..CONTENDERS)
        .map(|_| Robit::new(driver, "contended"))
        .collect();
    let mut runs = vec![(
        "robit (fair hand-off)".to_owned(),
        contend(robit, stats, ROBIT_SENDS, run_for).await,
    )];
    for &delay in &delays {
        let mut manager = LockManager::new(vec![server.url()]);
        manager.set_retry(rslock_attempts(delay), Duration::from_millis(delay));
        cycle(&mut Rslock::new(&manager, "contended")).await;
        let rslock = (0..CONTENDERS)
            .map(|_| Rslock::new(&manager, "contended"))
            .collect();
        runs.push((
            format!("rslock, d = {delay} ms"),
            contend(rslock, stats, RSLOCK_SENDS, run_for).await,
        ));
    }

    let mut costs = Table::new(&[
        ("acq/s", Unit::Rate),
        ("of ceiling", Unit::Fraction),
        ("switches", Unit::Fraction),
        ("acq/task min", Unit::Count),
        ("acq/task max", Unit::Count),
        ("gave up", Unit::Count),
        ("requests/acq", Unit::Fraction),
        ("commands/acq", Unit::Fraction),
        ("command time/acq", Unit::Micros),
        ("server CPU/acq", Unit::Micros),
        ("client busy/acq", Unit::Micros),
    ]);
    let mut latencies = Table::new(&[
        ("hand-off p50", Unit::Millis),
        ("hand-off p99", Unit::Millis),
        ("hand-off max", Unit::Millis),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
        ("wait max", Unit::Millis),
    ]);
    for (label, run) in runs {
        let (cost, latency) = run.figures();
        costs.row(label.as_str(), cost);
        latencies.row(label, latency);
    }
    let ratios: Vec<_> = delays
        .iter()
        .enumerate()
        .map(|(i, delay)| (0, i + 1, format!("robit / rslock, d = {delay} ms")))
        .collect();
    costs.print(&ratios);
    println!();
    latencies.print(&ratios);
}

fn main() {
    let server = RedisServer::start();
    let runtime = common::runtime();
    // `ROBIT_BENCH_PHASES=throughput` (comma-separated) runs only some phases.
    let run = common::enabled;
    runtime.block_on(async {
        let mut stats = Meter::new(&server).await;
        // A fresh server has no fencing counter: without this, robit's first grant
        // would wait out the default 30 s quarantine.
        let driver = RedisDriver::builder(&server.url())
            .quarantine(Duration::ZERO)
            .build()
            .unwrap();
        println!("# robit against rslock\n");
        println!(
            "redis-server {} on loopback; both clients on one tokio current-thread runtime,",
            stats.version().await
        );
        println!("one multiplexed command connection each (robit also keeps one pub/sub");
        println!("connection). TTL {TTL:?} for both. Ratios are robit's figure over rslock's:");
        println!("above 1 is more for robit (more cycles/s, or longer latency).");
        if run("uncontended") {
            uncontended(&server, &driver, &mut stats).await;
        }
        if run("throughput") {
            throughput(&server, &driver, &mut stats).await;
        }
        if run("contention") {
            contention(&server, &driver, &mut stats).await;
        }
    });
}
