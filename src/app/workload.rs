//! The workload engine behind `pgplan compare --workload` (and, reused, `pgplan advise`):
//! reads the workload and finds values for its parameters, then measures it — the baseline
//! first, then each candidate built once in its own always-rolled-back transaction with every
//! query measured inside it, the baseline again whenever a build changed the planner's
//! estimates — and reads the write side of every candidate's table.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use crate::advise::shortlist::Estimate;
use crate::cli::CompareArgs;
use crate::compare::workload::params::{self, ParamSource, ParamUse};
use crate::compare::workload::statements::{self, Screened, Screening, SkippedStatement};
use crate::compare::workload::unmeasured;
use crate::compare::workload::{
    ProbeFigures, QueryRuns, SourceQuery, TableActivity, WorkloadBaseline, WorkloadCandidateRun,
    WorkloadMeasurements, WorkloadQuery, WorkloadReport, judge, source, updates, workload_updates,
};
use crate::compare::{CandidateSpec, Measurement, display_name, estimate_changes};
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::db::workload as dbw;
use crate::effects::Run;
use crate::exit;
use crate::plan::{Analysis, parse_plan};
use crate::report::{Format, TextOptions, workload as render, write_json};
use crate::sql::{IndexCandidate, QueryKind, quote_literal, tokenize};

use super::engine::{Progress, build_index};
use super::live::{Interrupt, open, report_destination, resolve, runtime, stop_requested};
use super::writers::{Writers, open_writers, rolled_back_yielding};

/// How the engine measures.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Warm runs after the first one.
    pub runs: u32,
    /// Run the workload's writes (each run rolled back to a savepoint) and measure a
    /// representative write per table.
    pub allow_writes: bool,
    /// ANALYZE each candidate's table after building it.
    pub analyze: bool,
    /// No candidate is started after this.
    pub deadline: Option<Instant>,
    /// Run queries that call functions whose effects outlive the rollback (see
    /// [`super::guard::check_calls`]); otherwise such a query is refused, as its sample's error.
    pub allow_lasting_effects: bool,
    /// `SET LOCAL pg_stat_statements.track = none` in measuring transactions, so pgplan's own
    /// runs never count in the statistics it reads (superuser only: the setting is SUSET).
    pub untracked: bool,
    /// The tables (as the catalog names them) the user accepted the representative write on
    /// despite their triggers, rules or publications (`--allow-probe-triggers`).
    pub probe_accepted: Vec<String>,
}

fn session_error(context: &str, message: impl Into<String>) -> SessionError {
    SessionError {
        context: context.to_owned(),
        message: message.into(),
        sqlstate: None,
    }
}

/// The relations a plan reads: (schema, table, alias).
fn plan_relations(analysis: &Analysis) -> Vec<(String, String, Option<String>)> {
    let mut found: Vec<(String, String, Option<String>)> = Vec::new();
    for node in &analysis.plan.nodes {
        if let (Some(schema), Some(rel)) = (&node.schema, &node.relation_name) {
            let entry = (schema.clone(), rel.clone(), node.alias.clone());
            if !found.contains(&entry) {
                found.push(entry);
            }
        }
    }
    found
}

/// The prepared-statement name for workload queries: one at a time, removed after each.
fn statement_name() -> String {
    format!("pgplan_w{}", std::process::id())
}

/// `EXECUTE name(args)`, or `EXECUTE name` without parameters.
fn execute_sql(name: &str, args: &[String]) -> String {
    if args.is_empty() {
        format!("EXECUTE {name}")
    } else {
        format!("EXECUTE {name}({})", args.join(", "))
    }
}

/// The generic plan of a parameterised query (EXPLAIN without ANALYZE), in the caller's
/// transaction; the prepared statement is removed again.
async fn generic_plan(
    client: &tokio_postgres::Client,
    text: &str,
    parameters: u32,
) -> Result<String, SessionError> {
    let name = statement_name();
    run(client, "SAVEPOINT pgplan_generic", "setting a savepoint").await?;
    let result = async {
        run(
            client,
            &format!("PREPARE {name} AS {text}"),
            "preparing the query",
        )
        .await?;
        run(
            client,
            "SET LOCAL plan_cache_mode = force_generic_plan",
            "setting plan_cache_mode",
        )
        .await?;
        let args = vec!["NULL".to_owned(); parameters as usize];
        explain::explain(
            client,
            &explain_sql(&execute_sql(&name, &args), false),
            "planning the query generically",
        )
        .await
    }
    .await;
    let _ = run(
        client,
        "ROLLBACK TO SAVEPOINT pgplan_generic",
        "rolling back",
    )
    .await;
    // DEALLOCATE of a statement that was never prepared fails: only after a PREPARE.
    let _ = run(client, &format!("DEALLOCATE {name}"), "deallocating").await;
    result
}

/// Where a parameter's values come from: the column it is compared with, found among the
/// relations its generic plan reads.
async fn param_source(
    client: &tokio_postgres::Client,
    usage: &ParamUse,
    relations: &[(String, String, Option<String>)],
) -> Result<ParamSource, SessionError> {
    let (qualifier, column) = match usage {
        ParamUse::Limit => return Ok(ParamSource::Limit),
        ParamUse::Offset => return Ok(ParamSource::Offset),
        ParamUse::Unknown => {
            return Ok(ParamSource::None(
                "not compared with a plain column (an expression, a function argument, an array)"
                    .into(),
            ));
        }
        ParamUse::Column { qualifier, column } => (qualifier, column),
    };
    let matching: Vec<&(String, String, Option<String>)> = relations
        .iter()
        .filter(|(_, rel, alias)| match qualifier {
            Some(q) => q == rel || alias.as_deref() == Some(q.as_str()),
            None => true,
        })
        .collect();
    for (schema, table, _) in &matching {
        if let Some(stats) = dbw::column_stats(client, schema, table, column).await?
            && (!stats.most_common_vals.is_empty() || !stats.histogram_bounds.is_empty())
        {
            return Ok(ParamSource::Stats(stats));
        }
    }
    // No statistics (never analyzed, or every value distinct with no histogram): a sampled row.
    for (schema, table, _) in &matching {
        // A column this table does not have fails the sample: try the next relation.
        run(client, "SAVEPOINT pgplan_sample", "setting a savepoint").await?;
        let value = dbw::sample_value(client, schema, table, column).await;
        let _ = run(
            client,
            "ROLLBACK TO SAVEPOINT pgplan_sample",
            "rolling back",
        )
        .await;
        if let Ok(Some(value)) = value {
            return Ok(ParamSource::Sampled {
                column: format!("{table}.{column}"),
                value,
            });
        }
    }
    Ok(ParamSource::None(format!(
        "compared with {column}, which has no statistics and no row to sample in the tables the plan reads"
    )))
}

