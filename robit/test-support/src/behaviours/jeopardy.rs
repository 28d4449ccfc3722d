//! Jeopardy before the loss, when a fault stops the holder's renewals.

use super::*;

/// **Jeopardy.** A holder (1 s TTL, over `holder_driver`) renews once; then `fault`
/// stops its renewals: it is warned of jeopardy before it is told of its loss, a rival
/// contending all along gets the lock once the fault heals (or the grant expires), and
/// no two belief intervals overlap.
pub async fn jeopardy_before_loss(
    topology: &Topology,
    holder_driver: Arc<dyn Driver>,
    fault: &dyn Fault,
) {
    let ttl = Duration::from_secs(1);
    let name = "jeopardy";
    let beliefs = Beliefs::default();
    let events: Arc<StdMutex<Vec<(&'static str, Instant)>>> = Arc::default();
    let (on_lost, on_jeopardy) = (Arc::clone(&events), Arc::clone(&events));
    let lost_beliefs = beliefs.clone();
    let holder = Mutex::builder(name, holder_driver)
        .ttl(ttl)
        .on_lost(move |event| {
            lost_beliefs.end("a");
            on_lost.lock().unwrap().push((
                match event.reason {
                    LossReason::DeadlinePassed => "lost: deadline",
                    LossReason::NotOwner => "lost: not owner",
                    _ => "lost: other",
                },
                Instant::now(),
            ));
        })
        .on_jeopardy(move |event| {
            let what = match event.change {
                Jeopardy::Entered => "jeopardy",
                _ => "cleared",
            };
            on_jeopardy.lock().unwrap().push((what, Instant::now()));
        })
        .build()
        .unwrap();
    let guard: Guard = holder.lock().await.unwrap();
    beliefs.begin("a");
    eventually(topology, LONG, "a healthy renewal", || async {
        (holder.stats().renew_success >= 1).then_some(())
    })
    .await;
    assert!(
        !guard.in_jeopardy(),
        "{}: in jeopardy while healthy",
        topology.name
    );
    fault.cut().await;
    let struck = Instant::now();
    let rival = topology.built(name, ttl);
    let rival_beliefs = beliefs.clone();
    let contend = tokio::spawn(async move {
        let give_up = Instant::now() + LONG + LONG;
        while Instant::now() < give_up {
            if let Ok(guard) = rival
                .lock_with(Wait::Timeout(Duration::from_millis(500)))
                .await
            {
                rival_beliefs.begin("b");
                tokio::time::sleep(Duration::from_millis(100)).await;
                rival_beliefs.end("b");
                let _ = guard.unlock().await;
                return true;
            }
        }
        false
    });
    within(topology, LONG, "jeopardy", guard.jeopardy()).await;
    within(topology, LONG, "the loss", guard.lost()).await;
    fault.heal().await;
    let regranted = within(topology, LONG + LONG + LONG, "the rival's turn", contend)
        .await
        .unwrap();
    assert!(regranted, "{}: the rival never got the lock", topology.name);
    let events = events.lock().unwrap().clone();
    eprintln!(
        "{}: {:?} after the fault",
        topology.name,
        events
            .iter()
            .map(|(what, at)| (*what, at.saturating_duration_since(struck)))
            .collect::<Vec<_>>()
    );
    let what: Vec<&str> = events.iter().map(|(what, _)| *what).collect();
    assert!(
        matches!(what[..], ["jeopardy", lost] if lost.starts_with("lost")),
        "{}: jeopardy did not come before the loss, alone: {what:?}",
        topology.name
    );
    assert!(events[0].1 < events[1].1, "{}", topology.name);
    assert_eq!(holder.stats().jeopardies, 1, "{}", topology.name);
    beliefs.assert_never_two_holders();
    let rival_began = beliefs.first_begun_after(struck);
    assert!(
        rival_began.is_some(),
        "{}: {:?}",
        topology.name,
        beliefs.intervals()
    );
}
