//! The watchdog's life: one task per mutex, on a runtime that is running, gone with the
//! mutex.

use robit_test_support::kit as common;

use std::time::Duration;

use common::{alive_tasks, settle};
use robit::{Guard, LocalDriver, LockError, Mutex};
use tokio::runtime::{Builder, Runtime};

const TTL: Duration = Duration::from_secs(3);

fn paused_runtime() -> Runtime {
    Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// A mutex of `driver` holding the lock, its watchdog on `runtime`.
fn held_on(runtime: &Runtime, driver: &LocalDriver) -> (Mutex, Guard) {
    runtime.block_on(async {
        let mutex = mutex(driver);
        let guard = mutex.lock().await.unwrap();
        (mutex, guard)
    })
}

fn mutex(driver: &LocalDriver) -> Mutex {
    Mutex::builder("watched", driver.clone())
        .ttl(TTL)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn one_watchdog_serves_every_hold_of_a_mutex_and_ends_with_it() {
    let driver = LocalDriver::new();
    let mutex = mutex(&driver);
    assert_eq!(alive_tasks(), 0);
    for _ in 0..100 {
        let guard = mutex.lock().await.unwrap();
        settle().await;
        guard.unlock().await.unwrap();
    }
    settle().await;
    assert_eq!(alive_tasks(), 1, "a hundred holds, one watchdog");

    let guard = mutex.lock().await.unwrap();
    tokio::time::sleep(TTL * 4).await;
    assert!(guard.is_held());
    assert!(mutex.stats().renew_success >= 11, "{:?}", mutex.stats());
    guard.unlock().await.unwrap();

    drop(mutex);
    settle().await;
    assert_eq!(alive_tasks(), 0, "the watchdog outlived its mutex");
}

#[tokio::test(start_paused = true)]
async fn holds_that_end_before_the_watchdog_looks_leave_it_watching_the_next_one() {
    let driver = LocalDriver::new();
    let mutex = mutex(&driver);
    // A hold the watchdog sees; then it waits, idle, for the next wake.
    let guard = mutex.lock().await.unwrap();
    settle().await;
    guard.unlock().await.unwrap();
    settle().await;
    // Each of these holds ends in the task that started it, before the watchdog (woken
    // by its start) gets to run: the end of a hold it never saw does not wake it again.
    for _ in 0..10 {
        mutex.lock().await.unwrap().unlock().await.unwrap();
    }
    let guard = mutex.lock().await.unwrap();
    tokio::time::sleep(TTL * 4).await;
    assert!(guard.is_held());
    let renewed = mutex.stats().renew_success;
    assert!(renewed >= 11, "{:?}", mutex.stats());
    guard.unlock().await.unwrap();
    tokio::time::sleep(TTL * 4).await;
    assert_eq!(
        mutex.stats().renew_success,
        renewed,
        "renewed after its unlock"
    );
    assert_eq!(alive_tasks(), 1, "one watchdog");
}

#[tokio::test(start_paused = true)]
async fn a_dropped_mutex_releases_its_hold_and_its_watchdog_ends() {
    let driver = LocalDriver::new();
    let holder = mutex(&driver);
    let rival = mutex(&driver);
    holder.acquire().await.unwrap();
    assert!(matches!(
        rival.try_lock().await,
        Err(LockError::Contended { .. })
    ));

    drop(holder);
    settle().await;
    rival.try_lock().await.unwrap().unlock().await.unwrap();
    settle().await;
    // The rival's own watchdog is the only task left.
    assert_eq!(alive_tasks(), 1);
}

#[test]
fn a_hold_on_a_second_runtime_is_renewed_there_while_the_first_sits_idle() {
    let first = paused_runtime();
    let second = paused_runtime();
    let driver = LocalDriver::new();
    // The first hold starts a watchdog on the first runtime, which then stops running.
    let mutex = first.block_on(async {
        let mutex = mutex(&driver);
        mutex.lock().await.unwrap().unlock().await.unwrap();
        mutex
    });

    second.block_on(async {
        let guard = mutex.lock().await.unwrap();
        tokio::time::sleep(TTL * 5).await;
        assert!(guard.is_held(), "no renewal on the runtime that holds");
        assert!(mutex.stats().renew_success >= 14, "{:?}", mutex.stats());
        assert_eq!(mutex.stats().lost, 0);
        guard.unlock().await.unwrap();
    });
    drop(first);
}

#[test]
fn a_hold_on_another_runtime_is_watched_there_and_every_lane_ends_with_the_mutex() {
    let first = paused_runtime();
    let second = paused_runtime();
    let driver = LocalDriver::new();
    let mutex = first.block_on(async {
        let mutex = mutex(&driver);
        mutex.lock().await.unwrap().unlock().await.unwrap();
        settle().await;
        assert_eq!(alive_tasks(), 1, "the first runtime's lane, idle");
        mutex
    });
    second.block_on(async {
        let guard = mutex.lock().await.unwrap();
        tokio::time::sleep(TTL * 2).await;
        assert!(guard.is_held(), "renewed by the second runtime's lane");
        guard.unlock().await.unwrap();
        settle().await;
    });
    drop(mutex);
    for runtime in [&first, &second] {
        runtime.block_on(async {
            settle().await;
            assert_eq!(alive_tasks(), 0, "a lane outlived its mutex");
        });
    }
}

#[test]
fn a_guard_dropped_after_its_watchdog_runtime_shut_down_still_releases() {
    let first = paused_runtime();
    let driver = LocalDriver::new();
    let (mutex, guard) = held_on(&first, &driver);
    // The watchdog goes with its runtime.
    drop(first);

    let second = paused_runtime();
    second.block_on(async {
        let rival = Mutex::builder("watched", driver.clone())
            .ttl(TTL)
            .build()
            .unwrap();
        assert!(matches!(
            rival.try_lock().await,
            Err(LockError::Contended { .. })
        ));
        drop(guard);
        settle().await;
        rival.try_lock().await.unwrap().unlock().await.unwrap();
        // And the mutex can hold again, renewed by a watchdog on this runtime.
        let guard = mutex.lock().await.unwrap();
        tokio::time::sleep(TTL * 2).await;
        assert!(guard.is_held());
        guard.unlock().await.unwrap();
    });
}

#[test]
fn a_guard_dropped_on_another_runtime_releases_there_while_the_first_sits_idle() {
    let first = paused_runtime();
    let driver = LocalDriver::new();
    // The watchdog lives on the first runtime, which is then left alive but not run.
    let (holder, guard) = held_on(&first, &driver);

    let second = paused_runtime();
    second.block_on(async {
        let rival = mutex(&driver);
        drop(guard);
        settle().await;
        rival.try_lock().await.unwrap().unlock().await.unwrap();
    });
    drop(holder);
    drop(first);
}

#[tokio::test(start_paused = true)]
async fn a_mutex_dropped_while_its_watchdog_sits_idle_ends_the_watchdog_at_once() {
    let driver = LocalDriver::new();
    let mutex = mutex(&driver);
    mutex.lock().await.unwrap().unlock().await.unwrap();
    settle().await;
    assert_eq!(alive_tasks(), 1, "the watchdog, idle");
    drop(mutex);
    settle().await;
    assert_eq!(alive_tasks(), 0, "the watchdog waited out its idle period");
}

#[test]
fn a_guard_dropped_outside_any_runtime_is_released_by_its_watchdog_when_its_runtime_runs() {
    let runtime = paused_runtime();
    let driver = LocalDriver::new();
    let (holder, guard) = runtime.block_on(async {
        let holder = mutex(&driver);
        let guard = holder.lock().await.unwrap();
        (holder, guard)
    });
    // No runtime here: the release waits for the watchdog.
    drop(guard);
    runtime.block_on(async {
        settle().await;
        let rival = mutex(&driver);
        rival.try_lock().await.unwrap().unlock().await.unwrap();
    });
    drop(holder);
}

#[test]
fn a_release_left_to_a_watchdog_whose_runtime_then_shut_down_runs_when_the_mutex_goes() {
    let first = paused_runtime();
    let driver = LocalDriver::new();
    let (holder, guard) = held_on(&first, &driver);
    // Dropped outside any runtime, the guard leaves its release to the watchdog, which
    // goes with its runtime before it gets to run.
    drop(guard);
    drop(first);

    let second = paused_runtime();
    second.block_on(async {
        let rival = mutex(&driver);
        assert!(matches!(
            rival.try_lock().await,
            Err(LockError::Contended { .. })
        ));
        drop(holder);
        settle().await;
        rival.try_lock().await.unwrap().unlock().await.unwrap();
    });
}

#[test]
fn many_tasks_on_many_threads_never_overlap_and_leave_no_task_behind() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const NAMES: usize = 3;
    let runtime = Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let driver = LocalDriver::new();
        let inside: Arc<Vec<AtomicUsize>> =
            Arc::new((0..NAMES).map(|_| AtomicUsize::new(0)).collect());
        let tasks: Vec<_> = (0..12)
            .map(|task| {
                let (driver, inside) = (driver.clone(), Arc::clone(&inside));
                tokio::spawn(async move {
                    let name = task % NAMES;
                    let mutex = Mutex::builder(format!("busy-{name}"), driver)
                        .ttl(TTL)
                        .build()
                        .unwrap();
                    for round in 0..200 {
                        let Ok(guard) = (if round % 3 == 2 {
                            mutex.try_lock().await
                        } else {
                            mutex.lock().await
                        }) else {
                            continue;
                        };
                        assert_eq!(
                            inside[name].fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders"
                        );
                        tokio::task::yield_now().await;
                        inside[name].fetch_sub(1, Ordering::SeqCst);
                        // Every other hold ends by a drop, released in the background.
                        if round % 2 == 0 {
                            drop(guard);
                        } else {
                            guard.unlock().await.unwrap();
                        }
                    }
                    mutex.stats().lost
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), 0, "a lease was lost");
        }
        // Every mutex is gone: their watchdogs and release tasks end. On a loaded
        // machine the runtime's workers may be descheduled for a while: wait for that
        // to happen rather than count on it within some number of yields.
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        while alive_tasks() > 0 && std::time::Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(alive_tasks(), 0, "tasks outlived their mutexes");
    });
}

