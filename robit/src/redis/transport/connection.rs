//! The driver's command connection: made once and shared by every call, replaced when it
//! breaks, and every command on it bounded by the command timeout.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use redis::{FromRedisValue, Value};

use super::Connector;
use super::batch::Answered;
use crate::driver::DriverError;
use crate::millis::Millis;
use crate::redis::scripts::{self, ScriptCall};
use crate::redis::state_loss::identity::{self, Identity};
use crate::redis::{Inner, error};

/// Why a new connection could not be readied.
enum Ready {
    /// The server refused, or the connection failed.
    Failed(redis::RedisError),
    /// The server's `INFO` does not say who it is.
    Unknown,
}

/// The command connection, with what the driver knows of it.
#[derive(Clone)]
pub(in crate::redis) struct Current<T> {
    /// Counts connections, so that a late failure on an old one cannot throw away its
    /// replacement.
    generation: u64,
    connection: T,
    /// What the acquire sends for its server's identity: `Identity::ASK`, the script
    /// reads it; `Identity::OFF` when failover detection is off.
    pub(in crate::redis) identity: Identity,
}

impl<T> Current<T> {
    /// Which connection this is: they are counted.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }
}

impl<C: Connector> Inner<C> {
    fn slot(&self) -> MutexGuard<'_, Option<Current<C::Connection>>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The command connection, connecting first if there is none. Waiting for another
    /// call's connection attempt counts towards the connect timeout, so that no call
    /// waits longer than that for a connection.
    pub(in crate::redis) async fn connection(&self) -> Result<Current<C::Connection>, DriverError> {
        if let Some(current) = self.slot().clone() {
            return Ok(current);
        }
        let limit = self.settings.connect_timeout;
        tokio::time::timeout(limit, self.connect(limit))
            .await
            .map_err(|_| DriverError::Timeout(limit))?
    }

    /// Opens a connection and, unless failover detection is off, checks that its server
    /// names its run id and replication id before anything else is sent on it.
    async fn connect(&self, limit: Duration) -> Result<Current<C::Connection>, DriverError> {
        // One connection attempt at a time; the others wait and share its result.
        let _connecting = self.connecting.lock().await;
        if let Some(current) = self.slot().clone() {
            return Ok(current);
        }
        let classify = |err| error::classify(err, limit, &self.connector.describe());
        let mut connection = self.connector.connect().await.map_err(classify)?;
        let identity = self.ready(&mut connection).await.map_err(|err| match err {
            Ready::Failed(err) => classify(err),
            Ready::Unknown => identity::unknown(),
        })?;
        let current = Current {
            generation: self.generations.fetch_add(1, Ordering::Relaxed),
            connection,
            identity,
        };
        *self.slot() = Some(current.clone());
        Ok(current)
    }

    /// Readies a new connection before anything else is sent on it: checks that the
    /// server names its run id and replication id (`INFO server replication`; a `PING`
    /// with failover detection off), then loads every script in one more round trip —
    /// once the server has answered a short command, so that a connection the server
    /// refuses (no password) is refused with its own words, before a long command makes
    /// it close the connection instead.
    ///
    /// The identity it answers is not learned here but asked for ([`Identity::ASK`]):
    /// the acquire script reads the identity of the server it runs on, on every call that
    /// grants. A
    /// connection outlives a change of its server's role (`REPLICAOF` neither closes a
    /// demoted primary's connections nor refuses them until a write arrives), so an
    /// identity learned once would name a life of the server that has ended.
    ///
    /// In cluster mode nothing is sent: a script a node lacks is sent in full there (see
    /// [`ScriptCall::invoke`]).
    async fn ready(&self, connection: &mut C::Connection) -> Result<Identity, Ready> {
        let identity = *self.settings.identity();
        if self.settings.spread {
            return Ok(identity);
        }
        if self.settings.detect_failover {
            // The acquire script reads the identity itself; a server that does not name
            // both ids (before Redis 7.0) is refused here, at the first round trip.
            let info: String = redis::cmd("INFO")
                .arg("server")
                .arg("replication")
                .query_async(connection)
                .await
                .map_err(Ready::Failed)?;
            Identity::parse(&info).ok_or(Ready::Unknown)?;
        } else {
            redis::cmd("PING")
                .query_async::<()>(connection)
                .await
                .map_err(Ready::Failed)?;
        }
        let mut pipe = redis::pipe();
        scripts::load_all(&mut pipe);
        for loaded in scripts::replies(&mut pipe, connection)
            .await
            .map_err(Ready::Failed)?
        {
            loaded.map_err(Ready::Failed)?;
        }
        Ok(identity)
    }