/// Turns the workload's queries into queries ready to measure, choosing the values of their
/// parameters (read-only). A statement of pg_stat_statements that cannot be planned (a table
/// since dropped, a temporary table of a session gone, a role's search_path, a parameter of no
/// type) goes to `screening.skipped` with the server's error; a query file's is an error.
///
/// Before anything plans a query, the functions its text calls are judged, through the bodies
/// of the user's functions ([`super::guard::check_text`]): planning alone runs a function
/// marked IMMUTABLE or STABLE on constants. A query refused for what they reach is set aside
/// (a statement of the view) or an error (a file's), unless `allow_lasting_effects`;
/// `planned_only`: no query is run (`check --estimated`), so only what planning runs is judged.
pub async fn prepare_queries(
    conn: &mut Connection,
    limits: &Limits,
    sources: Vec<SourceQuery>,
    allow_writes: bool,
    allow_lasting_effects: bool,
    planned_only: bool,
    screening: &mut Screening,
) -> Result<Vec<WorkloadQuery>> {
    let mut prepared = Vec::new();
    for mut source in sources {
        let runnable = match &source.query.kind {
            QueryKind::Read => true,
            QueryKind::Write(_) => allow_writes,
            QueryKind::Other(_) => false,
        };
        let run = if runnable && !planned_only {
            Run::Executes
        } else {
            Run::PlansOnly
        };
        let verdict = conn
            .read_only(limits, async |client| {
                super::guard::text_verdict(client, &source.query.text, allow_writes, run).await
            })
            .await
            .with_context(|| format!("{}: judging the functions it calls", source.id))?;
        if !allow_lasting_effects && let Some(refusal) = verdict.refusal(super::guard::ACCEPT_FLAG)
        {
            if source.queryid.is_some() {
                let line = verdict
                    .refusal_line(super::guard::ACCEPT_FLAG)
                    .unwrap_or(refusal);
                screening.skip(&source, line);
                continue;
            }
            bail!("{}: {refusal}", source.id);
        }
        let count = source.query.max_parameter.unwrap_or(0);
        if let Some(given) = &source.params
            && given.len() != count as usize
        {
            bail!(
                "{}: `-- params:` gives {} value(s) but the query uses parameters up to ${count}",
                source.id,
                given.len()
            );
        }
        let from_view = source.queryid.is_some();
        if from_view {
            // Planned once before anything else: what cannot be planned is set aside, named.
            match plannable(conn, limits, &mut source, count).await? {
                Ok(()) => {}
                Err(reason) => {
                    screening.skip(&source, reason);
                    continue;
                }
            }
        }
        let samples = if !runnable {
            // Never run: only its estimated plan is shown, and its SET list read.
            vec![params::Sample {
                label: "not run".into(),
                params: Vec::new(),
                generic: true,
                why: vec!["a write: run only with --allow-writes (rolled back)".into()],
            }]
        } else if count == 0 || source.params.is_some() {
            params::choose_samples(source.params.as_deref(), &[])
                .into_iter()
                .map(|mut s| {
                    if let Some(given) = &source.params {
                        s.label = "given".into();
                        s.params = given.clone();
                        s.why = vec!["values given with `-- params:`".into()];
                    }
                    s
                })
                .collect()
        } else {
            let text = source.query.text.clone();
            let mut tokens: Vec<ParamUse> = tokenize(&text)
                .map(|toks| params::parameter_uses(&toks, count))
                .unwrap_or_else(|_| vec![ParamUse::Unknown; count as usize]);
            // `col = ANY($n)`: a value of the column, as a one-element array.
            let arrays: Vec<bool> = match tokenize(&text) {
                Ok(toks) => statements::any_array_uses(&toks, count)
                    .into_iter()
                    .zip(tokens.iter_mut())
                    .map(|(array, usage)| match array {
                        Some(column) if *usage == ParamUse::Unknown => {
                            *usage = column;
                            true
                        }
                        _ => false,
                    })
                    .collect(),
                Err(_) => vec![false; count as usize],
            };
            let found = conn
                .read_only(limits, async |client| {
                    let plan = generic_plan(client, &text, count).await?;
                    let analysis = parse_plan(&plan)
                        .map(Analysis::of)
                        .map_err(|e| session_error("reading the generic plan", e.to_string()))?;
                    let relations = plan_relations(&analysis);
                    let mut found = Vec::new();
                    for usage in &tokens {
                        found.push(param_source(client, usage, &relations).await?);
                    }
                    Ok(found)
                })
                .await;
            match found {
                Ok(sources) => params::choose_samples(None, &sources)
                    .into_iter()
                    .map(|mut sample| {
                        for (value, _) in sample
                            .params
                            .iter_mut()
                            .zip(&arrays)
                            .filter(|(_, array)| **array)
                        {
                            *value = statements::one_element_array(value);
                        }
                        sample
                    })
                    .collect(),
                Err(e) if from_view && !conn.is_closed() && !stop_requested() => {
                    screening.skip(&source, format!("finding values for its parameters: {e}"));
                    continue;
                }
                Err(e) => bail!("{}: finding values for its parameters: {e}", source.id),
            }
        };
        prepared.push(WorkloadQuery {
            source,
            samples,
            runnable,
        });
    }
    Ok(prepared)
}

/// Whether a statement of the view can be planned: its generic plan, read-only. A parameter
/// the server cannot type (the literal it stood for had no type: `SELECT $1`) is cast to
/// `text`, as PostgreSQL resolves such a literal, and the text rewritten. `Err` is why it
/// cannot be planned; a lost connection or Ctrl-C ends the run.
async fn plannable(
    conn: &mut Connection,
    limits: &Limits,
    source: &mut SourceQuery,
    count: u32,
) -> Result<Result<(), String>> {
    for _ in 0..=count {
        let text = source.query.text.clone();
        let planned = conn
            .read_only(limits, async |client| {
                generic_plan(client, &text, count).await
            })
            .await;
        if conn.is_closed() {
            bail!(
                "the connection to {} closed while planning {}",
                conn.target,
                source.id
            );
        }
        if stop_requested() {
            bail!("interrupted while planning {}", source.id);
        }
        match planned {
            Ok(_) => return Ok(Ok(())),
            Err(e) => {
                let undetermined = (e.sqlstate.as_deref() == Some("42P18"))
                    .then(|| statements::undetermined_parameter(&e.message))
                    .flatten();
                match undetermined {
                    Some(n) => {
                        source.query.text = statements::cast_parameter(&text, n, "text");
                    }
                    None => return Ok(Err(format!("planning it: {e}"))),
                }
            }
        }
    }
    Ok(Err(
        "planning it: the server could not determine its parameters' types".into(),
    ))
}

/// Measures one sample of one query in the caller's transaction, under a savepoint that is
/// rolled back afterwards (so writes, and every run, see the same rows). A failure of the
/// query itself is the sample's result; a cancel (Ctrl-C) or a lost connection ends the work.
async fn measure_sample(
    client: &tokio_postgres::Client,
    query: &WorkloadQuery,
    sample: usize,
    options: &EngineOptions,
    progress: &Progress,
    label: &str,
    cut_at: Option<Instant>,
) -> Result<Result<Vec<String>, String>, SessionError> {
    let runs = options.runs;
    let s = &query.samples[sample];
    let measured = !s.generic && query.runnable;
    let writes = matches!(query.source.query.kind, QueryKind::Write(_));
    run(client, "SAVEPOINT pgplan_query", "setting a savepoint").await?;
    let name = statement_name();
    let parameters = query.source.query.max_parameter.unwrap_or(0);
    let mut prepared = false;
    let result: Result<Vec<String>, SessionError> = async {
        let statement = if parameters > 0 {
            run(
                client,
                &format!("PREPARE {name} AS {}", query.source.query.text),
                "preparing the query",
            )
            .await?;
            prepared = true;
            let mode = if s.generic {
                "force_generic_plan"
            } else {
                "force_custom_plan"
            };
            run(
                client,
                &format!("SET LOCAL plan_cache_mode = {mode}"),
                "setting plan_cache_mode",
            )
            .await?;
            let args: Vec<String> = if s.generic {
                vec!["NULL".into(); parameters as usize]
            } else {
                s.params.iter().map(|p| quote_literal(p)).collect()
            };
            execute_sql(&name, &args)
        } else {
            query.source.query.text.clone()
        };
        if measured {
            // The functions it calls, judged before anything of it runs.
            super::guard::check_calls(
                client,
                &statement,
                &query.source.query.text,
                options.allow_lasting_effects,
                options.allow_writes,
            )
            .await?;
        } else {
            // Only planned, which still runs what the planner evaluates (an IMMUTABLE or
            // STABLE function on constants): judged before the EXPLAIN.
            super::guard::check_text(
                client,
                &query.source.query.text,
                options.allow_lasting_effects,
            )
            .await?;
        }
        let sql = explain_sql(&statement, measured);
        let total = if measured { 1 + runs } else { 1 };
        let mut plans = Vec::new();
        for i in 0..total {
            if stop_requested() {
                return Err(session_error(label, "interrupted"));
            }
            if cut_at.is_some_and(|d| Instant::now() >= d) {
                return Err(session_error(BUDGET_CONTEXT, "--budget ran out"));
            }
            progress.update(&format!(
                "{label}: {} ({}), run {} of {total}",
                query.source.id,
                s.label,
                i + 1
            ));
            if writes && measured {
                run(client, "SAVEPOINT pgplan_run", "setting a savepoint").await?;
            }
            plans.push(
                explain::explain(client, &sql, &format!("running {}", query.source.id)).await?,
            );
            if writes && measured {
                run(
                    client,
                    "ROLLBACK TO SAVEPOINT pgplan_run",
                    "rolling back the run",
                )
                .await?;
            }
        }
        Ok(plans)
    }
    .await;
    if client.is_closed() {
        return Err(session_error(label, "the connection closed"));
    }
    run(
        client,
        "ROLLBACK TO SAVEPOINT pgplan_query",
        "rolling back the query",
    )
    .await?;
    if prepared {
        run(
            client,
            &format!("DEALLOCATE {name}"),
            "removing the prepared statement",
        )
        .await?;
    }
    match result {
        Err(e) if stop_requested() || e.context == BUDGET_CONTEXT => Err(e),
        // lock_not_available: the wait passed lock_timeout. Who holds the lock is read now,
        // after the rollback, as audit names it: the holder is usually still there.
        Err(e) if e.sqlstate.as_deref() == Some("55P03") => {
            let locks = crate::db::lock_holders::lock_holders(client, &[]).await?;
            let q = &query.source.query;
            Ok(Err(
                match unmeasured::lock_holders_message(&q.text, &q.kind, &locks) {
                    Some(holders) => format!("{e}\nwaiting for a lock: {holders}"),
                    None => e.to_string(),
                },
            ))
        }
        Err(e) => Ok(Err(e.to_string())),
        Ok(plans) => Ok(Ok(plans)),
    }
}

