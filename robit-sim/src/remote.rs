//! Any [`Driver`] served over the simulated network, and the client that talks to it.
//!
//! In-process drivers (robit's local driver, or a driver author's) have no network, so
//! partitions and latency could not touch them. [`serve_driver`] runs one on a backend
//! host behind a small line protocol over turmoil's TCP; [`RemoteDriver`] is the
//! [`Driver`] the clients use to reach it, one connection per request, each bounded by
//! a timeout. The server reports what it grants, renews and releases to a
//! [`BackendLog`], in true time, for the checkers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, LockName, OwnerToken, Renewal};
use robit::sources::SeededEntropy;
use robit::{Driver, FenceToken};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use turmoil::net::{TcpListener, TcpStream};

use crate::{EventKind, History, SimClock};

/// Where a backend reports grants, renewals and releases: the run's history, with the
/// backend's clock to turn its local expiry times into true ones.
///
/// # Example
///
/// ```
/// use robit_sim::{BackendLog, History, SimClock};
///
/// let log = BackendLog::new(History::new(), SimClock::new());
/// # let _ = log;
/// ```
#[derive(Debug, Clone)]
pub struct BackendLog {
    history: History,
    clock: SimClock,
}

impl BackendLog {
    /// Reports to `history`; `clock` is the backend host's clock.
    pub fn new(history: History, clock: SimClock) -> Self {
        Self { history, clock }
    }

    /// The true instant at which a grant of `ttl` made now, by the backend's clock,
    /// runs out.
    pub fn until(&self, ttl: Duration) -> Duration {
        self.clock.true_at(self.clock.local_elapsed() + ttl)
    }

    /// The true instant at which the backend's local reading `local` is reached.
    pub fn true_at(&self, local: Duration) -> Duration {
        self.clock.true_at(local)
    }

    /// Records an event as the backend's.
    pub fn record(&self, kind: EventKind) {
        self.history.record("backend", kind);
    }
}

/// Builds the driver a simulated backend host serves, given that host's clock: robit's
/// local driver, or the driver of a conformance suite's user.
///
/// # Example
///
/// ```
/// use robit_sim::DriverFactory;
/// use std::sync::Arc;
///
/// let local = DriverFactory::new(|clock| robit::LocalDriver::with_clock(Arc::new(clock)));
/// # let _ = local;
/// ```
#[derive(Clone)]
pub struct DriverFactory(Arc<dyn Fn(SimClock) -> Arc<dyn Driver> + Send + Sync>);

impl DriverFactory {
    /// A factory from a function of the backend host's clock.
    pub fn new<D: Driver>(build: impl Fn(SimClock) -> D + Send + Sync + 'static) -> Self {
        Self(Arc::new(move |clock| {
            Arc::new(build(clock)) as Arc<dyn Driver>
        }))
    }

    /// robit's local driver, on the backend host's clock.
    pub fn local() -> Self {
        Self::new(|clock| robit::LocalDriver::with_clock(Arc::new(clock)))
    }

    /// A fresh driver, empty, on `clock`.
    pub fn build(&self, clock: SimClock) -> Arc<dyn Driver> {
        (self.0)(clock)
    }
}

impl std::fmt::Debug for DriverFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DriverFactory")
    }
}

/// The state a served driver keeps: its leases by id. It outlives a restart of the
/// backend host unless the restart loses state.
///
/// # Example
///
/// ```
/// use robit_sim::ServedDriver;
/// use std::sync::Arc;
///
/// let served = ServedDriver::new(Arc::new(robit::LocalDriver::new()), 7, 0);
/// # let _ = served;
/// ```
#[derive(Clone)]
pub struct ServedDriver {
    driver: Arc<dyn Driver>,
    state: Arc<Mutex<Served>>,
}

struct Served {
    next: u64,
    leases: BTreeMap<u64, (Arc<dyn Lease>, String)>,
    entropy: SeededEntropy,
}

