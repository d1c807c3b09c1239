//! Transactions that cannot hurt the server: every setting `SET LOCAL` (so nothing outlives the
//! transaction and a transaction-mode pooler sees no session state), timeouts on everything,
//! read-only work in `BEGIN READ ONLY`, and write-capable work always rolled back.

use std::time::Duration;

use super::connect::Connection;
use super::error::describe;
use super::settings::string_literal;
pub use super::settings::{Limits, set_local_statements};

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

    /// Runs `work` inside a read-write transaction that is committed when `work` succeeds and
    /// rolled back otherwise: the one kind of transaction in which pgplan changes a server, for
    /// planner figures only (`stats import`, and putting back what a rolled-back build changed
    /// in place).
    pub async fn committed<T, F>(&mut self, limits: &Limits, work: F) -> Result<T, SessionError>
    where
        F: AsyncFnOnce(&tokio_postgres::Client) -> Result<T, SessionError>,
    {
        self.begin(limits, Begin::Write).await?;
        let result = work(&self.client).await;
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.client.batch_execute(end).await;
        let value = result?;
        ended.map_err(|e| SessionError::from_pg("committing", &e))?;
        Ok(value)
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
}
