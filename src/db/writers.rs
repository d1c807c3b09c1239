//! The writer watch: a second connection that looks for sessions waiting on a lock pgplan's
//! worker holds, so the worker can give the lock up before a writer has waited too long.
//!
//! It matches by the backend pid the worker reported inside its own transaction: through a
//! transaction-mode pooler the watcher and the worker land on different server connections,
//! and the worker's pid is only known while its transaction runs. Each poll is a short
//! `BEGIN READ ONLY` transaction reading `pg_stat_activity`, `pg_locks` and
//! `pg_blocking_pids`, which take no heavyweight lock on any user table.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio_postgres::Client;

use super::connect::Connection;
use super::session::{Limits, SessionError};
use crate::compare::writers::{WriterWait, must_yield, poll_interval};

const WRITER_WAITS_SQL: &str = include_str!("../../queries/writer_waits.sql");

/// The backend pid of the connection's current server session. Called inside the transaction
/// the watch covers: through a transaction-mode pooler another transaction may run elsewhere.
pub async fn backend_pid(client: &Client) -> Result<i32, SessionError> {
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(|e| SessionError::from_pg("reading the worker's backend pid", &e))?;
    Ok(row.get(0))
}

/// A connection kept to watch for writers, with the wait it allows them.
pub struct WriterWatch {
    conn: Connection,
    max_wait: Duration,
    limits: Limits,
}

impl WriterWatch {
    pub fn new(conn: Connection, max_wait: Duration) -> Self {
        Self {
            conn,
            max_wait,
            // Each poll is one quick catalog read: it must never wait itself.
            limits: Limits {
                statement_timeout: Duration::from_secs(10),
                lock_timeout: Duration::from_secs(1),
                idle_in_transaction_timeout: Duration::from_secs(10),
            },
        }
    }

    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// The sessions waiting on a lock `worker_pid` holds (or is queued ahead of), longest first.
    pub async fn waits(&mut self, worker_pid: i32) -> Result<Vec<WriterWait>, SessionError> {
        self.conn
            .read_only(&self.limits, async |client| {
                let rows = client
                    .query(WRITER_WAITS_SQL, &[&worker_pid])
                    .await
                    .map_err(|e| SessionError::from_pg("looking for waiting writers", &e))?;
                Ok(rows
                    .iter()
                    .map(|row| WriterWait {
                        pid: row.get("pid"),
                        waited_ms: row.get::<_, Option<f64>>("waited_ms").unwrap_or(0.0),
                        relation: row.get("relation"),
                    })
                    .collect())
            })
            .await
    }

    /// Runs `work` while polling for a session that has waited the allowed time on
    /// `worker_pid`: [`Watched::Done`] when `work` ends first, [`Watched::Yield`] with that
    /// session (or the watch's own error) otherwise, `work` then left for the caller to finish.
    ///
    /// A poll that has started is always run to its end, even when `work` ends meanwhile:
    /// dropping it between its `BEGIN READ ONLY` and `ROLLBACK` would leave the watch's
    /// session idle in a transaction, holding its catalog locks until the process exits.
    pub async fn watch<F: Future>(
        &mut self,
        worker_pid: i32,
        mut work: Pin<&mut F>,
    ) -> Watched<F::Output> {
        let max_wait = self.max_wait;
        let every = poll_interval(max_wait);
        loop {
            let poll = self.waits(worker_pid);
            tokio::pin!(poll);
            let mut done = None;
            let waits = loop {
                tokio::select! {
                    waits = &mut poll => break waits,
                    output = &mut work, if done.is_none() => done = Some(output),
                }
            };
            if let Some(output) = done {
                return Watched::Done(output);
            }
            match waits {
                Err(e) => return Watched::Yield(Err(e)),
                Ok(waits) => {
                    if let Some(wait) = must_yield(&waits, max_wait) {
                        return Watched::Yield(Ok(wait.clone()));
                    }
                }
            }
            tokio::select! {
                output = &mut work => return Watched::Done(output),
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}

/// How a watched piece of work ended: on its own, or with a writer to yield to.
pub enum Watched<T> {
    Done(T),
    Yield(Result<WriterWait, SessionError>),
}

const BUILD_TABLE_SIZE_SQL: &str = include_str!("../../queries/build_table_size.sql");

/// The size in bytes and the row estimate of the table a candidate is built on.
pub async fn build_table_size(client: &Client, table: &str) -> Result<(u64, f64), SessionError> {
    let row = client
        .query_one(BUILD_TABLE_SIZE_SQL, &[&table])
        .await
        .map_err(|e| SessionError::from_pg(format!("reading the size of {table}"), &e))?;
    let bytes: i64 = row.get("table_bytes");
    Ok((bytes.max(0) as u64, row.get("tuples")))
}
