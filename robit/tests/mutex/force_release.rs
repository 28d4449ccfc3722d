//! Release by force on the local driver, in every state a grant can be in, naming the
//! holder, an earlier holder, and a stranger; and the lock-delay with waiters queued
//! behind a hold longer than the delay. Paused time: every instant is exact.

use robit_test_support::kit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{granted, settle, within};
use robit::driver::{Acquire, AcquireRequest, Inspection, Lease, LockName, LockState, OwnerToken};
use robit::driver::{FenceToken, Renewal};
use robit::{Backoff, Driver, Guard, LocalDriver, Mutex};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(3);
const DELAY: Duration = Duration::from_secs(5);
/// How far into a state each scene moves before the release by force.
const STEP: Duration = Duration::from_millis(1_100);
/// How soon a waiter woken by a release is granted: its floor after its last attempt
/// (1 ms), and nothing more. Its own polls come seconds apart.
const WOKEN: Duration = Duration::from_millis(5);

const EARLIER: u128 = 10;
const FIRST: u128 = 1;
const SECOND: u128 = 2;
const STRANGER: u128 = 99;

fn name() -> LockName {
    LockName::from("forced")
}

fn owner(who: u128) -> OwnerToken {
    OwnerToken::from_u128(who)
}

fn request(who: u128, delay: Duration) -> AcquireRequest {
    AcquireRequest::new(name(), owner(who), TTL).with_lock_delay(delay)
}

/// A waiting `lock()` that polls only when the driver's answer says the lock may be free
/// (its backoff cap is far beyond any of these waits), so that only a release's wake-up
/// grants it sooner. Its task answers when it was granted, and the guard.
fn spawn_waiter(driver: &LocalDriver) -> JoinHandle<(Instant, Guard)> {
    let mutex = Mutex::builder("forced", driver.clone())
        .ttl(TTL)
        .backoff(Backoff::new(
            Duration::from_millis(5),
            Duration::from_secs(60),
        ))
        .build()
        .unwrap();
    tokio::spawn(async move {
        let guard = mutex.lock().await.unwrap();
        (Instant::now(), guard)
    })
}

/// Whether `lease`'s loss signal has fired.
async fn signalled(lease: &Arc<dyn Lease>) -> bool {
    settle().await;
    tokio::time::timeout(Duration::ZERO, lease.lost())
        .await
        .is_ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Never held.
    Free,
    /// Held by a live grant.
    Held,
    /// Held, with a `lock()` waiting.
    HeldWithWaiter,
    /// The grant's TTL ran out (no lock-delay) and no operation has swept it yet.
    ExpiredUnswept,
    /// The grant's TTL ran out and its lock-delay is running.
    InLockDelay,
    /// In its lock-delay, with a `lock()` waiting since the grant was live.
    InLockDelayWithWaiter,
    /// The lock-delay ran out too, and no operation has swept it yet.
    DelayOver,
    /// Released by its holder.
    Released,
    /// The first holder's grant expired (no lock-delay); a second holder has it now.
    RegrantedAfterExpiry,
    /// The first holder's lock-delay ran out; a second holder has it now.
    RegrantedAfterLockDelay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// The owner of the scene's last grant.
    Holder,
    /// The owner of a grant before it (released, or expired), stale now.
    EarlierHolder,
    /// An owner that never held the lock.
    Stranger,
}

/// A lock brought into a state.
struct Scene {
    driver: LocalDriver,
    /// The last grant's owner and lease (`None`: never held).
    last: Option<(u128, Arc<dyn Lease>)>,
    /// The grant before it, which the lock is no longer (`None`: there was none).
    earlier: Option<(u128, Arc<dyn Lease>)>,
    waiter: Option<JoinHandle<(Instant, Guard)>>,
    /// What an inspection shows if the release by force frees nothing.
    kept: Inspection,
    /// Whether the last grant is live (renewable).
    live: bool,
    /// Whether the last grant had already ended by expiry (its holder told so).
    ended_by_expiry: bool,
}

