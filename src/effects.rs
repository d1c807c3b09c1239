//! Functions a query calls whose effects a rollback does not undo, or that reach outside the
//! session: found in the query's text before anything plans it ([`calls_in_text`]) and in the
//! estimate-only `EXPLAIN (VERBOSE)` plan (which shows every expression the executor
//! evaluates, with functions by name, schema-qualified when not on the search path),
//! classified from their `pg_proc` rows, and followed through the bodies of the user's own
//! functions ([`reach`]). Pure: the plan's JSON, the query's text and the catalog rows in,
//! refusals and warnings out.
//!
//! What a read-only transaction already stops (table writes, `nextval`, `setval`) and what the
//! rollback undoes (large-object writes, `set_config(..., false)`, `pg_notify`, 18's statistics
//! import functions) is not listed here; what neither stops nor undoes is.

pub mod body;
pub mod reach;

use serde_json::Value;

use crate::sql::{Token, TokenKind, tokenize};

pub use reach::Run;

/// A function call seen in a plan: its schema when the plan qualified it, and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Call {
    pub schema: Option<String>,
    pub name: String,
}

/// A user trigger that a write of the query fires, with its function as a call: what the
/// function reaches is judged as if the query called it, since it runs inside the measured run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiredTrigger {
    /// The table written, `schema.name` quoted as needed.
    pub table: String,
    pub trigger: String,
    pub function: Call,
}

/// A `pg_proc` row for a function of a called name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRow {
    pub schema: String,
    pub name: String,
    /// `provolatile`: `i`mmutable, `s`table, `v`olatile.
    pub volatility: char,
    /// The extension the function belongs to, if any (dblink's functions live in whatever
    /// schema it was created in, so they are known by their extension).
    pub extension: Option<String>,
    /// Whether an unqualified call would find it (`pg_function_is_visible`).
    pub visible: bool,
    /// `pg_language.lanname`: `sql`, `plpgsql`, `c`, `internal`, ...
    pub language: String,
    /// The source of a SQL or PL/pgSQL function (`None` in another language), which
    /// [`reach`] reads for the functions it calls.
    pub body: Option<String>,
}

impl FunctionRow {
    /// `pg_catalog.pg_terminate_backend()`.
    pub fn display(&self) -> String {
        format!("{}.{}()", self.schema, self.name)
    }
}

/// What pgplan does about a function the query calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Its effect outlives the rollback or reaches outside the session: refused unless the
    /// user accepts it. The reason says what it does.
    Lasting(&'static str),
    /// Volatile: it may differ from run to run, and pgplan cannot see what it does inside.
    Volatile,
    None,
}

/// Built-in functions (schema `pg_catalog`) whose effects outlive the rollback, and why.
const BUILT_IN: &[(&[&str], &str)] = &[
    (
        &[
            "pg_create_physical_replication_slot",
            "pg_create_logical_replication_slot",
            "pg_drop_replication_slot",
            "pg_copy_physical_replication_slot",
            "pg_copy_logical_replication_slot",
            "pg_replication_slot_advance",
            "pg_logical_slot_get_changes",
            "pg_logical_slot_get_binary_changes",
            "pg_sync_replication_slots",
        ],
        "creates, drops or advances a replication slot, which is not transactional: a slot \
         reserves WAL and holds back the xmin horizon until dropped",
    ),
    (
        &[
            "pg_replication_origin_create",
            "pg_replication_origin_drop",
            "pg_replication_origin_advance",
            "pg_replication_origin_session_setup",
            "pg_replication_origin_session_reset",
            "pg_replication_origin_xact_setup",
            "pg_replication_origin_xact_reset",
        ],
        "changes replication origin progress or this session's origin, which the rollback does \
         not undo",
    ),
    (
        &[
            "pg_terminate_backend",
            "pg_cancel_backend",
            "pg_log_backend_memory_contexts",
        ],
        "signals another server process: done at once, whatever becomes of the transaction",
    ),
    (
        &[
            "pg_reload_conf",
            "pg_rotate_logfile",
            "pg_rotate_logfile_old",
            "pg_promote",
            "pg_wal_replay_pause",
            "pg_wal_replay_resume",
            "pg_switch_wal",
            "pg_switch_xlog",
            "pg_create_restore_point",
            "pg_log_standby_snapshot",
        ],
        "controls the server (configuration, logs, WAL or recovery), which a rollback does not undo",
    ),
    (
        &[
            "pg_backup_start",
            "pg_backup_stop",
            "pg_start_backup",
            "pg_stop_backup",
        ],
        "starts or stops a backup, which is session state the rollback does not end (through a \
         pooler the next client inherits it)",
    ),
    (
        &[
            "pg_stat_reset",
            "pg_stat_reset_shared",
            "pg_stat_reset_single_table_counters",
            "pg_stat_reset_single_function_counters",
            "pg_stat_reset_slru",
            "pg_stat_reset_replication_slot",
            "pg_stat_reset_subscription_stats",
            "pg_stat_reset_backend_stats",
        ],
        "resets cumulative statistics, which is not transactional (autovacuum and every \
         monitoring tool lose their counts)",
    ),
    (
        &[
            "pg_advisory_lock",
            "pg_advisory_lock_shared",
            "pg_try_advisory_lock",
            "pg_try_advisory_lock_shared",
            "pg_advisory_unlock",
            "pg_advisory_unlock_shared",
            "pg_advisory_unlock_all",
        ],
        "takes or releases a session-level advisory lock, which outlives the rollback (through a \
         pooler the next client holds it); the pg_advisory_xact_* forms end with the transaction",
    ),
    (
        &["lo_import", "lo_export"],
        "reads or writes a file on the database server",
    ),
    (
        &["pg_logical_emit_message"],
        "writes a logical decoding message to the WAL, which is sent even when the transaction \
         rolls back if it is non-transactional",
    ),
];