/// The context of the error that cuts a candidate's measurement short when `--budget` runs
/// out: the candidate is then not measured, never a failure.
const BUDGET_CONTEXT: &str = "budget";

/// Parses captured plans into a measurement (cold first).
fn measurement_of(raw_plans: Vec<String>) -> Result<Measurement, String> {
    let mut analyses = raw_plans
        .iter()
        .map(|raw| parse_plan(raw).map(Analysis::of).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let cold = analyses.next().ok_or("no plan was captured")?;
    Ok(Measurement {
        cold,
        warm: analyses.collect(),
        raw_plans,
        evicted_buffers: None,
    })
}

/// Measures every sample of every query in the caller's transaction.
async fn measure_queries(
    client: &tokio_postgres::Client,
    queries: &[WorkloadQuery],
    options: &EngineOptions,
    progress: &Progress,
    label: &str,
    cut_at: Option<Instant>,
) -> Result<Vec<QueryRuns>, SessionError> {
    if !options.allow_writes {
        // Nothing the queries run may write (a function's INSERT, nextval): read-only from
        // here to the rollback.
        super::guard::read_only_from_here(client).await?;
    }
    let mut all = Vec::with_capacity(queries.len());
    for (q, query) in queries.iter().enumerate() {
        let mut per_sample = Vec::with_capacity(query.samples.len());
        for sample in 0..query.samples.len() {
            let label = format!("{label}, query {} of {}", q + 1, queries.len());
            let plans =
                measure_sample(client, query, sample, options, progress, &label, cut_at).await?;
            per_sample.push(plans.and_then(measurement_of));
        }
        all.push(per_sample);
    }
    Ok(all)
}

/// The predicate of a partial index definition (`... WHERE status = 'pending'`), if any.
fn predicate(definition: &str) -> Option<String> {
    let toks = tokenize(definition).ok()?;
    let mut depth = 0i32;
    for t in &toks {
        match t.text {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ if depth == 0 && t.is_keyword("where") => {
                return Some(definition[t.end()..].trim().to_owned());
            }
            _ => {}
        }
    }
    None
}

/// A representative write on `table`: one row (inside the index's predicate, for a partial
/// index) deleted and inserted again in one statement, under EXPLAIN (ANALYZE, BUFFERS, WAL),
/// rolled back to a savepoint. The delete leaves the index alone; the insert adds one entry to
/// every index of the table, so the difference with and without a candidate is what one entry
/// of it costs. `None` when the write fails (a generated column, a foreign key that refuses the
/// delete...): the cost is then estimated.
async fn write_probe(
    client: &tokio_postgres::Client,
    table: &str,
    predicate: Option<&str>,
    accepted: &[String],
    untracked: bool,
) -> Result<Option<ProbeFigures>, SessionError> {
    // A table with user triggers, rules or publications is not probed, unless the user accepted
    // it by name: the write would run their code (compare::workload::probe_guard); the report
    // says so either way.
    if !accepted.iter().any(|a| a == table)
        && !crate::db::write_probe::probe_blockers(client, table)
            .await?
            .is_empty()
    {
        return Ok(None);
    }
    let filter = predicate.map(|p| format!(" WHERE {p}")).unwrap_or_default();
    let sql = format!(
        "EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) \
         WITH pgplan_row AS (DELETE FROM {table} WHERE ctid = (SELECT ctid FROM {table}{filter} LIMIT 1) RETURNING *) \
         INSERT INTO {table} OVERRIDING SYSTEM VALUE SELECT * FROM pgplan_row"
    );
    // Three runs, keeping the one that wrote the least WAL. Besides the entries, a run can write
    // WAL it does not owe to them: the first modification of a page after a checkpoint logs a
    // full-page image, and a read of a page with dead tuples (a rolled-back UPDATE of the
    // workload leaves them) may prune it, which is WAL-logged too. Both happen once per page, so
    // the quietest run is the one that did only the write itself, on either side.
    let mut quietest: Option<ProbeFigures> = None;
    let mut rows_counted = 0.0;
    for _ in 0..3 {
        run(client, "SAVEPOINT pgplan_probe", "setting a savepoint").await?;
        if untracked {
            // The write is pgplan's own: kept out of the table's cumulative counters, whose
            // write rates the next run's advice reads (relation_open reads track_counts, so
            // the setting holds for the write; the savepoint's rollback turns it on again).
            run(
                client,
                "SET LOCAL track_counts = off",
                "keeping the representative write out of the statistics counters",
            )
            .await?;
        }
        let plan = explain::explain(client, &sql, "measuring a representative write").await;
        run(
            client,
            "ROLLBACK TO SAVEPOINT pgplan_probe",
            "rolling back the write",
        )
        .await?;
        let Ok(plan) = plan else { return Ok(None) };
        if !untracked {
            rows_counted += 2.0;
        }
        let Ok(parsed) = parse_plan(&plan) else {
            return Ok(None);
        };
        let root = parsed.root();
        let (Some(b), Some(wal)) = (root.buffers, root.wal.and_then(|w| w.bytes)) else {
            return Ok(None);
        };
        if quietest.is_none_or(|q| wal < q.wal_bytes) {
            quietest = Some(ProbeFigures {
                pages_written: b.shared_dirtied_blocks,
                wal_bytes: wal,
                rows_counted: 0.0,
            });
        }
    }
    Ok(quietest.map(|q| ProbeFigures { rows_counted, ..q }))
}

/// Settings every measuring transaction starts with.
async fn transaction_setup(
    client: &tokio_postgres::Client,
    options: &EngineOptions,
) -> Result<(), SessionError> {
    if options.untracked {
        run(
            client,
            "SET LOCAL pg_stat_statements.track = none",
            "keeping pgplan's runs out of pg_stat_statements",
        )
        .await?;
    }
    Ok(())
}

/// Builds the already-chosen indexes (advise's greedy selection) inside the caller's
/// transaction.
async fn build_chosen(
    client: &tokio_postgres::Client,
    chosen: &[IndexCandidate],
    progress: &Progress,
) -> Result<(), SessionError> {
    for index in chosen {
        build_index(client, index, false, progress, "chosen index").await?;
    }
    Ok(())
}

/// What every measuring transaction does besides its own candidate.
struct Work<'a> {
    queries: &'a [WorkloadQuery],
    chosen: &'a [IndexCandidate],
    probe_tables: &'a [(String, Option<String>)],
    options: &'a EngineOptions,
}

