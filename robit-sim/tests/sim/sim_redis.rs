//! robit's real Redis driver against the simulated Redis, inside turmoil: locking, hand-off
//! by notification, a partitioned holder, the quarantine, and a restart that loses data.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use robit::redis::{FirstUse, RedisDriver};
use robit::sources::SeededEntropy;
use robit::{Backoff, FenceToken, Mutex};
use robit_sim::redis::resp::{Frame, decode};
use robit_sim::redis::{
    DEFAULT_PORT, LockEvent, LockEventKind, RedisState, SimConnector, SimRedis,
};
use robit_sim::{SimClock, true_now};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BACKEND: &str = "redis";
const TTL: Duration = Duration::from_secs(3);

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A simulation with a backend host serving `state`; the backend's events are recorded.
struct World {
    sim: turmoil::Sim<'static>,
    state: RedisState,
    backend_clock: SimClock,
    events: Arc<StdMutex<Vec<LockEvent>>>,
}

impl World {
    fn new(seed: u64) -> Self {
        let sim = turmoil::Builder::new()
            .rng_seed(seed)
            .simulation_duration(Duration::from_secs(120))
            .build();
        let state = RedisState::new();
        let events = Arc::new(StdMutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        state.on_event(move |event| seen.lock().unwrap().push(event.clone()));
        let mut world = Self {
            sim,
            state,
            backend_clock: SimClock::new(),
            events,
        };
        let (state, clock) = (world.state.clone(), world.backend_clock.clone());
        world.sim.host(BACKEND, move || {
            let server = SimRedis::new(state.clone(), clock.clone());
            async move { Ok(server.serve(DEFAULT_PORT).await?) }
        });
        world
    }

    fn events(&self) -> Vec<LockEvent> {
        self.events.lock().unwrap().clone()
    }

    /// When the backend frees the grant `owner` last received or renewed: true time.
    fn expiry_of(&self, owner: &[u8]) -> Duration {
        let last = self
            .events()
            .into_iter()
            .rev()
            .find_map(|event| match event.kind {
                LockEventKind::Granted { owner: o, ttl, .. }
                | LockEventKind::Renewed { owner: o, ttl, .. }
                    if o == owner =>
                {
                    Some(event.at + ttl)
                }
                _ => None,
            })
            .expect("no grant to that owner");
        self.backend_clock.true_at(last)
    }
}

/// A mutex on the simulated backend, with this host's clock and seeded randomness. Its
/// driver takes no missing namespace for a new one.
fn mutex(seed: u64, quarantine: Duration, backoff: Backoff) -> Mutex {
    let driver = RedisDriver::with_connector(SimConnector::new(BACKEND, DEFAULT_PORT))
        .namespace("sim")
        .quarantine(quarantine)
        .first_use(FirstUse::Quarantine)
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    Mutex::builder("job", driver)
        .ttl(TTL)
        .backoff(backoff)
        .clock(Arc::new(SimClock::new()))
        .entropy(Arc::new(SeededEntropy::new(seed)))
        .build()
        .unwrap()
}

fn grants(events: &[LockEvent]) -> Vec<(Option<String>, i64)> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            LockEventKind::Granted { fence, .. } => Some((event.peer.host.clone(), *fence)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_client_locks_and_unlocks_through_the_simulated_redis_with_increasing_fences() {
    let mut world = World::new(1);
    let fences = Arc::new(StdMutex::new(Vec::<FenceToken>::new()));
    let seen = Arc::clone(&fences);
    world.sim.client("a", async move {
        let mutex = mutex(11, Duration::ZERO, Backoff::default());
        for _ in 0..3 {
            let guard = mutex.lock().await?;
            seen.lock().unwrap().push(guard.fence());
            tokio::time::sleep(Duration::from_secs(4)).await; // longer than the TTL: renewed
            guard.unlock().await?;
        }
        Ok(())
    });
    world.sim.run().unwrap();

    let fences = fences.lock().unwrap().clone();
    assert_eq!(fences.len(), 3);
    assert!(
        fences.windows(2).all(|pair| pair[0] < pair[1]),
        "{fences:?}"
    );
    let events = world.events();
    let granted = grants(&events);
    let from_backend: Vec<u64> = granted
        .iter()
        .map(|(_, f)| u64::try_from(*f).unwrap())
        .collect();
    let believed: Vec<u64> = fences.iter().map(|f| f.get()).collect();
    assert_eq!(from_backend, believed);
    assert!(granted.iter().all(|(host, _)| host.as_deref() == Some("a")));
    let renewed = events
        .iter()
        .filter(|e| matches!(e.kind, LockEventKind::Renewed { .. }))
        .count();
    let released = events
        .iter()
        .filter(|e| matches!(e.kind, LockEventKind::Released { .. }))
        .count();
    assert!(
        renewed >= 3,
        "each hold outlived its TTL and was renewed: {renewed}"
    );
    assert_eq!(released, 3);
}

#[test]
fn a_waiting_client_is_handed_the_lock_by_notification_when_the_holder_releases() {
    let mut world = World::new(2);
    let released_at = Arc::new(StdMutex::new(None));
    let acquired_at = Arc::new(StdMutex::new(None));
    let released = Arc::clone(&released_at);
    world.sim.client("a", async move {
        let guard = mutex(21, Duration::ZERO, Backoff::default()).lock().await?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        guard.unlock().await?;
        *released.lock().unwrap() = Some(true_now());
        Ok(())
    });
    let acquired = Arc::clone(&acquired_at);
    world.sim.client("b", async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Polls are up to 30 s apart: only the hand-off notification wakes it promptly.
        let slow = Backoff::new(Duration::from_secs(30), Duration::from_secs(30));
        let guard = mutex(22, Duration::ZERO, slow).lock().await?;
        *acquired.lock().unwrap() = Some(true_now());
        guard.unlock().await?;
        Ok(())
    });
    world.sim.run().unwrap();

    let released = released_at.lock().unwrap().unwrap();
    let acquired = acquired_at.lock().unwrap().unwrap();
    assert!(
        acquired < released + Duration::from_millis(500),
        "released at {released:?}, acquired at {acquired:?}"
    );
    let granted = grants(&world.events());
    let hosts: Vec<_> = granted.iter().map(|(host, _)| host.as_deref()).collect();
    assert_eq!(hosts, [Some("a"), Some("b")]);
    assert!(granted[0].1 < granted[1].1);
}

#[test]
fn a_partitioned_holder_loses_its_lease_before_the_key_expires_and_a_rival_acquires_only_after() {
    let mut world = World::new(3);
    let times = Arc::new(StdMutex::new((None, None, Vec::new())));
    let recorded = Arc::clone(&times);
    world.sim.client("a", async move {
        let guard = mutex(31, Duration::ZERO, Backoff::default()).lock().await?;
        recorded.lock().unwrap().2.push(guard.fence());
        tokio::time::sleep(Duration::from_secs(5)).await; // a renewal or two
        turmoil::partition("a", BACKEND);
        guard.lost().await;
        recorded.lock().unwrap().0 = Some(true_now());
        Ok(())
    });
    let recorded = Arc::clone(&times);
    world.sim.client("b", async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let guard = mutex(32, Duration::ZERO, Backoff::default()).lock().await?;
        {
            let mut times = recorded.lock().unwrap();
            times.1 = Some(true_now());
            times.2.push(guard.fence());
        }
        guard.unlock().await?;
        Ok(())
    });
    world.sim.run().unwrap();

