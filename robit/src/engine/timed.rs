//! Backend calls under a time limit on the mutex's own clock.

use std::time::Duration;

use tokio::time::Instant;

use super::Core;
use crate::driver::DriverError;

impl Core {
    /// Runs a backend call with a time limit on this mutex's clock.
    pub(crate) async fn within<T>(
        &self,
        limit: Duration,
        call: impl Future<Output = Result<T, DriverError>>,
    ) -> Result<T, DriverError> {
        self.within_from(self.now(), limit, call).await
    }

    /// Runs a backend call that may take until `limit` after `start`, a clock reading the
    /// caller already has. A driver that bounds its own calls at least as tightly, on
    /// the same (tokio's) time, is left to do so: a second timer would not fire first.
    pub(crate) async fn within_from<T>(
        &self,
        start: Instant,
        limit: Duration,
        call: impl Future<Output = Result<T, DriverError>>,
    ) -> Result<T, DriverError> {
        if self.config.driver_limit.is_some_and(|own| own <= limit) {
            return call.await;
        }
        let clock = &self.config.clock;
        let until = start + limit;
        tokio::select! {
            biased;
            result = call => result,
            () = clock.sleep_until(until) => Err(DriverError::Timeout(limit)),
        }
    }
}
