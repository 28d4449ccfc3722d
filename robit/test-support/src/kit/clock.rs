//! A clock that jumps forward, as a frozen process's does when it resumes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use robit::driver::async_trait;
use tokio::time::Instant;

/// tokio's clock plus an offset the test can bump: a client whose process was frozen
/// sees its clock jump forward when it resumes.
#[derive(Debug, Default)]
pub struct JumpClock {
    offset_ms: AtomicU64,
}

impl JumpClock {
    /// Moves this clock forward by `by` from now on.
    pub fn jump(&self, by: Duration) {
        let millis = u64::try_from(by.as_millis()).unwrap();
        self.offset_ms.fetch_add(millis, Ordering::SeqCst);
    }

    fn offset(&self) -> Duration {
        Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

#[async_trait]
impl robit::sources::Clock for JumpClock {
    fn now(&self) -> Instant {
        Instant::now() + self.offset()
    }

    async fn sleep_until(&self, deadline: Instant) {
        // Re-check after every wake: the offset may have moved meanwhile.
        loop {
            let now = self.now();
            if now >= deadline {
                return;
            }
            tokio::time::sleep((deadline - now).min(Duration::from_millis(10))).await;
        }
    }
}
