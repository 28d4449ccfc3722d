//! Each contender's own work per uncontended cycle, with Redis out of the picture.
//!
//! Every contender's connection answers at once with what the scripts answer to an
//! uncontended lock + unlock, after yielding to the runtime once, as a command in
//! flight does. Nothing crosses the network, so what is left is the client's own work
//! (and the runtime's turn around each yield, the same for every contender), measured to
//! a few hundredths of a microsecond instead of drowned in round trips.
//!
//! Twice: **cold**, each answer preceded by a sweep through more memory than a core's
//! own caches hold, standing in for what the thread's sleep in the kernel during a real
//! round trip may leave of them (the sweep's own time is left out); and **warm**,
//! without it. The baselines' connections put each command under a timer, as their
//! connection managers do; robit's driver arms its own.

use std::cell::{Cell, RefCell};
use std::hint::black_box;
use std::task::Poll;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, PubSub};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};
use robit::Mutex;
use robit::redis::{Connector, DEFAULT_COMMAND_TIMEOUT, RedisDriver};

use crate::common::scaled;
use crate::contenders::{Baseline, Caller, Latencies, LeanBaseline, percentile};
use crate::support::RedisServer;
use crate::uncontended::{CONTENDERS, runs};

/// How much memory a cold answer sweeps through: several times a core's own caches on
/// current server processors (a second-level cache of 1–2 MiB).
const SWEEP_BYTES: usize = 4 << 20;

thread_local! {
    /// Whether answers sweep the caches first (the runtime has one thread).
    static COLD: Cell<bool> = const { Cell::new(false) };
    /// The time spent sweeping during the cycle under way, to be left out of it.
    static SWEPT: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// What a cold answer sweeps through.
    static MEMORY: RefCell<Vec<u64>> = RefCell::new(vec![0; SWEEP_BYTES / 8]);
}

/// Writes to one word in every cache line of [`MEMORY`], if answers are cold.
fn sweep() {
    if !COLD.get() {
        return;
    }
    let start = Instant::now();
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        for (line, word) in memory.iter_mut().step_by(8).enumerate() {
            *word = word.wrapping_add(line as u64);
        }
        black_box(&*memory);
    });
    SWEPT.set(SWEPT.get() + start.elapsed());
}

/// A connection that answers every acquire with a grant and every release with "freed".
#[derive(Clone)]
struct Canned {
    /// Each command under a timer, as a connection manager with a response timeout does.
    timed: bool,
}

impl ConnectionLike for Canned {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        // EVALSHA, the hash and the key count, then an acquire's four keys and eight
        // arguments (15 in all) or a release's two and three (8).
        let acquire = cmd.args_iter().count() > 10;
        let mut in_flight = false;
        let answer = std::future::poll_fn(move |cx| {
            if !in_flight {
                in_flight = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            sweep();
            Poll::Ready(Ok(if acquire {
                Value::Array(vec![
                    Value::Int(1),
                    Value::Int(7),
                    Value::BulkString(Vec::new()),
                ])
            } else {
                Value::Int(1)
            }))
        });
        if self.timed {
            Box::pin(async move {
                tokio::time::timeout(DEFAULT_COMMAND_TIMEOUT, answer)
                    .await
                    .unwrap()
            })
        } else {
            Box::pin(answer)
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        _pipeline: &'a Pipeline,
        _offset: usize,
        _count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async { Err(RedisError::from((ErrorKind::Io, "no pipelines here"))) })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// robit's connections: canned, with no timer (the driver arms its own); no subscriber.
struct CannedConnector;

#[robit::async_trait]
impl Connector for CannedConnector {
    type Connection = Canned;

    async fn connect(&self) -> redis::RedisResult<Canned> {
        Ok(Canned { timed: false })
    }

    async fn subscriber(&self) -> redis::RedisResult<PubSub> {
        Err(RedisError::from((ErrorKind::Io, "no subscriptions here")))
    }

    fn reconnects_by_itself(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "canned answers".to_owned()
    }
}

/// Runs the phase and prints its table. `server` only provides the baselines' scripts.
pub(crate) async fn own(server: &RedisServer) {
    let driver = RedisDriver::with_connector(CannedConnector)
        .quarantine(Duration::ZERO)
        .build()
        .unwrap();
    let mutex = Mutex::builder("own", driver).build().unwrap();
    // The baselines' scripts, for their hashes; their commands never reach the server.
    let baseline = Baseline::new(server).await;
    let lean = LeanBaseline::new(&baseline, "own-lean");
    let who = Caller::new(4);
    let mut connection = Canned { timed: true };
    let active = CONTENDERS.map(runs);
    let mut rows = Vec::new();
    for cold in [true, false] {
        COLD.set(cold);
        // Per contender, each cycle's time, the sweeps left out.
        let mut samples: [Vec<Duration>; 3] = Default::default();
        let warm_up = 1_000;
        for cycle in 0..warm_up + scaled(10_000) {
            for turn in 0..3 {
                let contender = (cycle + turn) % 3;
                if !active[contender] {
                    continue;
                }
                SWEPT.set(Duration::ZERO);
                let start = Instant::now();
                match contender {
                    0 => mutex.lock().await.unwrap().unlock().await.unwrap(),
                    1 => baseline.cycle(&mut connection, "own-baseline", &who).await,
                    _ => lean.cycle(&mut connection, &who).await,
                }
                let took = start.elapsed().saturating_sub(SWEPT.get());
                if cycle >= warm_up {
                    samples[contender].push(took);
                }
            }
        }
        rows.push((if cold { "cold" } else { "warm" }, samples.map(summary)));
    }
    println!("\n## Own work per uncontended cycle, Redis out of the picture\n");
    println!(
        "µs per lock + unlock cycle, median (mean), over {} cycles each; every answer \
         canned,\nafter one yield. Cold: each answer after a sweep of {} MiB (not counted).\n",
        scaled(10_000),
        SWEEP_BYTES >> 20
    );
    println!("| | robit | baseline | lean baseline | robit − baseline | robit − lean |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, [ours, theirs, lean]) in rows {
        println!(
            "| {label} | {} | {} | {} | {} | {} |",
            shown(ours),
            shown(theirs),
            shown(lean),
            difference(ours, theirs),
            difference(ours, lean),
        );
    }
}

/// The median and the mean of `samples`, in µs.
fn summary(samples: Vec<Duration>) -> (f64, f64) {
    if samples.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let total = samples.iter().sum();
    let run = Latencies::new(samples, total);
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    (
        micros(percentile(&run.sorted, 0.5)),
        micros(run.elapsed) / run.cycles as f64,
    )
}

/// A contender's median and mean, as the table shows them.
fn shown((median, mean): (f64, f64)) -> String {
    format!("{median:.2} ({mean:.2})")
}

/// How much more robit's median and mean are than another contender's.
fn difference(ours: (f64, f64), theirs: (f64, f64)) -> String {
    format!("{:+.2} ({:+.2})", ours.0 - theirs.0, ours.1 - theirs.1)
}
