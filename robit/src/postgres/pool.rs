//! The driver's own connections, for a driver built from a URL: lent to one call at a
//! time and taken back as they are. sqlx's pool pings every connection it takes back —
//! one more round trip per call, on the server too — so the driver's calls keep a pool of
//! their own, and leave sqlx's to guarded transactions and to the listener.
//!
//! A connection whose call did not end well (an error, a timeout, a cancelled call that
//! may have left a statement in flight) is closed, never lent again.

use std::sync::{Mutex as StdMutex, PoisonError};

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Up to `max` connections, opened when first needed.
pub(super) struct Own {
    options: PgConnectOptions,
    idle: StdMutex<Vec<PgConnection>>,
    permits: Semaphore,
}

impl Own {
    pub(super) fn new(options: PgConnectOptions, max: u32) -> Self {
        Self {
            options,
            idle: StdMutex::new(Vec::new()),
            permits: Semaphore::new(usize::try_from(max).unwrap_or(usize::MAX)),
        }
    }

    /// Closes every idle connection: after a call failed in a way that may have taken
    /// them along (a lost server or link).
    pub(super) fn forget_idle(&self) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A connection for one call: an idle one, or a new one.
    pub(super) async fn lend(&self) -> Result<Lent<'_>, sqlx::Error> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let connection = match idle {
            Some(connection) => connection,
            None => PgConnection::connect_with(&self.options).await?,
        };
        Ok(Lent {
            own: self,
            connection: Some(connection),
            kept: false,
            _permit: permit,
        })
    }
}

/// A connection lent to one call; back to the idle ones if [`keep`](Self::keep) was
/// called, closed otherwise.
pub(super) struct Lent<'a> {
    own: &'a Own,
    connection: Option<PgConnection>,
    kept: bool,
    _permit: SemaphorePermit<'a>,
}

impl Lent<'_> {
    pub(super) fn connection(&mut self) -> &mut PgConnection {
        self.connection
            .as_mut()
            .unwrap_or_else(|| unreachable!("a lent connection is there until dropped"))
    }

    /// The call ended well: the connection goes back for the next.
    pub(super) fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take()
            && self.kept
        {
            self.own
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(connection);
        }
    }
}
