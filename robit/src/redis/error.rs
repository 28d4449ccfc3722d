//! Mapping redis-rs errors to [`DriverError`]s that say what to do.

use std::fmt;
use std::time::Duration;

use redis::{ErrorKind, RedisError};

use crate::driver::{DriverError, Explained};

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
/// `server` is where the driver connects (no password), for the errors that concern
/// reaching it.
pub(super) fn classify(err: RedisError, command_timeout: Duration, server: &str) -> DriverError {
    if err.is_timeout() {
        return DriverError::Timeout(command_timeout);
    }
    if needs_credentials(&err) {
        return permanent(
            "Redis requires authentication and the driver sent none; put the username and \
             password in the URL (redis://user:password@host)",
            err,
        );
    }
    if refused_credentials(&err) {
        return permanent(
            "Redis refused the credentials; check the username and password in the URL",
            err,
        );
    }
    match err.code() {
        Some("NOPERM") => permanent(
            "the Redis user may not run a command robit needs (EVALSHA, SCRIPT, PUBLISH, \
             SUBSCRIBE on the namespace's keys, INFO unless failover detection is off, WAIT \
             with replica acknowledgements); grant it with ACL SETUSER (docs/redis.md lists \
             them)",
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
        Some(
            "LOADING" | "BUSY" | "READONLY" | "UNBLOCKED" | "MASTERDOWN" | "CLUSTERDOWN"
            | "TRYAGAIN",
        ) => transient("Redis cannot serve the request right now", err),
        Some("ERR") if refused_as_syntax(&err) => permanent(
            "Redis refused a command of robit's scripts as a syntax error: they need Redis 7.0 \
             or later (SET with NX and GET together); upgrade the server",
            err,
        ),
        Some(_) => permanent("a robit script failed on the server", err),
        None if err.is_connection_refusal() => DriverError::unavailable(Unreachable {
            server: server.to_owned(),
            source: err,
        }),
        None if err.is_io_error() || err.is_connection_dropped() => {
            transient("the connection to Redis failed", err)
        }
        None if matches!(
            err.kind(),
            ErrorKind::Parse | ErrorKind::UnexpectedReturnType
        ) =>
        {
            permanent(
                "Redis answered something robit does not understand; is it a \
                 Redis-compatible server of version 7.0 or later?",
                err,
            )
        }
        None => transient("the Redis client failed", err),
    }
}

/// The server wants a password and got none. Redis answers `NOAUTH` to a short command;
/// to a longer one from a client that has not authenticated — a script call with its
/// keys and arguments — it answers a protocol error and closes the connection.
fn needs_credentials(err: &RedisError) -> bool {
    err.code() == Some("NOAUTH")
        || err
            .detail()
            .is_some_and(|detail| detail.contains("unauthenticated"))
}

/// A command a script called was refused as a syntax error: what a server older than
/// Redis 7.0 answers to robit's `SET … NX … GET`.
fn refused_as_syntax(err: &RedisError) -> bool {
    err.detail()
        .is_some_and(|detail| detail.starts_with("syntax error") && detail.contains("@user_script"))
}

fn refused_credentials(err: &RedisError) -> bool {
    err.kind() == ErrorKind::AuthenticationFailed || err.code() == Some("WRONGPASS")
}

/// Nothing listens at the server's address.
#[derive(Debug)]
struct Unreachable {
    server: String,
    source: RedisError,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Redis at {} is unreachable: {}; check that the server runs and that the URL \
             names its host and port",
            self.server, self.source
        )
    }
}

