//! The transaction-local limits and settings every pgplan transaction opens with: timeouts on
//! everything, `application_name`, the startup settings libpq would send, and on 14+ the check
//! for a vanished client. Every one is `SET LOCAL`, so none outlives the transaction.

use std::time::Duration;

/// Limits applied to every statement of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    /// If pgplan stops talking mid-transaction (stopped, hung), the server ends the session
    /// after this long instead of holding locks and the xmin horizon indefinitely.
    pub idle_in_transaction_timeout: Duration,
}

impl Limits {
    /// Defaults for catalog reads and audits: short, since they only read.
    pub fn read_only_defaults() -> Self {
        Self {
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(5),
            idle_in_transaction_timeout: Duration::from_secs(60),
        }
    }

    /// Defaults for measured comparisons: a query run under EXPLAIN ANALYZE may take a while, a
    /// lock must not be waited for (waiting in the lock queue would block every writer behind).
    pub fn compare_defaults() -> Self {
        Self {
            statement_timeout: Duration::from_secs(300),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(60),
        }
    }

    pub fn with(
        mut self,
        statement_timeout: Option<Duration>,
        lock_timeout: Option<Duration>,
    ) -> Self {
        if let Some(t) = statement_timeout {
            self.statement_timeout = t;
        }
        if let Some(t) = lock_timeout {
            self.lock_timeout = t;
        }
        self
    }
}

/// `'30000ms'`: a duration as a PostgreSQL setting literal.
fn ms_literal(d: Duration) -> String {
    format!("'{}ms'", d.as_millis())
}

/// `'text'` as a string literal; standard_conforming_strings is set on before it is used, so
/// only quotes need doubling.
pub(super) fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The `SET LOCAL` statements every transaction starts with. `application_name` is the
/// connection's own (the user's, else pgplan's default), set again so it shows through a
/// transaction-mode pooler. `session_settings` are the ones libpq sends as startup parameters
/// (PGDATESTYLE, PGTZ, PGGEQO: `datestyle`, `timezone`, `geqo`); tokio-postgres can send no
/// startup parameter of its own choosing, and as `options=-c ...` PgBouncer refuses the
/// connection, so they are set in each transaction instead.
pub fn set_local_statements(
    limits: &Limits,
    major: u32,
    write_capable: bool,
    application_name: &str,
    session_settings: &[(&str, String)],
) -> String {
    let mut sql = format!(
        "SET LOCAL statement_timeout = {}; \
         SET LOCAL lock_timeout = {}; \
         SET LOCAL idle_in_transaction_session_timeout = {}; \
         SET LOCAL standard_conforming_strings = on; \
         SET LOCAL application_name = {};",
        ms_literal(limits.statement_timeout),
        ms_literal(limits.lock_timeout),
        ms_literal(limits.idle_in_transaction_timeout),
        string_literal(application_name),
    );
    for (name, value) in session_settings {
        // Names come from a fixed list (conninfo's STARTUP_SETTING_VARS); values are literals.
        sql.push_str(&format!(" SET LOCAL {name} = {};", string_literal(value)));
    }
    // PostgreSQL 14+: notice a vanished client while a long statement (an index build) runs,
    // and abort it then, rather than when the statement ends.
    if write_capable && major >= 14 {
        sql.push_str(" SET LOCAL client_connection_check_interval = '1s';");
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_transaction_local() {
        let sql = set_local_statements(&Limits::compare_defaults(), 16, true, "pgplan", &[]);
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            assert!(statement.starts_with("SET LOCAL "), "{statement}");
        }
        assert!(sql.contains("statement_timeout = '300000ms'"));
        assert!(sql.contains("client_connection_check_interval"));
        assert!(sql.contains("application_name = 'pgplan'"));
        assert!(
            set_local_statements(&Limits::compare_defaults(), 16, true, "it's mine", &[])
                .contains("application_name = 'it''s mine'")
        );
        assert!(
            !set_local_statements(&Limits::compare_defaults(), 13, true, "pgplan", &[])
                .contains("client_connection_check_interval")
        );
        assert!(
            !set_local_statements(&Limits::read_only_defaults(), 16, false, "pgplan", &[])
                .contains("client_connection_check_interval")
        );
    }

    #[test]
    fn startup_settings_are_set_locally_and_quoted() {
        let settings = [
            ("timezone", "Asia/Kolkata".to_owned()),
            ("datestyle", "ISO, DMY".to_owned()),
            ("geqo", "it's".to_owned()),
        ];
        let sql = set_local_statements(&Limits::read_only_defaults(), 16, false, "p", &settings);
        assert!(
            sql.contains("SET LOCAL timezone = 'Asia/Kolkata';"),
            "{sql}"
        );
        assert!(sql.contains("SET LOCAL datestyle = 'ISO, DMY';"), "{sql}");
        assert!(sql.contains("SET LOCAL geqo = 'it''s';"), "{sql}");
    }
}
