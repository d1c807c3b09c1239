//! `pgplan compare --workload`: reads the workload (files, a log, or `pg_stat_statements`)
//! and the candidates, has the measurement engine measure them, and writes the report and the
//! exit code. What `advise` and `check` share of the workload's reading lives here too.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::CompareArgs;
use crate::compare::workload::statements::{self, Screened, Screening, SkippedStatement};
use crate::compare::workload::unmeasured;
use crate::compare::workload::{
    QueryRuns, SourceQuery, WorkloadMeasurements, WorkloadQuery, WorkloadReport, judge, source,
    updates, workload_updates,
};
use crate::compare::{CandidateSpec, display_name};
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::db::workload as dbw;
use crate::exit;
use crate::report::{Format, TextOptions, workload as render, write_json};
use crate::sql::{IndexCandidate, QueryKind};

use super::live::{Interrupt, open, report_destination, resolve, runtime};
use super::progress::Progress;
use super::writers::open_writers;
use crate::measure::guard::LastingWatch;
use crate::measure::prepare::prepare_queries;
use crate::measure::workload::{EngineOptions, measure_workload};
use crate::measure::writers::Writers;

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

/// The workload's statements from `pg_stat_statements`: the `top` by execution time with at
/// least `min_calls` calls, pgplan's own and transaction-control statements left out, what cannot
/// be run skipped with its reason (in `screening`), and notes on what the view covers. Refuses
/// early, with the fix, when the view cannot be read.
pub(crate) async fn statements_workload(
    conn: &mut Connection,
    limits: &Limits,
    top: u32,
    min_calls: u64,
    screening: &mut Screening,
) -> Result<(Vec<SourceQuery>, Vec<String>)> {
    require_statements(conn, limits).await?;
    let major = conn.facts.major();
    // pgplan's own statements (its catalog reads, its EXPLAIN runs) may fill the top of the
    // view after any earlier pgplan command: read past them, and leave them out.
    let fetch = i64::from(top).saturating_add(OWN_STATEMENTS_MARGIN);
    let (statements, window) = conn
        .read_only(limits, async |client| {
            dbw::top_statements(client, major, fetch, min_calls.min(i64::MAX as u64) as i64).await
        })
        .await?;
    let mut notes = Vec::new();
    let window_seconds = window.map(|(seconds, source)| {
        if source == "server_start" {
            notes.push(
                "pg_stat_statements on PostgreSQL 13 records no reset time: calls per day count from the server's start, too few if it was reset since".into(),
            );
        }
        seconds
    });
    let all_exec_ms = statements.first().map(|s| s.all_exec_ms);
    let (queries, own_exec_ms) =
        select_statements(statements, top, window_seconds, screening, &mut notes);
    notes.extend(screening_notes(
        screening,
        all_exec_ms.map(|a| a - own_exec_ms),
    ));
    Ok((queries, notes))
}