impl std::error::Error for Unreachable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Whether `err` means the connection itself is broken (so a fresh one is needed): any
/// I/O error (a dropped or refused connection is one), or one after which redis-rs
/// reconnects (an answer it could not parse leaves the stream out of step).
pub(super) fn breaks_connection(err: &RedisError) -> bool {
    err.is_io_error() || err.is_unrecoverable_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(reply: &str) -> RedisError {
        let value = redis::parse_redis_value(reply.as_bytes()).unwrap();
        value.extract_error().unwrap_err()
    }

    #[test]
    fn a_wait_cut_short_by_a_demotion_is_retried() {
        // What Redis answers a blocked WAIT when it becomes a replica.
        let demoted = server_error(
            "-UNBLOCKED force unblock from blocking operation, instance state changed \
             (master -> replica?)\r\n",
        );
        assert_eq!(demoted.code(), Some("UNBLOCKED"));
        assert!(classify(demoted, Duration::from_secs(1), "redis://x").is_transient());
    }

    #[test]
    fn a_script_refused_as_a_syntax_error_names_the_redis_version_robit_needs() {
        // What Redis 6.2 answers to robit's acquire (SET with NX and GET together).
        let old_server =
            server_error("-ERR syntax error script: 0123abcd, on @user_script:22.\r\n");
        let message = classify(old_server, Duration::from_secs(1), "redis://x").to_string();
        assert!(message.contains("need Redis 7.0 or later"), "{message}");
        // Any other failure of a script stays what it was.
        let other =
            server_error("-ERR value is not an integer script: 0123abcd, on @user_script:9.\r\n");
        let message = classify(other, Duration::from_secs(1), "redis://x").to_string();
        assert!(
            message.contains("a robit script failed on the server"),
            "{message}"
        );
        assert!(!message.contains("7.0"), "{message}");
    }

    #[test]
    fn a_transient_error_keeps_the_redis_error_behind_its_explanation() {
        let oom = server_error("-OOM command not allowed when used memory > 'maxmemory'\r\n");
        let err = classify(oom, Duration::from_secs(1), "redis://x");
        assert!(err.is_transient(), "{err}");
        // The chain: the driver's error, robit's explanation, then redis-rs's own.
        let explained = std::error::Error::source(&err).expect("an explanation");
        assert!(
            explained.to_string().starts_with("Redis is out of memory"),
            "{explained}"
        );
        let cause = explained.source().expect("the Redis error");
        let cause = cause.downcast_ref::<RedisError>().expect("a RedisError");
        assert_eq!(cause.code(), Some("OOM"));
    }

    /// What `classify` makes of `err`: whether it is transient, and its message.
    fn classified(err: RedisError) -> (bool, String) {
        let err = classify(err, Duration::from_secs(1), "redis://x");
        (err.is_transient(), err.to_string())
    }

    #[test]
    fn a_failed_connection_is_transient_and_an_answer_not_understood_is_not() {
        use std::io;
        // A connection that broke, or failed otherwise (a TLS handshake, say).
        for kind in [io::ErrorKind::BrokenPipe, io::ErrorKind::Other] {
            let (transient, message) = classified(io::Error::new(kind, "gone").into());
            assert!(transient, "{message}");
            assert!(
                message.contains("(the connection to Redis failed: gone)"),
                "{message}"
            );
        }
        // Nothing listening: the address is named, and the cause kept.
        let err = classify(
            io::Error::from(io::ErrorKind::ConnectionRefused).into(),
            Duration::from_secs(1),
            "redis://x:1",
        );
        assert!(err.is_transient(), "{err}");
        let unreachable = std::error::Error::source(&err).expect("the address");
        assert!(
            unreachable
                .to_string()
                .starts_with("Redis at redis://x:1 is unreachable")
        );
        let cause = unreachable.source().expect("the Redis error");
        let cause = cause.downcast_ref::<RedisError>().expect("a RedisError");
        assert!(cause.is_connection_refusal(), "{cause}");
        // An answer that is not Redis's.
        for kind in [ErrorKind::Parse, ErrorKind::UnexpectedReturnType] {
            let (transient, message) = classified((kind, "odd").into());
            assert!(!transient, "{message}");
            assert!(message.contains("does not understand"), "{message}");
        }
        // Anything else the client reports is worth another try.
        let (transient, message) = classified((ErrorKind::Client, "odd").into());
        assert!(transient, "{message}");
        assert!(message.contains("(the Redis client failed: "), "{message}");
    }

    #[test]
    fn refused_credentials_are_a_permanent_error_that_says_so() {
        let refused = [
            server_error("-WRONGPASS invalid username-password pair\r\n"),
            (ErrorKind::AuthenticationFailed, "no").into(),
        ];
        for err in refused {
            let (transient, message) = classified(err);
            assert!(!transient, "{message}");
            assert!(
                message.contains("Redis refused the credentials"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_connection_is_replaced_after_an_io_error_or_an_answer_out_of_step_only() {
        use std::io;
        for kind in [
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::Other,
        ] {
            assert!(breaks_connection(&io::Error::from(kind).into()), "{kind:?}");
        }
        assert!(breaks_connection(&(ErrorKind::Parse, "odd").into()));
        // Redis refused a command: the connection is as good as before.
        for reply in [
            "-WRONGTYPE Operation\r\n",
            "-NOPERM user\r\n",
            "-ERR no\r\n",
        ] {
            assert!(!breaks_connection(&server_error(reply)), "{reply}");
        }
        assert!(!breaks_connection(&(ErrorKind::Client, "odd").into()));
    }
}
