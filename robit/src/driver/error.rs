//! The error a driver reports, and the boxed backend error it may carry.

use std::time::Duration;

use crate::millis::Millis;

/// A boxed error from a backend library, kept as the `source` of a [`DriverError`].
///
/// # Example
///
/// ```
/// use robit::BoxError;
/// use robit::driver::DriverError;
///
/// let source: BoxError = "connection reset by peer".into();
/// let err = DriverError::unavailable(source);
/// assert!(std::error::Error::source(&err).is_some());
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A backend operation failed. Returned by [`Driver`](crate::Driver) and
/// [`Lease`](crate::driver::Lease) implementations.
///
/// The distinction that matters to the [`Mutex`](crate::Mutex) is whether retrying can
/// help ([`DriverError::is_transient`]): a waiting `lock()` retries transient errors until
/// its wait ends, and gives up at once on the others; the watchdog retries every renew
/// failure until the validity deadline, because giving up early only loses the lease
/// sooner.
///
/// # Example
///
/// ```
/// use robit::driver::DriverError;
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let err = DriverError::unavailable(refused);
/// assert!(err.is_transient());
/// assert!(!DriverError::rejected("WRONGPASS invalid username-password pair").is_transient());
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The backend could not be reached or dropped the connection. Transient.
    #[error("lock backend unavailable ({source}); the operation is retried while time allows")]
    Unavailable {
        /// What the backend library reported.
        #[source]
        source: BoxError,
    },
    /// The backend did not answer in time. Transient.
    #[error("lock backend did not answer within {}; check its load and the network", Millis(*.0))]
    Timeout(Duration),
    /// The backend refused the request and will keep refusing it: bad credentials, a key
    /// of the wrong type, a script error. Retrying does not help; fix the backend or its
    /// configuration.
    #[error("lock backend rejected the request: {reason}")]
    Rejected {
        /// The backend's explanation.
        reason: String,
        /// The backend library's error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
}

impl DriverError {
    /// A transient connection failure.
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        Self::Unavailable {
            source: source.into(),
        }
    }

    /// A permanent refusal with the backend's explanation.
    pub fn rejected(reason: impl Into<String>) -> Self {
        Self::Rejected {
            reason: reason.into(),
            source: None,
        }
    }

    /// A copy for another caller the same failure reached (the callers of one batch):
    /// the same kind and words; a source, which cannot be copied, as its words.
    #[cfg(feature = "redis")]
    pub(crate) fn share(&self) -> Self {
        match self {
            Self::Unavailable { source } => Self::unavailable(source.to_string()),
            Self::Timeout(limit) => Self::Timeout(*limit),
            Self::Rejected { reason, source } => Self::Rejected {
                reason: reason.clone(),
                source: source.as_ref().map(|source| source.to_string().into()),
            },
        }
    }

    /// Whether retrying the same request later can succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Timeout(_))
    }
}

/// A backend library's error with robit's words in front, saying what failed (the
/// drivers' transient errors); the library's error stays its source.
#[cfg(any(feature = "redis", feature = "etcd", feature = "postgres"))]
#[derive(Debug)]
pub(crate) struct Explained<E> {
    /// What robit was doing.
    pub(crate) what: &'static str,
    /// What the library said.
    pub(crate) source: E,
}

#[cfg(any(feature = "redis", feature = "etcd", feature = "postgres"))]
impl<E: std::fmt::Display> std::fmt::Display for Explained<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

#[cfg(any(feature = "redis", feature = "etcd", feature = "postgres"))]
impl<E: std::error::Error + 'static> std::error::Error for Explained<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
