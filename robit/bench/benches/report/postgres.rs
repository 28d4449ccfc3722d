//! Scenario (g), with the `postgres` feature: robit's Postgres driver next to sqlx's
//! `PgAdvisoryLock` and a plain lease table, in the same run, against one Postgres the
//! bench starts (`initdb` on a free port): one task on one name, 64 tasks on names of
//! their own, then [`CONTENDERS`] tasks on one name.
//!
//! Each library's connections go through a proxy of the bench's that reads the protocol
//! as it passes: a round trip is a `ReadyForQuery` the server sent, a statement an
//! `Execute` or a simple `Query` the client sent. The server's CPU is that of its
//! processes (`/proc`), the client's this process's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use robit::postgres::PostgresDriver;
use robit_test_support::bench::TTL;
use robit_test_support::postgres::PostgresServer;
use sqlx::PgPool;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgAdvisoryLock, PgAdvisoryLockGuard, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::contention::{CONTENDERS, contend};
use crate::lockers::{Locker, Robit, WAIT_BUDGET, cycle};
use crate::meter::{Measure, Work, client_cpu};
use crate::table::{Table, Unit, percentile};
use crate::uncontended::ROUNDS;
use crate::{scale, scaled};

/// Tasks of (g2), each on a name of its own.
const TASKS: usize = 64;
/// How often the lease table's waiter asks again.
const LEASE_POLL: Duration = Duration::from_millis(2);

/// A proxy in front of the server that counts, over every connection through it, the
/// round trips (`ReadyForQuery` messages from the server) and the statements
/// (`Execute` and `Query` messages from the client).
struct Wire {
    port: u16,
    round_trips: Arc<AtomicU64>,
    statements: Arc<AtomicU64>,
}

impl Wire {
    async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (round_trips, statements) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (trips, sent) = (Arc::clone(&round_trips), Arc::clone(&statements));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(relay(client_read, server_write, Arc::clone(&sent), true));
                tokio::spawn(relay(server_read, client_write, Arc::clone(&trips), false));
            }
        });
        Self {
            port,
            round_trips,
            statements,
        }
    }

    /// A URL through the proxy, without TLS (the proxy reads the protocol).
    fn url(&self) -> String {
        format!(
            "postgres://robit@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }
}

/// Forwards `from` to `to`, counting the messages of interest: from the client,
/// `Execute` (`E`) and `Query` (`Q`), after its untyped startup message; from the
/// server, `ReadyForQuery` (`Z`).
async fn relay(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    count: Arc<AtomicU64>,
    client: bool,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut started = !client;
    let mut buffer = [0_u8; 16 * 1024];
    while let Ok(read) = from.read(&mut buffer).await {
        if read == 0 || to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
        pending.extend_from_slice(&buffer[..read]);
        loop {
            let header = if started { 5 } else { 4 };
            if pending.len() < header {
                break;
            }
            let at = header - 4;
            let length = u32::from_be_bytes(pending[at..at + 4].try_into().unwrap()) as usize;
            if pending.len() < at + length {
                break;
            }
            let kind = pending[0];
            let counted = if client {
                matches!(kind, b'E' | b'Q')
            } else {
                kind == b'Z'
            };
            if started && counted {
                count.fetch_add(1, Ordering::Relaxed);
            }
            pending.drain(..at + length);
            started = true;
        }
    }
}

/// The CPU time of the server's processes (the postmaster and its children), in s.
fn server_cpu(postmaster: u32) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let mut total = 0_u64;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, ppid, … utime (12th), stime.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let pid = head
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<u32>().ok());
        let ppid = fields.get(1).and_then(|p| p.parse::<u32>().ok());
        if pid == Some(postmaster) || ppid == Some(postmaster) {
            let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
            total += field(11).unwrap_or_default() + field(12).unwrap_or_default();
        }
    }
    total as f64 / ticks
}

/// Measures one library's stretch: its wire's counts, the server's CPU, the client's.
struct PgMeter<'a> {
    wire: &'a Wire,
    postmaster: u32,
    at_reset: (u64, u64, f64, f64),
}

