//! What every command that plans or runs a user's query does before and while doing it, so no
//! effect escapes the rollback: the functions the query calls are judged from its text before
//! anything plans it ([`check_text`]) and from its estimate-only plan before it runs
//! ([`check_calls`]), through the bodies of the user's own functions and the functions of the
//! triggers its writes fire, and the measured runs
//! happen in a read-only transaction unless writes were allowed ([`read_only_from_here`]). Call
//! them inside the transaction that plans or runs the query. Around the runs, [`LastingWatch`]
//! reads what no rollback undoes (slots, prepared transactions, advisory locks, sequences, rows a
//! trigger committed elsewhere) and names what appeared.

use tokio_postgres::Client;

use crate::db::explain::{explain, explain_sql, run};
use crate::db::session::SessionError;
use crate::effects::{Call, FiredTrigger, Run, Verdict, calls_in_plan, calls_in_text, judge_run};

/// The flag that accepts functions whose effects outlive the rollback.
pub const ACCEPT_FLAG: &str = "--allow-lasting-effects";

/// The context of a refusal's error, so a caller can show it as it is.
pub const CHECK_CONTEXT: &str = "checking the query";

/// SQLSTATE 25006, read_only_sql_transaction.
const READ_ONLY_SQL_TRANSACTION: &str = "25006";

/// Judges the functions `text` (the user's query as written) calls, and what the bodies of the
/// user's functions among them call in turn, before anything plans it: the planner runs an
/// IMMUTABLE (or STABLE) function's call on constants while it plans, whatever the function
/// does, and the call is gone from the plan [`check_calls`] reads. For a statement that is only
/// planned (estimate-only modes): only what planning runs is judged, in a read-only sense (a
/// statement that runs is judged by [`check_calls`], which reads its text first too). Refuses
/// unless `accept`; returns the notes for the report.
pub async fn check_text(
    client: &Client,
    text: &str,
    accept: bool,
) -> Result<Vec<String>, SessionError> {
    let verdict = judge(client, &calls_in_text(text), false, Run::PlansOnly).await?;
    notes_of(&verdict, accept)
}

/// Judges the functions `statement` (the query, or the `EXECUTE` of its prepared statement)
/// calls, for a statement that runs: first those its `text` names ([`check_text`], before
/// anything plans it), then those of its estimate-only `EXPLAIN (VERBOSE)` plan, which also
/// shows what views and rules call (planning runs nothing volatile, and every built-in the
/// refusal covers is volatile), with the functions the user's functions among them call, from
/// `pg_proc`; with `writable`, also the functions of the user triggers on the tables the query
/// writes, which fire inside the run. Refuses (an error naming each function and what it does,
/// and the trigger that runs it) unless `accept`;
/// returns the notes for the report: volatile functions, what could not be seen, and accepted
/// lasting effects. A query that cannot be planned is judged by its text alone.
pub async fn check_calls(
    client: &Client,
    statement: &str,
    text: &str,
    accept: bool,
    writable: bool,
) -> Result<Vec<String>, SessionError> {
    let text_calls = calls_in_text(text);
    let verdict = judge(client, &text_calls, writable, Run::Executes).await?;
    if !verdict.lasting.is_empty() && !accept {
        // Refused before anything plans it.
        return notes_of(&verdict, accept);
    }
    let context = "reading the query's plan to see which functions it calls";
    run(client, "SAVEPOINT pgplan_check", "setting a savepoint").await?;
    let Ok(raw) = explain(client, &explain_sql(statement, false), context).await else {
        // A query that cannot be planned runs nothing; the caller's first run of it fails the
        // same way and reports the error where the user expects it.
        run(client, "ROLLBACK TO SAVEPOINT pgplan_check", "rolling back").await?;
        return notes_of(&verdict, accept);
    };
    run(
        client,
        "RELEASE SAVEPOINT pgplan_check",
        "releasing a savepoint",
    )
    .await?;
    let mut calls = calls_in_plan(&raw).map_err(|e| SessionError {
        context: context.into(),
        message: e.to_string(),
        sqlstate: None,
    })?;
    calls.extend(text_calls);
    // A write fires the triggers of the table it writes inside the measured run: their
    // functions are judged as if the query called them (one that calls dblink_exec commits on
    // another connection, whatever the rollback does).
    let fired = if writable {
        fired_triggers(client, text).await?
    } else {
        Vec::new()
    };
    let called = calls.clone();
    calls.extend(fired.iter().map(|t| t.function.clone()));
    calls.sort();
    calls.dedup();
    let mut verdict = judge(client, &calls, writable, Run::Executes).await?;
    verdict.name_triggers(&fired, &called);
    notes_of(&verdict, accept)
}