/// tokio's time, looking at a mutex each time it is read, as a user's clock might (to
/// log the current fencing token alongside the time, say).
#[derive(Debug, Default)]
struct LookingClock {
    mutex: std::sync::OnceLock<std::sync::Weak<Mutex>>,
    looks: std::sync::atomic::AtomicUsize,
}

#[robit::driver::async_trait]
impl robit::sources::Clock for LookingClock {
    fn now(&self) -> tokio::time::Instant {
        if let Some(mutex) = self.mutex.get().and_then(std::sync::Weak::upgrade) {
            let _ = mutex.fence();
            self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        tokio::time::Instant::now()
    }

    async fn sleep_until(&self, deadline: tokio::time::Instant) {
        tokio::time::sleep_until(deadline).await;
    }
}

#[test]
fn a_clock_that_looks_at_the_mutex_is_never_read_under_the_mutexs_lock() {
    let (done, finished) = std::sync::mpsc::channel();
    // A clock read under the mutex's lock would deadlock this thread; the test thread
    // only waits for it to report, so that such a bug fails the test instead of hanging.
    std::thread::spawn(move || {
        let runtime = paused_runtime();
        let looks = runtime.block_on(async {
            let clock = std::sync::Arc::new(LookingClock::default());
            let mutex = std::sync::Arc::new(
                Mutex::builder("looked-at", LocalDriver::new())
                    .ttl(TTL)
                    .clock(
                        std::sync::Arc::clone(&clock) as std::sync::Arc<dyn robit::sources::Clock>
                    )
                    .build()
                    .unwrap(),
            );
            clock.mutex.set(std::sync::Arc::downgrade(&mutex)).unwrap();
            for _ in 0..3 {
                // Held through renews, then idle: the watchdog looks at the mutex both
                // with a hold and without one.
                let guard = mutex.lock().await.unwrap();
                tokio::time::sleep(TTL * 2).await;
                guard.unlock().await.unwrap();
                tokio::time::sleep(TTL * 2).await;
            }
            assert!(mutex.stats().renew_success >= 9, "{:?}", mutex.stats());
            clock.looks.load(std::sync::atomic::Ordering::SeqCst)
        });
        let _ = done.send(looks);
    });
    let looks = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the mutex deadlocked reading its clock under its own lock");
    assert!(looks > 0, "the clock never looked at the mutex");
}