/// Refuses, with the fix, when `pg_stat_statements` is not both loaded and created.
async fn require_statements(conn: &mut Connection, limits: &Limits) -> Result<()> {
    let target = conn.target.clone();
    let database = conn.facts.database.clone();
    let (created, preloaded) = conn
        .read_only(limits, async |client| {
            dbw::statements_available(client).await
        })
        .await?;
    match (created, preloaded) {
        (true, true) => Ok(()),
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
}

/// The `top` statements the workload keeps, screened, with calls per day over `window_seconds`;
/// returns them and the execution time of pgplan's own statements left out.
fn select_statements(
    statements: Vec<dbw::Statement>,
    top: u32,
    window_seconds: Option<f64>,
    screening: &mut Screening,
    notes: &mut Vec<String>,
) -> (Vec<SourceQuery>, f64) {
    let mut own_exec_ms = 0.0;
    let mut queries = Vec::new();
    let mut taken = 0;
    for s in statements {
        let (query, rewrites) = match statements::screen(&s.query) {
            Screened::Own => {
                screening.own_left_out += 1;
                own_exec_ms += s.total_exec_ms;
                continue;
            }
            Screened::Control => {
                screening.control_left_out += 1;
                continue;
            }
            _ if taken == top => break,
            Screened::Query { query, rewrites } => {
                taken += 1;
                screening.read.push((s.queryid.clone(), s.total_exec_ms));
                (query, rewrites)
            }
            Screened::Skip(reason) => {
                taken += 1;
                screening.read.push((s.queryid.clone(), s.total_exec_ms));
                screening.skipped.push(SkippedStatement {
                    id: s.queryid.clone(),
                    text: s.query.clone(),
                    reason,
                    calls: Some(s.calls),
                    total_exec_ms: Some(s.total_exec_ms),
                });
                continue;
            }
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
    (queries, own_exec_ms)
}

/// What the screening left out, and the share of the database's execution time the statements
/// read account for (`others_exec_ms`: all of it but pgplan's own).
fn screening_notes(screening: &Screening, others_exec_ms: Option<f64>) -> Vec<String> {
    let mut notes = Vec::new();
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
    if let Some(all) = others_exec_ms.filter(|a| *a > 0.0) {
        notes.push(format!(
            "the {} statements read account for {:.0}% of the execution time pg_stat_statements counts in this database",
            screening.read.len(),
            (read_ms / all * 100.0).clamp(0.0, 100.0)
        ));
    }
    notes
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
    writers: Option<&mut Writers>,
    progress: &Progress,
) -> Result<WorkloadReport> {
    let mut warnings = concurrently_notes(candidates);
    let mut screening = Screening::default();
    let (queries, measurements) = measured(
        conn,
        limits,
        (file_queries, candidates),
        settings,
        writers,
        progress,
        (&mut warnings, &mut screening),
    )
    .await?;
    let names = candidate_names(candidates, &measurements);
    let resolved = relation_names(conn, limits, &queries, candidates).await?;
    let lookup = |t: &str| lookup_relation(&resolved, t);
    let updates = workload_updates(&queries, lookup);
    warnings.extend(measurement_notes(&measurements, &names));
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

/// What a `CONCURRENTLY` candidate becomes inside the rolled-back transaction.
fn concurrently_notes(candidates: &[IndexCandidate]) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| c.concurrently)
        .map(|c| {
            format!(
                "{}: CONCURRENTLY cannot run inside a transaction block, so pgplan builds it plainly \
                 inside the rolled-back transaction (it holds a SHARE lock on {} while it builds: writes \
                 to the table wait)",
                c.describe(),
                c.table
            )
        })
        .collect()
}

/// The workload read and measured between the two readings of the server's lasting state (an
/// error names what the run left too); the run's notes and what was screened out are added to
/// `warnings` and `screening`.
async fn measured(
    conn: &mut Connection,
    limits: &Limits,
    (file_queries, candidates): (Vec<SourceQuery>, &[IndexCandidate]),
    settings: &WorkloadSettings,
    mut writers: Option<&mut Writers>,
    progress: &Progress,
    (warnings, screening): (&mut Vec<String>, &mut Screening),
) -> Result<(Vec<WorkloadQuery>, WorkloadMeasurements)> {
    // A table accepted by a name that resolves to none is an error before any work.
    let accepted =
        super::probe_guard::resolve_accepted(conn, limits, &settings.probe_triggers).await?;
    // Read before any of the workload's SQL is prepared, planned or run: a function it calls may
    // make what no rollback undoes.
    let mut lasting = LastingWatch::start(conn, limits, settings.allow_writes).await;
    let queries = match workload_queries(
        conn,
        limits,
        "compare --workload",
        settings.statements,
        file_queries,
        settings.allow_writes,
        settings.allow_lasting_effects,
        warnings,
        screening,
        progress,
    )
    .await
    {
        Ok(queries) => queries,
        Err(e) => return Err(lasting.error(conn, limits, e).await),
    };
    // Before any of the workload's writes or a representative write runs: the rows their
    // tables' triggers may commit outside the rollback.
    if settings.allow_writes {
        lasting
            .watch_rows(conn, limits, written_tables(&queries, &accepted))
            .await;
    }
    let engine = engine_options(conn, settings, &accepted, warnings);
    if settings.allow_writes {
        let notes = super::probe_guard::probe_notes(conn, limits, candidates, &accepted).await?;
        warnings.extend(notes);
    }
    let writers_now = writers.as_deref_mut();
    let measured = measure_workload(
        conn,
        limits,
        &queries,
        candidates,
        &[],
        &engine,
        writers_now,
        progress,
    )
    .await;
    let measurements = match measured {
        Ok(measurements) => measurements,
        Err(e) => return Err(lasting.error(conn, limits, e).await),
    };
    if let Some(writers) = writers {
        warnings.extend(writers.take_notes());
    }
    warnings.extend(lasting.notes(conn, limits).await);
    Ok((queries, measurements))
}

/// How the engine measures this workload; a note when pgplan's own runs cannot be kept out of
/// `pg_stat_statements`.
fn engine_options(
    conn: &Connection,
    settings: &WorkloadSettings,
    accepted: &[crate::compare::workload::probe_guard::Accepted],
    warnings: &mut Vec<String>,
) -> EngineOptions {
    let untracked = conn.facts.superuser;
    if !untracked {
        warnings.push(
            "pgplan's own runs may show in pg_stat_statements (keeping them out needs a superuser \
         for SET LOCAL pg_stat_statements.track); it never resets it"
                .into(),
        );
    }
    EngineOptions {
        runs: settings.runs,
        allow_writes: settings.allow_writes,
        analyze: settings.analyze,
        deadline: settings.deadline,
        allow_lasting_effects: settings.allow_lasting_effects,
        untracked,
        probe_accepted: accepted.iter().map(|a| a.table.clone()).collect(),
    }
}

/// Unnamed candidates go by the name PostgreSQL gave them, made unique as it would.
fn candidate_names(
    candidates: &[IndexCandidate],
    measurements: &WorkloadMeasurements,
) -> Vec<String> {
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
    names
}

/// What the measuring changed that outlives it, and the candidates the budget left out.
fn measurement_notes(measurements: &WorkloadMeasurements, names: &[String]) -> Vec<String> {
    let mut notes: Vec<String> = measurements
        .estimate_changes
        .iter()
        .map(|estimate| {
            format!(
                "a build updated the planner estimates of {} in place, and that outlives the \
                 rollback: {}; the baseline was measured again before the next candidate",
                estimate.table,
                estimate.describe()
            )
        })
        .collect();
    notes.extend(measurements.figures_put_back.iter().cloned());
    notes.extend(crate::compare::workload::probe_residue::residue_notes(
        &measurements.probe_residue,
    ));
    if !measurements.skipped_for_budget.is_empty() {
        let skipped: Vec<&str> = measurements
            .skipped_for_budget
            .iter()
            .map(|&i| names[i].as_str())
            .collect();
        notes.push(format!(
            "--budget ran out before these candidates were measured: {}",
            skipped.join(", ")
        ));
    }
    notes
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
    let progress = Progress::new();
    let settings = workload_settings(&args, source_name, Instant::now());
    let report = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        let builds = !candidates.is_empty();
        let policy = args.writers.policy();
        let mut writers =
            open_writers(policy, &params, &args.session, &interrupt, &conn, builds).await?;
        let writers = Some(&mut writers);
        let settings = &settings;
        run_workload(
            &mut conn,
            &limits,
            file_queries,
            &candidates,
            settings,
            writers,
            &progress,
        )
        .await
    }))?;
    progress.clear();
    if let Some(dir) = &args.save_plans {
        save_plans(dir, &report)?;
    }
    write_report(&args, &report, options)?;
    Ok(workload_exit(&report, args.fail_unless_pays))
}