    let (lost, rival, fences) = times.lock().unwrap().clone();
    let (lost, rival) = (lost.unwrap(), rival.unwrap());
    let events = world.events();
    let owner_a = events
        .iter()
        .find_map(|event| match &event.kind {
            LockEventKind::Granted { owner, .. } if event.peer.host.as_deref() == Some("a") => {
                Some(owner.clone())
            }
            _ => None,
        })
        .unwrap();
    let expiry = world.expiry_of(&owner_a);
    let rival_granted = events
        .iter()
        .find(|event| {
            event.peer.host.as_deref() == Some("b")
                && matches!(event.kind, LockEventKind::Granted { .. })
        })
        .map(|event| world.backend_clock.true_at(event.at))
        .unwrap();
    assert!(lost > secs(5.0), "lost at {lost:?}, before the partition");
    assert!(
        lost < expiry,
        "told of the loss at {lost:?}, after the key expired at {expiry:?}"
    );
    assert!(
        expiry < rival_granted,
        "rival granted at {rival_granted:?}, key expired at {expiry:?}"
    );
    assert!(rival_granted <= rival);
    assert!(fences[0] < fences[1], "{fences:?}");
}

#[test]
fn the_first_lock_of_a_fresh_namespace_waits_out_the_quarantine_for_a_strict_driver() {
    let mut world = World::new(4);
    let acquired_at = Arc::new(StdMutex::new(None));
    let acquired = Arc::clone(&acquired_at);
    world.sim.client("a", async move {
        let guard = mutex(41, Duration::from_secs(5), Backoff::default())
            .lock()
            .await?;
        *acquired.lock().unwrap() = Some(true_now());
        guard.unlock().await?;
        Ok(())
    });
    world.sim.run().unwrap();
    let acquired = acquired_at.lock().unwrap().unwrap();
    assert!(
        acquired >= secs(5.0) && acquired < secs(6.0),
        "{acquired:?}"
    );
}