/// The user triggers that the writes of `text` (the query as written) fire.
async fn fired_triggers(client: &Client, text: &str) -> Result<Vec<FiredTrigger>, SessionError> {
    let tables = crate::lasting_rows::written_tables(text);
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    crate::db::effects::trigger_functions(client, &tables).await
}

/// The verdict on the functions `text` calls, and on what the user's functions among them call
/// ([`check_text`] without its decision, for a caller that sets a refused query aside).
pub async fn text_verdict(
    client: &Client,
    text: &str,
    writable: bool,
    run: Run,
) -> Result<Verdict, SessionError> {
    judge(client, &calls_in_text(text), writable, run).await
}

/// The verdict on `calls`, from the `pg_proc` rows of their names and of every function the
/// user's functions among them call.
async fn judge(
    client: &Client,
    calls: &[Call],
    writable: bool,
    run: Run,
) -> Result<Verdict, SessionError> {
    let mut names: Vec<String> = calls.iter().map(|c| c.name.clone()).collect();
    names.sort();
    names.dedup();
    let rows = if names.is_empty() {
        Vec::new()
    } else {
        crate::db::effects::functions_reached(client, &names).await?
    };
    Ok(judge_run(calls, &rows, writable, run))
}

/// The refusal (unless `accept`), or the notes for the report.
fn notes_of(verdict: &Verdict, accept: bool) -> Result<Vec<String>, SessionError> {
    let mut notes = Vec::new();
    if let Some(refusal) = verdict.refusal(ACCEPT_FLAG) {
        if !accept {
            return Err(SessionError {
                context: CHECK_CONTEXT.into(),
                message: refusal,
                sqlstate: None,
            });
        }
        let done = if verdict.planned_only {
            "planning the query ran it, and pgplan cannot undo that"
        } else {
            "pgplan ran it and cannot undo that"
        };
        for (name, rest) in &verdict.lasting {
            notes.push(format!(
                "{ACCEPT_FLAG}: the query calls {name}, which {rest}; {done}"
            ));
        }
    }
    notes.extend(verdict.advancing_note());
    notes.extend(verdict.volatile_note());
    notes.extend(verdict.unseen_note());
    Ok(notes)
}

/// Makes the rest of the transaction read-only: from here on nothing the query runs can write
/// (a function's INSERT, `nextval`, `setval`). PostgreSQL allows going read-only at any point
/// of a transaction (only the way back is refused), so this comes after the candidate is built.
pub async fn read_only_from_here(client: &Client) -> Result<(), SessionError> {
    run(
        client,
        "SET LOCAL transaction_read_only = on",
        "making the measured runs read-only",
    )
    .await
}

/// A run's error, with what to do when the read-only transaction is what stopped it.
pub fn explain_read_only(mut error: SessionError) -> SessionError {
    if error.sqlstate.as_deref() == Some(READ_ONLY_SQL_TRANSACTION) {
        error.message.push_str(
            "\nhint: pgplan runs the query in a read-only transaction, and something it calls \
             writes (a function, or a sequence's nextval); pass --allow-writes to run it in a \
             read-write transaction that is still rolled back (sequences still advance)",
        );
    }
    error
}

/// The server's lasting state, read in a read-only transaction of pgplan's own session (so its
/// advisory locks are the session's). `Err` is the note that says it could not be checked.
async fn lasting_state(
    conn: &mut crate::db::connect::Connection,
    limits: &crate::db::session::Limits,
) -> Result<Vec<crate::lasting_state::Item>, String> {
    conn.read_only(limits, async |client| {
        crate::db::effects::lasting_state(client).await
    })
    .await
    .map_err(|e| {
        format!(
            "the server's lasting state (replication slots, prepared transactions, advisory \
             locks) could not be read ({e}), so pgplan cannot show the runs left none"
        )
    })
}

