//! What a hold tells its holder as it goes: jeopardy (the lease may soon be lost) and
//! loss (it is), shared by the hold, its guard and the watchdog.

use std::pin::pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::watchdog::Wake;
use crate::loss::LossReason;

/// The signals of one hold.
pub(crate) struct Signals {
    /// Cancelled when the lease is lost, never on unlock.
    pub(crate) lost: CancellationToken,
    /// Why the lease was lost; set before `lost` is cancelled.
    reason: OnceLock<LossReason>,
    /// Whether the hold is in jeopardy now.
    jeopardy: AtomicBool,
    /// Wakes those waiting for jeopardy when the hold enters it. (A `watch` channel
    /// would do too, at several hundred bytes more per hold.)
    endangered: Notify,
    /// Woken when the hold ends, however it ends: a renewal still out is dropped then.
    ended: Wake,
}

impl Signals {
    pub(crate) fn new() -> Self {
        Self {
            lost: CancellationToken::new(),
            reason: OnceLock::new(),
            jeopardy: AtomicBool::new(false),
            endangered: Notify::new(),
            ended: Wake::default(),
        }
    }

    /// The hold has ended.
    pub(crate) fn end(&self) {
        self.ended.wake();
    }

    /// Completes once the hold has ended (for the one renewal of the hold that is out).
    pub(crate) fn ended(&self) -> impl Future<Output = ()> + '_ {
        self.ended.woken()
    }

    /// Records why the lease was lost, then signals the loss.
    pub(crate) fn lose(&self, reason: LossReason) {
        // Only the first reason counts; the engine loses a hold at most once anyway.
        let _ = self.reason.set(reason);
        self.lost.cancel();
    }

    /// Why the lease was lost, once it was.
    pub(crate) fn loss(&self) -> Option<LossReason> {
        self.reason.get().copied()
    }

    pub(crate) fn in_jeopardy(&self) -> bool {
        self.jeopardy.load(Ordering::Acquire)
    }

    /// Sets whether the hold is in jeopardy; returns whether that changed it.
    pub(crate) fn set_jeopardy(&self, on: bool) -> bool {
        let changed = self.jeopardy.swap(on, Ordering::AcqRel) != on;
        // Waiters check the flag again when woken: a wake with no change costs nothing.
        if on {
            self.endangered.notify_waiters();
        }
        changed
    }

    /// Completes when the hold is in jeopardy, or has been lost.
    pub(crate) async fn endangered(&self) {
        let mut notified = pin!(self.endangered.notified());
        loop {
            // Registered before the flag is read: an entry in between still wakes us.
            notified.as_mut().enable();
            if self.in_jeopardy() {
                return;
            }
            tokio::select! {
                biased;
                () = self.lost.cancelled() => return,
                () = notified.as_mut() => {}
            }
            notified.set(self.endangered.notified());
        }
    }
}
