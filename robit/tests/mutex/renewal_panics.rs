//! A driver whose renewal panics: the renewal fails like any other, and the watchdog,
//! which renews every hold of a `Locker`, goes on renewing the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, ReleaseWatch, Renewal};
use robit::{Driver, FenceToken, Guard, LocalDriver, Locker};

const TTL: Duration = Duration::from_secs(3);
const PERIOD: Duration = Duration::from_secs(1);

/// The local driver, whose next `panics` renewals panic.
#[derive(Debug, Clone)]
struct Panicking {
    local: LocalDriver,
    panics: Arc<AtomicUsize>,
}

struct PanickingLease {
    inner: Arc<dyn Lease>,
    panics: Arc<AtomicUsize>,
}

#[robit::driver::async_trait]
impl Driver for Panicking {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        Ok(match self.local.acquire(request).await? {
            Acquire::Granted(inner) => Acquire::Granted(Arc::new(PanickingLease {
                inner,
                panics: Arc::clone(&self.panics),
            })),
            held => held,
        })
    }

    fn watch_release(&self, request: &AcquireRequest) -> ReleaseWatch {
        self.local.watch_release(request)
    }
}

#[robit::driver::async_trait]
impl Lease for PanickingLease {
    fn fence(&self) -> FenceToken {
        self.inner.fence()
    }

    async fn renew(&self, ttl: Duration) -> Result<Renewal, DriverError> {
        let left = self.panics.load(Ordering::SeqCst);
        if left > 0 {
            self.panics.store(left - 1, Ordering::SeqCst);
            panic!("a renewal that panics");
        }
        self.inner.renew(ttl).await
    }

    async fn release(&self) -> Result<(), DriverError> {
        self.inner.release().await
    }

    fn signals_loss(&self) -> bool {
        false
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_panics_fails_and_the_locker_s_other_holds_are_renewed() {
    let panics = Arc::new(AtomicUsize::new(0));
    let driver = Panicking {
        local: LocalDriver::new(),
        panics: Arc::clone(&panics),
    };
    let locker = Locker::builder(driver).ttl(TTL).build().unwrap();
    let guards: Vec<Guard> = vec![
        locker.lock("first").await.unwrap(),
        locker.lock("second").await.unwrap(),
    ];
    // The first renewal of one of them panics; the watchdog retries it.
    panics.store(1, Ordering::SeqCst);
    tokio::time::sleep(PERIOD * 6).await;
    assert!(
        guards.iter().all(Guard::is_held),
        "a hold was left unrenewed"
    );
    let stats = locker.stats();
    assert_eq!(stats.renew_failed, 1, "{stats:?}");
    assert_eq!(stats.lost, 0, "{stats:?}");
    for guard in guards {
        guard.unlock().await.unwrap();
    }
}