/// Extensions whose functions (all, or those named) reach outside the session.
const EXTENSIONS: &[(&str, Option<&[&str]>, &str)] = &[
    (
        "dblink",
        None,
        "runs SQL over another connection, which commits on its own and outlives pgplan's \
         rollback (a named connection also stays open on this backend)",
    ),
    (
        "pg_background",
        None,
        "runs SQL in a background worker, which commits on its own",
    ),
    (
        "adminpack",
        Some(&[
            "pg_file_write",
            "pg_file_rename",
            "pg_file_unlink",
            "pg_file_sync",
        ]),
        "writes, renames or removes a file on the database server",
    ),
    (
        "hypopg",
        Some(&[
            "hypopg_create_index",
            "hypopg_drop_index",
            "hypopg_reset",
            "hypopg_reset_index",
            "hypopg_hide_index",
            "hypopg_unhide_index",
            "hypopg_unhide_all_indexes",
        ]),
        "changes this backend's hypothetical indexes, which outlive the rollback (through a \
         pooler the next client's plans see them)",
    ),
    (
        "pg_stat_statements",
        Some(&["pg_stat_statements_reset"]),
        "resets pg_stat_statements' counts, which is not transactional",
    ),
];

/// The effect of calling `f`.
pub fn classify(f: &FunctionRow) -> Effect {
    if let Some(extension) = &f.extension {
        for (name, functions, reason) in EXTENSIONS {
            if extension == name && functions.is_none_or(|list| list.contains(&f.name.as_str())) {
                return Effect::Lasting(reason);
            }
        }
    } else if f.schema == "pg_catalog" {
        for (names, reason) in BUILT_IN {
            if names.contains(&f.name.as_str()) {
                return Effect::Lasting(reason);
            }
        }
    }
    if f.volatility == 'v' {
        Effect::Volatile
    } else {
        Effect::None
    }
}

/// Every function call in a plan (`EXPLAIN (VERBOSE, FORMAT JSON)` output as the server sent
/// it): each string in the plan tree is read as an expression, and a name directly followed by
/// `(` is a call, unless it follows `::` (a type modifier, `numeric(10,2)`). String constants
/// are skipped by the lexer, so `'lo_export('` is no call. Sorted, without repeats.
pub fn calls_in_plan(raw: &str) -> Result<Vec<Call>, serde_json::Error> {
    let value: Value = serde_json::from_str(raw)?;
    let mut calls = Vec::new();
    collect(&value, &mut calls);
    calls.sort();
    calls.dedup();
    Ok(calls)
}

fn collect(value: &Value, calls: &mut Vec<Call>) {
    match value {
        Value::String(text) => calls_in_expression(text, calls),
        Value::Array(items) => items.iter().for_each(|v| collect(v, calls)),
        Value::Object(map) => {
            for (key, v) in map {
                // Settings are name/value pairs, never expressions.
                if key != "Settings" {
                    collect(v, calls);
                }
            }
        }
        _ => {}
    }
}

