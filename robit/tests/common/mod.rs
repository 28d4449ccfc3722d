//! Test helpers: a fault-injecting driver over the local driver, and event recorders.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::{
    Acquire, AcquireRequest, Driver, DriverError, FenceToken, Lease, LocalDriver, LossEvent,
    LossReason, MutexBuilder, ReleaseWatch, Renewal, async_trait,
};
use tokio::time::Instant;
use tracing_subscriber::fmt::MakeWriter;

/// How renew calls misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenewFault {
    /// Pass through to the local driver.
    None,
    /// Fail this many calls with a transient error, then pass through.
    Fail(u32),
    /// Never answer.
    Hang,
    /// Answer `Lost` without asking the backend.
    AnswerLost,
    /// Renew on the backend at once, then hold the reply back this long.
    DelayReply(Duration),
    /// Wait this long, then answer `Lost`.
    DelayThenLost(Duration),
}

/// What `watch_release` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notifications {
    /// The local driver's real notifications.
    Real,
    /// None: waiters poll.
    None,
    /// A watch that is complete at once, every time (a buggy driver).
    AlwaysReady,
}

/// How acquire calls misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireFault {
    None,
    /// Fail this many calls with a transient error, then pass through.
    FailTransient(u32),
    /// Fail every call with a permanent error.
    Reject,
    /// Grant on the backend, then hold the reply back this long (once).
    DelayReply(Duration),
}

#[derive(Debug)]
pub struct Faults {
    renew: StdMutex<RenewFault>,
    acquire: StdMutex<AcquireFault>,
    pub renew_calls: AtomicU32,
    pub acquire_calls: AtomicU32,
    pub live_leases: AtomicUsize,
    pub release_hangs: std::sync::atomic::AtomicBool,
    pub release_delay_ms: std::sync::atomic::AtomicU64,
    /// A client clock to jump forward just as the next acquire or renew reply is handed
    /// over: the client froze between the backend answering and reading the answer.
    jump_on_reply: StdMutex<Option<(Arc<JumpClock>, Duration)>>,
    pub notifications: Notifications,
}

impl Faults {
    fn reply_delivered(&self) {
        if let Some((clock, by)) = self.jump_on_reply.lock().unwrap().take() {
            clock.jump(by);
        }
    }
}

/// The local driver with injectable faults on acquire and renew.
#[derive(Clone)]
pub struct FaultyDriver {
    pub local: LocalDriver,
    pub faults: Arc<Faults>,
}

impl FaultyDriver {
    pub fn new() -> Self {
        Self::over(LocalDriver::new(), Notifications::Real)
    }

    /// Without release notifications: waiters must poll.
    pub fn polling() -> Self {
        Self::over(LocalDriver::new(), Notifications::None)
    }

    pub fn over(local: LocalDriver, notifications: Notifications) -> Self {
        Self {
            local,
            faults: Arc::new(Faults {
                renew: StdMutex::new(RenewFault::None),
                acquire: StdMutex::new(AcquireFault::None),
                renew_calls: AtomicU32::new(0),
                acquire_calls: AtomicU32::new(0),
                live_leases: AtomicUsize::new(0),
                release_hangs: std::sync::atomic::AtomicBool::new(false),
                release_delay_ms: std::sync::atomic::AtomicU64::new(0),
                jump_on_reply: StdMutex::new(None),
                notifications,
            }),
        }
    }

    pub fn set_renew(&self, fault: RenewFault) {
        *self.faults.renew.lock().unwrap() = fault;
    }

    pub fn set_acquire(&self, fault: AcquireFault) {
        *self.faults.acquire.lock().unwrap() = fault;
    }

    /// Makes every release hang (the backend keeps grants until they expire).
    pub fn set_release_hangs(&self, hangs: bool) {
        self.faults.release_hangs.store(hangs, Ordering::SeqCst);
    }

