//! etcd-client's errors as [`DriverError`]s that say what to do.

use etcd_client::Error;
use tonic::Code;

use crate::driver::{DriverError, Explained};

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
        Error::GRpcStatus(status)
            if status.message().contains("request is too large")
                || status.message().contains("larger than max") =>
        {
            permanent(
                "the lock name and namespace are too long for etcd's request limit (--max-request-bytes); use shorter ones",
                err,
            )
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use tonic::Status;

    use super::*;

    fn status(code: Code, message: &str) -> Error {
        Error::GRpcStatus(Status::new(code, message))
    }

    /// Whether `err` is classified as one to retry, and the advice a permanent one gives.
    fn classified(err: Error) -> (bool, String) {
        let classified = classify("acquiring an etcd lock", err);
        (classified.is_transient(), classified.to_string())
    }

    #[test]
    fn what_etcd_refuses_for_good_is_permanent_and_says_what_to_do() {
        for (err, advice) in [
            (
                status(
                    Code::Unknown,
                    "etcdserver: authentication failed, invalid user ID or password",
                ),
                "check the user and password",
            ),
            (
                status(Code::Unauthenticated, "etcdserver: user name is empty"),
                "check the user and password",
            ),
            (
                status(Code::PermissionDenied, "etcdserver: permission denied"),
                "grant the user read and write",
            ),
            (
                status(Code::InvalidArgument, "etcdserver: request is too large"),
                "too long for etcd's request limit",
            ),
            (
                status(
                    Code::ResourceExhausted,
                    "grpc: received message larger than max (5100160 vs. 2097152)",
                ),
                "too long for etcd's request limit",
            ),
            (
                status(Code::InvalidArgument, "etcdserver: too many operations"),
                "malformed",
            ),
            (
                status(Code::FailedPrecondition, "etcdserver: no leader"),
                "malformed",
            ),
            (
                status(Code::OutOfRange, "etcdserver: compacted"),
                "malformed",
            ),
            (
                status(Code::Unimplemented, "unknown service"),
                "etcd 3.4 or later",
            ),
            (
                Error::InvalidArgs("no endpoint".to_owned()),
                "check the endpoints",
            ),
        ] {
            let shown = err.to_string();
            let (transient, said) = classified(err);
            assert!(!transient, "{shown} was taken as transient");
            assert!(said.contains("acquiring an etcd lock: "), "{said}");
            assert!(said.contains(&shown), "{said}");
            assert!(said.contains(advice), "{shown}: {said}");
        }
    }

    #[test]
    fn what_may_pass_is_transient_and_names_the_operation() {
        for err in [
            status(Code::Unavailable, "connection refused"),
            status(Code::Unknown, "transport error"),
            status(Code::Unknown, "etcdserver: revision of auth store is old"),
            status(Code::Unauthenticated, "etcdserver: invalid auth token"),
            Error::LeaseKeepAliveError("stream closed".to_owned()),
        ] {
            let shown = err.to_string();
            let classified = classify("renewing an etcd lock", err);
            assert!(classified.is_transient(), "{shown} was taken as permanent");
            let said = classified.to_string();
            assert!(said.contains("renewing an etcd lock: "), "{said}");
            // The explanation keeps etcd's own error as its source.
            let source = classified.source().and_then(|explained| explained.source());
            assert_eq!(source.map(ToString::to_string), Some(shown));
        }
    }

    #[test]
    fn a_lease_etcd_no_longer_has_is_told_from_other_misses() {
        assert!(is_lease_gone(&status(
            Code::NotFound,
            "etcdserver: requested lease not found"
        )));
        assert!(is_lease_gone(&Error::LeaseKeepAliveError(
            "lease not found".to_owned()
        )));
        assert!(!is_lease_gone(&status(
            Code::NotFound,
            "etcdserver: key not found"
        )));
        assert!(!is_lease_gone(&status(
            Code::Unknown,
            "etcdserver: requested lease not found"
        )));
        assert!(!is_lease_gone(&Error::LeaseKeepAliveError(
            "stream closed".to_owned()
        )));
        assert!(!is_lease_gone(&Error::InvalidArgs(
            "lease not found".to_owned()
        )));
    }
}