/// Every function call in a query's text, found the way [`calls_in_plan`] finds them in a plan's
/// expressions; read before pgplan plans the query, since planning already runs an IMMUTABLE
/// function's call on constants, which then no longer shows in the plan. Words followed by `(`
/// that are no function (`IN (`, a table's column list) find no `pg_proc` row. Sorted, without
/// repeats; a text that cannot be split into tokens has no calls (nothing can plan it).
pub fn calls_in_text(sql: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    calls_in_expression(sql, &mut calls);
    calls.sort();
    calls.dedup();
    calls
}

fn calls_in_expression(text: &str, calls: &mut Vec<Call>) {
    if !text.contains('(') {
        return;
    }
    let Ok(tokens) = tokenize(text) else { return };
    calls_in_tokens(&tokens, calls);
}

/// The calls among `tokens`: a name directly followed by `(`, unless it follows `::`.
fn calls_in_tokens(tokens: &[Token<'_>], calls: &mut Vec<Call>) {
    for (i, token) in tokens.iter().enumerate() {
        let Some(name) = identifier(token.kind, token.text) else {
            continue;
        };
        if tokens.get(i + 1).is_none_or(|t| t.text != "(") {
            continue;
        }
        let before = |back: usize| i.checked_sub(back).and_then(|j| tokens.get(j));
        if before(1).is_some_and(|t| t.text == "::") {
            continue;
        }
        let schema = match (before(1), before(2)) {
            (Some(dot), Some(s)) if dot.text == "." => identifier(s.kind, s.text),
            _ => None,
        };
        calls.push(Call { schema, name });
    }
}

/// The name an identifier token stands for: folded to lower case unless quoted.
fn identifier(kind: TokenKind, text: &str) -> Option<String> {
    match kind {
        TokenKind::Word => Some(text.to_lowercase()),
        TokenKind::QuotedIdentifier if text.starts_with('"') && text.len() >= 2 => {
            Some(text[1..text.len() - 1].replace("\"\"", "\""))
        }
        _ => None,
    }
}

/// The catalog rows a call may mean: the function of that schema when qualified, else those the
/// search path finds (an unqualified name in VERBOSE output is one the search path finds).
pub fn rows_for<'a>(call: &Call, rows: &'a [FunctionRow]) -> Vec<&'a FunctionRow> {
    rows.iter()
        .filter(|r| r.name == call.name)
        .filter(|r| match &call.schema {
            Some(schema) => &r.schema == schema,
            None => r.visible,
        })
        .collect()
}

/// What the query's calls come to: the functions refused, with why, and the volatile ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Each refused function the query calls, `schema.name()`, with the rest of the sentence:
    /// what it does, or the chain through the user's functions to what does
    /// ([`reach::Chain::rest`]).
    pub lasting: Vec<(String, String)>,
    pub volatile: Vec<String>,
    /// The query runs in a read-write transaction (`--allow-writes`), rolled back afterwards.
    pub writable: bool,
    /// Sequence functions that advance a sequence for good in a writable transaction
    /// (`nextval`): run, and said.
    pub advancing: Vec<String>,
    /// What the walk through the user's functions could not see
    /// ([`reach::Reach::unseen_words`]).
    pub unseen: Option<String>,
    /// The statement is only planned (`Run::PlansOnly`): what is refused is what planning runs.
    pub planned_only: bool,
}

/// `setval` in a read-write transaction: PostgreSQL's sequence operations are never rolled back
/// ("to avoid blocking concurrent transactions", the manual's words), so the rollback leaves
/// the sequence where the query set it.
const SETVAL: &str = "sets a sequence's value, which no rollback undoes (sequence changes are not \
                      transactional): the value stays, and an INSERT that takes the next one may \
                      collide with a row that exists";

/// `nextval` in a read-write transaction.
const NEXTVAL: &str = "advances its sequence, which no rollback undoes: the values it took are \
                       skipped for good (gaps in the ids), and pgplan's runs take one per row \
                       and run";

pub fn judge(calls: &[Call], rows: &[FunctionRow]) -> Verdict {
    judge_in(calls, rows, false)
}

/// [`judge`] for a query that runs in a read-write transaction when `writable`: what the
/// read-only transaction stopped (`setval`, `nextval`) then runs.
pub fn judge_in(calls: &[Call], rows: &[FunctionRow], writable: bool) -> Verdict {
    judge_run(calls, rows, writable, Run::Executes)
}

