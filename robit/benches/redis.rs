//! The Redis driver's performance, each figure next to a hand-written baseline that sends
//! the same commands with the redis crate directly, measured in the same run against the
//! same redis-server (started by the bench on a free port).
//!
//! `cargo bench -p robit --bench redis` — a bench binary, not a test: it reports, it does
//! not assert. `ROBIT_BENCH_SCALE=0.2` shortens every phase; `ROBIT_BENCH_PHASES=
//! uncontended,throughput,contention` picks phases; `ROBIT_BENCH_ONLY=robit|baseline|lean`
//! runs only one contender of the uncontended and throughput phases (the uncontended
//! phase's shared warm-up aside), to profile it alone.
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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, PubSub};
use redis::{Cmd, Pipeline, RedisFuture, Script, Value};
use robit::redis::{Connector, RedisDriver, UrlConnector};
use robit::{Mutex, Wait};
use support::RedisServer;

/// A connection that counts its round trips.
#[derive(Clone)]
struct Counted {
    inner: ConnectionManager,
    round_trips: Arc<AtomicU64>,
}

impl ConnectionLike for Counted {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

struct CountingConnector {
    url: UrlConnector,
    round_trips: Arc<AtomicU64>,
}

#[robit::async_trait]
impl Connector for CountingConnector {
    type Connection = Counted;

    async fn connect(&self) -> redis::RedisResult<Counted> {
        Ok(Counted {
            inner: self.url.connect().await?,
            round_trips: Arc::clone(&self.round_trips),
        })
    }

    async fn subscriber(&self) -> redis::RedisResult<PubSub> {
        self.url.subscriber().await
    }