impl<'a> PgMeter<'a> {
    fn new(wire: &'a Wire, postmaster: u32) -> Self {
        Self {
            wire,
            postmaster,
            at_reset: (0, 0, 0.0, 0.0),
        }
    }
}

impl Measure for PgMeter<'_> {
    async fn reset(&mut self) {
        self.at_reset = (
            self.wire.round_trips.load(Ordering::Relaxed),
            self.wire.statements.load(Ordering::Relaxed),
            server_cpu(self.postmaster),
            client_cpu(),
        );
    }

    async fn read(&mut self) -> Work {
        let (trips, statements, server, client) = self.at_reset;
        Work::new(
            self.wire.round_trips.load(Ordering::Relaxed) - trips,
            self.wire.statements.load(Ordering::Relaxed) - statements,
            server_cpu(self.postmaster) - server,
            client_cpu() - client,
        )
    }
}

/// sqlx's session advisory lock, as its documentation shows it: a connection of the pool
/// held for as long as the lock is.
struct Advisory {
    pool: PgPool,
    lock: &'static PgAdvisoryLock,
}

impl Advisory {
    fn new(pool: &PgPool, name: &str) -> Self {
        Self {
            pool: pool.clone(),
            lock: Box::leak(Box::new(PgAdvisoryLock::new(name))),
        }
    }
}

impl Locker for Advisory {
    type Held = PgAdvisoryLockGuard<'static, PoolConnection<sqlx::Postgres>>;

    /// Waits in the server for as long as it takes: sqlx's acquire cannot be cancelled
    /// safely, so it is given no budget.
    async fn lock(&mut self) -> Option<Self::Held> {
        let connection = self.pool.acquire().await.unwrap();
        Some(self.lock.acquire(connection).await.unwrap())
    }

    async fn unlock(&mut self, held: Self::Held) {
        let _ = held.release_now().await.unwrap();
    }
}

/// A plain lease table, as projects write by hand: a row per name, taken over when
/// expired; a waiter polls.
struct LeaseTable {
    pool: PgPool,
    name: String,
    owner: i64,
}

const LEASE_TABLE: &str = "CREATE TABLE IF NOT EXISTS leases (name text PRIMARY KEY, owner bigint, expires_at timestamptz)";
const LEASE_TAKE: &str = "INSERT INTO leases AS l VALUES ($1, $2, now() + $3 * interval '1 ms') \
    ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at \
    WHERE l.expires_at < now() RETURNING 1";
const LEASE_GIVE: &str = "DELETE FROM leases WHERE name = $1 AND owner = $2";

impl Locker for LeaseTable {
    type Held = ();