/// [`judge_in`] for a statement that runs, or (`Run::PlansOnly`) is only planned: then only
/// what planning runs is judged (a function it evaluates, and what that one calls), and nothing
/// is said of the volatile functions, which planning never runs.
pub fn judge_run(calls: &[Call], rows: &[FunctionRow], writable: bool, run: Run) -> Verdict {
    let mut verdict = Verdict {
        writable,
        planned_only: run == Run::PlansOnly,
        ..Verdict::default()
    };
    let refuse = |verdict: &mut Verdict, name: String, rest: String| {
        if !verdict
            .lasting
            .iter()
            .any(|(n, r)| n == &name && r == &rest)
        {
            verdict.lasting.push((name, rest));
        }
    };
    for call in calls {
        for row in rows_for(call, rows) {
            let shown = row.display();
            if run == Run::PlansOnly {
                // Planning evaluates only what is not VOLATILE.
                if row.volatility != 'v'
                    && let Effect::Lasting(reason) = classify(row)
                {
                    refuse(&mut verdict, shown, reason.to_owned());
                }
                continue;
            }
            let sequence = writable && row.schema == "pg_catalog" && row.extension.is_none();
            if sequence && row.name == "setval" {
                refuse(&mut verdict, shown, SETVAL.to_owned());
                continue;
            }
            if sequence && row.name == "nextval" {
                if !verdict.advancing.contains(&shown) {
                    verdict.advancing.push(shown);
                }
                continue;
            }
            match classify(row) {
                Effect::Lasting(reason) => refuse(&mut verdict, shown, reason.to_owned()),
                Effect::Volatile => {
                    if !verdict.volatile.contains(&shown) {
                        verdict.volatile.push(shown);
                    }
                }
                Effect::None => {}
            }
        }
    }
    let reach = reach::reach(calls, rows, run);
    for chain in &reach.chains {
        refuse(&mut verdict, chain.head().to_owned(), chain.rest());
    }
    verdict.unseen = reach.unseen_words();
    verdict
}

impl Verdict {
    /// The refusal, one line per function, and what to do.
    pub fn refusal(&self, flag: &str) -> Option<String> {
        if self.lasting.is_empty() {
            return None;
        }
        let mut text = String::from(
            "the query calls functions whose effects outlive pgplan's rollback or reach outside \
             its session:",
        );
        for (name, rest) in &self.lasting {
            text.push_str(&format!("\n  {name} {rest}"));
        }
        if self.planned_only {
            text.push_str(
                "\nthe query is only planned, but the planner runs a function marked IMMUTABLE \
                 or STABLE when its arguments are constants (and a SQL function's body, which it \
                 inlines), whatever the function really does",
            );
        }
        text.push_str(&format!(
            "\nhint: measure the query without them, or pass {flag} to run it anyway (pgplan \
             then cannot promise to leave nothing behind)"
        ));
        Some(text)
    }

    /// Names the trigger behind each refused function that only a trigger runs (the query
    /// never calls it, so its name alone would not say why it runs): `public.relay() (run by
    /// trigger relay_on_write on public.t, which the query writes)`. `called`: the functions
    /// the query itself calls.
    pub fn name_triggers(&mut self, fired: &[FiredTrigger], called: &[Call]) {
        for (name, _) in &mut self.lasting {
            let by: Vec<String> = fired
                .iter()
                .filter(|t| !called.contains(&t.function))
                .filter(|t| {
                    let schema = t.function.schema.as_deref().unwrap_or_default();
                    *name == format!("{schema}.{}()", t.function.name)
                })
                .map(|t| format!("trigger {} on {}", t.trigger, t.table))
                .collect();
            if !by.is_empty() {
                *name = format!("{name} (run by {}, which the query writes)", by.join(", "));
            }
        }
    }

    /// The refusal on one line, for a statement of a workload that is set aside for it.
    pub fn refusal_line(&self, flag: &str) -> Option<String> {
        self.reasons().map(|reasons| {
            format!(
                "it calls functions whose effects outlive pgplan's rollback: {reasons} ({flag} \
                 runs it anyway)"
            )
        })
    }

    /// Each refused function with what it does, on one line.
    pub fn reasons(&self) -> Option<String> {
        if self.lasting.is_empty() {
            return None;
        }
        let calls: Vec<String> = self
            .lasting
            .iter()
            .map(|(name, rest)| format!("{name} {rest}"))
            .collect();
        Some(calls.join("; "))
    }