    fn reconnects_by_itself(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        self.url.describe()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn robit_driver(
    server: &RedisServer,
    round_trips: &Arc<AtomicU64>,
) -> RedisDriver<CountingConnector> {
    let connector = CountingConnector {
        url: UrlConnector::new(&server.url()).unwrap(),
        round_trips: Arc::clone(round_trips),
    };
    RedisDriver::with_connector(connector)
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

/// Who a baseline cycle acts as: the owner token, and the waiter that robit's `lock()`
/// sends with every attempt (it may have to wait), as robit encodes them. Built once per
/// task, so the baselines do not pay for drawing tokens, which robit does per cycle.
struct Caller {
    owner: String,
    waiter: String,
    entry: String,
}

impl Caller {
    fn new(n: u128) -> Self {
        let waiter = format!("{:032x}", n | (1 << 127));
        Self {
            owner: format!("{n:032x}"),
            // The default poll interval, 250 ms, as robit's entries carry it.
            entry: format!("{waiter}:250"),
            waiter,
        }
    }
}

/// The queue entry lifetime robit's `lock()` sends with the default poll interval: four
/// intervals, at least a second.
const QUEUE_TTL_MS: u64 = 1_000;

/// The baseline: robit's own scripts, called directly, with the same keys and arguments.
struct Baseline {
    acquire: Script,
    release: Script,
    connection: ConnectionManager,
}

impl Baseline {
    async fn new(server: &RedisServer) -> Self {
        Self {
            acquire: Script::new(&format!(
                "{}{}",
                include_str!("../src/redis/scripts/handoff.lua"),
                include_str!("../src/redis/scripts/acquire.lua")
            )),
            release: Script::new(&format!(
                "{}{}",
                include_str!("../src/redis/scripts/handoff.lua"),
                include_str!("../src/redis/scripts/release.lua")
            )),
            connection: Self::connect(server).await,
        }
    }

    async fn connect(server: &RedisServer) -> ConnectionManager {
        let client = redis::Client::open(server.url()).unwrap();
        ConnectionManager::new(client).await.unwrap()
    }

    async fn cycle(&self, connection: &mut ConnectionManager, name: &str, who: &Caller) {
        let lock = format!("{{robit}}:lock:{name}");
        let queue = format!("{{robit}}:queue:{name}");
        let (granted, _, _next): (i64, i64, Vec<u8>) = self
            .acquire
            .key(&lock)
            .key(&queue)
            .key("{robit}:fence")
            .key("{robit}:quarantine")
            .arg(&who.owner)
            .arg(30_000)
            .arg(&who.waiter)
            .arg(&who.entry)
            .arg(QUEUE_TTL_MS)
            .arg("robit:handoff")
            .arg(500)
            .arg(0)
            .invoke_async(connection)
            .await
            .unwrap();
        assert_eq!(granted, 1, "baseline acquire refused");
        let _: i64 = self
            .release
            .key(&lock)
            .key(&queue)
            .arg(&who.owner)
            .arg("robit:handoff")
            .arg(500)
            .invoke_async(connection)
            .await
            .unwrap();
    }
}

/// The same two calls, encoded as leanly as robit encodes them: EVALSHA built straight
/// into one command buffer, keys formatted once. robit's own overhead is measured
/// against this one; the `redis::Script` baseline is what hand-written code usually is.
struct LeanBaseline {
    acquire: String,
    release: String,
    lock: String,
    queue: String,
}

impl LeanBaseline {
    fn new(baseline: &Baseline, name: &str) -> Self {
        Self {
            acquire: baseline.acquire.get_hash().to_owned(),
            release: baseline.release.get_hash().to_owned(),
            lock: format!("{{robit}}:lock:{name}"),
            queue: format!("{{robit}}:queue:{name}"),
        }
    }

    async fn cycle(&self, connection: &mut ConnectionManager, who: &Caller) {
        let (granted, _, _next): (i64, i64, Vec<u8>) = redis::cmd("EVALSHA")
            .arg(&self.acquire)
            .arg(4)
            .arg(&self.lock)
            .arg(&self.queue)
            .arg("{robit}:fence")
            .arg("{robit}:quarantine")
            .arg(&who.owner)
            .arg(30_000)
            .arg(&who.waiter)
            .arg(&who.entry)
            .arg(QUEUE_TTL_MS)
            .arg("robit:handoff")
            .arg(500)
            .arg(0)
            .query_async(connection)
            .await
            .unwrap();
        assert_eq!(granted, 1, "lean baseline acquire refused");
        let _: i64 = redis::cmd("EVALSHA")
            .arg(&self.release)
            .arg(2)
            .arg(&self.lock)
            .arg(&self.queue)
            .arg(&who.owner)
            .arg("robit:handoff")
            .arg(500)
            .query_async(connection)
            .await
            .unwrap();
    }
}

struct Latencies {
    cycles: usize,
    elapsed: Duration,
    sorted: Vec<Duration>,
}

impl Latencies {
    fn new(mut samples: Vec<Duration>, elapsed: Duration) -> Self {
        samples.sort();
        Self {
            cycles: samples.len(),
            elapsed,
            sorted: samples,
        }
    }

    fn per_second(&self) -> f64 {
        self.cycles as f64 / self.elapsed.as_secs_f64()
    }
}

async fn uncontended(server: &RedisServer) {
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    let mutex = Mutex::builder("solo", driver).build().unwrap();
    let baseline = Baseline::new(server).await;
    let lean = LeanBaseline::new(&baseline, "solo-lean");
    // A connection each, as robit's driver has its own, so that every contender's
    // connection sits idle while the others take their turns.
    let mut connection = baseline.connection.clone();
    let mut lean_connection = Baseline::connect(server).await;
    let who = Caller::new(1);
    // Warm up all three (connections, script cache).
    for _ in 0..200 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
        baseline.cycle(&mut connection, "solo-baseline", &who).await;
        lean.cycle(&mut lean_connection, &who).await;
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let mut elapsed = [Duration::ZERO; 3];
    // Each round's cycles/s, per contender: the ratio is taken round by round.
    let mut rates: [Vec<f64>; 3] = Default::default();
    let before = round_trips.load(Ordering::Relaxed);
    // Many short rounds. Inside a round the contenders take turns cycle by cycle, the
    // order rotating, so that drift in the machine's load — which moves a round's rate
    // by several percent here — and any cost of going first or last hit all alike.
    let active = CONTENDERS.map(runs);
    for round in 0..ROUNDS {
        let mut took = [Duration::ZERO; 3];
        for cycle in 0..scaled(250) {
            for turn in 0..3 {
                let contender = (round + cycle + turn) % 3;
                if !active[contender] {
                    continue;
                }
                let t = Instant::now();
                match contender {
                    0 => mutex.lock().await.unwrap().unlock().await.unwrap(),
                    1 => {
                        baseline.cycle(&mut connection, "solo-baseline", &who).await;
                    }
                    _ => lean.cycle(&mut lean_connection, &who).await,
                }
                let t = t.elapsed();
                samples[contender].push(t);
                took[contender] += t;
            }
        }
        for contender in (0..3).filter(|&contender| active[contender]) {
            elapsed[contender] += took[contender];
            rates[contender].push(scaled(250) as f64 / took[contender].as_secs_f64());
        }
    }
    let trips = round_trips.load(Ordering::Relaxed) - before;
    let [ours, theirs, lean] = samples;
    let ours = Latencies::new(ours, elapsed[0]);
    let theirs = Latencies::new(theirs, elapsed[1]);
    let lean = Latencies::new(lean, elapsed[2]);
    println!("\n## Uncontended lock + unlock, one task\n");
    println!("| | cycles/s | p50 | p99 | round trips/cycle |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| robit | {:.0} | {} | {} | {:.2} |",
        ours.per_second(),
        ms(percentile(&ours.sorted, 0.5)),
        ms(percentile(&ours.sorted, 0.99)),
        trips as f64 / ours.cycles as f64
    );
    for (label, run) in [
        ("baseline (same scripts, redis::Script)", &theirs),
        (
            "lean baseline (same commands, encoded as robit does)",
            &lean,
        ),
    ] {
        println!(
            "| {label} | {:.0} | {} | {} | 2.00 |",
            run.per_second(),
            ms(percentile(&run.sorted, 0.5)),
            ms(percentile(&run.sorted, 0.99)),
        );
    }
    println!(
        "\nrobit / baseline cycles/s: **{:.3}×**; robit / lean baseline: **{:.3}×**",
        ours.per_second() / theirs.per_second(),
        ours.per_second() / lean.per_second()
    );
    for (label, against) in [("baseline", &rates[1]), ("lean baseline", &rates[2])] {
        let (low, median, high) = ratio_quartiles(&rates[0], against);
        println!(
            "robit / {label}, round by round ({ROUNDS} rounds): median **{median:.3}×**, \
             middle half {low:.3}–{high:.3}×"
        );
    }
}

/// Interleaved rounds per contender in the uncontended phase.
const ROUNDS: usize = 40;

/// The uncontended phase's contenders, as `ROBIT_BENCH_ONLY` names them.
const CONTENDERS: [&str; 3] = ["robit", "baseline", "lean"];

/// Whether `contender` is to run: all of them, unless `ROBIT_BENCH_ONLY` names one.
fn runs(contender: &str) -> bool {
    std::env::var("ROBIT_BENCH_ONLY").map_or(true, |only| only == contender)
}

/// The quartiles of the round-by-round ratios `ours[i] / theirs[i]`.
fn ratio_quartiles(ours: &[f64], theirs: &[f64]) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |p: f64| ratios[((ratios.len() - 1) as f64 * p).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

async fn throughput(server: &RedisServer) {
    const TASKS: usize = 64;
    const ROUNDS: usize = 8;
    let cycles = scaled(300);
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    let baseline = Arc::new(Baseline::new(server).await);
    let mutexes: Vec<Arc<Mutex>> = (0..TASKS)
        .map(|task| {
            let mutex = Mutex::builder(format!("many-{task}"), driver.clone()).build();
            Arc::new(mutex.unwrap())
        })
        .collect();
    let ours = || async {
        if !runs("robit") {
            return f64::NAN;
        }
        let start = Instant::now();
        let tasks: Vec<_> = mutexes
            .iter()
            .map(|mutex| {
                let mutex = Arc::clone(mutex);
                tokio::spawn(async move {
                    for _ in 0..cycles {
                        mutex.lock().await.unwrap().unlock().await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (TASKS * cycles) as f64 / start.elapsed().as_secs_f64()
    };
    let theirs = || async {
        if !runs("baseline") {
            return f64::NAN;
        }
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let baseline = Arc::clone(&baseline);
                tokio::spawn(async move {
                    let mut connection = baseline.connection.clone();
                    let who = Caller::new(task as u128);
                    for _ in 0..cycles {
                        baseline
                            .cycle(&mut connection, &format!("many-baseline-{task}"), &who)
                            .await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (TASKS * cycles) as f64 / start.elapsed().as_secs_f64()
    };
    // A warm-up round, then rounds in alternating order.
    ours().await;
    theirs().await;
    let mut ours_rate = Vec::new();
    let mut theirs_rate = Vec::new();
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            ours_rate.push(ours().await);
            theirs_rate.push(theirs().await);
        } else {
            theirs_rate.push(theirs().await);
            ours_rate.push(ours().await);
        }
    }
    let ours = ours_rate.iter().sum::<f64>() / ours_rate.len() as f64;
    let theirs = theirs_rate.iter().sum::<f64>() / theirs_rate.len() as f64;
    println!("\n## Throughput: {TASKS} tasks, distinct keys, one multiplexed connection\n");
    println!("| | cycles/s |");
    println!("|---|---:|");
    println!("| robit | {ours:.0} |");
    println!("| baseline | {theirs:.0} |");
    println!("\nrobit / baseline: **{:.3}×**", ours / theirs);
    let (low, median, high) = ratio_quartiles(&ours_rate, &theirs_rate);
    println!(
        "robit / baseline, round by round ({ROUNDS} rounds): median **{median:.3}×**, \
         middle half {low:.3}–{high:.3}×"
    );
}

/// One contended run's record: (task, acquired, released, waited).
type Record = (usize, Instant, Instant, Duration);

fn report_contention(
    label: &str,
    mut records: Vec<Record>,
    elapsed: Duration,
    trips: Option<u64>,
    tasks: usize,
) {
    records.sort_by_key(|r| r.1);
    let n = records.len();
    let hold: Duration = records.iter().map(|r| r.2 - r.1).sum();
    let mean_hold = hold / n.max(1) as u32;
    let mut waits: Vec<Duration> = records.iter().map(|r| r.3).collect();
    waits.sort();
    let mut handoffs: Vec<Duration> = records
        .windows(2)
        .filter(|w| w[0].0 != w[1].0)
        .map(|w| w[1].1.saturating_duration_since(w[0].2))
        .collect();
    handoffs.sort();
    let mut per_task = vec![0_usize; tasks];
    for r in &records {
        per_task[r.0] += 1;
    }
    let rate = n as f64 / elapsed.as_secs_f64();
    let ceiling = 1.0 / mean_hold.as_secs_f64();
    println!(
        "| {label} | {rate:.0} | {:.2} | {} | {} | {} | {} | {} | {}–{} (mean {:.0}) | {} |",
        rate / ceiling,
        ms(mean_hold),
        ms(percentile(&handoffs, 0.5)),
        ms(percentile(&waits, 0.5)),
        ms(percentile(&waits, 0.99)),
        ms(*waits.last().unwrap_or(&Duration::ZERO)),
        per_task.iter().min().unwrap(),
        per_task.iter().max().unwrap(),
        n as f64 / tasks as f64,
        trips.map_or("—".to_owned(), |t| format!("{:.2}", t as f64 / n as f64)),
    );
}

async fn contention(server: &RedisServer) {
    const TASKS: usize = 8;
    let run_for = Duration::from_secs_f64(3.0 * scale());
    let hold = Duration::from_millis(1);
    println!("\n## Contention: {TASKS} tasks, one key, each holding it ~1 ms\n");
    println!("Utilisation is acquisitions/s over the ceiling 1/mean hold (the hold is a tokio");
    println!("sleep of 1 ms, which the timer rounds up). Hand-off is release → next acquire when");
    println!("the next holder is a different task.\n");
    println!(
        "| | acq/s | of ceiling | mean hold | hand-off p50 | wait p50 | wait p99 | wait max | acq/task min–max | round trips/acq |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");

    // robit.
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    Mutex::builder("contended", driver.clone())
        .build()
        .unwrap()
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    let before = round_trips.load(Ordering::Relaxed);
    let start = Instant::now();
    let stop_at = start + run_for;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let driver = driver.clone();
            tokio::spawn(async move {
                let mutex = Mutex::builder("contended", driver)
                    .wait(Wait::Forever)
                    .build()
                    .unwrap();
                let mut records = Vec::new();
                while Instant::now() < stop_at {
                    let asked = Instant::now();
                    let guard = mutex.lock().await.unwrap();
                    let acquired = Instant::now();
                    tokio::time::sleep(hold).await;
                    let released = Instant::now();
                    guard.unlock().await.unwrap();
                    records.push((task, acquired, released, acquired - asked));
                }
                records
            })
        })
        .collect();
    let mut records = Vec::new();
    for task in tasks {
        records.extend(task.await.unwrap());
    }
    let elapsed = start.elapsed();
    let trips = round_trips.load(Ordering::Relaxed) - before;
    report_contention(
        "robit (fair hand-off)",
        records,
        elapsed,
        Some(trips),
        TASKS,
    );

    // A polling peer: SET NX PX, retry every 1 ms, owner-checked DEL.
    let client = redis::Client::open(server.url()).unwrap();
    let connection = ConnectionManager::new(client).await.unwrap();
    let unlock = Arc::new(Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
    ));
    let trips = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let stop_at = start + run_for;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (mut connection, unlock, trips) =
                (connection.clone(), Arc::clone(&unlock), Arc::clone(&trips));
            tokio::spawn(async move {
                let owner = format!("{task:032x}");
                let mut records = Vec::new();
                while Instant::now() < stop_at {
                    let asked = Instant::now();
                    loop {
                        trips.fetch_add(1, Ordering::Relaxed);
                        let set: Option<String> = redis::cmd("SET")
                            .arg("polling")
                            .arg(&owner)
                            .arg("NX")
                            .arg("PX")
                            .arg(30_000)
                            .query_async(&mut connection)
                            .await
                            .unwrap();
                        if set.is_some() {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    let acquired = Instant::now();
                    tokio::time::sleep(hold).await;
                    let released = Instant::now();
                    trips.fetch_add(1, Ordering::Relaxed);
                    let _: i64 = unlock
                        .key("polling")
                        .arg(&owner)
                        .invoke_async(&mut connection)
                        .await
                        .unwrap();
                    records.push((task, acquired, released, acquired - asked));
                }
                records
            })
        })
        .collect();
    let mut records = Vec::new();
    for task in tasks {
        records.extend(task.await.unwrap());
    }
    report_contention(
        "polling peer (SET NX, 1 ms retry)",
        records,
        start.elapsed(),
        Some(trips.load(Ordering::Relaxed)),
        TASKS,
    );
}

fn main() {
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("# robit Redis driver benchmark\n");
    println!("redis-server on loopback; client on one tokio current-thread runtime.");
    // `ROBIT_BENCH_PHASES=throughput` (comma-separated) runs only some phases.
    let run = common::enabled;
    runtime.block_on(async {
        if run("uncontended") {
            uncontended(&server).await;
        }
        if run("throughput") {
            throughput(&server).await;
        }
        if run("contention") {
            contention(&server).await;
        }
    });
}
