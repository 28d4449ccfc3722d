//! The driver's command connection: made once and shared by every call, replaced when it
//! breaks, and every command on it bounded by the command timeout.

use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use redis::FromRedisValue;

use super::scripts::ScriptCall;
use super::{Connector, Inner, error};
use crate::driver::DriverError;

impl<C: Connector> Inner<C> {
    fn slot(&self) -> MutexGuard<'_, Option<(u64, C::Connection)>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The command connection and its generation, connecting first if there is none.
    /// Waiting for another call's connection attempt counts towards the connect
    /// timeout, so that no call waits longer than that for a connection.
    async fn connection(&self) -> Result<(u64, C::Connection), DriverError> {
        if let Some(current) = self.slot().clone() {
            return Ok(current);
        }
        let limit = self.settings.connect_timeout;
        tokio::time::timeout(limit, self.connect(limit))
            .await
            .map_err(|_| DriverError::Timeout(limit))?
    }

    async fn connect(&self, limit: Duration) -> Result<(u64, C::Connection), DriverError> {
        // One connection attempt at a time; the others wait and share its result.
        let _connecting = self.connecting.lock().await;
        if let Some(current) = self.slot().clone() {
            return Ok(current);
        }
        let connection = self
            .connector
            .connect()
            .await
            .map_err(|err| error::classify(err, limit, &self.connector.describe()))?;
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        *self.slot() = Some((generation, connection.clone()));
        Ok((generation, connection))
    }

    /// Drops connection `generation`, if it is still the current one, so that the next
    /// command opens a fresh one.
    fn replace(&self, generation: u64) {
        let mut slot = self.slot();
        if slot
            .as_ref()
            .is_some_and(|(current, _)| *current == generation)
        {
            *slot = None;
        }
    }

    /// Classifies a failure, and drops a broken connection so the next command gets a
    /// fresh one.
    fn failed(&self, generation: u64, err: redis::RedisError) -> DriverError {
        if error::breaks_connection(&err) && !self.connector.reconnects_by_itself() {
            self.replace(generation);
        }
        error::classify(
            err,
            self.settings.command_timeout,
            &self.connector.describe(),
        )
    }

    /// A command got no answer in time. The server may be slow, or the connection may
    /// be dead without either side knowing (a half-open TCP connection never errors):
    /// replace it, whatever the connector, so the next command does not wait on it too.
    fn timed_out(&self, generation: u64) -> DriverError {
        self.replace(generation);
        DriverError::Timeout(self.settings.command_timeout)
    }

    /// Runs one script call: one round trip (three after a NOSCRIPT), bounded as a whole
    /// by the command timeout.
    pub(super) async fn run<T: FromRedisValue>(&self, call: &ScriptCall) -> Result<T, DriverError> {
        self.bounded(|mut connection| async move { call.invoke(&mut connection).await })
            .await
    }

    /// Runs `command` on the command connection, bounded by the command timeout, and
    /// retires the connection if it broke or did not answer.
    pub(super) async fn bounded<T, F>(
        &self,
        command: impl FnOnce(C::Connection) -> F,
    ) -> Result<T, DriverError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let (generation, connection) = self.connection().await?;
        let limit = self.settings.command_timeout;
        let since = tokio::time::Instant::now();
        let mut watch = Abandoned {
            driver: self,
            generation,
            since,
            settled: false,
        };
        let command = command(connection);
        // The deadline from the reading just taken: one clock reading per command, not
        // two (`timeout` would read the clock again). A limit too long to represent
        // never runs out.
        let answer = match since.checked_add(limit) {
            Some(deadline) => tokio::time::timeout_at(deadline, command).await,
            None => Ok(command.await),
        };
        let outcome = match answer {
            Ok(result) => result.map_err(|err| self.failed(generation, err)),
            Err(_) => Err(self.timed_out(generation)),
        };
        watch.settled = true;
        outcome
    }
}

/// How long a command may be outstanding before its caller giving up on it counts as a
/// sign that the connection stopped answering.
const SUSPECT_AFTER: Duration = Duration::from_millis(10);

/// Retires the connection if the caller abandons a command that has waited a while: the
/// mutex bounds each renew and acquire by its own timeout, which may be shorter than the
/// driver's command timeout, and a connection that silently stopped answering would
/// otherwise never reach the driver's own timeout to be replaced.
struct Abandoned<'a, C: Connector> {
    driver: &'a Inner<C>,
    generation: u64,
    since: tokio::time::Instant,
    settled: bool,
}

impl<C: Connector> Drop for Abandoned<'_, C> {
    fn drop(&mut self) {
        if !self.settled && self.since.elapsed() >= SUSPECT_AFTER {
            self.driver.replace(self.generation);
        }
    }
}