    /// The note for volatile functions, which are run but not judged, with what the walk
    /// through the user's functions could not see.
    pub fn volatile_note(&self) -> Option<String> {
        if self.volatile.is_empty() {
            return None;
        }
        let transaction = if self.writable {
            "they ran in a read-write transaction (--allow-writes) that was rolled back, so \
             their table writes were undone"
        } else {
            "they ran in a read-only transaction that was rolled back, so writes fail"
        };
        let unseen = self
            .unseen
            .as_ref()
            .map(|u| format!(" (here: {u})"))
            .unwrap_or_default();
        Some(format!(
            "the query calls volatile functions ({}): each run may differ, and pgplan sees what \
             they do only by name and in the bodies of SQL and PL/pgSQL functions; \
             {transaction}, but effects that no rollback undoes and no body shows (dynamic SQL, \
             a function in C or another language) are not caught{unseen}",
            self.volatile.join(", ")
        ))
    }

    /// What the walk through the user's functions could not see, when no volatile note says
    /// it (the functions are STABLE or IMMUTABLE, or the statement is only planned).
    pub fn unseen_note(&self) -> Option<String> {
        if !self.volatile.is_empty() {
            return None;
        }
        self.unseen.as_ref().map(|u| {
            format!(
                "pgplan read the bodies of the functions the query calls for effects that outlive \
                 its rollback, but not everything they run can be seen: {u}"
            )
        })
    }

    /// The note for `nextval` in a read-write transaction.
    pub fn advancing_note(&self) -> Option<String> {
        if self.advancing.is_empty() {
            return None;
        }
        Some(format!(
            "--allow-writes: the query calls {}, which {NEXTVAL}",
            self.advancing.join(", ")
        ))
    }
}

/// What `ANALYZE` moves in a table's cumulative statistics (`pg_stat_all_tables`), which is
/// not transactional: ANALYZE in pgplan's rolled-back transaction still resets the count of
/// rows modified since the last analyze and adds to the analyze count, while the statistics it
/// gathered are rolled back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzeCounters {
    pub table: String,
    pub mods_since_analyze: i64,
    pub analyze_count: i64,
    pub last_analyze: Option<String>,
}

/// Said before anything runs, when `--analyze` is given for a measured compare.
pub const ANALYZE_BEFORE: &str = "--analyze: ANALYZE inside the rolled-back transaction still \
     counts in the table's cumulative statistics, which no rollback undoes: it sets \
     n_mod_since_analyze to 0, adds 1 to analyze_count and sets last_analyze, while the \
     statistics it gathered are rolled back; autovacuum then does not analyze the table until \
     enough rows change again to cross its autoanalyze threshold (the report gives the counters \
     before and after)";

/// Said after the run: each table's counters before and after, when ANALYZE moved them.
pub fn analyze_after(before: &[AnalyzeCounters], after: &[AnalyzeCounters]) -> Vec<String> {
    let mut notes = Vec::new();
    for a in after {
        let Some(b) = before.iter().find(|b| b.table == a.table) else {
            continue;
        };
        if a == b {
            continue;
        }
        notes.push(format!(
            "--analyze on {}: its statistics were rolled back, but n_mod_since_analyze went {} → \
             {} and analyze_count {} → {}, last_analyze {} → {}, and that outlives the rollback: \
             autovacuum counts rows changed from 0 again before it analyzes {} (run ANALYZE {} to \
             give it the statistics it now believes it has)",
            a.table,
            b.mods_since_analyze,
            a.mods_since_analyze,
            b.analyze_count,
            a.analyze_count,
            b.last_analyze.as_deref().unwrap_or("never"),
            a.last_analyze.as_deref().unwrap_or("never"),
            a.table,
            a.table,
        ));
    }
    notes
}

/// A sequence's last value, read before and after the runs of a read-write transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceValue {
    /// `schema.name`, quoted as needed.
    pub sequence: String,
    /// `None` when the sequence has not been read since it was created or restarted.
    pub last_value: Option<i64>,
}