impl ServedDriver {
    /// Serves `driver`; `seed` makes the owner tokens it generates deterministic.
    ///
    /// `boot` must differ between two servers that clients could mistake for each other
    /// (a backend restarted without its state): lease ids start from it, so a client's
    /// renew or release of a lease from before a restart can never reach a lease granted
    /// after it.
    pub fn new(driver: Arc<dyn Driver>, seed: u64, boot: u32) -> Self {
        Self {
            driver,
            state: Arc::new(Mutex::new(Served {
                next: (u64::from(boot) << 32) + 1,
                leases: BTreeMap::new(),
                entropy: SeededEntropy::new(seed),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Served> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers one request line from `client`.
    async fn handle(&self, line: &str, client: &str, log: &BackendLog) -> String {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ACQUIRE", name, ttl] => {
                let (Some(name), Ok(ttl)) = (unhex(name), ttl.parse::<u64>()) else {
                    return "ERR malformed ACQUIRE".into();
                };
                self.acquire(name, Duration::from_millis(ttl), client, log)
                    .await
            }
            ["RENEW", id, ttl] => {
                let (Ok(id), Ok(ttl)) = (id.parse::<u64>(), ttl.parse::<u64>()) else {
                    return "ERR malformed RENEW".into();
                };
                self.renew(id, Duration::from_millis(ttl), client, log)
                    .await
            }
            ["RELEASE", id] => {
                let Ok(id) = id.parse::<u64>() else {
                    return "ERR malformed RELEASE".into();
                };
                self.release(id, client, log).await
            }
            _ => "ERR unknown request".into(),
        }
    }

    /// `ACQUIRE`: a grant is kept under a new lease id, which the answer gives.
    async fn acquire(
        &self,
        name: Vec<u8>,
        ttl: Duration,
        client: &str,
        log: &BackendLog,
    ) -> String {
        let owner = OwnerToken::generate(&self.lock().entropy);
        let request = AcquireRequest::new(LockName::from(name), owner, ttl);
        match self.driver.acquire(&request).await {
            Ok(Acquire::Granted(lease)) => {
                let token = lease.fence().get();
                let id = {
                    let mut state = self.lock();
                    let id = state.next;
                    state.next += 1;
                    state.leases.insert(id, (lease, client.to_owned()));
                    id
                };
                log.record(EventKind::BackendGranted {
                    to: client.to_owned(),
                    token,
                    until: log.until(ttl),
                });
                format!("GRANTED {id} {token}")
            }
            Ok(Acquire::Held { expires_in }) => match expires_in {
                Some(left) => format!("HELD {}", left.as_millis()),
                None => "HELD -".into(),
            },
            Ok(Acquire::Quarantined { left }) => {
                format!("QUARANTINED {}", left.as_millis())
            }
            Ok(_) => "ERR unknown outcome".into(),
            Err(error) => format!("ERR {error}"),
        }
    }

    /// `RENEW`: a lease the driver no longer renews is forgotten.
    async fn renew(&self, id: u64, ttl: Duration, client: &str, log: &BackendLog) -> String {
        let Some((lease, _)) = self.lock().leases.get(&id).cloned() else {
            return "LOST".into();
        };
        match lease.renew(ttl).await {
            Ok(Renewal::Renewed) => {
                log.record(EventKind::BackendRenewed {
                    by: client.to_owned(),
                    token: lease.fence().get(),
                    until: log.until(ttl),
                });
                "RENEWED".into()
            }
            Ok(_) => {
                self.lock().leases.remove(&id);
                "LOST".into()
            }
            Err(error) => format!("ERR {error}"),
        }
    }

    /// `RELEASE`: the lease is forgotten whatever the driver answers.
    async fn release(&self, id: u64, client: &str, log: &BackendLog) -> String {
        let Some((lease, _)) = self.lock().leases.remove(&id) else {
            return "GONE".into();
        };
        match lease.release().await {
            Ok(()) => {
                log.record(EventKind::BackendReleased {
                    by: client.to_owned(),
                    token: lease.fence().get(),
                });
                "RELEASED".into()
            }
            Err(error) => format!("ERR {error}"),
        }
    }
}

impl std::fmt::Debug for ServedDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedDriver")
            .field("leases", &self.lock().leases.len())
            .finish_non_exhaustive()
    }
}

/// Serves `driver` on `port` of the current (backend) host until the host stops.
///
/// # Errors
///
/// An I/O error if the port cannot be bound.
pub async fn serve_driver(driver: ServedDriver, port: u16, log: BackendLog) -> std::io::Result<()> {
    let listener = TcpListener::bind(("0.0.0.0", port)).await?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let client = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string());
        let (driver, log) = (driver.clone(), log.clone());
        tokio::task::spawn_local(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let reply = driver.handle(&line, &client, &log).await;
                if write
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
    }
}