    /// Drops connection `generation`, if it is still the current one, so that the next
    /// command opens a fresh one.
    fn replace(&self, generation: u64) {
        let mut slot = self.slot();
        if slot
            .as_ref()
            .is_some_and(|current| current.generation == generation)
        {
            *slot = None;
        }
    }

    /// Classifies a failure, and drops a broken connection so the next command gets a
    /// fresh one. So too a connection to a server that has become a replica (READONLY):
    /// the next one may reach the new primary.
    pub(super) fn failed(&self, generation: u64, err: redis::RedisError) -> DriverError {
        if error::breaks_connection(&err) || matches!(err.code(), Some("READONLY" | "UNBLOCKED")) {
            self.replace(generation);
        }
        if self.settings.spread && matches!(err.code(), Some("MOVED" | "ASK")) {
            // The cluster client followed redirections until it gave up: the cluster's
            // slots are moving, and it will have their new owners soon.
            return DriverError::unavailable(format!(
                "the cluster kept redirecting the call while its slots moved: {err}"
            ));
        }
        error::classify(
            err,
            self.settings.command_timeout,
            &self.connector.describe(),
        )
    }

    /// A command got no answer in time. The server may be slow, or the connection may
    /// be dead without either side knowing (a half-open TCP connection never errors):
    /// replace it, whatever the connector, so the next command does not wait on it too
    /// (in cluster mode, after a few: see [`suspect`](Self::suspect)).
    fn timed_out(&self, generation: u64) -> DriverError {
        self.suspect(generation);
        DriverError::Timeout(self.settings.command_timeout)
    }

    /// A command on connection `generation` went unanswered. On one server, the
    /// connection is replaced at once. In cluster mode it is the cluster client's, one
    /// connection per node, and one node that stops answering must not take the other
    /// masters' locks down with it: the client reconnects a broken node by itself, and
    /// follows a new master once a node answers with a redirection. But a master that
    /// hangs never answers so, even after its replica took over: after
    /// [`SUSPECT_CLUSTER_AFTER`] unanswered commands the cluster connection is replaced,
    /// and the new one learns the cluster's slots afresh.
    fn suspect(&self, generation: u64) {
        let unanswered = self
            .timeouts
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if replaces(self.settings.spread, unanswered) {
            self.timeouts.store(0, Ordering::Relaxed);
            self.replace(generation);
        }
    }

    /// Runs one script call: one round trip (three after a NOSCRIPT), bounded as a whole
    /// by the command timeout.
    pub(in crate::redis) async fn run<T: FromRedisValue>(
        &self,
        call: &ScriptCall,
    ) -> Result<T, DriverError> {
        let current = self.connection().await?;
        self.run_on(current, call).await
    }

    /// [`run`](Self::run), on `current`: a call whose arguments depend on the connection.
    async fn run_on<T: FromRedisValue>(
        &self,
        current: Current<C::Connection>,
        call: &ScriptCall,
    ) -> Result<T, DriverError> {
        let in_full = self.settings.spread;
        self.bounded_on(current, |mut connection| async move {
            call.invoke(&mut connection, in_full).await
        })
        .await
    }

