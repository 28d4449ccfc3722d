//! Scenario (e), with the `etcd` feature: robit's etcd driver on a three-member cluster
//! of the bench's own next to its Redis driver on the server of (a)–(c), in the same
//! run: one task on one key, then [`CONTENDERS`] tasks on one key. The members run on
//! this machine, their data on its disk: every etcd write waits for Raft's fsync of its
//! log entry on the leader and a follower, so etcd's latencies include local fsyncs.
//! [`run`] prints what is counted and how.

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use robit::Driver;
use robit::etcd::EtcdDriver;
use robit_test_support::bench::robit_driver;
use robit_test_support::etcd::EtcdCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use crate::contention::{CONTENDERS, HOLD, contend};
use crate::lockers::{Locker, Robit, cycle};
use crate::meter::{Meter, Metered, RoundTrips, Work};
use crate::table::{Table, Unit, percentile};
use crate::uncontended::ROUNDS;
use crate::{Setup, scale, scaled};

const MEMBERS: usize = 3;

/// `GET /metrics` of every member on `ports`: the gRPC calls they handled and their CPU
/// time in s, summed; and their version.
fn scrape(ports: &[u16]) -> ([f64; 2], String) {
    let (mut sums, mut version) = ([0.0; 2], String::new());
    for &port in ports {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        for line in text.lines() {
            let value = || line.rsplit(' ').next().unwrap().parse::<f64>().unwrap();
            if line.starts_with("grpc_server_handled_total{") {
                sums[0] += value();
            } else if line.starts_with("process_cpu_seconds_total ") {
                sums[1] += value();
            } else if let Some(rest) = line.strip_prefix("etcd_server_version{server_version=\"") {
                version = rest.split('"').next().unwrap().to_owned();
            }
        }
    }
    (sums, version)
}

/// The meter's `work` per `n` operations: `[round trips, requests, server CPU, client
/// CPU]`; for etcd, whose members are on `ports`, their requests and CPU since `before`
/// (their [`scrape`]), and no round trips (counted apart).
fn cost(work: Work, n: usize, ports: Option<&[u16]>, before: Option<[f64; 2]>) -> [f64; 4] {
    let mut cost = work.per(n);
    if let (Some(ports), Some(before)) = (ports, before) {
        let after = scrape(ports).0;
        let per = |i: usize| (after[i] - before[i]) / n.max(1) as f64;
        cost[..3].copy_from_slice(&[f64::NAN, per(0), per(1)]);
    }
    cost
}

/// One column of (e1): lock and unlock timed apart; etcd's if `ports` are its members'.
#[derive(Default)]
struct Solo<'a> {
    ports: Option<&'a [u16]>,
    locks: Vec<Duration>,
    unlocks: Vec<Duration>,
    elapsed: Duration,
    /// Per cycle, the mean of the rounds'.
    cost: [f64; 4],
}

impl Solo<'_> {
    async fn round(&mut self, locker: &mut Robit, meter: &mut Meter, trips: &RoundTrips) {
        let (before, n) = (self.ports.map(|ports| scrape(ports).0), scaled(200));
        meter.reset(trips).await;
        let start = Instant::now();
        for _ in 0..n {
            let asked = Instant::now();
            let held = locker.lock().await.expect("uncontended lock gave up");
            let locked = Instant::now();
            locker.unlock(held).await;
            self.locks.push(locked - asked);
            self.unlocks.push(locked.elapsed());
        }
        self.elapsed += start.elapsed();
        let cost = cost(meter.read(trips).await, n, self.ports, before);
        for (total, one) in self.cost.iter_mut().zip(cost) {
            *total += one / ROUNDS as f64;
        }
    }

    /// The figures of (e1); `trips`, round trips per cycle where they were counted apart.
    fn figures(mut self, trips: Option<f64>) -> Vec<f64> {
        let mut figures = self.cost.to_vec();
        figures[0] = trips.unwrap_or(figures[0]);
        figures.push(self.locks.len() as f64 / self.elapsed.as_secs_f64());
        for samples in [&mut self.locks, &mut self.unlocks] {
            samples.sort();
            figures.extend([percentile(samples, 0.5), percentile(samples, 0.99)]);
        }
        figures
    }
}

/// A driver that talks to the member at `endpoint`.
fn etcd_driver(endpoint: String) -> EtcdDriver {
    EtcdDriver::builder([endpoint]).build().unwrap()
}

pub(crate) async fn run(setup: &mut Setup) {
    let cluster = EtcdCluster::start(MEMBERS);
    let ports: Vec<u16> = (0..MEMBERS).map(|i| cluster.client_port(i)).collect();
    let leader = cluster.leader();
    let version = scrape(&ports).1;
    println!("\n## (e) etcd: robit's etcd driver next to its Redis driver\n");
    println!("A {MEMBERS}-member etcd {version} cluster of the bench's own on loopback, its");
    println!("data on this machine's disk: a write waits for Raft's fsync on the leader and a");
    println!("follower, so etcd's latencies include local fsyncs (the Redis server persists");
    println!("nothing). etcd's requests are the gRPC calls its members handled, summed (a");
    println!("follower passes writes and keepalives to the leader over its peer link, not");
    println!("gRPC); Redis's, the commands it ran, those inside scripts included. etcd's round");
    println!("trips are the bursts of calls a proxy in front of the driver's member saw, in a");
    println!("pass of their own. Server CPU is every member's (`process_cpu_seconds_total`, in");
    println!("10 ms ticks), Raft's heartbeats included.");
    solo(setup, &cluster, leader, &ports).await;
    contended(setup, &cluster, leader, &ports).await;
    if cluster.leader() != leader {
        println!("\nThe leader changed during (e): its figures mix the members' roles.");
    }
}

