//! The local driver with faults injected on acquire, renew and release.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::driver::{
    Acquire, AcquireRequest, DriverError, Lease, ReleaseWatch, Renewal, async_trait,
};
use robit::{Driver, FenceToken, LocalDriver};

use super::JumpClock;

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
    /// Pass through to the local driver.
    None,
    /// Fail this many calls with a transient error, then pass through.
    FailTransient(u32),
    /// Fail every call with a permanent error.
    Reject,
    /// Grant on the backend, then hold the reply back this long (once).
    DelayReply(Duration),
    /// Answer that the backend is quarantined until this instant, then pass through.
    QuarantinedUntil(tokio::time::Instant),
}

#[derive(Debug)]
/// The faults a [`FaultyDriver`] injects, and what it counted.
pub struct Faults {
    renew: StdMutex<RenewFault>,
    acquire: StdMutex<AcquireFault>,
    /// Renew calls made.
    pub renew_calls: AtomicU32,
    /// Acquire calls made.
    pub acquire_calls: AtomicU32,
    /// Leases handed out and not yet dropped.
    pub live_leases: AtomicUsize,
    /// Releases never answer.
    pub release_hangs: AtomicBool,
    /// How long each release waits before it runs, in ms.
    pub release_delay_ms: AtomicU64,
    /// A client clock to jump forward just as the next acquire or renew reply is handed
    /// over: the client froze between the backend answering and reading the answer.
    jump_on_reply: StdMutex<Option<(Arc<JumpClock>, Duration)>>,
    /// What `watch_release` does.
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
#[derive(Debug, Clone)]
pub struct FaultyDriver {
    /// The driver underneath.
    pub local: LocalDriver,
    /// The faults, shared by every clone and every lease.
    pub faults: Arc<Faults>,
}

impl Default for FaultyDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultyDriver {
    /// Over a fresh local driver, with its real release notifications.
    pub fn new() -> Self {
        Self::over(LocalDriver::new(), Notifications::Real)
    }

    /// Without release notifications: waiters must poll.
    pub fn polling() -> Self {
        Self::over(LocalDriver::new(), Notifications::None)
    }

    /// Over `local`, with `notifications`.
    pub fn over(local: LocalDriver, notifications: Notifications) -> Self {
        Self {
            local,
            faults: Arc::new(Faults {
                renew: StdMutex::new(RenewFault::None),
                acquire: StdMutex::new(AcquireFault::None),
                renew_calls: AtomicU32::new(0),
                acquire_calls: AtomicU32::new(0),
                live_leases: AtomicUsize::new(0),
                release_hangs: AtomicBool::new(false),
                release_delay_ms: AtomicU64::new(0),
                jump_on_reply: StdMutex::new(None),
                notifications,
            }),
        }
    }

    /// How renew calls misbehave from now on.
    pub fn set_renew(&self, fault: RenewFault) {
        *self.faults.renew.lock().unwrap() = fault;
    }

    /// How acquire calls misbehave from now on.
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

    /// Leases handed out and not yet dropped.
    pub fn live_leases(&self) -> usize {
        self.faults.live_leases.load(Ordering::SeqCst)
    }

    /// Renew calls made so far.
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
            AcquireFault::QuarantinedUntil(until) => {
                let now = tokio::time::Instant::now();
                if now < until {
                    return Ok(Acquire::Quarantined { left: until - now });
                }
            }
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

    fn supports_lock_delay(&self) -> bool {
        self.local.supports_lock_delay()
    }
}

/// A lease of a [`FaultyDriver`]: the local lease, with the driver's faults.
pub struct FaultyLease {
    inner: Arc<dyn Lease>,
    faults: Arc<Faults>,
}

impl std::fmt::Debug for FaultyLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyLease")
            .field("fence", &self.inner.fence())
            .finish_non_exhaustive()
    }
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