/// The baseline of every query (with the chosen indexes in place), and the representative
/// write per table.
async fn measure_baseline(
    conn: &mut Connection,
    limits: &Limits,
    work: &Work<'_>,
    writers: Option<&mut Writers>,
    progress: &Progress,
    label: &str,
) -> Result<WorkloadBaseline> {
    // Writers wait for the chosen indexes' SHARE locks, and for the row locks of the
    // workload's own writes and the probe's: watched then, as a candidate's transaction is.
    let writers = writers.filter(|_| !work.chosen.is_empty() || work.options.allow_writes);
    let say = |message: &str| progress.update(message);
    let result = rolled_back_yielding(conn, limits, writers, label, &say, async |client| {
        transaction_setup(client, work.options).await?;
        build_chosen(client, work.chosen, progress).await?;
        // The baseline is never cut short: every candidate is judged against it.
        let runs =
            measure_queries(client, work.queries, work.options, progress, label, None).await?;
        let mut probes = Vec::new();
        if work.options.allow_writes {
            for (table, predicate) in work.probe_tables {
                probes.push((
                    table.clone(),
                    write_probe(
                        client,
                        table,
                        predicate.as_deref(),
                        &work.options.probe_accepted,
                        work.options.untracked,
                    )
                    .await?,
                ));
            }
        }
        Ok((runs, probes))
    })
    .await;
    let (queries, write_probes) = result.map_err(|e| anyhow!("measuring the {label}: {e}"))?;
    Ok(WorkloadBaseline {
        queries,
        after: None,
        write_probes,
    })
}

/// Measures the workload with each candidate (every one built once, in its own rolled-back
/// transaction, after `chosen`, which every transaction builds first — the baseline's too), and
/// reads the write counters of every candidate's table. Stops starting candidates once
/// `options.deadline` has passed, naming those left out. Ctrl-C and connection loss end it
/// with an error; a candidate that fails to build or measure is that candidate's error.
/// With `writers`, every transaction that blocks writes yields to them (a candidate that kept
/// yielding, or whose table is over `--max-build-size`, is that candidate's error), and each
/// build's cost and each yield is one of `writers`' notes.
#[allow(clippy::too_many_arguments)]
pub async fn measure_workload(
    conn: &mut Connection,
    limits: &Limits,
    queries: &[WorkloadQuery],
    candidates: &[IndexCandidate],
    chosen: &[IndexCandidate],
    options: &EngineOptions,
    mut writers: Option<&mut Writers>,
    progress: &Progress,
) -> Result<WorkloadMeasurements> {
    // Tables as the catalog names them, read-only, before anything is built.
    let tables: Vec<Option<String>> = conn
        .read_only(limits, async |client| {
            let mut names = Vec::new();
            for c in candidates.iter().chain(chosen) {
                names.push(dbw::relation_name(client, &c.table).await?);
            }
            Ok(names)
        })
        .await?;
    let mut watched: Vec<String> = tables.iter().flatten().cloned().collect();
    watched.sort();
    watched.dedup();
    let probe_tables: Vec<(String, Option<String>)> = candidates
        .iter()
        .zip(&tables)
        .filter_map(|(c, t)| Some((t.clone()?, predicate(&c.definition))))
        .collect();

    let read_estimates = async |conn: &mut Connection| {
        conn.read_only(limits, async |client| {
            explain::table_estimates(client, &watched).await
        })
        .await
    };
    // Before the baseline, which builds the chosen indexes: what every build changes in place
    // is put back to these figures at the end.
    let initial = read_estimates(conn).await?;
    // The probed tables' sizes, to name the pages the representative writes add.
    let mut probed: Vec<String> = probe_tables.iter().map(|(t, _)| t.clone()).collect();
    probed.sort();
    probed.dedup();
    if !options.allow_writes {
        probed.clear();
    }
    let read_pages = async |conn: &mut Connection| {
        if probed.is_empty() {
            return Ok(Vec::new());
        }
        conn.read_only(limits, async |client| {
            dbw::relation_pages(client, &probed).await
        })
        .await
    };
    let pages_before = read_pages(conn).await?;

    let work = Work {
        queries,
        chosen,
        probe_tables: &probe_tables,
        options,
    };
    let mut baselines = vec![
        measure_baseline(
            conn,
            limits,
            &work,
            writers.as_deref_mut(),
            progress,
            "baseline",
        )
        .await?,
    ];
    let mut current = read_estimates(conn).await?;
    let mut changes = Vec::new();
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        if options.deadline.is_some_and(|d| Instant::now() >= d) {
            skipped.push(i);
            results.push(Err(
                "not measured (budget): --budget ran out before it".to_owned()
            ));
            continue;
        }
        let label = format!(
            "candidate {} of {} ({})",
            i + 1,
            candidates.len(),
            candidate.describe()
        );
        let table = tables[i].clone();
        let mut table_bytes = None;
        if let (Some(writers), Some(t)) = (writers.as_deref_mut(), &table) {
            match writers
                .note_build(conn, limits, candidate.describe(), t)
                .await
            {
                Ok(cost) => table_bytes = Some(cost.table_bytes),
                Err(refusal) => {
                    results.push(Err(refusal));
                    continue;
                }
            }
        }
        let probe_predicate = predicate(&candidate.definition);
        let say = |message: &str| progress.update(message);
        let result = rolled_back_yielding(
            conn,
            limits,
            writers.as_deref_mut(),
            &label,
            &say,
            async |client| {
                transaction_setup(client, options).await?;
                build_chosen(client, chosen, progress).await?;
                let facts =
                    build_index(client, candidate, options.analyze, progress, &label).await?;
                let name = facts.plan_index_names.first().cloned().unwrap_or_default();
                let (entries, rows) = match &table {
                    Some(t) => dbw::index_entries(client, &name, t)
                        .await?
                        .unwrap_or((0.0, 0.0)),
                    None => (0.0, 0.0),
                };
                let columns = match &table {
                    Some(t) => dbw::table_activity(client, t)
                        .await?
                        .map(|(_, cols)| cols)
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                // Cut short when --budget runs out between two runs: that candidate is then
                // "not measured (budget)", and the budget overruns by one run at most.
                let runs =
                    measure_queries(client, queries, options, progress, &label, options.deadline)
                        .await?;
                let probe = match (&table, options.allow_writes) {
                    (Some(t), true) => {
                        write_probe(
                            client,
                            t,
                            probe_predicate.as_deref(),
                            &options.probe_accepted,
                            options.untracked,
                        )
                        .await?
                    }
                    _ => None,
                };
                Ok(WorkloadCandidateRun {
                    name,
                    plan_index_names: facts.plan_index_names,
                    size_bytes: facts.size_bytes,
                    build_ms: facts.build_ms,
                    queries: runs,
                    baseline: 0,
                    entries_per_row: if rows > 0.0 {
                        (entries / rows).clamp(0.0, 1.0)
                    } else {
                        1.0
                    },
                    entries,
                    covered_columns: updates::covered_columns(&candidate.definition, &columns)
                        .into_iter()
                        .map(|c| c.to_lowercase())
                        .collect(),
                    write_probe: probe,
                })
            },
        )
        .await;
        if stop_requested() {
            progress.clear();
            bail!("interrupted while measuring {}", candidate.describe());
        }
        if conn.is_closed() {
            progress.clear();
            bail!(
                "the connection to {} closed while measuring {}; the server rolled the transaction back",
                conn.target,
                candidate.describe()
            );
        }
        let mut result = match result {
            Err(e) if e.context == BUDGET_CONTEXT => {
                skipped.push(i);
                Err("not measured (budget): --budget ran out while it was measured".to_owned())
            }
            other => other.map_err(|e| e.to_string()),
        };
        if let Ok(run) = &mut result {
            run.baseline = baselines.len() - 1;
            if let (Some(writers), Some(bytes), Some(ms)) =
                (writers.as_deref_mut(), table_bytes, run.build_ms)
            {
                writers.measured_build(bytes, ms);
            }
        }
        let after = read_estimates(conn).await?;
        let changed = estimate_changes(&current, &after);
        if !changed.is_empty() {
            // The estimates changed under the baseline (relpages/reltuples outlive the
            // rollback): measure it again now; this candidate, whose runs already saw the new
            // estimates, and the next ones are judged against it.
            let mut rerun = measure_baseline(
                conn,
                limits,
                &work,
                writers.as_deref_mut(),
                progress,
                &format!("baseline again after {}", candidate.describe()),
            )
            .await?;
            rerun.after = Some(i);
            baselines.push(rerun);
            if let Ok(run) = &mut result {
                run.baseline = baselines.len() - 1;
            }
            changes.extend(changed);
            current = read_estimates(conn).await?;
        } else {
            current = after;
        }
        results.push(result);
    }

    let figures_put_back = super::estimates::put_back(conn, limits, &initial).await;
    let pages_after = read_pages(conn).await?;
    let mut counted: Vec<(String, f64)> = Vec::new();
    for b in &baselines {
        for (table, figures) in &b.write_probes {
            if let Some(f) = figures {
                counted.push((table.clone(), f.rows_counted));
            }
        }
    }
    for (run, table) in results.iter().zip(&tables) {
        if let (Ok(run), Some(table)) = (run, table)
            && let Some(f) = &run.write_probe
        {
            counted.push((table.clone(), f.rows_counted));
        }
    }
    let probe_residue =
        crate::compare::workload::probe_residue::residues(&pages_before, &pages_after, &counted);

    // The write counters of each candidate's table, with the audit's counting window.
    let facts = conn.facts.clone();
    let activity = conn
        .read_only(limits, async |client| {
            let window = crate::db::catalog::read_stats_window(client, &facts)
                .await
                .ok()
                .flatten();
            let mut found: Vec<TableActivity> = Vec::new();
            for table in &watched {
                if let Some((mut a, _)) = dbw::table_activity(client, table).await? {
                    a.window_seconds = window.map(|w| w.seconds());
                    found.push(a);
                }
            }
            Ok(found)
        })
        .await?;
    progress.clear();
    Ok(WorkloadMeasurements {
        baselines,
        candidates: results,
        activity,
        estimate_changes: changes,
        figures_put_back,
        probe_residue,
        skipped_for_budget: skipped,
    })
}

