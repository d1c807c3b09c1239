//! Transactions that cannot hurt the server: every setting `SET LOCAL` (so nothing outlives the
//! transaction and a transaction-mode pooler sees no session state), timeouts on everything,
//! read-only work in `BEGIN READ ONLY`, and write-capable work always rolled back.

use std::time::Duration;

use super::connect::Connection;
use super::error::describe;

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

/// A server error or a broken connection inside a transaction.
#[derive(Debug, thiserror::Error)]
#[error("{context}: {message}")]
pub struct SessionError {
    pub context: String,
    pub message: String,
    /// The SQLSTATE, when the server sent one.
    pub sqlstate: Option<String>,
}

impl SessionError {
    pub fn from_pg(context: impl Into<String>, error: &tokio_postgres::Error) -> Self {
        SessionError {
            context: context.into(),
            message: describe(error),
            sqlstate: error.code().map(|c| c.code().to_owned()),
        }
    }

    /// 57014: cancelled by statement_timeout or a cancel request (Ctrl-C).
    pub fn is_cancelled(&self) -> bool {
        self.sqlstate.as_deref() == Some("57014")
    }
}

/// `'30000ms'`: a duration as a PostgreSQL setting literal.
fn ms_literal(d: Duration) -> String {
    format!("'{}ms'", d.as_millis())
}

/// `'text'` as a string literal; standard_conforming_strings is set on before it is used, so
/// only quotes need doubling.
fn string_literal(text: &str) -> String {
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

/// How a transaction begins: read-only unless `Write`.
#[derive(Debug, Clone, Copy)]
enum Begin<'a> {
    /// `READ ONLY`.
    Only,
    /// Read-write (and always rolled back).
    Write,
    /// `REPEATABLE READ READ ONLY`: every statement sees one snapshot, which
    /// `pg_export_snapshot()` can hand to another connection.
    Repeatable,
    /// `REPEATABLE READ READ ONLY` on the snapshot another transaction exported.
    Imported(&'a str),
}

impl Begin<'_> {
    fn sql(self) -> String {
        match self {
            Begin::Only => "BEGIN READ ONLY".into(),
            Begin::Write => "BEGIN".into(),
            Begin::Repeatable => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY".into(),
            // SET TRANSACTION SNAPSHOT must come before the transaction's first query; the SET
            // LOCALs after it take no snapshot, but it goes first all the same.
            Begin::Imported(snapshot) => format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT {}",
                string_literal(snapshot)
            ),
        }
    }

    fn read_only(self) -> bool {
        !matches!(self, Begin::Write)
    }
}

impl Connection {
    /// Runs `work` inside `BEGIN READ ONLY` with the limits set transaction-locally; the
    /// transaction is always rolled back (it has nothing to commit).
    pub async fn read_only<T, F>(&mut self, limits: &Limits, work: F) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        self.transaction(limits, Begin::Only, work).await
    }

    /// [`Connection::read_only`] at REPEATABLE READ: every statement of `work` sees the same
    /// snapshot, and `work` may export it (`pg_export_snapshot()`) for another connection to
    /// read the same catalog with [`Connection::read_only_imported`].
    pub async fn read_only_repeatable<T, F>(
        &mut self,
        limits: &Limits,
        work: F,
    ) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        self.transaction(limits, Begin::Repeatable, work).await
    }

    /// [`Connection::read_only`] on the snapshot another connection's transaction exported, which
    /// must still be open. `Ok(None)` when the snapshot could not be imported (the exporting
    /// transaction ended, or the server refused it) or the transaction had not begun within
    /// `begin_within` (a pooler queueing it for a server connection): `work` did not run, and
    /// the caller, which must then drop this connection, reads on its own instead.
    pub async fn read_only_imported<T, F>(
        &mut self,
        limits: &Limits,
        snapshot: &str,
        begin_within: Duration,
        work: F,
    ) -> Result<Option<T>, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        let begin = self.begin(limits, Begin::Imported(snapshot));
        match tokio::time::timeout(begin_within, begin).await {
            Ok(Ok(())) => self.run_and_roll_back(work).await.map(Some),
            Ok(Err(_)) | Err(_) => Ok(None),
        }
    }

    /// Runs `work` inside a read-write transaction that is always rolled back, whatever `work`
    /// returns. If the connection breaks, the server rolls back on its own.
    pub async fn rolled_back<T, F>(&mut self, limits: &Limits, work: F) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        self.transaction(limits, Begin::Write, work).await
    }

    async fn transaction<T, F>(
        &mut self,
        limits: &Limits,
        begin: Begin<'_>,
        work: F,
    ) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        self.begin(limits, begin).await?;
        self.run_and_roll_back(work).await
    }

    /// Begins the transaction with every setting `SET LOCAL`; on failure nothing is left open.
    async fn begin(&mut self, limits: &Limits, begin: Begin<'_>) -> Result<(), SessionError> {
        // A superuser keeps pgplan's own statements out of pg_stat_statements (its `track` is
        // superuser-only): they would otherwise fill the view a workload is read from. First,
        // so the settings after it are not counted either. Without the library loaded this
        // sets a placeholder, transaction-local like the rest.
        let untracked = if self.facts.superuser {
            " SET LOCAL pg_stat_statements.track = none;"
        } else {
            ""
        };
        let setup = format!(
            "{};{untracked} {}",
            begin.sql(),
            set_local_statements(
                limits,
                self.facts.major(),
                !begin.read_only(),
                &self.application_name,
                &self.session_settings,
            )
        );
        if let Err(e) = self.client.batch_execute(&setup).await {
            let _ = self.client.batch_execute("ROLLBACK").await;
            return Err(SessionError::from_pg("starting a transaction", &e));
        }
        Ok(())
    }

    async fn run_and_roll_back<T, F>(&mut self, work: F) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        let result = work(&self.client).await;
        let rollback = self.client.batch_execute("ROLLBACK").await;
        match (result, rollback) {
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(SessionError::from_pg("rolling back", &e)),
            (Ok(value), Ok(())) => Ok(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_imported_snapshot_is_named_first_and_quoted() {
        assert_eq!(
            Begin::Imported("00000003-0000001B-1").sql(),
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             SET TRANSACTION SNAPSHOT '00000003-0000001B-1'"
        );
        assert_eq!(
            Begin::Imported("x'; DROP TABLE t; --").sql(),
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
             SET TRANSACTION SNAPSHOT 'x''; DROP TABLE t; --'"
        );
        for begin in [Begin::Only, Begin::Repeatable, Begin::Imported("s")] {
            assert!(begin.read_only() && begin.sql().contains("READ ONLY"));
        }
        assert!(!Begin::Write.read_only());
    }

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