/// The [`Driver`] a simulated client uses to reach a driver served by [`serve_driver`].
///
/// # Example
///
/// ```
/// use robit_sim::RemoteDriver;
/// use std::time::Duration;
///
/// let driver = RemoteDriver::new("backend", 7070, Duration::from_millis(500));
/// # let _ = driver;
/// ```
#[derive(Debug, Clone)]
pub struct RemoteDriver {
    host: String,
    port: u16,
    timeout: Duration,
}

impl RemoteDriver {
    /// A driver for the server on `host:port`, giving up on a request after `timeout`.
    pub fn new(host: impl Into<String>, port: u16, timeout: Duration) -> Self {
        Self {
            host: host.into(),
            port,
            timeout,
        }
    }

    async fn call(&self, request: String) -> Result<String, DriverError> {
        let exchange = async {
            let stream = TcpStream::connect((self.host.as_str(), self.port)).await?;
            let (read, mut write) = stream.into_split();
            write.write_all(format!("{request}\n").as_bytes()).await?;
            let mut reply = String::new();
            BufReader::new(read).read_line(&mut reply).await?;
            if reply.is_empty() {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
            Ok(reply.trim_end().to_owned())
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(reply)) => match reply.strip_prefix("ERR ") {
                Some(error) => Err(DriverError::unavailable(error.to_owned())),
                None => Ok(reply),
            },
            Ok(Err(error)) => Err(DriverError::unavailable(error)),
            Err(_) => Err(DriverError::unavailable(format!(
                "no reply from {}:{} within {:?}",
                self.host, self.port, self.timeout
            ))),
        }
    }
}

fn millis(duration: Duration) -> u128 {
    duration.as_nanos().div_ceil(1_000_000)
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[async_trait]
impl Driver for RemoteDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let reply = self
            .call(format!(
                "ACQUIRE {} {}",
                hex(request.name.as_bytes()),
                millis(request.ttl)
            ))
            .await?;
        let words: Vec<&str> = reply.split_whitespace().collect();
        match words.as_slice() {
            ["GRANTED", id, token] => match (id.parse(), token.parse()) {
                (Ok(id), Ok(token)) => Ok(Acquire::Granted(Arc::new(RemoteLease {
                    driver: self.clone(),
                    id,
                    fence: FenceToken::new(token),
                }))),
                _ => Err(DriverError::rejected(format!("malformed reply {reply:?}"))),
            },
            ["HELD", "-"] => Ok(Acquire::Held { expires_in: None }),
            ["HELD", ms] => Ok(Acquire::Held {
                expires_in: ms.parse().ok().map(Duration::from_millis),
            }),
            ["QUARANTINED", ms] => match ms.parse() {
                Ok(ms) => Ok(Acquire::Quarantined {
                    left: Duration::from_millis(ms),
                }),
                Err(_) => Err(DriverError::rejected(format!("malformed reply {reply:?}"))),
            },
            _ => Err(DriverError::rejected(format!("malformed reply {reply:?}"))),
        }
    }
}

struct RemoteLease {
    driver: RemoteDriver,
    id: u64,
    fence: FenceToken,
}

#[async_trait]
impl Lease for RemoteLease {
    fn fence(&self) -> FenceToken {
        self.fence
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        match self
            .driver
            .call(format!("RENEW {} {}", self.id, millis(ttl)))
            .await?
            .as_str()
        {
            "RENEWED" => Ok(Renewal::Renewed),
            _ => Ok(Renewal::Lost),
        }
    }

    async fn release(&self) -> Result<(), DriverError> {
        self.driver
            .call(format!("RELEASE {}", self.id))
            .await
            .map(drop)
    }
}