/// Reads the workload's queries from `--workload` and the positional files, before connecting
/// (pg_stat_statements is read later, on the server).
fn read_sources(args: &CompareArgs) -> Result<(String, Vec<SourceQuery>)> {
    read_workload_sources(args.workload.as_deref(), &args.queries)
}

/// Reads `--workload` (a file or directory; `pg_stat_statements` is only named here) and the
/// positional query files: `compare --workload` and `advise`.
pub(crate) fn read_workload_sources(
    workload: Option<&str>,
    query_files: &[String],
) -> Result<(String, Vec<SourceQuery>)> {
    let mut queries = Vec::new();
    let mut names = Vec::new();
    let read = |path: &std::path::Path| -> Result<Vec<SourceQuery>> {
        let (name, text) = super::input::read_text(
            &path.display().to_string(),
            "the workload file",
            super::input::QUERY_LIMIT_BYTES,
        )?;
        source::parse_file(&name, &text).map_err(|e| anyhow!("{e}"))
    };
    if let Some(w) = workload
        && w != "pg_stat_statements"
    {
        let path = std::path::Path::new(w);
        if path.is_dir() {
            let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("reading the directory {w}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sql"))
                .collect();
            files.sort();
            if files.is_empty() {
                bail!("{w} holds no .sql file; put one query per .sql file there");
            }
            // In a directory, a query goes by its file name.
            for f in files {
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let (_, text) = super::input::read_text(
                    &f.display().to_string(),
                    "the workload file",
                    super::input::QUERY_LIMIT_BYTES,
                )?;
                queries.extend(source::parse_file(&name, &text).map_err(|e| anyhow!("{e}"))?);
            }
        } else if is_log_file(path) {
            queries.extend(read_log_file(path)?);
        } else {
            queries.extend(read(path)?);
        }
        names.push(w.to_owned());
    }
    for q in query_files {
        if q == "-" {
            bail!(
                "a workload reads its queries from files: standard input (-) holds a single query"
            );
        }
        queries.extend(read(std::path::Path::new(q))?);
    }
    if !query_files.is_empty() {
        names.push(if query_files.len() == 1 {
            query_files[0].clone()
        } else {
            format!("{} query files", query_files.len())
        });
    }
    if workload == Some("pg_stat_statements") {
        names.insert(0, "pg_stat_statements".into());
    }
    Ok((names.join(" + "), queries))
}

/// A server log given as the workload: `.log` (stderr), `.csv` (csvlog) or `.json` (jsonlog).
fn is_log_file(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|x| x == "log" || x == "csv" || x == "json")
}

/// The statements a server log holds with their durations, counted, with the parameter
/// values logged beside them. What is not a query is named on standard error.
fn read_log_file(path: &std::path::Path) -> Result<Vec<SourceQuery>> {
    let (name, text) = super::input::read_text(
        &path.display().to_string(),
        "the server log",
        LOG_LIMIT_BYTES,
    )?;
    let read = crate::compare::workload::logfile::read_log(&name, &text);
    if read.executions == 0 {
        bail!(
            "{name} holds no statement logged with its duration.\n\
             hint: log them with log_min_duration_statement = 0 (and log_parameter_max_length = -1 \
             for their parameter values), or auto_explain.log_min_duration = 0"
        );
    }
    for s in &read.skipped {
        eprintln!(
            "pgplan: {name}: {} left out ({}): {}",
            s.id,
            s.reason,
            crate::sql::shorten(&s.text)
        );
    }
    if read.queries.is_empty() {
        bail!("{name} holds no query pgplan can run (every statement logged was left out)");
    }
    Ok(read.queries)
}

/// How much of a server log pgplan reads: logs are far larger than query files.
const LOG_LIMIT_BYTES: u64 = 1 << 30;

/// The candidates of a workload compare: `--index` and `--index-file`, each one CREATE INDEX.
fn read_candidates(args: &CompareArgs) -> Result<Vec<IndexCandidate>> {
    if !args.drop_indexes.is_empty() {
        bail!(
            "--drop-index is not supported with a workload yet: compare the drop query by query, or give the candidates to build with --index"
        );
    }
    if args.hypothetical || args.generic_plan {
        bail!(
            "--hypothetical and --generic-plan measure nothing; a workload is measured (queries without parameter values get their generic plan, labelled ESTIMATED)"
        );
    }
    if !args.params.is_empty() {
        bail!(
            "--param gives values to one query; in a workload, write `-- params: [...]` above each query"
        );
    }
    let mut candidates = Vec::new();
    for (i, text) in args.indexes.iter().enumerate() {
        let c = crate::sql::parse_index_candidate(text, &format!("pgplan_candidate_{}", i + 1))
            .map_err(|e| anyhow!("--index {}: {e}", i + 1))?;
        candidates.push(c);
    }
    if let Some(path) = &args.index_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        candidates.extend(
            crate::sql::parse_index_file(&text, "pgplan_file_candidate")
                .map_err(|e| anyhow!("{}: {e}", path.display()))?,
        );
    }
    if candidates.is_empty() {
        bail!("nothing to compare: give a candidate with --index or --index-file");
    }
    let mut names: Vec<&str> = candidates
        .iter()
        .filter(|c| !c.name_generated)
        .map(|c| c.name.as_str())
        .collect();
    names.sort_unstable();
    if let Some(dup) = names.windows(2).find(|w| w[0] == w[1]) {
        bail!(
            "two candidates are named {}; name them apart (CREATE INDEX name ON ...)",
            dup[0]
        );
    }
    Ok(candidates)
}

