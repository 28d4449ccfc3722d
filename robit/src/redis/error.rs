//! Mapping redis-rs errors to [`DriverError`]s that say what to do.

use std::fmt;
use std::time::Duration;

use redis::{ErrorKind, RedisError};

use crate::driver::DriverError;

/// A redis-rs error with robit's explanation in front.
#[derive(Debug)]
struct Explained {
    what: &'static str,
    source: RedisError,
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for Explained {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

fn transient(what: &'static str, source: RedisError) -> DriverError {
    DriverError::unavailable(Explained { what, source })
}

fn permanent(what: &'static str, source: RedisError) -> DriverError {
    DriverError::Rejected {
        reason: format!("{what}: {source}"),
        source: Some(Box::new(source)),
    }
}

/// Classifies `err`: transient errors are retried by the mutex, permanent ones returned.
pub(super) fn classify(err: RedisError, command_timeout: Duration) -> DriverError {
    if err.is_timeout() {
        return DriverError::Timeout(command_timeout);
    }
    let refused_credentials = err.kind() == ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH"));
    match err.code() {
        _ if refused_credentials => permanent(
            "Redis refused the credentials; check the username and password in the URL",
            err,
        ),
        Some("NOPERM") => permanent(
            "the Redis user may not run a command robit needs (EVALSHA, SCRIPT, PUBLISH, \
             SUBSCRIBE on the namespace's keys); grant it with ACL SETUSER",
            err,
        ),
        Some("WRONGTYPE") => permanent(
            "a key in robit's namespace holds another type of value; something else writes \
             there: choose another namespace or delete the key",
            err,
        ),
        Some("OOM") => transient(
            "Redis is out of memory (maxmemory reached, and the eviction policy refuses \
             writes); free memory or raise maxmemory",
            err,
        ),
        Some("MOVED" | "ASK") => permanent(
            "the namespace's cluster slot is served by another node; the driver talks to one \
             node: connect it to that node, or give it a Connector over a cluster client",
            err,
        ),
        Some("LOADING" | "BUSY" | "READONLY" | "MASTERDOWN" | "CLUSTERDOWN" | "TRYAGAIN") => {
            transient("Redis cannot serve the request right now", err)
        }
        Some(_) => permanent("a robit script failed on the server", err),
        None if err.is_io_error() || err.is_connection_refusal() || err.is_connection_dropped() => {
            transient("the connection to Redis failed", err)
        }
        None => match err.kind() {
            ErrorKind::Io => transient("the connection to Redis failed", err),
            ErrorKind::Parse | ErrorKind::UnexpectedReturnType => permanent(
                "Redis answered something robit does not understand; is it a Redis-compatible \
                 server of version 6.2 or later?",
                err,
            ),
            _ => transient("the Redis client failed", err),
        },
    }
}

/// Whether `err` means the connection itself is broken (so a fresh one is needed).
pub(super) fn breaks_connection(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_unrecoverable_error()
}
