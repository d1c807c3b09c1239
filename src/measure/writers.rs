//! Measuring without stalling writers: races a candidate's transaction against the writer watch,
//! cancels the worker's statement when a writer has waited `--max-writer-wait` (the caller's
//! ROLLBACK then releases the lock at once), and says what a build will cost before it starts.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use tokio_postgres::Client;

use crate::compare::writers::{
    self as writer_policy, BuildCost, WriterPolicy, WriterWait, build_cost, human_bytes,
    refuse_build,
};
use crate::db::connect::{CancelHandle, Connection};
use crate::db::session::{Limits, SessionError};
use crate::db::writers::{Watched, WriterWatch, backend_pid, build_table_size};

/// How often a yielding worker's statement is cancelled again while it has not returned: a
/// cancel request that arrived between two statements cancels nothing.
const CANCEL_AGAIN_EVERY: Duration = Duration::from_millis(50);

/// The writer policy of one command, with the watch connection when writers are watched.
pub struct Writers {
    pub policy: WriterPolicy,
    watch: Option<WriterWatch>,
    /// Cancels the worker connection's running statement.
    cancel: CancelHandle,
    /// The yield of the transaction that just ended, taken by the caller.
    last_yield: Option<WriterWait>,
    /// Bytes of table read per millisecond of build, from the last candidate built.
    rate_bytes_per_ms: Option<f64>,
    /// What a workload's builds cost and each yield, for the report's notes.
    notes: Vec<String>,
}

impl Writers {
    /// `watch_conn`: a second connection to the same server (or pooler), when
    /// `policy.max_writer_wait` is set.
    pub fn new(policy: WriterPolicy, worker: &Connection, watch_conn: Option<Connection>) -> Self {
        let watch = match (policy.max_writer_wait, watch_conn) {
            (Some(max_wait), Some(conn)) => Some(WriterWatch::new(conn, max_wait)),
            _ => None,
        };
        Self {
            policy,
            watch,
            cancel: worker.cancel_handle(),
            last_yield: None,
            rate_bytes_per_ms: None,
            notes: Vec::new(),
        }
    }

    /// The notes [`rolled_back_yielding`] and [`Writers::note_build`] gathered, for the report.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Before building `what` on `table`: its cost noted, or why it is not built.
    pub async fn note_build(
        &mut self,
        conn: &mut Connection,
        limits: &Limits,
        what: &str,
        table: &str,
    ) -> Result<BuildCost, String> {
        let cost = self.before_build(conn, limits, table).await?;
        self.notes.push(cost_note(what, table, &cost));
        Ok(cost)
    }

    /// The writer pgplan yielded to in the transaction that just ended, if it did.
    pub fn take_yield(&mut self) -> Option<WriterWait> {
        self.last_yield.take()
    }

    /// Runs `work` (a transaction's setup and runs, on `client`) while the watch looks for
    /// writers waiting on the worker's backend; when one has waited too long, cancels the
    /// worker's statement until `work` returns, and records the yield.
    pub async fn guard<T>(
        &mut self,
        client: &Client,
        work: impl Future<Output = Result<T, SessionError>>,
    ) -> Result<T, SessionError> {
        let Some(watch) = self.watch.as_mut() else {
            return work.await;
        };
        // Inside the worker's transaction: through a transaction-mode pooler this is the server
        // connection the transaction holds until it ends.
        let pid = backend_pid(client).await?;
        tokio::pin!(work);
        let watched = match watch.watch(pid, work.as_mut()).await {
            Watched::Done(result) => return result,
            Watched::Yield(wait) => wait,
        };
        self.cancel.cancel().await;
        let result = loop {
            tokio::select! {
                result = &mut work => break result,
                _ = tokio::time::sleep(CANCEL_AGAIN_EVERY) => self.cancel.cancel().await,
            }
        };
        match watched {
            Ok(wait) => {
                self.last_yield = Some(wait);
                result
            }
            // Without a watch the worker must not hold its lock on: it was cancelled all the same.
            Err(e) => Err(SessionError {
                context: "watching for waiting writers".into(),
                message: format!("{e}; the candidate's transaction was cancelled and rolled back"),
                sqlstate: e.sqlstate,
            }),
        }
    }

