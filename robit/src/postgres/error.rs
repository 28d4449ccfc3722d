//! sqlx's errors as [`DriverError`]s that say what to do.

use sqlx::Error;

use crate::driver::{DriverError, Explained};

/// Classifies `err`, met while doing `what` with the tables in `schema`: transient
/// errors are retried by the Mutex, permanent ones returned with advice.
pub(super) fn classify(what: &'static str, schema: &str, err: Error) -> DriverError {
    let permanent = |advice: String, err: Error| DriverError::Rejected {
        reason: format!("{what}: {err}; {advice}"),
        source: Some(Box::new(err)),
    };
    let code = match &err {
        Error::Database(database) => database.code().map(|code| code.into_owned()),
        Error::Configuration(_) | Error::Tls(_) => {
            return permanent("check the URL and the TLS settings".to_owned(), err);
        }
        // What the TLS stack reports of a certificate it refused (an authority that did
        // not sign it, another host's name) arrives as invalid data on the socket.
        Error::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            return permanent(
                "the TLS handshake failed: check sslrootcert and that the URL's host is a \
                 name the server's certificate carries"
                    .to_owned(),
                err,
            );
        }
        Error::ColumnDecode { .. } | Error::Decode(_) | Error::ColumnNotFound(_) => {
            return permanent(
                format!(
                    "the functions in schema {schema} are not the ones this version of robit \
                     installs; run its schema file again (docs/postgres.md)"
                ),
                err,
            );
        }
        _ => None,
    };
    let Some(code) = code else {
        return DriverError::unavailable(Explained { what, source: err });
    };
    match verdict(&code, schema) {
        Verdict::Transient => DriverError::unavailable(Explained { what, source: err }),
        Verdict::ReadOnly => DriverError::unavailable(Explained {
            what: "the server is read-only (a standby?); robit needs the primary",
            source: err,
        }),
        Verdict::Permanent(advice) => permanent(advice, err),
    }
}

/// What a statement refused with a SQLSTATE `code` calls for.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// It may pass: retry.
    Transient,
    /// A standby, or a primary being demoted: retry, told why.
    ReadOnly,
    /// It will not pass by itself: the advice says what to do.
    Permanent(String),
}

/// The verdict on SQLSTATE `code`, met with the tables in `schema`.
fn verdict(code: &str, schema: &str) -> Verdict {
    let permanent = |advice: &str| Verdict::Permanent(advice.to_owned());
    match code {
        // insufficient_privilege
        "42501" => Verdict::Permanent(format!(
            "grant the role USAGE on schema {schema}, SELECT, INSERT, UPDATE and DELETE on \
             its tables and EXECUTE on its functions (docs/postgres.md)"
        )),
        // undefined_table, undefined_function, invalid_schema_name
        "42P01" | "42883" | "3F000" => Verdict::Permanent(format!(
            "robit's tables or functions are missing from schema {schema}; let the driver \
             create them (create_schema) or have an owner run the schema file in \
             docs/postgres.md"
        )),
        // invalid_password, invalid_authorization_specification
        "28P01" | "28000" => permanent("check the user and password"),
        // invalid_catalog_name: the database does not exist
        "3D000" => permanent("check the database name in the URL"),
        // protocol_violation: a pooler that refuses a startup parameter, for one
        "08P01" => permanent(
            "a pooler in between may refuse sqlx's startup parameters: build the driver with \
             transaction_pooler(true), or set pgbouncer's ignore_startup_parameters = \
             extra_float_digits",
        ),
        // read_only_sql_transaction, or object_not_in_prerequisite_state ("recovery is
        // in progress"): a standby, or a primary being demoted
        "25006" | "55000" => Verdict::ReadOnly,
        // Connection failures, shutdowns, serialization and deadlock failures, lock and
        // statement timeouts, too many connections, out of memory or disk: all may pass.
        code if code.starts_with("08")
            || code.starts_with("40")
            || code.starts_with("53")
            || code.starts_with("57")
            || code == "55P03" =>
        {
            Verdict::Transient
        }
        _ => permanent("Postgres refused the statement; see its message"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_or_an_exhausted_pool_is_transient_and_names_the_operation() {
        for err in [
            Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
            Error::PoolTimedOut,
            Error::Protocol("unexpected message".to_owned()),
        ] {
            let shown = err.to_string();
            let classified = classify("acquiring a Postgres lock", "robit", err);
            assert!(classified.is_transient(), "{shown} was taken as permanent");
            let said = classified.to_string();
            assert!(said.contains("acquiring a Postgres lock: "), "{said}");
        }
    }

    #[test]
    fn a_certificate_the_tls_stack_refused_is_permanent_and_says_what_to_check() {
        let refused = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: BadSignature",
        );
        let classified = classify("checking robit's schema", "robit", Error::Io(refused));
        assert!(!classified.is_transient());
        assert!(
            classified.to_string().contains("sslrootcert"),
            "{classified}"
        );
    }

    #[test]
    fn each_sqlstate_is_retried_or_refused_for_good_with_its_own_advice() {
        let transient = [
            ("08006", "connection_failure"),
            ("40001", "serialization_failure"),
            ("40P01", "deadlock_detected"),
            ("53300", "too_many_connections"),
            ("57014", "query_canceled: a statement timeout"),
            ("57P01", "admin_shutdown"),
            ("55P03", "lock_not_available: a lock timeout"),
        ];
        for (code, name) in transient {
            assert_eq!(verdict(code, "robit"), Verdict::Transient, "{code} {name}");
        }
        for code in ["25006", "55000"] {
            assert_eq!(verdict(code, "robit"), Verdict::ReadOnly, "{code}");
        }
        let advised = [
            ("42501", "grant the role USAGE on schema locks"),
            ("42P01", "missing from schema locks"),
            ("42883", "missing from schema locks"),
            ("3F000", "missing from schema locks"),
            ("28P01", "check the user and password"),
            ("28000", "check the user and password"),
            ("3D000", "check the database name"),
            ("08P01", "transaction_pooler(true)"),
            // Neither a lock timeout (55P03) nor read-only (55000); neither a connection
            // failure nor a protocol violation.
            ("55006", "see its message"),
            ("22P02", "see its message"),
            ("XX000", "see its message"),
        ];
        for (code, advice) in advised {
            match verdict(code, "locks") {
                Verdict::Permanent(said) => assert!(said.contains(advice), "{code}: {said}"),
                other => panic!("{code}: {other:?}, not refused for good"),
            }
        }
    }

    #[test]
    fn a_bad_url_or_a_row_of_the_wrong_shape_is_permanent_and_says_what_to_do() {
        let (err, advice) = (Error::Configuration("bad sslmode".into()), "check the URL");
        let said = classify("renewing a Postgres lock", "robit", err).to_string();
        assert!(said.contains(advice), "{said}");
        let err = Error::ColumnNotFound("status".to_owned());
        let classified = classify("acquiring a Postgres lock", "locks", err);
        assert!(!classified.is_transient());
        assert!(
            classified.to_string().contains("schema locks"),
            "{classified}"
        );
    }
}