fn seen(state: LockState, who: u128, fence: FenceToken, left: Duration) -> Inspection {
    let mut seen = Inspection::free();
    seen.state = state;
    seen.holder = Some(owner(who));
    seen.fence = Some(fence);
    seen.expires_in = Some(left);
    seen
}

async fn scene(state: State) -> Scene {
    let driver = LocalDriver::new();
    let mut scene = Scene {
        driver: driver.clone(),
        last: None,
        earlier: None,
        waiter: None,
        kept: Inspection::free(),
        live: false,
        ended_by_expiry: false,
    };
    if state == State::Free {
        return scene;
    }
    // An earlier holder, done with the lock before the scene's own grant.
    let earlier = granted(&driver, &request(EARLIER, DELAY)).await;
    earlier.release().await.unwrap();
    scene.earlier = Some((EARLIER, earlier));
    let first_delay = match state {
        State::ExpiredUnswept | State::RegrantedAfterExpiry => Duration::ZERO,
        _ => DELAY,
    };
    let first = granted(&driver, &request(FIRST, first_delay)).await;
    let fence = first.fence();
    if matches!(state, State::HeldWithWaiter | State::InLockDelayWithWaiter) {
        scene.waiter = Some(spawn_waiter(&driver));
        settle().await;
    }
    match state {
        State::Free => unreachable!(),
        State::Held | State::HeldWithWaiter => {
            tokio::time::sleep(STEP).await;
            scene.kept = seen(LockState::Held, FIRST, fence, TTL - STEP);
            scene.live = true;
        }
        State::ExpiredUnswept => {
            tokio::time::sleep(TTL).await;
            scene.ended_by_expiry = true;
        }
        State::InLockDelay | State::InLockDelayWithWaiter => {
            tokio::time::sleep(TTL + STEP).await;
            scene.kept = seen(LockState::LockDelay, FIRST, fence, DELAY - STEP);
            scene.ended_by_expiry = true;
        }
        State::DelayOver => {
            tokio::time::sleep(TTL + DELAY).await;
            scene.ended_by_expiry = true;
        }
        State::Released => {
            tokio::time::sleep(STEP).await;
            first.release().await.unwrap();
        }
        State::RegrantedAfterExpiry | State::RegrantedAfterLockDelay => {
            let ended = if state == State::RegrantedAfterExpiry {
                TTL
            } else {
                TTL + DELAY
            };
            tokio::time::sleep(ended).await;
            let second = granted(&driver, &request(SECOND, DELAY)).await;
            tokio::time::sleep(STEP).await;
            scene.kept = seen(LockState::Held, SECOND, second.fence(), TTL - STEP);
            scene.live = true;
            scene.earlier = Some((FIRST, first));
            scene.last = Some((SECOND, second));
            return scene;
        }
    }
    scene.last = Some((FIRST, first));
    scene
}

/// Every state, every way of naming a holder, and whether the release by force frees
/// the lock: only when the named owner's grant is what the lock holds, live or in its
/// lock-delay.
const CASES: &[(State, Named, bool)] = &[
    (State::Free, Named::Stranger, false),
    (State::Held, Named::Holder, true),
    (State::Held, Named::EarlierHolder, false),
    (State::Held, Named::Stranger, false),
    (State::HeldWithWaiter, Named::Holder, true),
    (State::HeldWithWaiter, Named::EarlierHolder, false),
    (State::HeldWithWaiter, Named::Stranger, false),
    (State::ExpiredUnswept, Named::Holder, false),
    (State::ExpiredUnswept, Named::EarlierHolder, false),
    (State::ExpiredUnswept, Named::Stranger, false),
    (State::InLockDelay, Named::Holder, true),
    (State::InLockDelay, Named::EarlierHolder, false),
    (State::InLockDelay, Named::Stranger, false),
    (State::InLockDelayWithWaiter, Named::Holder, true),
    (State::InLockDelayWithWaiter, Named::EarlierHolder, false),
    (State::InLockDelayWithWaiter, Named::Stranger, false),
    (State::DelayOver, Named::Holder, false),
    (State::DelayOver, Named::EarlierHolder, false),
    (State::DelayOver, Named::Stranger, false),
    (State::Released, Named::Holder, false),
    (State::Released, Named::EarlierHolder, false),
    (State::Released, Named::Stranger, false),
    (State::RegrantedAfterExpiry, Named::Holder, true),
    (State::RegrantedAfterExpiry, Named::EarlierHolder, false),
    (State::RegrantedAfterExpiry, Named::Stranger, false),
    (State::RegrantedAfterLockDelay, Named::Holder, true),
    (State::RegrantedAfterLockDelay, Named::EarlierHolder, false),
    (State::RegrantedAfterLockDelay, Named::Stranger, false),
];

