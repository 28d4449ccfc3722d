//! The Redis driver's performance, each figure next to a hand-written baseline that sends
//! the same commands with the redis crate directly, measured in the same run against the
//! same redis-server (started by the bench on a free port).
//!
//! `cargo bench -p robit --bench redis` — a bench binary, not a test: it reports, it does
//! not assert. `ROBIT_BENCH_SCALE=0.2` shortens every phase; `ROBIT_BENCH_PHASES=
//! uncontended,throughput,contention` picks phases.
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

/// The baseline: robit's own scripts, called directly, with the same keys and arguments.
struct Baseline {
    acquire: Script,
    release: Script,
    connection: ConnectionManager,
}

impl Baseline {
    async fn new(server: &RedisServer) -> Self {
        let client = redis::Client::open(server.url()).unwrap();
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
            connection: ConnectionManager::new(client).await.unwrap(),
        }
    }

    async fn cycle(&self, connection: &mut ConnectionManager, name: &str, owner: &str) {
        let lock = format!("{{robit}}:lock:{name}");
        let queue = format!("{{robit}}:queue:{name}");
        let (granted, _, _next): (i64, i64, Vec<u8>) = self
            .acquire
            .key(&lock)
            .key(&queue)
            .key("{robit}:fence")
            .key("{robit}:quarantine")
            .arg(owner)
            .arg(30_000)
            .arg("")
            .arg("")
            .arg(0)
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
            .arg(owner)
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

    async fn cycle(&self, connection: &mut ConnectionManager, owner: &str) {
        let (granted, _, _next): (i64, i64, Vec<u8>) = redis::cmd("EVALSHA")
            .arg(&self.acquire)
            .arg(4)
            .arg(&self.lock)
            .arg(&self.queue)
            .arg("{robit}:fence")
            .arg("{robit}:quarantine")
            .arg(owner)
            .arg(30_000)
            .arg("")
            .arg("")
            .arg(0)
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
            .arg(owner)
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
    let mut connection = baseline.connection.clone();
    let owner = format!("{:032x}", 1);
    // Warm up all three (connections, script cache).
    for _ in 0..200 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
        baseline
            .cycle(&mut connection, "solo-baseline", &owner)
            .await;
        lean.cycle(&mut connection, &owner).await;
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    let mut elapsed = [Duration::ZERO; 3];
    let before = round_trips.load(Ordering::Relaxed);
    // Interleaved rounds, so that drift in the machine's load hits all alike.
    for _ in 0..10 {
        for (who, (samples, elapsed)) in samples.iter_mut().zip(&mut elapsed).enumerate() {
            let start = Instant::now();
            for _ in 0..scaled(1_000) {
                let t = Instant::now();
                match who {
                    0 => mutex.lock().await.unwrap().unlock().await.unwrap(),
                    1 => {
                        baseline
                            .cycle(&mut connection, "solo-baseline", &owner)
                            .await;
                    }
                    _ => lean.cycle(&mut connection, &owner).await,
                }
                samples.push(t.elapsed());
            }
            *elapsed += start.elapsed();
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
}

async fn throughput(server: &RedisServer) {
    const TASKS: usize = 64;
    let cycles = scaled(300);
    let round_trips = Arc::new(AtomicU64::new(0));
    let driver = robit_driver(server, &round_trips);
    let baseline = Arc::new(Baseline::new(server).await);
    let mut ours_rate = Vec::new();
    let mut theirs_rate = Vec::new();
    for round in 0..4 {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let driver = driver.clone();
                tokio::spawn(async move {
                    let mutex = Mutex::builder(format!("many-{task}"), driver)
                        .build()
                        .unwrap();
                    for _ in 0..cycles {
                        mutex.lock().await.unwrap().unlock().await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let ours = (TASKS * cycles) as f64 / start.elapsed().as_secs_f64();
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let baseline = Arc::clone(&baseline);
                tokio::spawn(async move {
                    let mut connection = baseline.connection.clone();
                    let owner = format!("{task:032x}");
                    for _ in 0..cycles {
                        baseline
                            .cycle(&mut connection, &format!("many-baseline-{task}"), &owner)
                            .await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let theirs = (TASKS * cycles) as f64 / start.elapsed().as_secs_f64();
        if round > 0 {
            // Round 0 warms up.
            ours_rate.push(ours);
            theirs_rate.push(theirs);
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
