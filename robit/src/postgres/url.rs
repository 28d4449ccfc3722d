//! The server's URL: parsed with a clear error for what cannot work, and printed with
//! its password hidden.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

use super::config::PostgresConfigError;

/// `url` parsed, with a clear error for what cannot work.
pub(super) fn connect_options(url: &str) -> Result<PgConnectOptions, PostgresConfigError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(PostgresConfigError::InvalidUrl {
            url: hide_password(url),
            reason: "the scheme must be postgres:// or postgresql://".to_owned(),
        });
    }
    let options =
        PgConnectOptions::from_str(url).map_err(|err| PostgresConfigError::InvalidUrl {
            url: hide_password(url),
            reason: err.to_string(),
        })?;
    if !cfg!(feature = "postgres-tls")
        && let Some(mode) = required_tls(url)
    {
        return Err(PostgresConfigError::TlsNotCompiled { mode });
    }
    Ok(options)
}

/// The URL's `sslmode` when it insists on TLS.
fn required_tls(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let mode = pair
            .strip_prefix("sslmode=")
            .or_else(|| pair.strip_prefix("ssl-mode="))?;
        matches!(
            mode.to_ascii_lowercase().as_str(),
            "require" | "verify-ca" | "verify-full" | "verify_ca" | "verify_full"
        )
        .then(|| mode.to_owned())
    })
}

/// `url` with the password, if any, replaced: in the authority, and as a `password`
/// option. The credentials end at the last `@` (a password may hold `/`, `?` or `@`
/// unencoded, and the URL is then refused: its message must not show it); where that
/// guess is wrong, more is hidden, never less.
pub(super) fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.rfind('@') {
        Some(at) if rest[..at].contains(':') => {
            let user = &rest[..rest.find(':').unwrap_or(at)];
            let after = &rest[at + 1..];
            let end = after.find(['/', '?']).unwrap_or(after.len());
            (format!("{user}:<hidden>@{}", &after[..end]), &after[end..])
        }
        _ => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            (rest[..end].to_owned(), &rest[end..])
        }
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<&str> = query
                .split('&')
                .map(|pair| {
                    if pair.starts_with("password=") {
                        "password=<hidden>"
                    } else {
                        pair
                    }
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_mode_that_insists_on_tls_is_taken_as_requiring_it() {
        assert_eq!(
            required_tls("postgres://h/db?sslmode=require"),
            Some("require".into())
        );
        assert_eq!(
            required_tls("postgres://h/db?application_name=a&ssl-mode=VERIFY_FULL"),
            Some("VERIFY_FULL".into())
        );
        assert_eq!(
            required_tls("postgres://h/db?sslmode=verify-ca"),
            Some("verify-ca".into())
        );
        for url in [
            "postgres://h/db",
            "postgres://h/db?sslmode=prefer",
            "postgres://h/db?sslmode=disable",
            "postgres://h/db?xsslmode=require",
        ] {
            assert_eq!(required_tls(url), None, "{url}");
        }
    }
}