#[tokio::test(start_paused = true)]
async fn a_release_by_force_frees_only_the_named_holders_grant_in_every_state_a_grant_can_be_in() {
    for &(state, named, frees) in CASES {
        let case = format!("{state:?}, naming the {named:?}");
        let scene = scene(state).await;
        let who = match named {
            Named::Holder => scene.last.as_ref().map(|(who, _)| *who),
            Named::EarlierHolder => scene.earlier.as_ref().map(|(who, _)| *who),
            Named::Stranger => Some(STRANGER),
        }
        .unwrap_or_else(|| panic!("{case}: nobody to name"));
        let driver = &scene.driver;

        // The release by force is the first operation in the state: nothing has swept.
        let freed = driver.force_release(&name(), owner(who)).await.unwrap();
        let at = Instant::now();
        assert_eq!(freed, frees, "{case}: what force_release answered");

        // The last holder is told of a loss once its grant is freed by force, or had
        // ended by expiry; never after its own release, never while it still holds.
        if let Some((_, lease)) = &scene.last {
            assert_eq!(
                signalled(lease).await,
                frees || scene.ended_by_expiry,
                "{case}: the last holder's loss signal"
            );
        }
        if frees {
            // The grant is gone: a waiter is woken and granted at once, the lock-delay
            // (if it was running) with it; else the lock is free for anyone.
            if let Some(waiter) = scene.waiter {
                let (granted_at, guard) = within(WOKEN, &format!("{case}: the waiter"), waiter)
                    .await
                    .unwrap();
                assert_eq!(granted_at, at, "{case}: the waiter's grant");
                let now = driver.inspect(&name()).await.unwrap();
                assert_eq!(
                    (now.state, now.fence),
                    (LockState::Held, Some(guard.fence())),
                    "{case}: the waiter holds the lock"
                );
                assert!(guard.fence() > scene.kept.fence.unwrap(), "{case}");
                guard.unlock().await.unwrap();
            } else {
                assert_eq!(
                    driver.inspect(&name()).await.unwrap(),
                    Inspection::free(),
                    "{case}: what is left"
                );
                let next = granted(driver, &request(STRANGER, Duration::ZERO)).await;
                assert!(next.fence() > scene.kept.fence.unwrap(), "{case}");
                next.release().await.unwrap();
            }
        } else {
            // Nothing changed: the same grant, the same time left, the lock-delay kept.
            assert_eq!(
                driver.inspect(&name()).await.unwrap(),
                scene.kept,
                "{case}: what is left"
            );
            let rival = AcquireRequest::new(name(), owner(STRANGER + 1), TTL);
            match driver.acquire(&rival).await.unwrap() {
                Acquire::Granted(lease) if scene.kept.state == LockState::Free => {
                    lease.release().await.unwrap();
                }
                Acquire::Held { expires_in } => {
                    assert_eq!(
                        expires_in, scene.kept.expires_in,
                        "{case}: the rival is told"
                    );
                }
                other => panic!("{case}: a rival got {other:?}, the lock {:?}", scene.kept),
            }
            if let Some(waiter) = scene.waiter {
                tokio::time::sleep(WOKEN * 2).await;
                assert!(!waiter.is_finished(), "{case}: the waiter was granted");
                if scene.live {
                    waiter.abort();
                } else {
                    // In its lock-delay: the waiter's turn comes when the delay is over.
                    let (granted_at, guard) = within(
                        scene.kept.expires_in.unwrap(),
                        &format!("{case}: the waiter, after the delay"),
                        waiter,
                    )
                    .await
                    .unwrap();
                    assert_eq!(granted_at, at + scene.kept.expires_in.unwrap(), "{case}");
                    guard.unlock().await.unwrap();
                }
            }
        }

        // What the last holder's renewal answers now: renewed only if it still holds.
        if let Some((_, lease)) = &scene.last {
            let still = scene.live && !frees;
            assert_eq!(
                lease.renew(TTL).await.unwrap(),
                if still {
                    Renewal::Renewed
                } else {
                    Renewal::Lost
                },
                "{case}: the last holder's renewal"
            );
        }
        // An earlier holder never gets anything back.
        if let Some((_, lease)) = &scene.earlier {
            assert_eq!(
                lease.renew(TTL).await.unwrap(),
                Renewal::Lost,
                "{case}: the earlier holder's renewal"
            );
        }
    }
}

