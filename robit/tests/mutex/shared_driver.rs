//! A shared driver is a driver: an `Arc` around one passes every call through, answers
//! included, so that one driver can serve many mutexes and lockers.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, DriverError, LockName, OwnerToken, async_trait};
use robit::{Driver, LocalDriver};

const TTL: Duration = Duration::from_secs(3);

fn request(who: u128) -> AcquireRequest {
    AcquireRequest::new(LockName::from("shared"), OwnerToken::from_u128(who), TTL)
}

/// The local driver, counting the withdrawals it is asked for (the local driver keeps
/// no queue, so it has nothing to withdraw).
#[derive(Default)]
struct Withdrawals {
    inner: LocalDriver,
    asked: AtomicUsize,
}

#[async_trait]
impl Driver for Withdrawals {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Acquire, DriverError> {
        self.inner.acquire(request).await
    }

    async fn withdraw(&self, _request: &AcquireRequest) -> Result<(), DriverError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Err(DriverError::unavailable("the backend is away"))
    }
}

#[tokio::test(start_paused = true)]
async fn a_shared_driver_passes_a_withdrawal_through_and_its_failure_back() {
    let driver = Arc::new(Withdrawals::default());
    let withdrawn = Driver::withdraw(&driver, &request(1)).await;
    assert_eq!(driver.asked.load(Ordering::SeqCst), 1);
    assert!(withdrawn.is_err(), "the driver's failure is the caller's");
}

#[tokio::test(start_paused = true)]
async fn a_shared_driver_passes_a_forced_release_through_with_its_answer() {
    let driver = Arc::new(LocalDriver::new());
    let name = LockName::from("shared");
    let _lease = common::granted(&driver, &request(1)).await;
    let wrong = Driver::force_release(&driver, &name, OwnerToken::from_u128(2)).await;
    assert!(
        !wrong.unwrap(),
        "another owner's grant is not the one named"
    );
    assert!(common::held(&driver, &request(3)).await.is_some());
    let right = Driver::force_release(&driver, &name, OwnerToken::from_u128(1)).await;
    assert!(right.unwrap(), "the named holder's grant is freed");
    common::granted(&driver, &request(3)).await;
}