/// Refuses early, with the fix, when pg_stat_statements cannot be read.
pub(crate) async fn statements_workload(
    conn: &mut Connection,
    limits: &Limits,
    top: u32,
    min_calls: u64,
    screening: &mut Screening,
) -> Result<(Vec<SourceQuery>, Vec<String>)> {
    let major = conn.facts.major();
    let target = conn.target.clone();
    let database = conn.facts.database.clone();
    let (created, preloaded) = conn
        .read_only(limits, async |client| {
            dbw::statements_available(client).await
        })
        .await?;
    match (created, preloaded) {
        (true, true) => {}
        (false, true) => bail!(
            "pg_stat_statements is loaded on {target} but not created in database {database}.\n\
             hint: CREATE EXTENSION pg_stat_statements; in that database (it reads nothing until then)"
        ),
        (true, false) => bail!(
            "pg_stat_statements is created in database {database} but not loaded on {target}: the \
             view needs its library in shared_preload_libraries.\n\
             hint: add pg_stat_statements to shared_preload_libraries and restart the server, or give \
             the workload as files (--workload FILE|DIR)"
        ),
        (false, false) => bail!(
            "pg_stat_statements is neither loaded on {target} nor created in database {database}.\n\
             hint: add pg_stat_statements to shared_preload_libraries, restart, then CREATE EXTENSION \
             pg_stat_statements; or give the workload as files (--workload FILE|DIR)"
        ),
    }
    // pgplan's own statements (its catalog reads, its EXPLAIN runs) may fill the top of the
    // view after any earlier pgplan command: read past them, and leave them out.
    let fetch = i64::from(top).saturating_add(OWN_STATEMENTS_MARGIN);
    let (statements, window) = conn
        .read_only(limits, async |client| {
            dbw::top_statements(client, major, fetch, min_calls.min(i64::MAX as u64) as i64).await
        })
        .await?;
    let mut notes = Vec::new();
    let window_seconds = match &window {
        Some((seconds, source)) => {
            if source == "server_start" {
                notes.push(
                    "pg_stat_statements on PostgreSQL 13 records no reset time: calls per day count from the server's start, too few if it was reset since".into(),
                );
            }
            Some(*seconds)
        }
        None => None,
    };
    let all_exec_ms = statements.first().map(|s| s.all_exec_ms);
    let mut own_exec_ms = 0.0;
    let mut queries = Vec::new();
    let mut taken = 0;
    for s in statements {
        let screened = statements::screen(&s.query);
        if screened == Screened::Own {
            screening.own_left_out += 1;
            own_exec_ms += s.total_exec_ms;
            continue;
        }
        if screened == Screened::Control {
            screening.control_left_out += 1;
            continue;
        }
        if taken == top {
            break;
        }
        taken += 1;
        screening.read.push((s.queryid.clone(), s.total_exec_ms));
        let (query, rewrites) = match screened {
            Screened::Query { query, rewrites } => (query, rewrites),
            Screened::Skip(reason) => {
                screening.skipped.push(SkippedStatement {
                    id: s.queryid.clone(),
                    text: s.query.clone(),
                    reason,
                    calls: Some(s.calls),
                    total_exec_ms: Some(s.total_exec_ms),
                });
                continue;
            }
            Screened::Own | Screened::Control => unreachable!("left out above"),
        };
        for rewrite in rewrites {
            notes.push(format!("{}: {rewrite}", s.queryid));
        }
        // Calls per day as the table counters are: per day of at least a day.
        let calls_per_day = match window_seconds {
            Some(w) if w > 0.0 => s.calls * 86_400.0 / w.max(86_400.0),
            _ => s.calls,
        };
        queries.push(SourceQuery {
            id: s.queryid.clone(),
            queryid: Some(s.queryid),
            query,
            calls: Some(s.calls),
            calls_per_day,
            params: None,
        });
    }
    if screening.own_left_out > 0 {
        notes.push(format!(
            "{} of pgplan's own statements (its catalog reads and EXPLAIN runs) are in pg_stat_statements and were left out of the workload",
            screening.own_left_out
        ));
    }
    if screening.control_left_out > 0 {
        notes.push(format!(
            "{} transaction-control and session statements (BEGIN, SET, SHOW...) are not queries and were left out",
            screening.control_left_out
        ));
    }
    let read_ms: f64 = screening.read.iter().map(|(_, ms)| ms).sum();
    if let Some(all) = all_exec_ms.map(|a| a - own_exec_ms).filter(|a| *a > 0.0) {
        notes.push(format!(
            "the {} statements read account for {:.0}% of the execution time pg_stat_statements counts in this database",
            screening.read.len(),
            (read_ms / all * 100.0).clamp(0.0, 100.0)
        ));
    }
    Ok((queries, notes))
}

/// How many of pgplan's own statements the top of the view may hold beyond the `--top` asked
/// for: its distinct catalog reads and EXPLAIN forms, with room to spare.
const OWN_STATEMENTS_MARGIN: i64 = 200;