    /// Jumps `clock` forward by `by` as the next acquire or renew reply is delivered.
    pub fn jump_on_next_reply(&self, clock: &Arc<JumpClock>, by: Duration) {
        *self.faults.jump_on_reply.lock().unwrap() = Some((Arc::clone(clock), by));
    }

    /// Makes every release take this long before reaching the backend.
    pub fn set_release_delay(&self, delay: Duration) {
        let millis = u64::try_from(delay.as_millis()).unwrap();
        self.faults.release_delay_ms.store(millis, Ordering::SeqCst);
    }

    pub fn live_leases(&self) -> usize {
        self.faults.live_leases.load(Ordering::SeqCst)
    }

    pub fn renew_calls(&self) -> u32 {
        self.faults.renew_calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Driver for FaultyDriver {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.faults.acquire_calls.fetch_add(1, Ordering::SeqCst);
        let fault = {
            let mut fault = self.faults.acquire.lock().unwrap();
            let now = *fault;
            *fault = match now {
                AcquireFault::FailTransient(n) if n > 1 => AcquireFault::FailTransient(n - 1),
                AcquireFault::FailTransient(_) | AcquireFault::DelayReply(_) => AcquireFault::None,
                other => other,
            };
            now
        };
        match fault {
            AcquireFault::FailTransient(_) => {
                return Err(DriverError::unavailable(std::io::Error::from(
                    std::io::ErrorKind::ConnectionRefused,
                )));
            }
            AcquireFault::Reject => return Err(DriverError::rejected("WRONGPASS")),
            AcquireFault::None | AcquireFault::DelayReply(_) => {}
        }
        let answer = self.local.acquire(request).await?;
        if let AcquireFault::DelayReply(delay) = fault {
            tokio::time::sleep(delay).await;
        }
        self.faults.reply_delivered();
        Ok(match answer {
            Acquire::Granted(inner) => {
                self.faults.live_leases.fetch_add(1, Ordering::SeqCst);
                Acquire::Granted(Arc::new(FaultyLease {
                    inner,
                    faults: Arc::clone(&self.faults),
                }))
            }
            held => held,
        })
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        match self.faults.notifications {
            Notifications::Real => self.local.watch_release(request),
            Notifications::None => ReleaseWatch::never(),
            Notifications::AlwaysReady => ReleaseWatch::new(async {}),
        }
    }
}

pub struct FaultyLease {
    inner: Arc<dyn Lease>,
    faults: Arc<Faults>,
}

impl Drop for FaultyLease {
    fn drop(&mut self) {
        self.faults.live_leases.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Lease for FaultyLease {
    fn fence(&self) -> FenceToken {
        self.inner.fence()
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        self.faults.renew_calls.fetch_add(1, Ordering::SeqCst);
        let fault = {
            let mut fault = self.faults.renew.lock().unwrap();
            let now = *fault;
            if let RenewFault::Fail(n) = now {
                *fault = if n > 1 {
                    RenewFault::Fail(n - 1)
                } else {
                    RenewFault::None
                };
            }
            now
        };
        match fault {
            RenewFault::None => self.inner.renew(ttl).await,
            RenewFault::Fail(_) => Err(DriverError::unavailable(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            ))),
            RenewFault::Hang => std::future::pending().await,
            RenewFault::AnswerLost => Ok(Renewal::Lost),
            RenewFault::DelayReply(delay) => {
                let answer = self.inner.renew(ttl).await;
                tokio::time::sleep(delay).await;
                self.faults.reply_delivered();
                answer
            }
            RenewFault::DelayThenLost(delay) => {
                tokio::time::sleep(delay).await;
                Ok(Renewal::Lost)
            }
        }
    }

    async fn release(&self) -> Result<(), DriverError> {
        if self.faults.release_hangs.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let delay = self.faults.release_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        self.inner.release().await
    }

    async fn lost(&self) {
        self.inner.lost().await;
    }

    fn signals_loss(&self) -> bool {
        self.inner.signals_loss()
    }
}

/// Records every loss event with the instant it was signalled.
#[derive(Clone, Default)]
pub struct LossLog(Arc<StdMutex<Vec<(Instant, LossEvent)>>>);

impl LossLog {
    pub fn attach(&self, builder: MutexBuilder) -> MutexBuilder {
        let log = self.clone();
        builder.on_lost(move |event| log.0.lock().unwrap().push((Instant::now(), event.clone())))
    }

    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub fn reasons(&self) -> Vec<LossReason> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, e)| e.reason)
            .collect()
    }

    pub fn first_at(&self) -> Option<Instant> {
        self.0.lock().unwrap().first().map(|(at, _)| *at)
    }
}

