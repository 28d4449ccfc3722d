//! Guarded transactions: the caller's own statements, in a transaction that commits only
//! while the grant it names still holds the lock.
//!
//! At commit, one statement reads the grant's row `FOR SHARE` if the grant is still
//! live by the server's clock; then `COMMIT`. From that read to the commit, the share
//! lock keeps every acquire of the lock waiting (an acquire locks the row to replace
//! it), so no other holder can be granted the lock before the commit is done. If the
//! grant is gone — expired while its holder was paused or cut off, released, or taken
//! over — the transaction is rolled back and the commit fails with
//! [`GuardedError::LockLost`]: the store itself refuses the stale write, which is the
//! strongest form of fencing there is.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::postgres::PgConnection;
use sqlx::{Postgres, Transaction};

use super::{PostgresDriver, Shared};
use crate::driver::{FenceToken, LockName};

/// A guarded transaction could not commit, or could not start.
///
/// # Example
///
/// ```
/// use robit::FenceToken;
/// use robit::postgres::GuardedError;
///
/// let err = GuardedError::LockLost { name: "ledger".into(), fence: FenceToken::new(7) };
/// assert!(err.to_string().contains("rolled back"));
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GuardedError {
    /// The grant no longer holds the lock: it expired (its holder was paused or cut off
    /// past its lease), was released, or another holder was granted the lock. Nothing the
    /// transaction wrote was committed.
    #[error(
        "the grant of lock {name:?} with fencing token {fence} no longer holds it; the \
         transaction was rolled back and nothing it wrote is committed"
    )]
    LockLost {
        /// The lock.
        name: LockName,
        /// The grant's fencing token.
        fence: FenceToken,
    },
    /// The database failed while starting, checking or committing the transaction. If it
    /// failed at the commit itself, the outcome is unknown, as for any commit whose
    /// answer is lost; the grant check still ran first.
    #[error("a guarded transaction failed in Postgres while {what}: {source}")]
    Database {
        /// What the driver was doing.
        what: &'static str,
        /// sqlx's error.
        #[source]
        source: sqlx::Error,
    },
}

/// A transaction that can commit only while the grant it names holds the lock; start one
/// with [`PostgresDriver::begin_guarded`].
///
/// It dereferences to the transaction's connection: run the protected statements on
/// `&mut *guarded`, then [`commit`](Self::commit). Dropped without a commit, it rolls
/// back.
///
/// # Example
///
/// ```no_run
/// use robit::Mutex;
/// use robit::postgres::{GuardedError, PostgresDriver};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let driver = PostgresDriver::builder("postgres://app@db.internal/app").build()?;
/// let mutex = Mutex::builder("ledger", driver.clone()).build()?;
/// let guard = mutex.lock().await?;
/// let mut guarded = driver.begin_guarded(mutex.name().clone(), guard.fence()).await?;
/// sqlx::query("UPDATE balances SET amount = amount - 10 WHERE id = 1")
///     .execute(&mut *guarded)
///     .await?;
/// match guarded.commit().await {
///     Ok(()) => {}
///     Err(GuardedError::LockLost { .. }) => eprintln!("lost the lock: nothing was written"),
///     Err(err) => return Err(err.into()),
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
pub struct GuardedTransaction {
    transaction: Transaction<'static, Postgres>,
    shared: Arc<Shared>,
    name: LockName,
    fence: FenceToken,
}

impl PostgresDriver {
    /// Begins a transaction that can commit only while the grant of lock `name` with
    /// fencing token `fence` (a [`Guard`](crate::Guard)'s
    /// [`fence`](crate::Guard::fence)) still holds it. The transaction takes a
    /// connection of the driver's pool until it ends.
    ///
    /// What it costs: one more round trip at commit (the check), and from the check to
    /// the commit a share lock on the lock's row, which delays a competing acquire and
    /// the holder's own renewal by that long. If the holder stalls between the two, the
    /// server ends its session after the driver's request timeout
    /// (`idle_in_transaction_session_timeout`, set for that moment only), which rolls
    /// the transaction back.
    ///
    /// # Errors
    ///
    /// [`GuardedError::Database`] if the transaction could not begin.
    pub async fn begin_guarded(
        &self,
        name: impl Into<LockName>,
        fence: FenceToken,
    ) -> Result<GuardedTransaction, GuardedError> {
        let transaction =
            self.shared
                .pool
                .begin()
                .await
                .map_err(|source| GuardedError::Database {
                    what: "beginning",
                    source,
                })?;
        Ok(GuardedTransaction {
            transaction,
            shared: Arc::clone(&self.shared),
            name: name.into(),
            fence,
        })
    }
}

impl GuardedTransaction {
    /// Commits if the grant still holds the lock; otherwise rolls back and says so.
    ///
    /// # Errors
    ///
    /// [`GuardedError::LockLost`] when the grant no longer holds the lock (nothing is
    /// committed), [`GuardedError::Database`] when Postgres failed.
    pub async fn commit(mut self) -> Result<(), GuardedError> {
        let shared = &self.shared;
        let bound = super::millis(shared.settings.request_timeout).to_string();
        let fence = i64::try_from(self.fence.get()).unwrap_or(i64::MAX);
        // Unnamed: a statement kept on this connection may be missing from the server
        // connection a pooler gives the next transaction.
        let held = sqlx::query_scalar::<_, String>(&shared.statements.guard)
            .persistent(!shared.settings.transaction_pooler)
            .bind(shared.namespace())
            .bind(self.name.as_bytes())
            .bind(fence)
            .bind(bound)
            .fetch_optional(&mut *self.transaction)
            .await
            .map_err(|source| GuardedError::Database {
                what: "checking the grant",
                source,
            })?;
        if held.is_none() {
            let _ = self.transaction.rollback().await;
            return Err(GuardedError::LockLost {
                name: self.name,
                fence: self.fence,
            });
        }
        self.transaction
            .commit()
            .await
            .map_err(|source| GuardedError::Database {
                what: "committing",
                source,
            })
    }

    /// Rolls back: nothing the transaction wrote is kept.
    ///
    /// # Errors
    ///
    /// [`GuardedError::Database`] if Postgres failed (the transaction is then rolled
    /// back when its connection closes).
    pub async fn rollback(self) -> Result<(), GuardedError> {
        self.transaction
            .rollback()
            .await
            .map_err(|source| GuardedError::Database {
                what: "rolling back",
                source,
            })
    }
}

impl Deref for GuardedTransaction {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.transaction
    }
}

impl DerefMut for GuardedTransaction {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.transaction
    }
}

impl std::fmt::Debug for GuardedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedTransaction")
            .field("name", &self.name)
            .field("fence", &self.fence)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sends<T: Send>(_: &T) {}

    /// A task that holds a lock may commit its guarded transaction anywhere, a spawned
    /// task included.
    #[tokio::test]
    async fn beginning_and_committing_are_futures_a_task_can_send() {
        let driver = PostgresDriver::builder("postgres://robit@127.0.0.1:1/none")
            .build()
            .unwrap();
        let begin = driver.begin_guarded("ledger", FenceToken::new(1));
        sends(&begin);
        drop(begin);
        fn commit_sends(guarded: GuardedTransaction) {
            sends(&guarded.commit());
        }
        let _ = commit_sends;
    }
}
