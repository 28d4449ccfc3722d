//! Many tasks, each with its own Mutex over one backend, never hold the lock together.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use robit::{FenceGate, LocalDriver, Mutex};

/// Runs `tasks` contenders for `rounds` critical sections each, checking that no two are
/// ever inside together and that every write passes the fence gate.
async fn contend(tasks: usize, rounds: usize, hold: Duration) -> usize {
    let driver = LocalDriver::new();
    let inside = Arc::new(AtomicUsize::new(0));
    let entries = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(FenceGate::new());
    let mut handles = Vec::new();
    for task in 0..tasks {
        let mutex = Mutex::builder("contended", driver.clone())
            .ttl(Duration::from_secs(10))
            .build()
            .unwrap();
        let (inside, entries, gate) =
            (Arc::clone(&inside), Arc::clone(&entries), Arc::clone(&gate));
        handles.push(tokio::spawn(async move {
            for _ in 0..rounds {
                let guard = mutex.lock().await.unwrap();
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "task {task} entered an occupied critical section"
                );
                gate.check(guard.fence())
                    .expect("a stale token was used inside the critical section");
                entries.fetch_add(1, Ordering::SeqCst);
                if hold.is_zero() {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(hold).await;
                }
                assert_eq!(inside.fetch_sub(1, Ordering::SeqCst), 1);
                guard.unlock().await.unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    assert!(driver.is_empty());
    entries.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn twenty_tasks_contending_on_paused_time_never_overlap() {
    assert_eq!(contend(20, 25, Duration::from_millis(3)).await, 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_tasks_contending_across_threads_never_overlap() {
    // Real threads, real interleavings; nothing here depends on timing.
    assert_eq!(contend(16, 30, Duration::ZERO).await, 480);
}