    /// Before building on `table`: what it will cost, or why it is not built.
    pub async fn before_build(
        &self,
        conn: &mut Connection,
        limits: &Limits,
        table: &str,
    ) -> Result<BuildCost, String> {
        let (table_bytes, tuples) = conn
            .read_only(limits, async |client| build_table_size(client, table).await)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(refusal) = refuse_build(table, table_bytes, self.policy.max_build_bytes) {
            return Err(refusal);
        }
        // The key's width is not known before the build: the estimate is the smallest entry.
        Ok(build_cost(
            table_bytes,
            Some(tuples),
            Some(1.0),
            self.rate_bytes_per_ms,
        ))
    }

    /// After a build of `table_bytes` took `build_ms`: the rate the next estimate uses.
    pub fn measured_build(&mut self, table_bytes: u64, build_ms: f64) {
        if build_ms > 0.0 && table_bytes > 0 {
            self.rate_bytes_per_ms = Some(table_bytes as f64 / build_ms);
        }
    }
}

/// The note that says what a build costs the server.
pub fn cost_note(what: &str, table: &str, cost: &BuildCost) -> String {
    let index = cost
        .index_bytes_estimate
        // Not a bound either way: a wider key makes it larger, and B-tree deduplication (13+)
        // of a column with few distinct values can make it half as large.
        .map(|b| {
            format!(
                ", an index of about {} (a 1-byte B-tree key, before deduplication)",
                human_bytes(b)
            )
        })
        .unwrap_or_default();
    let time = cost
        .expected_build_ms
        .map(|ms| format!(", about {:.0} ms at the rate of the last build", ms))
        .unwrap_or_default();
    format!(
        "{what}: the build reads {} pages ({}) of {table}{index}{time}",
        cost.pages_to_read,
        human_bytes(cost.table_bytes)
    )
}

/// Runs `work` in a rolled-back transaction watched for waiting writers (unwatched without
/// `writers`); each time it yielded to one, pauses and runs it again in a new transaction, up
/// to [`writer_policy::ATTEMPTS`] times, and then fails as "not measured (yielded N times to
/// writers)", never with a partial result. `say` shows the pause on the progress line; each
/// yield is one of `writers`' notes.
pub async fn rolled_back_yielding<T, F>(
    conn: &mut Connection,
    limits: &Limits,
    writers: Option<&mut Writers>,
    what: &str,
    say: &dyn Fn(&str),
    mut work: F,
) -> Result<T, SessionError>
where
    F: AsyncFnMut(&Client) -> Result<T, SessionError>,
{
    let Some(writers) = writers else {
        return conn
            .rolled_back(limits, async |client| work(client).await)
            .await;
    };
    let mut yields = Vec::new();
    loop {
        let attempt = yields.len() as u32 + 1;
        let Some(pause) = writer_policy::pause_before(attempt) else {
            return Err(SessionError {
                context: what.to_owned(),
                message: writer_policy::not_measured(&yields),
                sqlstate: None,
            });
        };
        if !pause.is_zero() {
            say(&format!(
                "{what}: yielded to writers, trying again in {:.0} s",
                pause.as_secs_f64()
            ));
            tokio::time::sleep(pause).await;
        }
        let result = conn
            .rolled_back(limits, async |client| {
                writers.guard(client, work(client)).await
            })
            .await;
        match (result, writers.take_yield()) {
            (Ok(value), _) => return Ok(value),
            (Err(e), Some(wait)) => {
                writers.notes.push(format!(
                    "{what}: yielded to a writer (try {attempt} of {}): {}; the lock was \
                     released by rolling back",
                    writer_policy::ATTEMPTS,
                    wait.describe()
                ));
                if crate::db::cancel::stop_requested() || conn.is_closed() {
                    return Err(e);
                }
                yields.push(wait);
            }
            (Err(e), None) => return Err(e),
        }
    }
}
