//! Handing the lock on: a release by force, and waiters served in arrival order.

use super::*;

/// **Force release.** An operator names a stranger and frees nothing; names the holder
/// and frees its grant, and the holder learns of its loss at its next renewal; the next
/// holder's grant is not freed by naming the old holder again.
pub async fn a_force_release_frees_only_the_named_holder(topology: &Topology) {
    let ttl = Duration::from_secs(1);
    let name = LockName::from("forced");
    let operator = topology.driver();
    let holder = topology.built("forced", ttl);
    let next = topology.built("forced", ttl);
    let guard = holder.lock().await.unwrap();
    let seen = operator.inspect(&name).await.unwrap();
    assert_eq!(seen.state, LockState::Held, "{}: {seen:?}", topology.name);
    assert!(
        seen.fence.is_none_or(|fence| fence == guard.fence()),
        "{}: {seen:?}",
        topology.name
    );
    let owner = seen.holder.expect("a held lock has a holder");
    let stranger = OwnerToken::from_u128(0x5eed);
    assert!(
        !operator.force_release(&name, stranger).await.unwrap(),
        "{}: naming a stranger freed the lock",
        topology.name
    );
    let seen = operator.inspect(&name).await.unwrap();
    assert_eq!(
        (seen.state, seen.holder),
        (LockState::Held, Some(owner)),
        "{}",
        topology.name
    );
    assert!(guard.is_held(), "{}", topology.name);
    assert!(
        operator.force_release(&name, owner).await.unwrap(),
        "{}: naming the holder freed nothing",
        topology.name
    );
    let seen = operator.inspect(&name).await.unwrap();
    assert_eq!(seen.state, LockState::Free, "{}: {seen:?}", topology.name);
    // Told by its next renewal (a third of the TTL on), not by its deadline.
    within(topology, LONG, "the holder's loss", guard.lost()).await;
    assert_eq!(
        guard.loss(),
        Some(LossReason::NotOwner),
        "{}",
        topology.name
    );
    let now = next.try_lock().await.unwrap();
    assert!(now.fence() > guard.fence(), "{}", topology.name);
    assert!(
        !operator.force_release(&name, owner).await.unwrap(),
        "{}: a stale holder",
        topology.name
    );
    let seen = operator.inspect(&name).await.unwrap();
    assert_eq!(seen.state, LockState::Held, "{}: {seen:?}", topology.name);
    assert_ne!(seen.holder, Some(owner), "{}", topology.name);
    assert!(now.is_held(), "{}", topology.name);
    now.unlock().await.unwrap();
}

/// **Fair hand-off.** Three waiters queued one after another are served in that order,
/// and the releaser, trying again at once, does not barge in.
pub async fn waiters_are_served_in_arrival_order(topology: &Topology) {
    if !topology.fair {
        return;
    }
    let ttl = Duration::from_secs(1);
    let name = "fair";
    let probe = topology.driver();
    let holder = topology.built(name, ttl);
    let guard = holder.lock().await.unwrap();
    let served: Arc<StdMutex<Vec<(usize, FenceToken)>>> = Arc::default();
    let mut waiters = Vec::new();
    for arrival in 0..3 {
        let (mutex, served) = (topology.built(name, ttl), Arc::clone(&served));
        waiters.push(tokio::spawn(async move {
            let guard = mutex.lock_with(Wait::Timeout(LONG)).await.unwrap();
            served.lock().unwrap().push((arrival, guard.fence()));
            // Held a while, so that the releaser's try finds the lock taken.
            tokio::time::sleep(Duration::from_millis(200)).await;
            guard.unlock().await.unwrap();
        }));
        eventually(topology, LONG, "the waiter queued", || async {
            (topology.queued(probe.as_ref(), name).await > arrival).then_some(())
        })
        .await;
    }
    guard.unlock().await.unwrap();
    assert!(
        refused(topology, &holder, "the releaser trying again").await,
        "{}: the releaser barged in ahead of the queue",
        topology.name
    );
    for waiter in waiters {
        within(topology, LONG, "a waiter's turn", waiter)
            .await
            .unwrap();
    }
    let served = served.lock().unwrap().clone();
    let order: Vec<usize> = served.iter().map(|(arrival, _)| *arrival).collect();
    assert_eq!(
        order,
        [0, 1, 2],
        "{}: served out of arrival order",
        topology.name
    );
    assert!(
        served.windows(2).all(|pair| pair[0].1 < pair[1].1),
        "{}",
        topology.name
    );
}