/// One task, one key: etcd through the leader, through a follower, and Redis, in turns.
async fn solo(setup: &mut Setup, cluster: &EtcdCluster, leader: usize, ports: &[u16]) {
    let members = [leader, (leader + 1) % MEMBERS];
    let mut etcd = members.map(|m| Robit::new(&etcd_driver(cluster.endpoint(m)), "etcd-solo"));
    let mut redis = Robit::new(&setup.driver, "etcd-solo");
    for _ in 0..100 {
        for locker in etcd.iter_mut().chain([&mut redis]) {
            cycle(locker).await;
        }
    }
    let uncounted = RoundTrips::Client(Arc::default());
    let mut solos = [Some(ports), Some(ports), None].map(|ports| Solo {
        ports,
        ..Solo::default()
    });
    for round in 0..ROUNDS {
        for turn in 0..3 {
            let (meter, which) = (&mut setup.meter, (round + turn) % 3);
            match etcd.get_mut(which) {
                Some(locker) => solos[which].round(locker, meter, &uncounted).await,
                None => solos[2].round(&mut redis, meter, &setup.robit).await,
            }
        }
    }
    let (leader_trips, leader_calls) = counted(cluster, members[0]).await;
    let (follower_trips, follower_calls) = counted(cluster, members[1]).await;
    println!("\n### (e1) Uncontended: one task, one key, lock + unlock\n");
    let mut table = Table::new(&[
        ("round trips/cycle", Unit::Fraction),
        ("requests/cycle, all servers", Unit::Fraction),
        ("server CPU/cycle, all servers", Unit::Micros),
        ("client CPU/cycle", Unit::Micros),
        ("cycles/s", Unit::Count),
        ("lock p50", Unit::Millis),
        ("lock p99", Unit::Millis),
        ("unlock p50", Unit::Millis),
        ("unlock p99", Unit::Millis),
    ]);
    let labels = ["etcd, via the leader", "etcd, via a follower", "Redis"];
    let trips = [Some(leader_trips), Some(follower_trips), None];
    for ((label, solo), trips) in labels.into_iter().zip(solos).zip(trips) {
        table.column(label, solo.figures(trips));
    }
    table.print(&[(0, 2), (1, 2)]);
    let calls = format!("{leader_calls:.2} via the leader, {follower_calls:.2} via a follower");
    println!("\nThe proxy saw gRPC calls/cycle: {calls}.");
}

/// What a proxy saw of a driver's HTTP/2 connection. A call is a HEADERS frame from the
/// client; a round trip begins with a call sent after the server answered (a HEADERS or
/// DATA frame from it), so calls sent together, before any answer, are one round trip.
struct Counts {
    /// Round trips, calls.
    seen: [AtomicU64; 2],
    /// The server answered since the last round trip began.
    answered: AtomicBool,
}

impl Counts {
    fn frame(&self, from_client: bool, kind: u8) {
        const DATA: u8 = 0;
        const HEADERS: u8 = 1;
        match (from_client, kind) {
            (true, HEADERS) => {
                let trip = self.answered.swap(false, Ordering::Relaxed);
                self.seen[0].fetch_add(u64::from(trip), Ordering::Relaxed);
                self.seen[1].fetch_add(1, Ordering::Relaxed);
            }
            (false, DATA | HEADERS) => self.answered.store(true, Ordering::Relaxed),
            _ => {}
        }
    }
}

