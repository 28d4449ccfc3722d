//! etcd-client's errors as [`DriverError`]s that say what to do.

use etcd_client::Error;
use tonic::Code;

use crate::driver::DriverError;

/// etcd's answer when a request names a lease it no longer has (expired or revoked).
pub(super) fn is_lease_gone(err: &Error) -> bool {
    match err {
        Error::GRpcStatus(status) => {
            status.code() == Code::NotFound && status.message().contains("lease not found")
        }
        Error::LeaseKeepAliveError(message) => message == "lease not found",
        _ => false,
    }
}

/// etcd's answer when the user's token predates a change to users or roles (or has
/// expired): authenticating again fixes it.
pub(super) fn is_stale_token(err: &Error) -> bool {
    matches!(err, Error::GRpcStatus(status)
        if status.message().contains("revision of auth store is old")
            || status.message().contains("invalid auth token"))
}

/// Classifies `err`: transient errors are retried by the Mutex, permanent ones returned.
pub(super) fn classify(what: &'static str, err: Error) -> DriverError {
    let permanent = |advice: &str, err: Error| DriverError::Rejected {
        reason: format!("{what}: {err}; {advice}"),
        source: Some(Box::new(err)),
    };
    match &err {
        _ if is_stale_token(&err) => DriverError::unavailable(Explained { what, source: err }),
        Error::GRpcStatus(status) if status.message().contains("authentication failed") => {
            permanent("check the user and password", err)
        }
        Error::GRpcStatus(status) => match status.code() {
            Code::Unauthenticated => permanent("check the user and password", err),
            Code::PermissionDenied => permanent(
                "grant the user read and write on the namespace's keys, and leases",
                err,
            ),
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
                permanent("the request is malformed for this etcd version", err)
            }
            Code::Unimplemented => permanent("etcd 3.4 or later is needed", err),
            _ => DriverError::unavailable(Explained { what, source: err }),
        },
        Error::InvalidArgs(_) | Error::InvalidUri(_) | Error::InvalidMetadataValue(_) => {
            permanent("check the endpoints and credentials", err)
        }
        _ => DriverError::unavailable(Explained { what, source: err }),
    }
}

/// An etcd-client error with robit's explanation in front.
#[derive(Debug)]
struct Explained {
    what: &'static str,
    source: Error,
}

impl std::fmt::Display for Explained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for Explained {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