/// Said after a read-write run: each sequence whose value moved, which the rollback did not put
/// back, with the command that sets it back. Another session's INSERTs in the meantime move it
/// too, so the note says "while pgplan ran", not "by pgplan".
pub fn sequence_advances(before: &[SequenceValue], after: &[SequenceValue]) -> Vec<String> {
    let mut notes = Vec::new();
    for a in after {
        let b = before
            .iter()
            .find(|b| b.sequence == a.sequence)
            .and_then(|b| b.last_value);
        if b == a.last_value {
            continue;
        }
        let Some(now) = a.last_value else {
            continue;
        };
        let (moved, undo) = match b {
            Some(was) if now > was => (
                format!("advanced by {} ({was} → {now})", now - was),
                "the values are used up (a gap, harmless to most applications)".to_owned(),
            ),
            Some(was) => (
                format!("moved from {was} to {now}"),
                format!(
                    "to put it back: SELECT setval('{}', {was})",
                    a.sequence.replace('\'', "''")
                ),
            ),
            None => (
                format!("was first read and now stands at {now}"),
                "the values are used up".to_owned(),
            ),
        };
        notes.push(format!(
            "sequence {} {moved} while pgplan ran, and the rollback does not undo that: {undo}",
            a.sequence
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_function_only_a_trigger_runs_is_named_with_its_trigger() {
        let relay = Call {
            schema: Some("public".into()),
            name: "relay".into(),
        };
        let fired = [FiredTrigger {
            table: "public.t".into(),
            trigger: "relay_on_write".into(),
            function: relay.clone(),
        }];
        let mut verdict = Verdict {
            lasting: vec![
                (
                    "public.relay()".into(),
                    "calls public.dblink_exec(): it ...".into(),
                ),
                ("public.make_slot()".into(), "calls ...".into()),
            ],
            ..Verdict::default()
        };
        verdict.name_triggers(&fired, &[]);
        assert_eq!(
            verdict.lasting[0].0,
            "public.relay() (run by trigger relay_on_write on public.t, which the query writes)"
        );
        assert_eq!(verdict.lasting[1].0, "public.make_slot()");
        // Called by the query itself as well: its own name says why it runs.
        let mut verdict = Verdict {
            lasting: vec![("public.relay()".into(), "calls ...".into())],
            ..Verdict::default()
        };
        verdict.name_triggers(&fired, &[relay]);
        assert_eq!(verdict.lasting[0].0, "public.relay()");
    }

    fn row(schema: &str, name: &str, volatility: char, extension: Option<&str>) -> FunctionRow {
        FunctionRow {
            schema: schema.into(),
            name: name.into(),
            volatility,
            extension: extension.map(Into::into),
            visible: true,
            language: "internal".into(),
            body: None,
        }
    }

    fn call(schema: Option<&str>, name: &str) -> Call {
        Call {
            schema: schema.map(Into::into),
            name: name.into(),
        }
    }

    #[test]
    fn sequence_functions_are_judged_by_the_transaction_they_run_in() {
        let rows = [
            row("pg_catalog", "setval", 'v', None),
            row("pg_catalog", "nextval", 'v', None),
        ];
        let calls = [call(None, "setval"), call(None, "nextval")];
        // Read-only: both fail there, nothing to refuse.
        let read_only = judge(&calls, &rows);
        assert!(read_only.lasting.is_empty() && read_only.advancing.is_empty());
        assert!(
            read_only
                .volatile_note()
                .unwrap()
                .contains("read-only transaction")
        );
        // Read-write (--allow-writes): setval is refused, nextval said.
        let writable = judge_in(&calls, &rows, true);
        assert_eq!(writable.lasting.len(), 1);
        assert_eq!(writable.lasting[0].0, "pg_catalog.setval()");
        assert!(writable.refusal("--allow-lasting-effects").is_some());
        assert!(
            writable
                .advancing_note()
                .unwrap()
                .contains("pg_catalog.nextval(), which advances its sequence")
        );
        assert_eq!(writable.volatile_note(), None);
    }

    #[test]
    fn calls_come_from_every_expression_but_not_from_strings_or_type_modifiers() {
        // As PostgreSQL 15 prints it for
        // SELECT dblink_exec(...), pg_terminate_backend(a), "numeric"(a)::numeric(10,2), ...
        let plan = r#"[{"Plan": {"Node Type": "Result",
            "Output": ["dblink_exec('dbname=postgres'::text, 'DELETE FROM t'::text)",
                       "pg_terminate_backend(t.a, '0'::bigint)",
                       "(\"numeric\"(t.a))::numeric(10,2)", "'lo_export('::text"],
            "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t",
                       "Filter": "(t.a = audit.\"Check\"(pg_backend_pid()))"}]},
            "Settings": {"search_path": "f(x)"}}]"#;
        assert_eq!(
            calls_in_plan(plan).unwrap(),
            vec![
                call(None, "dblink_exec"),
                call(None, "numeric"),
                call(None, "pg_backend_pid"),
                call(None, "pg_terminate_backend"),
                call(Some("audit"), "Check"),
            ]
        );
    }

    #[test]
    fn lasting_effects_are_named_with_their_reason() {
        let rows = [
            row("pg_catalog", "pg_terminate_backend", 'v', None),
            row("public", "dblink_exec", 'v', Some("dblink")),
            row("pg_catalog", "random", 'v', None),
            row("pg_catalog", "lower", 'i', None),
            row("pg_catalog", "pg_advisory_xact_lock", 'v', None),
        ];
        let calls = [
            call(None, "pg_terminate_backend"),
            call(None, "dblink_exec"),
            call(None, "random"),
            call(None, "lower"),
            call(None, "pg_advisory_xact_lock"),
        ];
        let verdict = judge(&calls, &rows);
        assert_eq!(
            verdict.refusal("--allow-lasting-effects").unwrap(),
            "the query calls functions whose effects outlive pgplan's rollback or reach outside \
             its session:\n  pg_catalog.pg_terminate_backend() signals another server process: \
             done at once, whatever becomes of the transaction\n  public.dblink_exec() runs SQL \
             over another connection, which commits on its own and outlives pgplan's rollback (a \
             named connection also stays open on this backend)\nhint: measure the query without \
             them, or pass --allow-lasting-effects to run it anyway (pgplan then cannot promise \
             to leave nothing behind)"
        );
        assert_eq!(
            verdict.volatile,
            vec![
                "pg_catalog.random()".to_owned(),
                "pg_catalog.pg_advisory_xact_lock()".to_owned()
            ]
        );
    }

    #[test]
    fn a_user_function_of_a_built_in_name_is_judged_as_what_it_is() {
        // public.pg_stat_reset is the user's own function: volatile, not a statistics reset.
        assert_eq!(
            classify(&row("public", "pg_stat_reset", 'v', None)),
            Effect::Volatile
        );
        assert!(matches!(
            classify(&row("pg_catalog", "pg_stat_reset", 'v', None)),
            Effect::Lasting(_)
        ));
        // Only HypoPG's functions that change state are refused.
        assert_eq!(
            classify(&row("public", "hypopg_list_indexes", 'v', Some("hypopg"))),
            Effect::Volatile
        );
        assert!(matches!(
            classify(&row("public", "hypopg_create_index", 'v', Some("hypopg"))),
            Effect::Lasting(_)
        ));
    }

    #[test]
    fn analyze_counters_are_said_before_and_after() {
        let before = AnalyzeCounters {
            table: "public.t".into(),
            mods_since_analyze: 1100,
            analyze_count: 0,
            last_analyze: None,
        };
        let after = AnalyzeCounters {
            mods_since_analyze: 0,
            analyze_count: 2,
            last_analyze: Some("2026-12-01T15:55:36Z".into()),
            ..before.clone()
        };
        assert_eq!(
            analyze_after(std::slice::from_ref(&before), &[after]),
            vec![
                "--analyze on public.t: its statistics were rolled back, but n_mod_since_analyze \
                 went 1100 → 0 and analyze_count 0 → 2, last_analyze never → \
                 2026-12-01T15:55:36Z, and that outlives the rollback: autovacuum counts rows \
                 changed from 0 again before it analyzes public.t (run ANALYZE public.t to give \
                 it the statistics it now believes it has)"
                    .to_owned()
            ]
        );
        assert!(
            analyze_after(std::slice::from_ref(&before), std::slice::from_ref(&before)).is_empty()
        );
    }

    #[test]
    fn an_unqualified_call_means_the_functions_the_search_path_finds() {
        let mut hidden = row("other", "f", 'v', None);
        hidden.visible = false;
        let rows = [row("public", "f", 'i', None), hidden];
        assert_eq!(rows_for(&call(None, "f"), &rows), vec![&rows[0]]);
        assert_eq!(rows_for(&call(Some("other"), "f"), &rows), vec![&rows[1]]);
    }

    #[test]
    fn sequence_advances_are_counted_and_a_move_back_says_how_to_undo_it() {
        let value = |sequence: &str, last_value: Option<i64>| SequenceValue {
            sequence: sequence.into(),
            last_value,
        };
        let before = [
            value("public.a", Some(10)),
            value("public.b", Some(500000)),
            value("public.c", None),
            value("public.same", Some(3)),
        ];
        let after = [
            value("public.a", Some(14)),
            value("public.b", Some(1)),
            value("public.c", Some(1)),
            value("public.same", Some(3)),
        ];
        let notes = sequence_advances(&before, &after);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].starts_with("sequence public.a advanced by 4 (10 → 14)"));
        assert!(
            notes[1].ends_with("to put it back: SELECT setval('public.b', 500000)"),
            "{}",
            notes[1]
        );
        assert!(notes[2].contains("was first read and now stands at 1"));
    }

    #[test]
    fn calls_in_a_query_text_are_found_before_any_plan() {
        assert_eq!(
            calls_in_text(
                "SELECT id, public.make_slot(1) FROM t WHERE v IN (1, 2) AND x::numeric(10, 2) > \
                 abs(-1) -- dblink_exec(\n AND 'pg_cancel_backend(' <> ''"
            ),
            vec![
                call(None, "abs"),
                call(None, "in"),
                call(Some("public"), "make_slot"),
            ]
        );
        assert!(calls_in_text("SELECT 'unterminated").is_empty());
    }

    #[test]
    fn a_chain_is_refused_with_its_path_and_a_plan_only_refusal_says_why() {
        let user = |name: &str, volatility: char, body: &str| FunctionRow {
            schema: "public".into(),
            name: name.into(),
            volatility,
            extension: None,
            visible: true,
            language: "plpgsql".into(),
            body: Some(body.into()),
        };
        let rows = [
            user("log_it", 'i', "BEGIN PERFORM relay(); RETURN 1; END"),
            user("relay", 'v', "BEGIN PERFORM pg_terminate_backend(0); END"),
            row("pg_catalog", "pg_terminate_backend", 'v', None),
        ];
        let calls = [call(None, "log_it")];
        let line = "  public.log_it() calls public.relay(), which calls \
                    pg_catalog.pg_terminate_backend(): it signals another server process: done \
                    at once, whatever becomes of the transaction";
        let runs = judge_in(&calls, &rows, false);
        let refusal = runs.refusal("--allow-lasting-effects").unwrap();
        assert!(refusal.contains(&format!("\n{line}\nhint: ")), "{refusal}");
        assert!(runs.volatile.is_empty());
        // Only planned: still refused, since the planner evaluates the IMMUTABLE log_it(1).
        let planned = judge_run(&calls, &rows, false, Run::PlansOnly);
        let refusal = planned.refusal("--allow-lasting-effects").unwrap();
        assert!(
            refusal.contains(&format!(
                "{line}\nthe query is only planned, but the planner runs a function marked \
                 IMMUTABLE or STABLE when its arguments are constants"
            )),
            "{refusal}"
        );
        assert_eq!(
            planned.refusal_line("--allow-lasting-effects").unwrap(),
            format!(
                "it calls functions whose effects outlive pgplan's rollback: {} \
                 (--allow-lasting-effects runs it anyway)",
                line.trim_start()
            )
        );
        // A direct call of a volatile built-in is not run by planning.
        let direct = [call(None, "pg_terminate_backend")];
        assert!(
            judge_run(&direct, &rows, false, Run::PlansOnly)
                .lasting
                .is_empty()
        );
        assert_eq!(judge(&direct, &rows).lasting.len(), 1);
    }

    #[test]
    fn what_the_bodies_hide_is_said_in_the_volatile_note_or_on_its_own() {
        let dynamic = |volatility| FunctionRow {
            schema: "public".into(),
            name: "run_sql".into(),
            volatility,
            extension: None,
            visible: true,
            language: "plpgsql".into(),
            body: Some("BEGIN EXECUTE sql_text; END".into()),
        };
        let calls = [call(None, "run_sql")];
        let volatile = judge(&calls, &[dynamic('v')]);
        assert!(
            volatile.volatile_note().unwrap().ends_with(
                "are not caught (here: public.run_sql() runs dynamic SQL (EXECUTE of a string \
                 made at run time), which pgplan cannot read)"
            ),
            "{volatile:?}"
        );
        assert_eq!(volatile.unseen_note(), None);
        let stable = judge(&calls, &[dynamic('s')]);
        assert_eq!(stable.volatile_note(), None);
        assert!(stable.unseen_note().unwrap().ends_with(
            "not everything they run can be seen: public.run_sql() runs dynamic SQL (EXECUTE of a \
             string made at run time), which pgplan cannot read"
        ));
    }
}
