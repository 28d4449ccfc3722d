//! One call: a statement and its typed arguments, sent in one round trip either way —
//! as a statement prepared once per connection and kept, or, through a transaction-mode
//! pooler, as one simple query with the arguments written in as literals, so that
//! nothing is kept on a server connection the next call may not meet.
//!
//! (A statement sent unnamed still takes two round trips in sqlx, a prepare and an
//! execute, and through such a pooler the second can meet another server connection,
//! where the first is unknown.)

use std::fmt::Write as _;

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgRow, PgStatement};
use sqlx::{Execute, Executor};

use super::Shared;
use crate::driver::{DriverError, hex128};

/// An argument of a call, of the type its statement declares.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg<'a> {
    /// `text`: the namespace (never holds NUL: the builder refuses it).
    Text(&'a str),
    /// `bytea`: a lock name.
    Bytes(&'a [u8]),
    /// `uuid`, from an owner token or waiter id; `None` is NULL.
    Uuid(Option<u128>),
    /// `bigint`.
    Int(i64),
    /// `bigint`, or NULL.
    MaybeInt(Option<i64>),
    /// `smallint`.
    SmallInt(i16),
}

impl Shared {
    /// Runs `sql` with `args` and returns its one row.
    pub(super) async fn fetch_one(
        &self,
        what: &'static str,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<PgRow, DriverError> {
        let inlined = self.settings.transaction_pooler.then(|| inline(sql, args));
        let Some(own) = &self.own else {
            let query = statement(sql, inlined.as_deref(), args);
            return self.call(what, (&self.pool).fetch_one(query)).await;
        };
        let answer = self
            .call(what, async {
                let mut lent = own.lend().await?;
                let query = statement(sql, inlined.as_deref(), args);
                let row = lent.connection().fetch_one(query).await?;
                lent.keep();
                Ok(row)
            })
            .await;
        if answer.as_ref().is_err_and(DriverError::is_transient) {
            // The server went away, or the link: the idle connections likely went with
            // it, and each would cost the next calls a timeout to find out.
            own.forget_idle();
        }
        answer
    }
}

/// `sql` with `args`: `inlined`, the same with the arguments written in, as a simple
/// query if there is one, else a statement prepared once per connection.
fn statement<'q>(sql: &'q str, inlined: Option<&'q str>, args: &[Arg<'q>]) -> Statement<'q> {
    match inlined {
        Some(sql) => Statement::Simple(sqlx::raw_sql(sql)),
        None => Statement::Prepared(prepared(sql, args)),
    }
}

/// A call's statement, either way it goes out.
enum Statement<'q> {
    /// A simple query: no statement kept on the connection.
    Simple(sqlx::RawSql<'q>),
    /// A statement prepared once per connection, its arguments bound.
    Prepared(sqlx::query::Query<'q, sqlx::Postgres, PgArguments>),
}

impl<'q> Execute<'q, sqlx::Postgres> for Statement<'q> {
    fn sql(&self) -> &'q str {
        match self {
            Self::Simple(query) => Execute::<sqlx::Postgres>::sql(query),
            Self::Prepared(query) => query.sql(),
        }
    }

    /// Neither kind is built from a statement prepared beforehand: sqlx prepares (and
    /// keeps) it on the connection.
    fn statement(&self) -> Option<&PgStatement<'q>> {
        None
    }

    fn take_arguments(&mut self) -> Result<Option<PgArguments>, BoxDynError> {
        match self {
            Self::Simple(query) => Execute::<sqlx::Postgres>::take_arguments(query),
            Self::Prepared(query) => query.take_arguments(),
        }
    }

    fn persistent(&self) -> bool {
        match self {
            Self::Simple(query) => Execute::<sqlx::Postgres>::persistent(query),
            Self::Prepared(query) => query.persistent(),
        }
    }
}

/// Column `index` of `row`, decoded; a row of the wrong shape is an error that says the
/// schema is not this version's.
pub(super) fn column<'r, T>(
    shared: &Shared,
    what: &'static str,
    row: &'r PgRow,
    index: usize,
) -> Result<T, DriverError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    use sqlx::Row as _;
    row.try_get(index)
        .map_err(|err| super::error::classify(what, &shared.settings.schema, err))
}

/// `sql` as a statement prepared once per connection, with `args` bound.
fn prepared<'q>(
    sql: &'q str,
    args: &[Arg<'q>],
) -> sqlx::query::Query<'q, sqlx::Postgres, PgArguments> {
    let mut query = sqlx::query(sql).persistent(true);
    for &arg in args {
        query = match arg {
            Arg::Text(text) => query.bind(text),
            Arg::Bytes(bytes) => query.bind(bytes),
            Arg::Uuid(id) => query.bind(id.map(uuid_text)),
            Arg::Int(int) => query.bind(int),
            Arg::MaybeInt(int) => query.bind(int),
            Arg::SmallInt(int) => query.bind(int),
        };
    }
    query
}

/// `sql` with each `$n` replaced by `args[n - 1]` written as a literal, in one pass, so
/// that nothing written in is read again (a namespace holding `$2` stays as it is).
pub(super) fn inline(sql: &str, args: &[Arg<'_>]) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        let number = rest[at + 1..at + 1 + digits].parse::<usize>().ok();
        match number.and_then(|n| args.get(n.checked_sub(1)?)) {
            Some(arg) => out.push_str(&literal(*arg)),
            None => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// `arg` as an SQL literal of its type, read the same whatever the server's
/// `standard_conforming_strings`: text as an escape string (`E'…'`, its backslashes and
/// quotes doubled), bytes as hex decoded by the server, the rest as digits.
fn literal(arg: Arg<'_>) -> String {
    match arg {
        Arg::Text(text) => format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''")),
        Arg::Bytes(bytes) => {
            let mut hex = String::with_capacity(bytes.len() * 2 + 24);
            hex.push_str("decode('");
            for byte in bytes {
                let _ = write!(hex, "{byte:02x}");
            }
            hex.push_str("', 'hex')");
            hex
        }
        Arg::Uuid(Some(id)) => format!("'{}'", uuid_text(id)),
        Arg::Uuid(None) => "NULL".to_owned(),
        Arg::Int(int) | Arg::MaybeInt(Some(int)) => int.to_string(),
        Arg::MaybeInt(None) => "NULL".to_owned(),
        Arg::SmallInt(int) => format!("{int}::smallint"),
    }
}

/// An owner token or waiter id as the text Postgres reads as a `uuid`.
pub(super) fn uuid_text(value: u128) -> String {
    String::from_utf8_lossy(&hex128(value)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_written_in_as_literals_of_their_types() {
        let sql = "SELECT f($1, $2, $3::uuid, $4::uuid, $5, $6, $7, $8, $9, $10)";
        let args = [
            Arg::Text("it's $2 \\"),
            Arg::Bytes(b"\x00\xffa'"),
            Arg::Uuid(Some(0xab)),
            Arg::Uuid(None),
            Arg::Int(-3),
            Arg::SmallInt(618),
            Arg::Int(7),
            Arg::Int(8),
            Arg::MaybeInt(Some(9)),
            Arg::MaybeInt(None),
        ];
        assert_eq!(
            inline(sql, &args),
            "SELECT f(E'it''s $2 \\\\', decode('00ff6127', 'hex'), \
             '000000000000000000000000000000ab'::uuid, NULL::uuid, -3, 618::smallint, 7, 8, \
             9, NULL)"
        );
    }
}