    async fn lock(&mut self) -> Option<()> {
        let give_up = Instant::now() + WAIT_BUDGET;
        let ttl = i64::try_from(TTL.as_millis()).unwrap();
        loop {
            let taken = sqlx::query(LEASE_TAKE)
                .bind(&self.name)
                .bind(self.owner)
                .bind(ttl)
                .fetch_optional(&self.pool)
                .await
                .unwrap();
            if taken.is_some() {
                return Some(());
            }
            if Instant::now() >= give_up {
                return None;
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    async fn unlock(&mut self, (): ()) {
        sqlx::query(LEASE_GIVE)
            .bind(&self.name)
            .bind(self.owner)
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

/// The three libraries, each through a wire of its own to one server.
struct Libraries {
    server: PostgresServer,
    wires: [Wire; 3],
    driver: PostgresDriver,
    advisory: PgPool,
    leases: PgPool,
}

impl Libraries {
    async fn start() -> Self {
        let server = PostgresServer::start();
        let mut wires = Vec::new();
        for _ in 0..3 {
            wires.push(Wire::start(server.port()).await);
        }
        let wires: [Wire; 3] = wires.try_into().ok().unwrap();
        let driver = PostgresDriver::builder(wires[0].url())
            .max_connections(16)
            .build()
            .unwrap();
        driver.ping().await.unwrap();
        let pool = |url: String, size: u32| {
            PgPoolOptions::new()
                .max_connections(size)
                .test_before_acquire(false)
                .connect_lazy(&url)
                .unwrap()
        };
        let advisory = pool(wires[1].url(), TASKS as u32 + 1);
        let leases = pool(wires[2].url(), 16);
        sqlx::query(LEASE_TABLE).execute(&leases).await.unwrap();
        Self {
            server,
            wires,
            driver,
            advisory,
            leases,
        }
    }

    fn meter(&self, library: usize) -> PgMeter<'_> {
        PgMeter::new(&self.wires[library], self.server.pid().unwrap())
    }

    fn robit(&self, name: &str) -> Robit {
        Robit::new(&self.driver, name)
    }

    fn advisory(&self, name: &str) -> Advisory {
        Advisory::new(&self.advisory, name)
    }

    fn lease(&self, name: &str, owner: i64) -> LeaseTable {
        LeaseTable {
            pool: self.leases.clone(),
            name: name.to_owned(),
            owner,
        }
    }
}

const LABELS: [&str; 3] = ["robit", "sqlx PgAdvisoryLock", "lease table"];

pub(crate) async fn run() {
    let libraries = Libraries::start().await;
    let version = libraries.server.psql("SHOW server_version");
    println!("\n## (g) Postgres: robit's driver next to sqlx's advisory lock and a lease table\n");
    println!("Postgres {version} on loopback, started by the bench; TTL {TTL:?} for robit and");
    println!("the lease table (the advisory lock has none). Each library reaches the server");
    println!("through a proxy of the bench's own that reads the protocol: a round trip is a");
    println!("ReadyForQuery the server sent, a statement an Execute or Query the client sent.");
    println!("Server CPU is that of the server's processes; client CPU, this process's.");
    println!("Ratios are robit's figure over each peer's.");
    solo(&libraries).await;
    distinct(&libraries).await;
    contended(&libraries).await;
}

/// (g1): one task locking and unlocking one name.
async fn solo(libraries: &Libraries) {
    let n = scaled(1000);
    let mut table = Table::new(&[
        ("round trips / cycle", Unit::Fraction),
        ("statements / cycle", Unit::Fraction),
        ("server CPU / cycle", Unit::Micros),
        ("client CPU / cycle", Unit::Micros),
        ("cycles / s", Unit::Count),
        ("cycle p50", Unit::Millis),
        ("cycle p99", Unit::Millis),
    ]);
    let mut columns: Vec<(Work, Vec<Duration>, Duration)> = Vec::new();
    for library in 0..3 {
        let mut meter = libraries.meter(library);
        let (mut work, mut cycles, mut elapsed) = (Work::default(), Vec::new(), Duration::ZERO);
        for _ in 0..ROUNDS {
            let (robit, advisory, lease) = (
                libraries.robit("solo"),
                libraries.advisory("solo"),
                libraries.lease("solo", 1),
            );
            meter.reset().await;
            let start = Instant::now();
            match library {
                0 => timed(robit, n, &mut cycles).await,
                1 => timed(advisory, n, &mut cycles).await,
                _ => timed(lease, n, &mut cycles).await,
            }
            elapsed += start.elapsed();
            work += meter.read().await;
        }
        columns.push((work, cycles, elapsed));
    }
    for (label, (work, mut cycles, elapsed)) in LABELS.into_iter().zip(columns) {
        cycles.sort();
        let mut figures = work.per(cycles.len()).to_vec();
        figures.extend([
            cycles.len() as f64 / elapsed.as_secs_f64(),
            percentile(&cycles, 0.5),
            percentile(&cycles, 0.99),
        ]);
        table.column(label, figures);
    }
    println!("\n### (g1) one task, lock + unlock ({n} cycles × {ROUNDS} rounds each)\n");
    table.print(&[(0, 1), (0, 2)]);
}

/// `n` cycles of `locker`, each timed into `cycles`.
async fn timed(mut locker: impl Locker, n: usize, cycles: &mut Vec<Duration>) {
    for _ in 0..n {
        let start = Instant::now();
        cycle(&mut locker).await;
        cycles.push(start.elapsed());
    }
}

/// (g2): [`TASKS`] tasks, each locking and unlocking a name of its own, for a window.
async fn distinct(libraries: &Libraries) {
    let window = Duration::from_secs_f64(3.0 * scale());
    let mut table = Table::new(&[
        ("round trips / cycle", Unit::Fraction),
        ("statements / cycle", Unit::Fraction),
        ("server CPU / cycle", Unit::Micros),
        ("client CPU / cycle", Unit::Micros),
        ("cycles / s", Unit::Count),
    ]);
    for (library, label) in LABELS.into_iter().enumerate() {
        let mut meter = libraries.meter(library);
        meter.reset().await;
        let stop_at = Instant::now() + window;
        let count = Arc::new(AtomicU64::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..TASKS {
            let name = format!("distinct-{task}");
            let count = Arc::clone(&count);
            match library {
                0 => tasks.spawn(loop_until(libraries.robit(&name), stop_at, count)),
                1 => tasks.spawn(loop_until(libraries.advisory(&name), stop_at, count)),
                _ => tasks.spawn(loop_until(libraries.lease(&name, 1), stop_at, count)),
            };
        }
        let started = Instant::now();
        tasks.join_all().await;
        let (cycles, elapsed) = (count.load(Ordering::Relaxed), started.elapsed());
        let mut figures = meter.read().await.per(cycles as usize).to_vec();
        figures.push(cycles as f64 / elapsed.as_secs_f64());
        table.column(label, figures);
    }
    println!("\n### (g2) {TASKS} tasks, each on a name of its own, for {window:?}\n");
    table.print(&[(0, 1), (0, 2)]);
}

async fn loop_until(mut locker: impl Locker, stop_at: Instant, count: Arc<AtomicU64>) {
    while Instant::now() < stop_at {
        cycle(&mut locker).await;
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// (g3): [`CONTENDERS`] tasks on one name, each holding it about a millisecond.
async fn contended(libraries: &Libraries) {
    let window = Duration::from_secs_f64(3.0 * scale());
    let mut table = Table::new(&[
        ("round trips / acquisition", Unit::Fraction),
        ("statements / acquisition", Unit::Fraction),
        ("server CPU / acquisition", Unit::Micros),
        ("client CPU / acquisition", Unit::Micros),
        ("acquisitions / s", Unit::Count),
        ("fewest by one task", Unit::Count),
        ("most by one task", Unit::Count),
        ("gave up (2 s budget)", Unit::Count),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
        ("wait max", Unit::Millis),
    ]);
    for (library, label) in LABELS.into_iter().enumerate() {
        let mut meter = libraries.meter(library);
        let run = match library {
            0 => {
                let lockers = (0..CONTENDERS)
                    .map(|_| libraries.robit("contended"))
                    .collect();
                contend(lockers, &mut meter, window).await
            }
            1 => {
                let lockers = (0..CONTENDERS)
                    .map(|_| libraries.advisory("contended"))
                    .collect();
                contend(lockers, &mut meter, window).await
            }
            _ => {
                let lockers = (0..CONTENDERS)
                    .map(|task| libraries.lease("contended", task as i64))
                    .collect();
                contend(lockers, &mut meter, window).await
            }
        };
        let shares = run.shares();
        let waits = run.waits();
        let acquired: usize = shares.iter().sum();
        let mut figures = run.work.per(run.acquisitions()).to_vec();
        figures.extend([
            acquired as f64 / run.window.as_secs_f64(),
            *shares.iter().min().unwrap() as f64,
            *shares.iter().max().unwrap() as f64,
            run.gave_up as f64,
            percentile(&waits, 0.5),
            percentile(&waits, 0.99),
            waits.last().map_or(f64::NAN, Duration::as_secs_f64),
        ]);
        table.column(label, figures);
    }
    println!("\n### (g3) {CONTENDERS} tasks on one name, each holding it ~1 ms, for {window:?}\n");
    table.print(&[(0, 1), (0, 2)]);
}