/// The notes for what appeared in the lasting state between `before` and `after`.
fn lasting_notes(
    before: &Result<Vec<crate::lasting_state::Item>, String>,
    after: &Result<Vec<crate::lasting_state::Item>, String>,
) -> Vec<String> {
    match (before, after) {
        (Ok(before), Ok(after)) => crate::lasting_state::left_behind(before, after),
        (Err(note), _) | (_, Err(note)) => vec![note.clone()],
    }
}

/// A failed command's error, with what its runs left behind appended (a query that fails on
/// its second run may have made something on its first).
async fn error_with_left_behind(
    conn: &mut crate::db::connect::Connection,
    limits: &crate::db::session::Limits,
    before: &Result<Vec<crate::lasting_state::Item>, String>,
    error: anyhow::Error,
) -> anyhow::Error {
    let after = lasting_state(conn, limits).await;
    let notes: Vec<String> = lasting_notes(before, &after)
        .into_iter()
        .filter(|n| n.starts_with(crate::lasting_state::PREFIX))
        .collect();
    if notes.is_empty() {
        return error;
    }
    anyhow::anyhow!("{error}\n{}", notes.join("\n"))
}

/// Every readable sequence's value, read before and after runs in a read-write transaction
/// (where nextval and setval are no longer refused and outlive the rollback), in a read-only
/// transaction of its own. `Err` is the note that says the advances could not be counted.
async fn sequence_values(
    conn: &mut crate::db::connect::Connection,
    limits: &crate::db::session::Limits,
) -> Result<Vec<crate::effects::SequenceValue>, String> {
    conn.read_only(limits, async |client| {
        crate::db::effects::sequence_values(client).await
    })
    .await
    .map_err(|e| {
        format!(
            "the sequences' values could not be read ({e}), so sequence advances by the \
             read-write runs are not counted"
        )
    })
}

/// The notes for what the read-write runs moved in the sequences, from the values before and
/// after (or the note that they could not be read).
fn sequence_notes(
    before: Result<Vec<crate::effects::SequenceValue>, String>,
    after: Result<Vec<crate::effects::SequenceValue>, String>,
) -> Vec<String> {
    match (before, after) {
        (Ok(before), Ok(after)) => crate::effects::sequence_advances(&before, &after),
        (Err(note), _) | (_, Err(note)) => vec![note],
    }
}