/// Waits for whichever of two waiters is granted first; answers its grant and the other.
async fn first_of(
    mut a: JoinHandle<(Instant, Guard)>,
    mut b: JoinHandle<(Instant, Guard)>,
) -> ((Instant, Guard), JoinHandle<(Instant, Guard)>) {
    tokio::select! {
        granted = &mut a => (granted.unwrap(), b),
        granted = &mut b => (granted.unwrap(), a),
    }
}

/// A waiting `lock()` of a mutex with the lock-delay, polling as often as by default.
fn spawn_delayed_waiter(driver: &LocalDriver) -> JoinHandle<(Instant, Guard)> {
    let mutex = Mutex::builder("forced", driver.clone())
        .ttl(TTL)
        .lock_delay(DELAY)
        .build()
        .unwrap();
    tokio::spawn(async move {
        let guard = mutex.lock().await.unwrap();
        (Instant::now(), guard)
    })
}

/// The longest a waiter may take past the instant the lock becomes free to it: its
/// default poll interval (a waiter told when the delay ends asks at that instant).
const WAKE_SLACK: Duration = Duration::from_millis(250);

#[tokio::test(start_paused = true)]
async fn waiters_behind_a_hold_longer_than_the_lock_delay_get_it_a_delay_after_the_expiry_and_at_once_after_an_unlock()
 {
    let driver = LocalDriver::new();
    let lease = granted(&driver, &request(FIRST, DELAY)).await;
    let (a, b) = (spawn_delayed_waiter(&driver), spawn_delayed_waiter(&driver));
    settle().await;
    // Held for three delays, renewed every second; then renewals stop.
    let started = Instant::now();
    let mut renewed = started;
    while renewed < started + DELAY * 3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(lease.renew(TTL).await.unwrap(), Renewal::Renewed);
        renewed = Instant::now();
    }
    let expiry = renewed + TTL;
    let ((granted_at, guard), other) = within(
        TTL + DELAY + WAKE_SLACK,
        "a waiter's grant after the expiry",
        first_of(a, b),
    )
    .await;
    assert!(
        granted_at >= expiry + DELAY,
        "granted {:?} after the expiry, before the delay of {DELAY:?} was over",
        granted_at - expiry
    );
    assert!(
        granted_at <= expiry + DELAY + WAKE_SLACK,
        "granted {:?} after the expiry",
        granted_at - expiry
    );
    assert!(signalled(&lease).await, "the expired holder is told");
    assert!(!other.is_finished(), "two waiters granted at once");

    // The new holder also holds for longer than the delay, then unlocks: an unlock owes
    // no delay, so the other waiter is granted at once.
    tokio::time::sleep(DELAY * 2).await;
    assert!(guard.is_held());
    let unlocked = Instant::now();
    guard.unlock().await.unwrap();
    let (next_at, next) = within(WOKEN, "the other waiter's grant after the unlock", other)
        .await
        .unwrap();
    assert!(
        next_at <= unlocked + WOKEN,
        "granted {:?} after the unlock",
        next_at - unlocked
    );
    next.unlock().await.unwrap();
}
