//! The driver's SQL: the schema file, and one statement per operation, each written for
//! the driver's schema once, when it is built.

/// The schema, tables and functions (see `schema.sql`), with `__SCHEMA__` still in it.
const SCHEMA_SQL: &str = include_str!("schema.sql");

/// The functions' signatures, for the check that they are installed; the last one the
/// schema file creates comes first.
const FUNCTIONS: [&str; 9] = [
    "withdraw_v1(text,bytea,uuid)",
    "force_release_v1(text,bytea,uuid)",
    "release_v1(text,bytea,uuid,bigint)",
    "renew_v1(text,bytea,uuid,bigint,bigint)",
    "acquire_v1(text,bytea,smallint,uuid,bigint,bigint,uuid,bigint,bigint,bigint)",
    "wake_v1(text,bytea)",
    "queue_v1(text,bytea,uuid,bigint,timestamptz)",
    "quarantine_v1(text,bigint,timestamptz)",
    "server_v1()",
];

/// The tables, for the privilege check.
const TABLES: [&str; 4] = ["locks", "fences", "waiters", "namespaces"];

/// Every statement the driver sends, written for one schema.
#[derive(Debug)]
pub(super) struct Statements {
    /// The schema file, to create what is missing.
    pub(super) create: String,
    /// Whether the schema file has run: its last function exists (read from the
    /// catalog, which a role without privileges on the schema may read too).
    pub(super) installed: String,
    /// What the role lacks of what the driver needs, as a list of privileges.
    pub(super) missing: String,
    /// `$1` namespace, `$2` name, `$3` bucket, `$4` owner, `$5` TTL ms, `$6` lock-delay
    /// ms, `$7` waiter (or NULL), `$8` the waiter's poll interval ms, `$9` the
    /// quarantine ms (NULL: no failover detection), `$10` the longest wait for a row
    /// lock, ms: status, fence, left ms.
    pub(super) acquire: String,
    /// `$1` namespace, `$2` name, `$3` owner, `$4` fence, `$5` TTL ms: whether renewed.
    pub(super) renew: String,
    /// `$1` namespace, `$2` name, `$3` owner, `$4` fence.
    pub(super) release: String,
    /// `$1` namespace, `$2` name, `$3` waiter.
    pub(super) withdraw: String,
    /// `$1` namespace, `$2` name, `$3` holder: whether it freed anything.
    pub(super) force_release: String,
    /// `$1` namespace, `$2` name: the holder, its fence, ms left of its lease and of its
    /// lock-delay, and how many live waiters.
    pub(super) inspect: String,
    /// `$1` namespace, `$2` name, `$3` fence, `$4` ms: a row, share-locked, if that
    /// grant is still live; the session then ends if it idles in its transaction for
    /// `$4` ms.
    pub(super) guard: String,
}

impl Statements {
    /// The schema file for `schema`, as an owner runs it.
    pub(super) fn schema_sql(schema: &str) -> String {
        SCHEMA_SQL.replace("__SCHEMA__", schema)
    }

    pub(super) fn new(schema: &str) -> Self {
        let s = schema;
        Self {
            create: format!(
                "SELECT pg_advisory_xact_lock(hashtext('robit schema'));\n{}",
                SCHEMA_SQL.replace("__SCHEMA__", s)
            ),
            installed: format!(
                "SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = \
                 p.pronamespace WHERE n.nspname = '{s}' AND p.proname = '{}')",
                FUNCTIONS[0].split('(').next().unwrap_or_default()
            ),
            missing: missing_privileges(s),
            acquire: format!(
                "SELECT status, fence, left_ms FROM {s}.acquire_v1($1, $2, $3, $4::uuid, $5, \
                 $6, $7::uuid, $8, $9, $10)"
            ),
            renew: format!("SELECT {s}.renew_v1($1, $2, $3::uuid, $4, $5)"),
            release: format!("SELECT {s}.release_v1($1, $2, $3::uuid, $4)"),
            withdraw: format!("SELECT {s}.withdraw_v1($1, $2, $3::uuid)"),
            force_release: format!("SELECT {s}.force_release_v1($1, $2, $3::uuid)"),
            inspect: format!(
                "SELECT replace(l.owner::text, '-', ''), l.fence, \
                 ceil(extract(epoch FROM l.expires_at - c.now) * 1000)::bigint, \
                 ceil(extract(epoch FROM l.expires_at + l.lock_delay - c.now) * 1000)::bigint, \
                 (SELECT count(*) FROM {s}.waiters w WHERE w.namespace = $1 AND w.name = $2 \
                  AND w.live_until > c.now) \
                 FROM (SELECT clock_timestamp() AS now) c \
                 LEFT JOIN {s}.locks l ON l.namespace = $1 AND l.name = $2"
            ),
            guard: format!(
                "SELECT set_config('idle_in_transaction_session_timeout', $4, true) FROM \
                 {s}.locks WHERE namespace = $1 AND name = $2 AND fence = $3 AND expires_at > \
                 clock_timestamp() FOR SHARE"
            ),
        }
    }
}