/// A name made of letters, digits and `_` only, for a file.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes every captured plan into `dir`: `<baseline|candidate>.<query>.<sample>.<run>.json`
/// (`baseline_again1` for a re-measured baseline, run `cold` first), to replay with `pgplan diff`.
fn save_plans(dir: &std::path::Path, report: &WorkloadReport) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |stem: &str, runs: &[QueryRuns]| -> Result<()> {
        for (query, per_sample) in report.queries.iter().zip(runs) {
            for (sample, result) in query.samples.iter().zip(per_sample) {
                let Ok(m) = result else { continue };
                for (i, raw) in m.raw_plans.iter().enumerate() {
                    let run = if i == 0 {
                        "cold".to_owned()
                    } else {
                        format!("run{i}")
                    };
                    let path = dir.join(format!(
                        "{stem}.{}.{}.{run}.json",
                        file_stem(&query.source.id),
                        file_stem(&sample.label)
                    ));
                    std::fs::write(&path, format!("{raw}\n"))
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Ok(())
    };
    for (n, baseline) in report.measurements.baselines.iter().enumerate() {
        let stem = if n == 0 {
            "baseline".to_owned()
        } else {
            format!("baseline_again{n}")
        };
        write(&stem, &baseline.queries)?;
    }
    for (i, result) in report.measurements.candidates.iter().enumerate() {
        if let Ok(run) = result {
            write(&file_stem(&report.names[i]), &run.queries)?;
        }
    }
    Ok(())
}

/// What a workload run is asked for, besides its queries and candidates.
#[derive(Debug, Clone)]
pub struct WorkloadSettings {
    /// How the report names the source ("pg_stat_statements", a file or directory...).
    pub source_name: String,
    /// Read pg_stat_statements' top statements (`top`, `min_calls`) besides `file_queries`.
    pub statements: Option<(u32, u64)>,
    pub runs: u32,
    pub min_gain: f64,
    pub allow_writes: bool,
    pub analyze: bool,
    pub allow_lasting_effects: bool,
    pub deadline: Option<Instant>,
    /// `--allow-probe-triggers`: the tables, as the user wrote them, whose representative
    /// write runs despite their triggers, rules or publications.
    pub probe_triggers: Vec<String>,
}

/// The workload's queries ready to measure, for `command` (`compare --workload`, `advise`):
/// refuses a read-only server (every candidate is built in a rolled-back transaction), reads
/// pg_stat_statements' top statements (`statements`: top, min calls) and `file_queries`, and
/// chooses their parameters' values. What the report should say goes to `warnings`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn workload_queries(
    conn: &mut Connection,
    limits: &Limits,
    command: &str,
    statements: Option<(u32, u64)>,
    file_queries: Vec<SourceQuery>,
    allow_writes: bool,
    allow_lasting_effects: bool,
    warnings: &mut Vec<String>,
    screening: &mut Screening,
    progress: &Progress,
) -> Result<Vec<WorkloadQuery>> {
    if conn.facts.in_recovery || conn.facts.read_only {
        bail!(
            "{} is read-only (a standby, or default_transaction_read_only): {command} \
             builds each candidate inside a rolled-back transaction.\n\
             hint: run it against a writable copy",
            conn.target
        );
    }
    let mut sources = Vec::new();
    if let Some((top, min_calls)) = statements {
        let (queries, notes) = statements_workload(conn, limits, top, min_calls, screening).await?;
        warnings.extend(notes);
        sources.extend(queries);
    }
    sources.extend(file_queries);
    if sources.is_empty() && screening.skipped.is_empty() {
        bail!("the workload holds no query to measure");
    }
    let writes = sources
        .iter()
        .filter(|q| matches!(q.query.kind, QueryKind::Write(_)))
        .count();
    if writes > 0 && !allow_writes {
        warnings.push(format!(
            "{writes} write(s) of the workload were not run (--allow-writes runs them, rolled back); \
             their SET lists still count for the HOT updates an index ends"
        ));
    }
    progress.update("choosing parameter values");
    let queries = prepare_queries(
        conn,
        limits,
        sources,
        allow_writes,
        allow_lasting_effects,
        false,
        screening,
    )
    .await?;
    if queries.is_empty() {
        bail!(
            "the workload holds no query pgplan can run: {}",
            screening
                .skipped
                .iter()
                .map(|s| format!("{} ({})", s.id, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(queries)
}

/// The tables the workload's writes and the candidates name, as the catalog names them
/// (read-only): (as written, as the catalog names it).
pub(crate) async fn relation_names(
    conn: &mut Connection,
    limits: &Limits,
    queries: &[WorkloadQuery],
    candidates: &[IndexCandidate],
) -> Result<Vec<(String, String)>> {
    let map = conn
        .read_only(limits, async |client| {
            let mut map = Vec::new();
            for q in queries {
                if let Some((table, _)) = updates::update_target(&q.source.query.text)
                    && let Some(name) = dbw::relation_name(client, &table).await?
                {
                    map.push((table, name));
                }
            }
            for c in candidates {
                if let Some(name) = dbw::relation_name(client, &c.table).await? {
                    map.push((c.table.clone(), name));
                }
            }
            Ok(map)
        })
        .await?;
    Ok(map)
}

/// The catalog's name for `table` as written, from [`relation_names`].
pub(crate) fn lookup_relation(resolved: &[(String, String)], table: &str) -> Option<String> {
    resolved
        .iter()
        .find(|(k, _)| k == table)
        .map(|(_, v)| v.clone())
}

/// The tables a read-write run may write, as regclass input: the targets of the workload's
/// statements (wherever they appear in one) and the tables a representative write was accepted
/// on despite what it fires there.
pub(crate) fn written_tables(
    queries: &[WorkloadQuery],
    accepted: &[crate::compare::workload::probe_guard::Accepted],
) -> Vec<String> {
    let mut written: Vec<String> = Vec::new();
    let from_queries = queries
        .iter()
        .flat_map(|q| crate::lasting_rows::written_tables(&q.source.query.text));
    let from_probes = accepted
        .iter()
        .filter(|a| !a.blockers.is_empty())
        .map(|a| a.table.clone());
    for table in from_queries.chain(from_probes) {
        if !written.contains(&table) {
            written.push(table);
        }
    }
    written
}

/// The notes a workload's report holds that are also printed on standard error: the
/// representative writes not run, or run because accepted.
pub(crate) fn warn_probe_notes<'a>(notes: impl IntoIterator<Item = &'a String>) {
    for note in notes {
        if crate::compare::workload::probe_guard::is_probe_note(note) {
            eprintln!("pgplan: warning: {}", crate::format::printable(note));
        }
    }
}

/// Reads, measures and judges a workload on an open connection: `compare --workload` and the
/// demo's workload story.
pub async fn run_workload(
    conn: &mut Connection,
    limits: &Limits,
    file_queries: Vec<SourceQuery>,
    candidates: &[IndexCandidate],
    settings: &WorkloadSettings,
    mut writers: Option<&mut Writers>,
    progress: &Progress,
) -> Result<WorkloadReport> {
    let mut warnings = Vec::new();
    for c in candidates {
        if c.concurrently {
            warnings.push(format!(
                "{}: CONCURRENTLY cannot run inside a transaction block, so pgplan builds it plainly \
                 inside the rolled-back transaction (it holds a SHARE lock on {} while it builds: writes \
                 to the table wait)",
                c.describe(),
                c.table
            ));
        }
    }
    let conn = &mut *conn;
    let limits = *limits;
    let mut screening = Screening::default();
    // A table accepted by a name that resolves to none is an error before any work.
    let accepted =
        super::probe_guard::resolve_accepted(conn, &limits, &settings.probe_triggers).await?;
    // Read before any of the workload's SQL is prepared, planned or run: a function it calls may
    // make what no rollback undoes.
    let mut lasting = super::guard::LastingWatch::start(conn, &limits, settings.allow_writes).await;
    let queries = match workload_queries(
        conn,
        &limits,
        "compare --workload",
        settings.statements,
        file_queries,
        settings.allow_writes,
        settings.allow_lasting_effects,
        &mut warnings,
        &mut screening,
        progress,
    )
    .await
    {
        Ok(queries) => queries,
        Err(e) => return Err(lasting.error(conn, &limits, e).await),
    };
    // Before any of the workload's writes or a representative write runs: the rows their
    // tables' triggers may commit outside the rollback.
    if settings.allow_writes {
        lasting
            .watch_rows(conn, &limits, written_tables(&queries, &accepted))
            .await;
    }
    let untracked = conn.facts.superuser;
    if !untracked {
        warnings.push(
            "pgplan's own runs may show in pg_stat_statements (keeping them out needs a superuser \
         for SET LOCAL pg_stat_statements.track); it never resets it"
                .into(),
        );
    }
    let engine = EngineOptions {
        runs: settings.runs,
        allow_writes: settings.allow_writes,
        analyze: settings.analyze,
        deadline: settings.deadline,
        allow_lasting_effects: settings.allow_lasting_effects,
        untracked,
        probe_accepted: accepted.iter().map(|a| a.table.clone()).collect(),
    };
    if settings.allow_writes {
        warnings
            .extend(super::probe_guard::probe_notes(conn, &limits, candidates, &accepted).await?);
    }
    let measurements = match measure_workload(
        conn,
        &limits,
        &queries,
        candidates,
        &[],
        &engine,
        writers.as_deref_mut(),
        progress,
    )
    .await
    {
        Ok(measurements) => measurements,
        Err(e) => return Err(lasting.error(conn, &limits, e).await),
    };
    if let Some(writers) = writers {
        warnings.extend(writers.take_notes());
    }
    warnings.extend(lasting.notes(conn, &limits).await);
    // Unnamed candidates go by the name PostgreSQL gave them, made unique as it would.
    let mut names: Vec<String> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let plan_name = measurements.candidates[i]
            .as_ref()
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let taken: Vec<&str> = names.iter().map(String::as_str).collect();
        let name = display_name(&CandidateSpec::Create(c.clone()), &plan_name, &taken);
        names.push(name);
    }
    let resolved = relation_names(conn, &limits, &queries, candidates).await?;
    let lookup = |t: &str| lookup_relation(&resolved, t);
    let updates = workload_updates(&queries, lookup);
    for estimate in &measurements.estimate_changes {
        warnings.push(format!(
            "a build updated the planner estimates of {} in place, and that outlives the \
             rollback: {}; the baseline was measured again before the next candidate",
            estimate.table,
            estimate.describe()
        ));
    }
    warnings.extend(measurements.figures_put_back.iter().cloned());
    warnings.extend(crate::compare::workload::probe_residue::residue_notes(
        &measurements.probe_residue,
    ));
    if !measurements.skipped_for_budget.is_empty() {
        let skipped: Vec<&str> = measurements
            .skipped_for_budget
            .iter()
            .map(|&i| names[i].as_str())
            .collect();
        warnings.push(format!(
            "--budget ran out before these candidates were measured: {}",
            skipped.join(", ")
        ));
    }
    let ranking = judge(
        &queries,
        &measurements,
        candidates,
        &updates,
        |c| lookup(&c.table),
        settings.min_gain,
    );
    let unmeasured = unmeasured::unmeasured(&queries, &measurements, &names);
    Ok(WorkloadReport {
        server_version: conn.facts.version.clone(),
        source: settings.source_name.clone(),
        queries,
        candidates: candidates.to_vec(),
        names,
        measurements,
        ranking,
        runs: settings.runs,
        min_gain_percent: settings.min_gain,
        allow_writes: settings.allow_writes,
        unmeasured,
        warnings,
        screening,
    })
}

/// `pgplan compare --workload ...` (or several query files).
pub fn compare_workload(args: CompareArgs, options: &TextOptions) -> Result<u8> {
    if args.format == Format::Html {
        bail!("--format html is not available for a workload yet: use text, json or markdown");
    }
    let (source_name, file_queries) = read_sources(&args)?;
    let candidates = read_candidates(&args)?;
    if args.runs == 0 {
        bail!(
            "--runs must be at least 1 (got 0): the warm figures are the median of the counted runs"
        );
    }
    if !(0.0..=100.0).contains(&args.min_gain) {
        bail!(
            "--min-gain must be a percentage from 0 to 100 (got {})",
            args.min_gain
        );
    }
    let params = resolve(&args.conn)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let started = Instant::now();
    let progress = Progress::new();
    let settings = WorkloadSettings {
        source_name,
        statements: (args.workload.as_deref() == Some("pg_stat_statements"))
            .then_some((args.top, args.min_calls)),
        runs: args.runs,
        min_gain: args.min_gain,
        allow_writes: args.allow_writes,
        analyze: args.analyze,
        allow_lasting_effects: args.allow_lasting_effects,
        deadline: args.budget.map(|b| started + b),
        probe_triggers: args.allow_probe_triggers.clone(),
    };
    let report = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        let builds = !candidates.is_empty();
        let mut writers = open_writers(
            args.writers.policy(),
            &params,
            &args.session,
            &interrupt,
            &conn,
            builds,
        )
        .await?;
        run_workload(
            &mut conn,
            &limits,
            file_queries,
            &candidates,
            &settings,
            Some(&mut writers),
            &progress,
        )
        .await
    }))?;
    progress.clear();
    if let Some(dir) = &args.save_plans {
        save_plans(dir, &report)?;
    }
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    match args.format {
        Format::Text => render::write_text(&mut out, &report, &text_options)?,
        Format::Json => write_json(&mut out, &render::WorkloadDoc::new(&report))?,
        Format::Markdown => render::write_markdown(&mut out, &report)?,
        Format::Html => bail!("--format html is not available for a workload yet"),
    }
    out.flush()?;
    warn_probe_notes(&report.warnings);
    let failed: Vec<(usize, &str)> = report.failed().collect();
    for (i, error) in &failed {
        eprintln!("pgplan: candidate {} failed: {error}", report.names[*i]);
    }
    warn_unmeasured(&report.unmeasured);
    if report.ranking.is_empty() {
        eprintln!(
            "pgplan: nothing was measured: none of the {} candidate(s) could be measured",
            report.candidates.len()
        );
    }
    if !failed.is_empty() || !report.unmeasured.is_empty() || report.ranking.is_empty() {
        return Ok(exit::ERROR);
    }
    Ok(if crate::lasting_state::any_left(&report.warnings) {
        exit::LEFT_BEHIND
    } else if args.fail_unless_pays && report.best().is_none() {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}

/// The planner's total cost of one sample of `query`, and the names of the indexes its plan
/// scans, planned (never run) under a savepoint that is rolled back; the prepared statement a
/// parameterised query needs is prepared and deallocated around every plan, so a cached generic
/// plan never hides an index created since. `None` when it cannot be planned.
async fn planned_cost(
    client: &tokio_postgres::Client,
    query: &WorkloadQuery,
    sample: usize,
) -> Result<Option<(f64, Vec<String>)>, SessionError> {
    let s = &query.samples[sample];
    let parameters = query.source.query.max_parameter.unwrap_or(0);
    run(client, "SAVEPOINT pgplan_plan", "setting a savepoint").await?;
    let mut prepared = None;
    let plan = async {
        let statement = if parameters > 0 {
            let p = explain::prepare(
                client,
                &query.source.query.text,
                &s.params,
                s.generic || s.params.len() != parameters as usize,
                parameters,
            )
            .await?;
            prepared = Some(p.name);
            p.statement
        } else {
            query.source.query.text.clone()
        };
        explain::explain(
            client,
            &explain_sql(&statement, false),
            &format!("planning {}", query.source.id),
        )
        .await
    }
    .await;
    if client.is_closed() {
        return Err(session_error("planning", "the connection closed"));
    }
    run(
        client,
        "ROLLBACK TO SAVEPOINT pgplan_plan",
        "rolling back the plan",
    )
    .await?;
    if let Some(name) = prepared {
        explain::deallocate(client, &name).await?;
    }
    if stop_requested() {
        return Err(session_error("planning", "interrupted"));
    }
    let Ok(raw) = plan else { return Ok(None) };
    let Ok(parsed) = parse_plan(&raw) else {
        return Ok(None);
    };
    let Some(cost) = parsed.root().total_cost else {
        return Ok(None);
    };
    let indexes = parsed
        .nodes
        .iter()
        .filter_map(|n| n.index_name.clone())
        .collect();
    Ok(Some((cost, indexes)))
}

/// The planner's cost of every sample of the queries in `which`, `costs[q][s]`.
async fn planned_costs(
    client: &tokio_postgres::Client,
    queries: &[WorkloadQuery],
    which: impl Iterator<Item = usize>,
) -> Result<Vec<(usize, Vec<Option<(f64, Vec<String>)>>)>, SessionError> {
    let mut out = Vec::new();
    for q in which {
        let mut per_sample = Vec::new();
        for s in 0..queries[q].samples.len() {
            per_sample.push(planned_cost(client, &queries[q], s).await?);
        }
        out.push((q, per_sample));
    }
    Ok(out)
}

/// With HypoPG: each candidate created hypothetically (nothing is built: only this backend's
/// planner sees it), the queries `serves[i]` lists for candidate i planned with it, and the
/// cost saved per day against the same plans without it. One read-only transaction; every
/// hypothetical index is dropped again inside it, before the next one is made — HypoPG keeps
/// them in backend memory, outside any transaction, and a pooled server connection (PgBouncer
/// in transaction mode) would hand them to the next client's planner. A candidate HypoPG
/// cannot represent (GIN and GiST: HypoPG 1.3 has btree, brin, hash and bloom) is its error.
pub async fn estimate_hypothetical(
    conn: &mut Connection,
    limits: &Limits,
    queries: &[WorkloadQuery],
    candidates: &[IndexCandidate],
    serves: &[Vec<usize>],
    progress: &Progress,
) -> Result<Vec<Result<Estimate, String>>> {
    let mut wanted: Vec<usize> = serves.iter().flatten().copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let result = conn
        .read_only(limits, async |client| {
            progress.update("HypoPG: planning the workload without the candidates");
            let base = planned_costs(client, queries, wanted.iter().copied()).await?;
            let mut out = Vec::with_capacity(candidates.len());
            for (i, candidate) in candidates.iter().enumerate() {
                progress.update(&format!(
                    "HypoPG: candidate {} of {} ({})",
                    i + 1,
                    candidates.len(),
                    candidate.describe()
                ));
                run(client, "SAVEPOINT pgplan_hypo", "setting a savepoint").await?;
                let created = explain::hypopg_create(client, &candidate.sql).await;
                let (oid, name) = match created {
                    Ok(c) => c,
                    Err(e) => {
                        run(client, "ROLLBACK TO SAVEPOINT pgplan_hypo", "rolling back").await?;
                        out.push(Err(e.to_string()));
                        continue;
                    }
                };
                let measured = async {
                    let size_bytes = explain::hypopg_size(client, oid).await?;
                    let with = planned_costs(client, queries, serves[i].iter().copied()).await?;
                    Ok::<_, SessionError>((size_bytes, with))
                }
                .await;
                if measured.is_err() && !client.is_closed() {
                    // Back to a usable transaction, so the hypothetical index can be dropped.
                    let _ = run(client, "ROLLBACK TO SAVEPOINT pgplan_hypo", "rolling back").await;
                }
                explain::hypopg_drop(client, oid).await?;
                let (size_bytes, with) = measured?;
                let mut saved = 0.0;
                let mut used = false;
                for (q, samples) in &with {
                    let Some((_, before)) = base.iter().find(|(b, _)| b == q) else {
                        continue;
                    };
                    let mut diffs = Vec::new();
                    for (after, before) in samples.iter().zip(before) {
                        if let (Some((a, names)), Some((b, _))) = (after, before) {
                            used |= names.contains(&name);
                            diffs.push(b - a);
                        }
                    }
                    if !diffs.is_empty() {
                        saved += diffs.iter().sum::<f64>() / diffs.len() as f64
                            * queries[*q].source.calls_per_day;
                    }
                }
                out.push(Ok(Estimate {
                    cost_saved_per_day: saved,
                    used,
                    size_bytes,
                }));
            }
            Ok(out)
        })
        .await;
    progress.clear();
    result.map_err(|e| anyhow!("estimating the candidates with HypoPG: {e}"))
}

/// Names on standard error every query that could not be measured, so that a run which exits
/// non-zero for it says why even when its report went to a file.
pub(crate) fn warn_unmeasured(unmeasured: &[crate::compare::workload::unmeasured::Unmeasured]) {
    use crate::format::printable;
    for u in unmeasured {
        eprintln!(
            "pgplan: query {} could not be measured ({}): {}",
            printable(&u.query),
            printable(&u.during),
            printable(&u.error.replace('\n', "; "))
        );
    }
}