/// The workload's settings from the arguments, its budget counted from `started`.
fn workload_settings(
    args: &CompareArgs,
    source_name: String,
    started: Instant,
) -> WorkloadSettings {
    WorkloadSettings {
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
    }
}

/// The report in the asked format, then on standard error what failed or was not measured.
fn write_report(args: &CompareArgs, report: &WorkloadReport, options: &TextOptions) -> Result<()> {
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    match args.format {
        Format::Text => render::write_text(&mut out, report, &text_options)?,
        Format::Json => write_json(&mut out, &render::WorkloadDoc::new(report))?,
        Format::Markdown => render::write_markdown(&mut out, report)?,
        Format::Html => bail!("--format html is not available for a workload yet"),
    }
    out.flush()?;
    warn_probe_notes(&report.warnings);
    for (i, error) in report.failed() {
        eprintln!("pgplan: candidate {} failed: {error}", report.names[i]);
    }
    warn_unmeasured(&report.unmeasured);
    if report.ranking.is_empty() {
        eprintln!(
            "pgplan: nothing was measured: none of the {} candidate(s) could be measured",
            report.candidates.len()
        );
    }
    Ok(())
}

/// The exit code of a measured workload: an error when anything asked for was not measured.
fn workload_exit(report: &WorkloadReport, fail_unless_pays: bool) -> u8 {
    if report.failed().next().is_some()
        || !report.unmeasured.is_empty()
        || report.ranking.is_empty()
    {
        exit::ERROR
    } else if crate::lasting_state::any_left(&report.warnings) {
        exit::LEFT_BEHIND
    } else if fail_unless_pays && report.best().is_none() {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    }
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