/// A query whose one row is the privileges the role lacks (empty when none),
/// and whether the server is a standby. Tables and functions are found by their oids in
/// the catalog, which a role without USAGE on the schema may read.
fn missing_privileges(schema: &str) -> String {
    let mut checks = vec![format!(
        "CASE WHEN NOT has_schema_privilege('{schema}', 'USAGE') THEN 'USAGE on schema \
         {schema}' END"
    )];
    for table in TABLES {
        let oid = format!(
            "(SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = '{schema}' AND c.relname = '{table}')"
        );
        for privilege in ["SELECT", "INSERT", "UPDATE", "DELETE"] {
            checks.push(format!(
                "CASE WHEN NOT has_table_privilege({oid}, '{privilege}') THEN \
                 '{privilege} on {schema}.{table}' END"
            ));
        }
    }
    for function in FUNCTIONS {
        let name = function.split('(').next().unwrap_or_default();
        checks.push(format!(
            "CASE WHEN NOT has_function_privilege((SELECT p.oid FROM pg_proc p JOIN \
             pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '{schema}' AND \
             p.proname = '{name}'), 'EXECUTE') THEN 'EXECUTE on {schema}.{function}' END"
        ));
    }
    // The server's identity, for failover detection: callable by PUBLIC unless revoked.
    for builtin in [
        "pg_control_system()",
        "pg_current_wal_lsn()",
        "pg_walfile_name(pg_lsn)",
    ] {
        checks.push(format!(
            "CASE WHEN NOT has_function_privilege('{builtin}', 'EXECUTE') THEN 'EXECUTE \
             on {builtin}' END"
        ));
    }
    format!(
        "SELECT array_to_string(ARRAY[{}]::text[], ', '), pg_is_in_recovery()",
        checks.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_names_the_schema_and_no_placeholder_is_left() {
        let statements = Statements::new("locks_2");
        assert!(!statements.create.contains("__SCHEMA__"));
        assert!(
            statements
                .create
                .contains("CREATE TABLE IF NOT EXISTS locks_2.locks")
        );
        for statement in [
            &statements.installed,
            &statements.missing,
            &statements.acquire,
            &statements.renew,
            &statements.release,
            &statements.withdraw,
            &statements.force_release,
            &statements.inspect,
            &statements.guard,
        ] {
            assert!(statement.contains("locks_2"), "{statement}");
            assert!(!statement.contains("robit"), "{statement}");
        }
    }

    #[test]
    fn the_installed_check_looks_for_the_last_function_the_schema_file_creates() {
        let create = SCHEMA_SQL;
        let last = create
            .rfind("CREATE OR REPLACE FUNCTION __SCHEMA__.")
            .expect("a function");
        let name = FUNCTIONS[0].split('(').next().unwrap();
        assert!(
            create[last..].contains(name),
            "{name} is not the last function"
        );
        for function in FUNCTIONS {
            let name = function.split('(').next().unwrap();
            assert!(
                create.contains(&format!("FUNCTION __SCHEMA__.{name}(")),
                "{name} is not in the schema file"
            );
        }
    }
}