#[test]
fn after_a_restart_that_loses_everything_the_driver_reconnects_reloads_and_is_quarantined() {
    let mut world = World::new(5);
    let fences = Arc::new(StdMutex::new(Vec::<(FenceToken, Duration)>::new()));
    let seen = Arc::clone(&fences);
    world.sim.client("a", async move {
        let mutex = mutex(51, Duration::from_secs(4), Backoff::default());
        for _ in 0..2 {
            let guard = mutex.lock().await?;
            seen.lock().unwrap().push((guard.fence(), true_now()));
            guard.unlock().await?;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Ok(())
    });
    let mut restarted = false;
    while !world.sim.step().unwrap() {
        if !restarted && world.sim.elapsed() >= secs(8.0) {
            world.sim.crash(BACKEND);
            world.state.wipe();
            world.sim.bounce(BACKEND);
            restarted = true;
        }
    }
    let fences = fences.lock().unwrap().clone();
    assert_eq!(fences.len(), 2);
    assert!(fences[0].0 < fences[1].0, "{fences:?}");
    // The second lock (asked for at about 14 s) waited out a fresh quarantine.
    assert!(fences[1].1 >= secs(18.0), "{fences:?}");
}

/// Reads frames from `stream` until `count` have arrived; `None` if it closes first.
async fn frames(stream: &mut turmoil::net::TcpStream, count: usize) -> Option<Vec<Frame>> {
    let mut input = Vec::new();
    let mut found = Vec::new();
    while found.len() < count {
        if let Some((frame, used)) = decode(&input).unwrap() {
            input.drain(..used);
            found.push(frame);
            continue;
        }
        let mut chunk = [0_u8; 1024];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        input.extend_from_slice(&chunk[..read]);
    }
    Some(found)
}

#[test]
fn the_server_answers_pipelined_and_inline_commands_and_hangs_up_on_garbage() {
    let mut world = World::new(6);
    world.sim.client("raw", async move {
        let mut stream = turmoil::net::TcpStream::connect((BACKEND, DEFAULT_PORT)).await?;
        let pipeline = b"*1\r\n$4\r\nPING\r\nSET k \"a b\"\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        stream.write_all(pipeline).await?;
        let replies = frames(&mut stream, 3).await.unwrap();
        assert_eq!(
            replies,
            [Frame::simple("PONG"), Frame::ok(), Frame::bulk("a b")]
        );
        stream.write_all(b"*1\r\n:5\r\nPING\r\n").await?;
        let Frame::Error(error) = &frames(&mut stream, 1).await.unwrap()[0] else {
            panic!("garbage was answered");
        };
        assert!(error.starts_with(b"ERR Protocol error: expected '$'"));
        assert_eq!(
            frames(&mut stream, 1).await,
            None,
            "the server should hang up"
        );
        Ok(())
    });
    world.sim.run().unwrap();
}
