//! A wake-up flag for one waiting task: how the mutex wakes its watchdog.

use std::future::{Future, poll_fn};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use futures_util::task::AtomicWaker;

/// Wakes one task, and keeps a wake that comes while the task is busy for when it next
/// waits (like a `tokio::sync::Notify` with one permit). The mutex wakes its watchdog at
/// the start of a hold it must look at, and at the end of every hold it has seen; with a
/// single waiter, a flag and an atomic waker do that for a fraction of the cost of
/// `Notify`'s locked list of waiters.
#[derive(Default)]
pub(crate) struct Wake {
    woken: AtomicBool,
    waker: AtomicWaker,
}

impl Wake {
    /// Wakes the waiting task, or the next one to wait.
    pub(crate) fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Completes at once if a wake is pending (consuming it), or at the next wake.
    pub(crate) fn woken(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            if self.woken.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            self.waker.register(cx.waker());
            // A wake between the check and the registration found no waker to wake.
            if self.woken.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Wake;

    #[tokio::test]
    async fn a_wake_before_the_wait_is_kept_for_it_and_used_once() {
        let wake = Wake::default();
        wake.wake();
        wake.wake();
        wake.woken().await;
        let second = tokio::time::timeout(std::time::Duration::ZERO, wake.woken()).await;
        assert!(second.is_err(), "two wakes before a wait make one");
    }

    #[tokio::test]
    async fn a_wake_reaches_a_task_already_waiting() {
        let wake = Arc::new(Wake::default());
        let waiting = tokio::spawn({
            let wake = Arc::clone(&wake);
            async move { wake.woken().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        wake.wake();
        waiting.await.unwrap();
    }
}
