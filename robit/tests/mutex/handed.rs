//! A grant a release hands to a waiter (`Acquire::Handed`) counts its validity from the
//! waiter's last attempt answered held, not from the attempt that took it up: the grant
//! was made before that attempt was sent. Paused tokio time; the attempt that takes the
//! grant up is sent well after the last held answer and answered late, so that each
//! candidate rule gives another deadline.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::driver::{Acquire, AcquireRequest, DriverError, Lease, Renewal, async_trait};
use robit::{Backoff, Driver, FenceToken, Mutex, Wait};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
/// TTL less a drift allowance of zero and a safety margin of a second.
const VALIDITY: Duration = Duration::from_secs(9);
/// How long the attempt that takes the grant up takes to answer.
const LATE: Duration = Duration::from_millis(200);

/// Answers `held` attempts held (each 300 ms before the holder's grant ends), then hands
/// the lock over, late; records when each attempt was sent.
#[derive(Clone)]
struct Handing(Arc<Attempts>);

struct Attempts {
    held: u32,
    count: AtomicU32,
    sent: StdMutex<Vec<Instant>>,
}

struct Handed;

#[async_trait]
impl Lease for Handed {
    fn fence(&self) -> FenceToken {
        FenceToken::new(7)
    }

    async fn renew(&self, _ttl: Duration) -> Result<Renewal, DriverError> {
        Ok(Renewal::Renewed)
    }

    async fn release(&self) -> Result<(), DriverError> {
        Ok(())
    }
}

#[async_trait]
impl Driver for Handing {
    async fn acquire(&self, _request: &AcquireRequest) -> Result<Acquire, DriverError> {
        let attempts = &self.0;
        attempts.sent.lock().unwrap().push(Instant::now());
        if attempts.count.fetch_add(1, Ordering::Relaxed) < attempts.held {
            return Ok(Acquire::Held {
                expires_in: Some(Duration::from_millis(300)),
            });
        }
        tokio::time::sleep(LATE).await;
        Ok(Acquire::Handed(Arc::new(Handed)))
    }
}

async fn handed_after(held: u32) -> (Instant, Vec<Instant>) {
    let driver = Handing(Arc::new(Attempts {
        held,
        count: AtomicU32::new(0),
        sent: StdMutex::new(Vec::new()),
    }));
    let mutex = Mutex::builder("handed", driver.clone())
        .ttl(TTL)
        .drift_factor(0.0)
        .safety_margin(Duration::from_secs(1))
        .backoff(Backoff::new(
            Duration::from_millis(100),
            Duration::from_millis(400),
        ))
        .wait(Wait::Forever)
        .build()
        .unwrap();
    let guard = mutex.lock().await.unwrap();
    let deadline = guard.deadline().unwrap();
    guard.unlock().await.unwrap();
    let sent = driver.0.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), held as usize + 1);
    (deadline, sent)
}

#[tokio::test(start_paused = true)]
async fn a_grant_handed_to_a_waiter_counts_from_its_attempt_answered_held() {
    let (deadline, sent) = handed_after(1).await;
    assert!(sent[1] > sent[0], "the attempts were sent at one instant");
    assert_eq!(deadline, sent[0] + VALIDITY);
}

#[tokio::test(start_paused = true)]
async fn a_grant_handed_after_several_held_answers_counts_from_the_last_of_them() {
    let (deadline, sent) = handed_after(3).await;
    assert!(sent[2] > sent[1] && sent[3] > sent[2]);
    assert_eq!(deadline, sent[2] + VALIDITY);
}

/// Never answers an acquire; counts withdrawals.
#[derive(Clone, Default)]
struct Silent(Arc<AtomicU32>);

#[async_trait]
impl Driver for Silent {
    async fn acquire(&self, _request: &AcquireRequest) -> Result<Acquire, DriverError> {
        std::future::pending().await
    }

    async fn withdraw(&self, request: &AcquireRequest) -> Result<(), DriverError> {
        assert!(request.waiter.is_some());
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_lock_cancelled_during_its_first_attempt_withdraws_its_waiter() {
    // The attempt may have queued the waiter (its answer lost), and a fair driver may
    // then grant the lock to a waiter nobody is left to take it up.
    let driver = Silent::default();
    let mutex = Mutex::builder("cancelled", driver.clone())
        .ttl(TTL)
        .wait(Wait::Forever)
        .build()
        .unwrap();
    let cut = tokio::time::timeout(Duration::from_millis(50), mutex.lock()).await;
    assert!(cut.is_err(), "the lock was granted");
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    assert_eq!(driver.0.load(Ordering::Relaxed), 1);
}