/// Round trips and gRPC calls per cycle of a driver on `member`, through a proxy.
async fn counted(cluster: &EtcdCluster, member: usize) -> (f64, f64) {
    let counts = Arc::new(Counts {
        seen: Default::default(),
        answered: AtomicBool::new(true),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let target = cluster.client_port(member);
    let accepting = tokio::spawn(accept(listener, target, Arc::clone(&counts)));
    let mut locker = Robit::new(&etcd_driver(proxy), "etcd-counted");
    cycle(&mut locker).await; // Connects and grants the lease.
    let read = || counts.seen.each_ref().map(|n| n.load(Ordering::Relaxed));
    let (before, n) = (read(), scaled(100));
    for _ in 0..n {
        cycle(&mut locker).await;
    }
    let (after, ()) = (read(), accepting.abort());
    let [trips, calls] = [0, 1].map(|i| (after[i] - before[i]) as f64 / n as f64);
    (trips, calls)
}

async fn accept(listener: TcpListener, target: u16, counts: Arc<Counts>) {
    while let Ok((client, _)) = listener.accept().await {
        let server = TcpStream::connect(("127.0.0.1", target)).await.unwrap();
        let ((client_in, client_out), (server_in, server_out)) =
            (client.into_split(), server.into_split());
        tokio::spawn(pump(client_in, server_out, true, Arc::clone(&counts)));
        tokio::spawn(pump(server_in, client_out, false, Arc::clone(&counts)));
    }
}

/// Copies one direction of an HTTP/2 connection, telling `counts` each frame's type.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    from_client: bool,
    counts: Arc<Counts>,
) {
    // Bytes of the frame under way still to come, after the client's 24-byte preface.
    let mut skip = if from_client { 24 } else { 0 };
    let (mut header, mut buffer) = (Vec::with_capacity(9), vec![0; 16 * 1024]);
    while let Ok(n @ 1..) = from.read(&mut buffer).await {
        let mut bytes = &buffer[..n];
        while !bytes.is_empty() {
            let take = if skip > 0 { skip } else { 9 - header.len() }.min(bytes.len());
            if skip > 0 {
                skip -= take;
            } else {
                header.extend_from_slice(&bytes[..take]);
            }
            bytes = &bytes[take..];
            if header.len() == 9 {
                skip = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
                counts.frame(from_client, header[3]);
                header.clear();
            }
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// [`CONTENDERS`] tasks on one key, as in (c): etcd (via the leader) and Redis, with a
/// driver per task and with one shared by all.
async fn contended(setup: &mut Setup, cluster: &EtcdCluster, leader: usize, ports: &[u16]) {
    let window = Duration::from_secs_f64(3.0 * scale());
    let (secs, hold) = (window.as_secs_f64(), HOLD.as_millis());
    println!("\n### (e2) Contention: {CONTENDERS} tasks, one key, each holding it ~{hold} ms\n");
    println!("As (c), {secs:.1} s per column; etcd via the leader. A driver per task is what");
    println!("separate processes have: a connection each, and for etcd a lease each. min /");
    println!("mean is the least-served task's share of the mean (1 is fair).\n");
    let mut table = Table::new(&[
        ("round trips/acquisition", Unit::Fraction),
        ("requests/acquisition, all servers", Unit::Fraction),
        ("server CPU/acquisition, all servers", Unit::Micros),
        ("client CPU/acquisition", Unit::Micros),
        ("acquisitions/s", Unit::Count),
        ("acquisitions/task, min", Unit::Count),
        ("acquisitions/task, mean", Unit::Fraction),
        ("min / mean", Unit::Fraction),
        ("gave up", Unit::Count),
        ("wait p50", Unit::Millis),
        ("wait p99", Unit::Millis),
    ]);
    let (meter, uncounted) = (&mut setup.meter, RoundTrips::Client(Arc::default()));
    let etcd = |n| {
        (0..n)
            .map(|_| etcd_driver(cluster.endpoint(leader)))
            .collect::<Vec<_>>()
    };
    let figures = contend_on(&etcd(CONTENDERS), meter, &uncounted, Some(ports), window).await;
    table.column("etcd, a driver per task", figures);
    let figures = contend_on(&etcd(1), meter, &uncounted, Some(ports), window).await;
    table.column("etcd, one driver", figures);
    let counter = Arc::default();
    let apart: Vec<_> = (0..CONTENDERS)
        .map(|_| robit_driver(&setup.server, &counter))
        .collect();
    let figures = contend_on(&apart, meter, &RoundTrips::Client(counter), None, window).await;
    table.column("Redis, a driver per task", figures);
    let shared = [setup.driver.clone()];
    let figures = contend_on(&shared, meter, &setup.robit, None, window).await;
    table.column("Redis, one driver", figures);
    table.print(&[(0, 2), (1, 3)]);
}

/// [`CONTENDERS`] tasks contending through `drivers`, task `i` on driver `i` modulo
/// their number: the figures of (e2).
async fn contend_on<D: Driver + Clone>(
    drivers: &[D],
    meter: &mut Meter,
    trips: &RoundTrips,
    ports: Option<&[u16]>,
    window: Duration,
) -> Vec<f64> {
    for driver in drivers {
        cycle(&mut Robit::new(driver, "etcd-contended")).await;
    }
    let lockers = (0..CONTENDERS)
        .map(|task| Robit::new(&drivers[task % drivers.len()], "etcd-contended"))
        .collect();
    let before = ports.map(|ports| scrape(ports).0);
    let run = contend(lockers, &mut Metered { meter, trips }, window).await;
    let shares = run.shares();
    let mean = shares.iter().sum::<usize>() as f64 / CONTENDERS as f64;
    let min = *shares.iter().min().unwrap() as f64;
    let waits = run.waits();
    let mut figures = cost(run.work, run.acquisitions(), ports, before).to_vec();
    figures.extend([
        mean * CONTENDERS as f64 / run.window.as_secs_f64(),
        min,
        mean,
        min / mean,
        run.gave_up as f64,
        percentile(&waits, 0.5),
        percentile(&waits, 0.99),
    ]);
    figures
}