/// Fails the test, rather than hanging it, if `future` does not finish within `limit`
/// (paused time: this costs no real time).
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {limit:?}"),
    }
}

/// The TTL of the paused-time watchdog tests.
pub const TTL: Duration = Duration::from_secs(3);
/// TTL × (1 − 0.01) − 2 ms: the validity with the default drift factor and margin.
pub const VALIDITY: Duration = Duration::from_millis(2968);

/// A mutex named `name` over `driver`, with [`TTL`], whose losses `log` records.
pub fn logged_mutex(name: &str, driver: &FaultyDriver, log: &LossLog) -> robit::Mutex {
    log.attach(robit::Mutex::builder(name, driver.clone()).ttl(TTL))
        .build()
        .unwrap()
}

/// Waits for `mutex` in the background, explicit style; the task hands the mutex back
/// so that its hold outlives the task.
pub fn spawn_waiter(
    mutex: robit::Mutex,
) -> tokio::task::JoinHandle<(Result<FenceToken, robit::LockError>, robit::Mutex)> {
    tokio::spawn(async move {
        let fence = mutex.acquire().await;
        (fence, mutex)
    })
}

/// Lets spawned tasks (watchdogs, background releases) run without moving time.
pub async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

/// tokio's clock plus an offset the test can bump: a client whose process was frozen
/// sees its clock jump forward when it resumes.
#[derive(Debug, Default)]
pub struct JumpClock {
    offset_ms: std::sync::atomic::AtomicU64,
}

impl JumpClock {
    pub fn jump(&self, by: Duration) {
        let millis = u64::try_from(by.as_millis()).unwrap();
        self.offset_ms.fetch_add(millis, Ordering::SeqCst);
    }

    fn offset(&self) -> Duration {
        Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

#[async_trait]
impl robit::Clock for JumpClock {
    fn now(&self) -> Instant {
        Instant::now() + self.offset()
    }

    async fn sleep_until(&self, deadline: Instant) {
        // Re-check after every wake: the offset may have moved meanwhile.
        loop {
            let now = self.now();
            if now >= deadline {
                return;
            }
            tokio::time::sleep((deadline - now).min(Duration::from_millis(10))).await;
        }
    }
}

/// Everything written to a tracing subscriber, as text.
#[derive(Clone, Default)]
pub struct Captured(Arc<StdMutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Captured {
    /// Captures every event at every level on this thread until the guard drops.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(self.clone())
            .with_ansi(false)
            .without_time()
            .finish();
        tracing::subscriber::set_default(subscriber)
    }
}

/// The lease of a grant `driver` must make for `request`.
pub async fn granted(driver: &impl Driver, request: &AcquireRequest) -> Arc<dyn Lease> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("{:?} expected a grant, got {other:?}", request.owner),
    }
}

/// The expiry `driver` reports when it must refuse `request` because the lock is held.
pub async fn held(driver: &impl Driver, request: &AcquireRequest) -> Option<Duration> {
    match driver.acquire(request).await.unwrap() {
        Acquire::Held { expires_in } => expires_in,
        other => panic!("{:?} expected Held, got {other:?}", request.owner),
    }
}
