//! The promises on any topology: no spurious loss (P3), fencing (P4), safe release (P6).

use super::*;

/// **P3.** A hold on a healthy topology is renewed again and again (ten times, on a
/// 1 s TTL: a stall of a few hundred milliseconds on a busy machine is no fault) without
/// a loss, and stays exclusive throughout.
pub async fn renewals_keep_a_healthy_hold(topology: &Topology) {
    let ttl = Duration::from_secs(1);
    let holder = topology.built("p3", ttl);
    let rival = topology.built("p3", ttl);
    let guard = holder.lock().await.unwrap();
    eventually(topology, LONG, "ten renewals", || async {
        assert_eq!(
            guard.loss(),
            None,
            "{}: a healthy hold was lost",
            topology.name
        );
        (holder.stats().renew_success >= 10).then_some(())
    })
    .await;
    assert!(guard.is_held(), "{}", topology.name);
    assert!(refused(topology, &rival, "a rival of a renewed hold").await);
    let stats = holder.stats();
    assert_eq!(stats.lost, 0, "{}: {stats:?}", topology.name);
    guard.unlock().await.unwrap();
}

/// **P4.** Tokens strictly increase over holds by one owner and another, a grant left to
/// expire, and a grant freed by force.
pub async fn fencing_tokens_rise_across_holds_expiries_and_a_force_release(topology: &Topology) {
    let ttl = Duration::from_millis(500);
    let name = "fencing";
    let (one, two) = (topology.built(name, ttl), topology.built(name, ttl));
    let mut tokens: Vec<FenceToken> = Vec::new();
    for mutex in [&one, &one, &two] {
        let guard = mutex.lock().await.unwrap();
        tokens.push(guard.fence());
        guard.unlock().await.unwrap();
    }
    // A hold renewed by hand and never refreshed: its grant expires.
    let lapsing = topology.mutex(name, ttl).watchdog(false).build().unwrap();
    let guard = lapsing.lock().await.unwrap();
    tokens.push(guard.fence());
    within(topology, LONG, "the unrefreshed hold's loss", guard.lost()).await;
    let freed = within(
        topology,
        LONG,
        "a grant after the expiry",
        two.lock_with(Wait::Timeout(LONG)),
    )
    .await
    .unwrap();
    tokens.push(freed.fence());
    let driver = topology.driver();
    let seen = driver.inspect(&LockName::from(name)).await.unwrap();
    let holder = seen.holder.expect("a held lock has a holder");
    assert!(
        driver
            .force_release(&LockName::from(name), holder)
            .await
            .unwrap()
    );
    let after = one.lock_with(Wait::Timeout(LONG)).await.unwrap();
    tokens.push(after.fence());
    after.unlock().await.unwrap();
    drop(freed);
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "{}: tokens did not strictly increase: {tokens:?}",
        topology.name
    );
}

/// **P6.** A grant that expired is renewed and released late — after another owner was
/// granted the lock — and neither touches the later grant.
pub async fn a_late_release_leaves_a_later_grant_alone(topology: &Topology) {
    let ttl = Duration::from_millis(500);
    let name = "late-release";
    let (early_driver, later_driver) = (topology.driver(), topology.driver());
    let early = match early_driver.acquire(&request(name, 1, ttl)).await.unwrap() {
        Acquire::Granted(lease) => lease,
        other => panic!("{}: the first acquire: {other:?}", topology.name),
    };
    let later: Arc<dyn Lease> = eventually(topology, LONG, "a grant after the expiry", || async {
        match later_driver.acquire(&request(name, 2, ttl)).await.unwrap() {
            Acquire::Granted(lease) => Some(lease),
            _ => None,
        }
    })
    .await;
    assert!(later.fence() > early.fence(), "{}", topology.name);
    assert_eq!(
        answered(topology, "a late renewal", || early.renew(ttl)).await,
        Renewal::Lost,
        "{}: a late renewal",
        topology.name
    );
    answered(topology, "a late release", || early.release()).await;
    answered(topology, "a late release again", || early.release()).await;
    let seen = later_driver.inspect(&LockName::from(name)).await.unwrap();
    assert_eq!(
        (seen.state, seen.holder),
        (LockState::Held, Some(OwnerToken::from_u128(2))),
        "{}: the late release touched the later grant: {seen:?}",
        topology.name
    );
    assert!(
        seen.fence.is_none_or(|fence| fence == later.fence()),
        "{}: {seen:?}",
        topology.name
    );
    assert_eq!(
        later.renew(ttl).await.unwrap(),
        Renewal::Renewed,
        "{}",
        topology.name
    );
    later.release().await.unwrap();
}
