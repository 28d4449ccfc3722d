//! The contenders: robit's driver on a connection that counts its round trips, and the
//! two hand-written baselines that send the same commands with the redis crate directly.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{Cmd, Pipeline, RedisFuture, Script, ToRedisArgs, Value};
use robit::redis::{Connector, DEFAULT_COMMAND_TIMEOUT, RedisDriver, UrlConnector};

use crate::segments::note;
use crate::support::RedisServer;

/// A connection that counts its round trips and, for the segments phase, notes when
/// each command is handed to it and when its answer is back.
#[derive(Clone)]
pub(crate) struct Counted {
    pub(crate) inner: ConnectionManager,
    pub(crate) round_trips: Arc<AtomicU64>,
    pub(crate) notes: bool,
}

impl Counted {
    /// `inner`, counting its round trips into `round_trips`, noting nothing.
    pub(crate) fn counting(inner: ConnectionManager, round_trips: &Arc<AtomicU64>) -> Self {
        Self {
            inner,
            round_trips: Arc::clone(round_trips),
            notes: false,
        }
    }
}

impl ConnectionLike for Counted {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        if !self.notes {
            return self.inner.req_packed_command(cmd);
        }
        note();
        let answer = self.inner.req_packed_command(cmd);
        Box::pin(async move {
            let answer = answer.await;
            note();
            answer
        })
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

pub(crate) struct CountingConnector {
    url: UrlConnector,
    round_trips: Arc<AtomicU64>,
    notes: bool,
}

#[robit::async_trait]
impl Connector for CountingConnector {
    type Connection = Counted;

