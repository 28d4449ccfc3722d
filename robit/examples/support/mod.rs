//! What the examples share: the backend. Redis when `REDIS_URL` names one (as CI's does),
//! else the in-process driver, so that every example runs anywhere.

use std::sync::Arc;

use robit::{BoxError, Driver, LocalDriver};

/// The driver every example locks through.
pub(crate) fn driver() -> Result<Arc<dyn Driver>, BoxError> {
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("REDIS_URL") {
        return Ok(Arc::new(robit::redis::RedisDriver::builder(&url).build()?));
    }
    Ok(Arc::new(LocalDriver::new()))
}
