//! A hold's timing on any topology: its cap, a refresh by hand, the lock-delay.

use super::*;

/// **Hold cap.** A hold renewed every 250 ms on a 5 s TTL ends at its 1 s cap, told as
/// `HoldCapReached`, and its grant is released: a waiter gets the lock at once, not
/// when the grant would have expired (seconds later).
pub async fn a_hold_ends_at_its_cap_and_the_next_holder_gets_the_lock(topology: &Topology) {
    let (ttl, cap) = (Duration::from_secs(5), Duration::from_secs(1));
    let name = "capped";
    let reasons: Arc<StdMutex<Vec<LossReason>>> = Arc::default();
    let told = Arc::clone(&reasons);
    let holder = topology
        .mutex(name, ttl)
        .renew_period(Duration::from_millis(250))
        .max_hold(cap)
        .on_lost(move |event| told.lock().unwrap().push(event.reason))
        .build()
        .unwrap();
    let rival = topology.built(name, ttl);
    let guard = holder.lock().await.unwrap();
    let locked = Instant::now();
    let waiting = tokio::spawn(async move {
        let guard = rival.lock_with(Wait::Timeout(LONG)).await;
        (guard, Instant::now(), rival)
    });
    within(topology, LONG, "the loss at the cap", guard.lost()).await;
    let lost = Instant::now();
    assert!(
        lost >= locked + cap,
        "{}: lost before the cap",
        topology.name
    );
    assert_eq!(
        guard.loss(),
        Some(LossReason::HoldCapReached),
        "{}",
        topology.name
    );
    assert!(
        holder.stats().renew_success >= 2,
        "{}: not renewed",
        topology.name
    );
    let (next, granted, _rival) = within(topology, LONG, "the next holder", waiting)
        .await
        .unwrap();
    assert_eq!(
        *reasons.lock().unwrap(),
        [LossReason::HoldCapReached],
        "{}",
        topology.name
    );
    let next = next.unwrap_or_else(|err| panic!("{}: the next holder: {err}", topology.name));
    // Left to expire, the grant would have lived until 4.75 s after the cap at least.
    assert!(
        granted < lost + Duration::from_millis(2_500),
        "{}: the capped grant was not released: the next holder waited {:?}",
        topology.name,
        granted - lost
    );
    assert!(next.fence() > guard.fence(), "{}", topology.name);
    assert!(matches!(
        guard.unlock().await,
        Err(UnlockError::Lost(LossReason::HoldCapReached))
    ));
    next.unlock().await.unwrap();
}

/// **Refresh.** A hold renewed by hand (`watchdog(false)`, `Guard::refresh` every
/// 300 ms on a 1 s TTL) outlives its first TTL on the backend: a rival is refused well
/// past it, and gets the lock once the holder unlocks.
pub async fn a_refresh_by_hand_extends_the_grant_on_the_backend(topology: &Topology) {
    let ttl = Duration::from_secs(1);
    let name = "refreshed";
    let holder = topology.mutex(name, ttl).watchdog(false).build().unwrap();
    let rival = topology.built(name, ttl);
    let guard = holder.lock().await.unwrap();
    // Past this, the acquire's grant (made before `lock()` returned) would be gone: only
    // the refreshes keep the lock.
    let expired = Instant::now() + ttl + topology.expiry_slack + Duration::from_millis(100);
    let mut checked = 0;
    while checked < 3 {
        let valid = guard.refresh(ttl).await;
        let valid = valid.unwrap_or_else(|err| panic!("{}: a refresh: {err}", topology.name));
        assert!(
            valid > Duration::ZERO && valid < ttl,
            "{}: {valid:?}",
            topology.name
        );
        if Instant::now() > expired {
            assert!(
                refused(topology, &rival, "a rival after the first TTL").await,
                "{}: the refreshes did not extend the grant",
                topology.name
            );
            checked += 1;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(guard.is_held(), "{}", topology.name);
    guard.unlock().await.unwrap();
    let next = within(
        topology,
        LONG,
        "the rival's grant",
        rival.lock_with(Wait::Timeout(LONG)),
    )
    .await;
    next.unwrap().unlock().await.unwrap();
}

/// **Lock-delay.** After a hold's grant expires (renewed by hand and never refreshed),
/// a 2 s lock-delay refuses the lock to everyone, its owner's mutex included, until it
/// is over; an unlock owes none. A driver that does not keep a lock-delay says so, and a
/// mutex built with one over it is refused.
pub async fn a_lock_delay_follows_an_expiry_but_not_an_unlock(topology: &Topology) {
    let (ttl, delay) = (Duration::from_millis(500), Duration::from_secs(2));
    let name = "delayed";
    let driver = topology.driver();
    assert_eq!(
        driver.supports_lock_delay(),
        topology.keeps_lock_delay,
        "{}",
        topology.name
    );
    let built = Mutex::builder(name, Arc::clone(&driver))
        .ttl(ttl)
        .lock_delay(delay)
        .build();
    if !topology.keeps_lock_delay {
        assert!(
            matches!(built, Err(ConfigError::LockDelayUnsupported)),
            "{}: a lock-delay over a driver that keeps none: {built:?}",
            topology.name
        );
        return;
    }
    drop(built);
    let owner = topology
        .mutex(name, ttl)
        .lock_delay(delay)
        .watchdog(false)
        .build()
        .unwrap();
    let rival = topology.built(name, ttl);
    // Each mutex connects first, and a busy machine may take most of the delay to: an
    // unlock owes no delay, so the window below starts with both connected.
    for mutex in [&owner, &rival] {
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    let sent = Instant::now();
    let guard = owner.lock().await.unwrap();
    // The grant was made before `lock()` returned: it expired by this.
    let expired = Instant::now() + ttl + topology.expiry_slack + Duration::from_millis(100);
    within(topology, LONG, "the unrefreshed hold's loss", guard.lost()).await;
    // A lost guard dropped leaves its grant to expire, its lock-delay with it.
    drop(guard);
    // From when the grant surely expired until well before its delay ends (counted from
    // the send: the grant was made no sooner).
    let delay_over = sent + ttl + delay;
    tokio::time::sleep_until(expired).await;
    let mut tries = 0;
    while Instant::now() + Duration::from_millis(700) < delay_over || tries < 2 {
        assert!(
            Instant::now() + Duration::from_millis(300) < delay_over,
            "{}: too slow to try within the lock-delay",
            topology.name
        );
        assert!(
            refused(topology, &rival, "a rival in the lock-delay").await,
            "{}: a rival was granted the lock in the lock-delay",
            topology.name
        );
        assert!(
            refused(topology, &owner, "the owner in its lock-delay").await,
            "{}: the owner was granted the lock in its own lock-delay",
            topology.name
        );
        let seen = driver.inspect(&LockName::from(name)).await.unwrap();
        assert_eq!(
            seen.state,
            LockState::LockDelay,
            "{}: {seen:?}",
            topology.name
        );
        tries += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let next = within(
        topology,
        LONG,
        "a grant after the delay",
        rival.lock_with(Wait::Timeout(LONG)),
    )
    .await
    .unwrap();
    assert!(Instant::now() >= sent + delay, "{}", topology.name);
    next.unlock().await.unwrap();
    // An unlock owes no delay.
    let guard = owner.lock().await.unwrap();
    guard.unlock().await.unwrap();
    assert!(
        !refused(topology, &rival, "a rival after an unlock").await,
        "{}: an unlock left a lock-delay",
        topology.name
    );
}