    async fn connect(&self) -> redis::RedisResult<Counted> {
        Ok(Counted {
            inner: self.url.connect().await?,
            round_trips: Arc::clone(&self.round_trips),
            notes: self.notes,
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

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

pub(crate) fn robit_driver(
    server: &RedisServer,
    round_trips: &Arc<AtomicU64>,
) -> RedisDriver<CountingConnector> {
    robit_driver_noting(server, round_trips, false)
}

/// robit's driver, its connection counting round trips and, if `notes`, noting them.
pub(crate) fn robit_driver_noting(
    server: &RedisServer,
    round_trips: &Arc<AtomicU64>,
    notes: bool,
) -> RedisDriver<CountingConnector> {
    let connector = CountingConnector {
        url: UrlConnector::new(&server.url()).unwrap(),
        round_trips: Arc::clone(round_trips),
        notes,
    };
    RedisDriver::with_connector(connector)
        .quarantine(Duration::ZERO)
        .build()
        .unwrap()
}

/// Who a baseline cycle acts as: the owner token, and the waiter that robit's `lock()`
/// sends with every attempt (it may have to wait), as robit encodes them. Built once per
/// task, so the baselines do not pay for drawing tokens, which robit does per cycle.
pub(crate) struct Caller {
    owner: String,
    waiter: String,
    entry: String,
}

impl Caller {
    pub(crate) fn new(n: u128) -> Self {
        let waiter = format!("{:032x}", n | (1 << 127));
        Self {
            owner: format!("{n:032x}"),
            // The default poll interval, 250 ms, as robit's entries carry it.
            entry: format!("{waiter}:250"),
            waiter,
        }
    }
}

impl Caller {
    /// The acquire script's arguments after its keys, as robit's `lock()` sends them.
    fn acquire_args(&self) -> impl ToRedisArgs + '_ {
        (
            &self.owner,
            30_000,
            &self.waiter,
            &self.entry,
            QUEUE_TTL_MS,
            "robit:handoff",
            500,
            0,
        )
    }

    /// The release script's arguments after its keys, as robit's `unlock()` sends them.
    fn release_args(&self) -> impl ToRedisArgs + '_ {
        (&self.owner, "robit:handoff", 500)
    }
}

/// The queue entry lifetime robit's `lock()` sends with the default poll interval: four
/// intervals, at least a second.
pub(crate) const QUEUE_TTL_MS: u64 = 1_000;

/// The baseline: robit's own scripts, called directly, with the same keys and arguments.
pub(crate) struct Baseline {
    pub(crate) acquire: Script,
    pub(crate) release: Script,
    pub(crate) connection: ConnectionManager,
}

impl Baseline {
    pub(crate) async fn new(server: &RedisServer) -> Self {
        Self {
            acquire: Script::new(&format!(
                "{}{}",
                include_str!("../../src/redis/scripts/handoff.lua"),
                include_str!("../../src/redis/scripts/acquire.lua")
            )),
            release: Script::new(&format!(
                "{}{}",
                include_str!("../../src/redis/scripts/handoff.lua"),
                include_str!("../../src/redis/scripts/release.lua")
            )),
            connection: Self::connect(server).await,
        }
    }

    /// A connection manager whose commands time out as robit's driver's do. One timer
    /// per command either way; with the same timeout, neither contender's timer is due
    /// sooner than the one the runtime last went to sleep on, which would make the
    /// runtime wake itself (a write to its event descriptor) at the next one's commands.
    /// With the manager's default of 500 ms, that happened to a baseline nearly every
    /// time it followed robit.
    pub(crate) async fn connect(server: &RedisServer) -> ConnectionManager {
        let client = redis::Client::open(server.url()).unwrap();
        let config =
            ConnectionManagerConfig::new().set_response_timeout(Some(DEFAULT_COMMAND_TIMEOUT));
        ConnectionManager::new_with_config(client, config)
            .await
            .unwrap()
    }

    pub(crate) async fn cycle(
        &self,
        connection: &mut impl ConnectionLike,
        name: &str,
        who: &Caller,
    ) {
        let lock = format!("{{robit}}:lock:{name}");
        let queue = format!("{{robit}}:queue:{name}");
        let (granted, _, _next): (i64, i64, Vec<u8>) = self
            .acquire
            .key(&lock)
            .key(&queue)
            .key("{robit}:fence")
            .key("{robit}:quarantine")
            .arg(who.acquire_args())
            .invoke_async(connection)
            .await
            .unwrap();
        assert_eq!(granted, 1, "baseline acquire refused");
        let _: i64 = self
            .release
            .key(&lock)
            .key(&queue)
            .arg(who.release_args())
            .invoke_async(connection)
            .await
            .unwrap();
    }
}

/// The same two calls, encoded as leanly as robit encodes them: EVALSHA built straight
/// into one command buffer, keys formatted once. robit's own overhead is measured
/// against this one; the `redis::Script` baseline is what hand-written code usually is.
pub(crate) struct LeanBaseline {
    acquire: String,
    release: String,
    lock: String,
    queue: String,
}

impl LeanBaseline {
    pub(crate) fn new(baseline: &Baseline, name: &str) -> Self {
        Self {
            acquire: baseline.acquire.get_hash().to_owned(),
            release: baseline.release.get_hash().to_owned(),
            lock: format!("{{robit}}:lock:{name}"),
            queue: format!("{{robit}}:queue:{name}"),
        }
    }

    pub(crate) async fn cycle(&self, connection: &mut impl ConnectionLike, who: &Caller) {
        let (granted, _, _next): (i64, i64, Vec<u8>) = redis::cmd("EVALSHA")
            .arg(&self.acquire)
            .arg(4)
            .arg(&self.lock)
            .arg(&self.queue)
            .arg("{robit}:fence")
            .arg("{robit}:quarantine")
            .arg(who.acquire_args())
            .query_async(connection)
            .await
            .unwrap();
        assert_eq!(granted, 1, "lean baseline acquire refused");
        let _: i64 = redis::cmd("EVALSHA")
            .arg(&self.release)
            .arg(2)
            .arg(&self.lock)
            .arg(&self.queue)
            .arg(who.release_args())
            .query_async(connection)
            .await
            .unwrap();
    }
}

pub(crate) struct Latencies {
    pub(crate) cycles: usize,
    pub(crate) elapsed: Duration,
    pub(crate) sorted: Vec<Duration>,
}

impl Latencies {
    pub(crate) fn new(mut samples: Vec<Duration>, elapsed: Duration) -> Self {
        samples.sort();
        Self {
            cycles: samples.len(),
            elapsed,
            sorted: samples,
        }
    }

    pub(crate) fn per_second(&self) -> f64 {
        self.cycles as f64 / self.elapsed.as_secs_f64()
    }
}