    /// Runs a call of acquire or renew — with others of its script, if some are in
    /// flight (`batch/`) — followed in the same round trip by a `WAIT` for the
    /// replicas the settings ask for. Answers the script's answer and whether enough
    /// replicas acknowledged it (always, when none must): if not, the error that says so.
    pub(in crate::redis) async fn run_acked_on<T: FromRedisValue>(
        self: &Arc<Self>,
        current: Current<C::Connection>,
        call: ScriptCall,
    ) -> Result<(T, Result<(), DriverError>), DriverError> {
        let (answer, acked) = self.send(current, call, true).await?;
        Ok((self.parse(answer)?, acked))
    }

    /// Runs a call of release, with others of its script if some are in flight.
    pub(in crate::redis) async fn run_batched<T: FromRedisValue>(
        self: &Arc<Self>,
        call: ScriptCall,
    ) -> Result<T, DriverError> {
        let current = self.connection().await?;
        let (answer, _) = self.send(current, call, false).await?;
        self.parse(answer)
    }

    /// A script's answer as `T`, or the error that says it was not one.
    fn parse<T: FromRedisValue>(&self, answer: Value) -> Result<T, DriverError> {
        T::from_redis_value(answer).map_err(|err| {
            error::classify(
                err.into(),
                self.settings.command_timeout,
                &self.connector.describe(),
            )
        })
    }

    /// Sends `call` on its own on `current`, followed, if `acked`, by a `WAIT` for the
    /// replicas the settings ask for.
    pub(super) async fn send_alone(
        &self,
        current: Current<C::Connection>,
        call: &ScriptCall,
        acked: bool,
    ) -> Result<Answered, DriverError> {
        let Some(acks) = self.settings.replica_acks.filter(|_| acked) else {
            return Ok((self.run_on(current, call).await?, Ok(())));
        };
        let (generation, in_full) = (current.generation, self.settings.spread);
        let (answer, acked) = self
            .bounded_on(current, |mut connection| async move {
                call.invoke_acked(&mut connection, in_full, (acks.replicas, acks.timeout))
                    .await
            })
            .await?;
        let acked = match acked {
            Ok(acked) if acked >= acks.replicas => return Ok((answer, Ok(()))),
            Ok(acked) => acked,
            // WAIT refused, or cut short (UNBLOCKED: the server became a replica).
            Err(err) => return Ok((answer, Err(self.failed(generation, err)))),
        };
        let err = DriverError::unavailable(format!(
            "only {acked} of the {} replicas asked for acknowledged the write within {}: \
             it does not count; check the replicas (INFO replication) or lower \
             RedisDriverBuilder::replica_acks",
            acks.replicas,
            Millis(acks.timeout)
        ));
        Ok((answer, Err(err)))
    }

    /// Runs `command` on the command connection, bounded by the command timeout, and
    /// retires the connection if it broke or did not answer.
    pub(in crate::redis) async fn bounded<T, F>(
        &self,
        command: impl FnOnce(C::Connection) -> F,
    ) -> Result<T, DriverError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let current = self.connection().await?;
        self.bounded_on(current, command).await
    }

    async fn bounded_on<T, F>(
        &self,
        current: Current<C::Connection>,
        command: impl FnOnce(C::Connection) -> F,
    ) -> Result<T, DriverError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let Current {
            generation,
            connection,
            ..
        } = current;
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

/// In cluster mode, how many commands may go unanswered before the cluster connection is
/// replaced.
const SUSPECT_CLUSTER_AFTER: u32 = 3;

/// Whether the connection is replaced when a command on it goes unanswered, the
/// `unanswered`-th since it was last replaced: on one server at once, in cluster mode
/// (`spread`) at the [`SUSPECT_CLUSTER_AFTER`]th.
fn replaces(spread: bool, unanswered: u32) -> bool {
    !spread || unanswered >= SUSPECT_CLUSTER_AFTER
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
            self.driver.suspect(self.generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_replaces_its_connection_at_once_and_a_cluster_at_the_third_silence() {
        for unanswered in [1, 2, 3, 4] {
            assert!(replaces(false, unanswered), "{unanswered}");
        }
        assert!(!replaces(true, 1));
        assert!(!replaces(true, 2));
        assert!(replaces(true, 3));
        assert!(replaces(true, 4));
    }
}