/// How long the reading after the runs waits for other backends' counts to reach the
/// statistics views when nothing has moved yet: before 15 a backend sends them to the
/// collector at most every 500 ms and a reader accepts a statistics file up to 500 ms old; from
/// 15 a backend flushes at most once a second (and at exit, as dblink's connections do).
const ROW_COUNTERS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
const ROW_COUNTERS_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The tables whose committed rows are counted around the runs (those a trigger of a written
/// table may write), and their counters before.
struct RowWatch {
    watched: Vec<crate::lasting_rows::Watched>,
    before: Result<Vec<crate::lasting_rows::RowCounter>, String>,
}

/// The committed-change counters of `watched`, read in a read-only transaction of its own (a
/// transaction keeps the statistics it first read, so each reading needs a new one).
async fn row_counters(
    conn: &mut crate::db::connect::Connection,
    limits: &crate::db::session::Limits,
    watched: &[crate::lasting_rows::Watched],
) -> Result<Vec<crate::lasting_rows::RowCounter>, String> {
    let names: Vec<String> = watched.iter().map(|w| w.name.clone()).collect();
    conn.read_only(limits, async |client| {
        crate::db::effects::table_row_changes(client, &names).await
    })
    .await
    .map_err(|e| {
        format!(
            "the row counters of the tables the triggers of the written tables write could not \
             be read ({e}), so pgplan cannot show a trigger committed no rows outside its \
             rollback"
        )
    })
}

/// The notes for the rows committed to `watch`'s tables during the runs. When nothing moved,
/// the counters are read again for up to [`ROW_COUNTERS_WAIT`]: another backend's counts reach
/// the view late.
async fn row_notes(
    conn: &mut crate::db::connect::Connection,
    limits: &crate::db::session::Limits,
    watch: &RowWatch,
) -> Vec<String> {
    let before = match &watch.before {
        Ok(before) => before,
        Err(note) => return vec![note.clone()],
    };
    let deadline = std::time::Instant::now() + ROW_COUNTERS_WAIT;
    loop {
        let after = match row_counters(conn, limits, &watch.watched).await {
            Ok(after) => after,
            Err(note) => return vec![note],
        };
        if crate::lasting_rows::moved(before, &after) || std::time::Instant::now() >= deadline {
            return crate::lasting_rows::row_notes(&watch.watched, before, &after);
        }
        tokio::time::sleep(ROW_COUNTERS_POLL).await;
    }
}

/// What a command's runs leave on the server, proved by reading it before and after: the
/// lasting state and, when the runs may write (nextval and an accepted setval outlive the
/// rollback), every sequence's value and the rows committed to the tables the written
/// tables' triggers write ([`LastingWatch::watch_rows`]). One watch per command that runs
/// user SQL.
pub struct LastingWatch {
    before: Result<Vec<crate::lasting_state::Item>, String>,
    sequences_before: Option<Result<Vec<crate::effects::SequenceValue>, String>>,
    rows: Option<RowWatch>,
}

impl LastingWatch {
    /// Reads the state before any user SQL runs; `read_write`: the runs may write.
    pub async fn start(
        conn: &mut crate::db::connect::Connection,
        limits: &crate::db::session::Limits,
        read_write: bool,
    ) -> Self {
        let before = lasting_state(conn, limits).await;
        let sequences_before = if read_write {
            Some(sequence_values(conn, limits).await)
        } else {
            None
        };
        Self {
            before,
            sequences_before,
            rows: None,
        }
    }

    /// Counts, from here to the notes, the rows committed to the tables that the user triggers
    /// of `written` (the tables the runs may write, as regclass input: the targets of the
    /// user's statements, the tables a representative write is accepted on) may write: each
    /// such table itself and what its trigger functions' source writes. Call it before any of
    /// those writes runs; nothing is counted when no written table has a user trigger.
    pub async fn watch_rows(
        &mut self,
        conn: &mut crate::db::connect::Connection,
        limits: &crate::db::session::Limits,
        written: Vec<String>,
    ) {
        if written.is_empty() {
            return;
        }
        let triggers = conn
            .read_only(limits, async |client| {
                crate::db::effects::trigger_sources(client, &written).await
            })
            .await;
        let watch = match triggers {
            Ok(triggers) if triggers.is_empty() => return,
            Ok(triggers) => {
                let watched = crate::lasting_rows::watch_list(&triggers);
                let before = row_counters(conn, limits, &watched).await;
                RowWatch { watched, before }
            }
            Err(e) => RowWatch {
                watched: Vec::new(),
                before: Err(format!(
                    "the triggers of the tables the runs write could not be read ({e}), so \
                     pgplan cannot show they committed no rows outside its rollback"
                )),
            },
        };
        self.rows = Some(watch);
    }

    /// The notes for what the runs moved and left behind (each left-behind note starts with
    /// [`crate::lasting_state::PREFIX`], which sets the exit status).
    pub async fn notes(
        self,
        conn: &mut crate::db::connect::Connection,
        limits: &crate::db::session::Limits,
    ) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(before) = self.sequences_before {
            let after = sequence_values(conn, limits).await;
            notes.extend(sequence_notes(before, after));
        }
        if let Some(rows) = &self.rows {
            notes.extend(row_notes(conn, limits, rows).await);
        }
        let after = lasting_state(conn, limits).await;
        notes.extend(lasting_notes(&self.before, &after));
        notes
    }

    /// A failed command's error, with what its runs left behind appended.
    pub async fn error(
        &self,
        conn: &mut crate::db::connect::Connection,
        limits: &crate::db::session::Limits,
        error: anyhow::Error,
    ) -> anyhow::Error {
        let error = match &self.rows {
            Some(rows) => {
                let left: Vec<String> = row_notes(conn, limits, rows)
                    .await
                    .into_iter()
                    .filter(|n| n.starts_with(crate::lasting_state::PREFIX))
                    .collect();
                if left.is_empty() {
                    error
                } else {
                    anyhow::anyhow!("{error}\n{}", left.join("\n"))
                }
            }
            None => error,
        };
        error_with_left_behind(conn, limits, &self.before, error).await
    }
}
