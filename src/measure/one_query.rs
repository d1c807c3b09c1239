//! One query, compared: the server checked for what the request needs, the baseline and each
//! candidate measured in its own transaction that is always rolled back (the baseline again when
//! a build changed the planner's estimates), then judged and ranked.

use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use crate::compare::{
    BaselineRerun, CandidateOutcome, CandidateRun, CandidateSpec, CompareReport, CompareRequest,
    EstimateChange, Judged, Measurement, Mode, TableEstimate, display_name, estimate_changes,
    judge, rank,
};
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::plan::{Analysis, parse_plan, side_effects};
use crate::sql::{IndexCandidate, QueryKind, quote_ident};

use super::Observer;
use super::build::{SetupFacts, build_index};
use super::guard;
use super::writers::Writers;
use crate::compare::writers as writer_policy;
use crate::db::cancel::stop_requested;

/// What a transaction sets up before the measured runs.
#[derive(Debug, Clone, Copy)]
enum Setup<'a> {
    Baseline,
    Create(&'a IndexCandidate),
    Drop(&'a str),
    HypotheticalCreate(&'a IndexCandidate),
    HypotheticalDrop(&'a str),
}

/// Backend-local state a transaction created, which ROLLBACK does not undo and which must be
/// removed before the transaction ends (a pooled server connection would keep it otherwise).
#[derive(Debug, Default)]
struct Leftovers {
    prepared: Option<String>,
    hypothetical: Option<u32>,
    hidden: Option<String>,
}

/// Runs the setup and the measured runs; `leftovers` records what must be undone.
async fn setup_and_runs(
    client: &tokio_postgres::Client,
    request: &CompareRequest,
    setup: Setup<'_>,
    leftovers: &mut Leftovers,
    progress: &dyn Observer,
    label: &str,
    major: u32,
) -> Result<(SetupFacts, Vec<String>), SessionError> {
    let mut facts = SetupFacts::default();
    match setup {
        Setup::Baseline => {}
        Setup::Create(candidate) => {
            facts = build_index(client, candidate, request.analyze, progress, label).await?;
        }
        Setup::Drop(name) => {
            let Some(existing) = explain::existing_index(client, name).await? else {
                return Err(SessionError {
                    context: format!("--drop-index {name}"),
                    message: "no such index (check the name and the search_path, or qualify it with its schema)"
                        .into(),
                    sqlstate: None,
                });
            };
            facts.size_bytes = Some(existing.size_bytes);
            facts.plan_index_names = existing.plan_names;
            progress.update(&format!("{label}: dropping {name}"));
            let started = Instant::now();
            run(
                client,
                &format!("DROP INDEX {name}"),
                &format!("dropping {name}"),
            )
            .await?;
            facts.build_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        }
        Setup::HypotheticalCreate(candidate) => {
            let (oid, name) = explain::hypopg_create(client, &candidate.sql).await?;
            leftovers.hypothetical = Some(oid);
            facts.size_bytes = explain::hypopg_size(client, oid).await?;
            facts.plan_index_names = vec![name];
        }
        Setup::HypotheticalDrop(name) => {
            let Some(existing) = explain::existing_index(client, name).await? else {
                return Err(SessionError {
                    context: format!("--drop-index {name}"),
                    message: "no such index".into(),
                    sqlstate: None,
                });
            };
            explain::hypopg_hide(client, name).await?;
            leftovers.hidden = Some(name.to_owned());
            facts.size_bytes = Some(existing.size_bytes);
            facts.plan_index_names = existing.plan_names;
        }
    }

    let statement = statement(client, request, leftovers).await?;
    let measured = request.mode == Mode::Measured;
    if measured && request.cold {
        // The tables the query reads, from its plan (planning reads no table pages), evicted
        // with their indexes, the candidate's included, so the first run starts truly cold.
        progress.update(&format!("{label}: evicting the query's relations"));
        let raw = explain::explain(
            client,
            &explain_sql(&statement, false),
            "planning the query to find its tables",
        )
        .await?;
        let tables = parse_plan(&raw)
            .map(|plan| plan_tables(&plan))
            .unwrap_or_default();
        facts.evicted_buffers = Some(crate::db::buffercache::evict(client, &tables, major).await?);
    }
    if measured && !request.allow_writes {
        guard::read_only_from_here(client).await?;
    }
    let sql = explain_sql(&statement, measured);
    let writes = matches!(request.query.kind, QueryKind::Write(_));
    let total = if measured { 1 + request.runs } else { 1 };
    let mut plans = Vec::with_capacity(total as usize);
    for i in 0..total {
        let which = if i == 0 {
            if measured && request.cold {
                "cold run".to_owned()
            } else if measured {
                "first run".to_owned()
            } else {
                "estimating".to_owned()
            }
        } else {
            format!("run {i} of {}", request.runs)
        };
        if stop_requested() {
            return Err(interrupted(label));
        }
        progress.update(&format!("{label}: {which}"));
        // A write runs under a savepoint that is rolled back, so every run sees the same rows.
        if writes {
            run(client, "SAVEPOINT pgplan_run", "setting a savepoint").await?;
        }
        let context = format!("running the query ({label}, {which})");
        plans.push(
            explain::explain(client, &sql, &context)
                .await
                .map_err(guard::explain_read_only)?,
        );
        if writes {
            run(
                client,
                "ROLLBACK TO SAVEPOINT pgplan_run",
                "rolling back the run",
            )
            .await?;
        }
    }
    Ok((facts, plans))
}

/// The statement the runs explain: the query itself, or with parameters `EXECUTE` of a prepared
/// statement (recorded in `leftovers`, to be deallocated).
async fn statement(
    client: &tokio_postgres::Client,
    request: &CompareRequest,
    leftovers: &mut Leftovers,
) -> Result<String, SessionError> {
    // Parameters go through a prepared statement, with plan_cache_mode set for this transaction
    // only: a custom plan for the given values, or the generic plan.
    let statement = if !request.params.is_empty() || request.mode == Mode::GenericPlan {
        let prepared = explain::prepare(
            client,
            &request.query.text,
            &request.params,
            request.mode == Mode::GenericPlan,
            request.query.max_parameter.unwrap_or(0),
        )
        .await?;
        leftovers.prepared = Some(prepared.name);
        prepared.statement
    } else {
        request.query.text.clone()
    };
    Ok(statement)
}

/// The error that ends a transaction's work once the user has interrupted.
pub(super) fn interrupted(label: &str) -> SessionError {
    SessionError {
        context: label.to_owned(),
        message: "interrupted".into(),
        sqlstate: None,
    }
}

/// Undoes backend-local state; the transaction itself is rolled back by the caller.
async fn clean_up(
    client: &tokio_postgres::Client,
    leftovers: &Leftovers,
) -> Result<(), SessionError> {
    if let Some(name) = &leftovers.prepared {
        explain::deallocate(client, name).await?;
    }
    if let Some(oid) = leftovers.hypothetical {
        explain::hypopg_drop(client, oid).await?;
    }
    if let Some(name) = &leftovers.hidden {
        explain::hypopg_unhide(client, name).await?;
    }
    Ok(())
}

/// One transaction: setup, measured runs, cleanup, ROLLBACK.
async fn measure(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
    setup: Setup<'_>,
    progress: &dyn Observer,
    label: &str,
    writers: Option<&mut Writers>,
) -> Result<(SetupFacts, Measurement), SessionError> {
    if stop_requested() {
        return Err(interrupted(label));
    }
    let major = conn.facts.major();
    // A build holds a SHARE lock and a drop an ACCESS EXCLUSIVE one until the transaction ends:
    // those are watched for the writers they block.
    let writers = writers.filter(|_| matches!(setup, Setup::Create(_) | Setup::Drop(_)));
    let work = async |client: &tokio_postgres::Client| {
        run(client, "SAVEPOINT pgplan_work", "setting a savepoint").await?;
        let mut leftovers = Leftovers::default();
        let setup_and_runs = setup_and_runs(
            client,
            request,
            setup,
            &mut leftovers,
            progress,
            label,
            major,
        );
        let result = match writers {
            Some(writers) => writers.guard(client, setup_and_runs).await,
            None => setup_and_runs.await,
        };
        if result.is_err() {
            // Back to a usable transaction so the cleanup below can run.
            let _ = run(client, "ROLLBACK TO SAVEPOINT pgplan_work", "rolling back").await;
        }
        clean_up(client, &leftovers).await?;
        result
    };
    let (facts, raw_plans) = if request.mode == Mode::Hypothetical {
        // Hypothetical indexes write nothing: read-only, so it works on a standby.
        conn.read_only(limits, work).await?
    } else {
        conn.rolled_back(limits, work).await?
    };
    let mut analyses = raw_plans
        .iter()
        .map(|raw| {
            parse_plan(raw)
                .map(|p| Analysis::from_server(p, major))
                .map_err(|e| SessionError {
                    context: "reading the plan the server returned".into(),
                    message: e.to_string(),
                    sqlstate: None,
                })
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let cold = analyses.next().ok_or_else(|| SessionError {
        context: label.to_owned(),
        message: "no plan was captured".into(),
        sqlstate: None,
    })?;
    let evicted_buffers = facts.evicted_buffers;
    Ok((
        facts,
        Measurement {
            cold,
            warm: analyses.collect(),
            raw_plans,
            evicted_buffers,
        },
    ))
}

/// Every table a plan reads, schema-qualified (VERBOSE names the schema).
fn plan_tables(plan: &crate::plan::Plan) -> Vec<String> {
    let mut tables: Vec<String> = Vec::new();
    for node in &plan.nodes {
        if let (Some(schema), Some(rel)) = (&node.schema, &node.relation_name) {
            let name = format!("{}.{}", quote_ident(schema), quote_ident(rel));
            if !tables.contains(&name) {
                tables.push(name);
            }
        }
    }
    tables
}

/// The tables whose row estimates are watched: every relation the baseline scans, and every
/// candidate's table.
fn watched_tables(request: &CompareRequest, baseline: &Measurement) -> Vec<String> {
    let mut tables: Vec<String> = Vec::new();
    for node in &baseline.cold.plan.nodes {
        if let (Some(schema), Some(rel)) = (&node.schema, &node.relation_name) {
            let name = format!("{}.{}", quote_ident(schema), quote_ident(rel));
            if !tables.contains(&name) {
                tables.push(name);
            }
        }
    }
    for c in &request.candidates {
        if let CandidateSpec::Create(c) = c
            && !tables.contains(&c.table)
        {
            tables.push(c.table.clone());
        }
    }
    tables
}

async fn read_estimates(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
) -> Result<Vec<crate::compare::TableEstimate>, SessionError> {
    conn.read_only(limits, async |client| {
        explain::table_estimates(client, tables).await
    })
    .await
}

/// The tables `--analyze` analyzes in a measured compare: every created candidate's table.
fn analyzed_tables(request: &CompareRequest) -> Vec<String> {
    let mut tables: Vec<String> = Vec::new();
    if request.analyze && request.mode == Mode::Measured {
        for c in &request.candidates {
            if let CandidateSpec::Create(c) = c
                && !tables.contains(&c.table)
            {
                tables.push(c.table.clone());
            }
        }
    }
    tables
}

async fn read_analyze_counters(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
) -> Result<Vec<crate::effects::AnalyzeCounters>, SessionError> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    conn.read_only(limits, async |client| {
        crate::db::effects::analyze_counters(client, tables).await
    })
    .await
}

/// The counters after the candidates' ANALYZEs. Before PostgreSQL 15 the statistics collector
/// receives them asynchronously and a backend may read a file up to half a second old, so the
/// read is repeated (for up to 2 s) until every table's analyze_count has moved.
async fn read_analyze_counters_after(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
    before: &[crate::effects::AnalyzeCounters],
) -> Result<Vec<crate::effects::AnalyzeCounters>, SessionError> {
    let deadline = Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let after = read_analyze_counters(conn, limits, tables).await?;
        let moved = before.iter().all(|b| {
            after
                .iter()
                .any(|a| a.table == b.table && a.analyze_count > b.analyze_count)
        });
        if moved || conn.facts.major() >= 15 || Instant::now() > deadline || stop_requested() {
            return Ok(after);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Refuses early, with what to do instead, when the server cannot do what was asked.
fn check_server(conn: &Connection, request: &CompareRequest) -> Result<()> {
    let facts = &conn.facts;
    if request.cold {
        use crate::db::buffercache::EVICT_MIN_MAJOR;
        if facts.major() < EVICT_MIN_MAJOR {
            bail!(
                "--cold evicts with pg_buffercache_evict, which PostgreSQL {EVICT_MIN_MAJOR} added; {} runs {}.\n\
                 hint: drop --cold: the first run then runs on the cache as it is, and the report calls it the first run",
                conn.target,
                facts.version
            );
        }
        if !facts.has_extension("pg_buffercache") {
            let fix = if facts
                .available_extensions
                .iter()
                .any(|n| n == "pg_buffercache")
            {
                format!(
                    "CREATE EXTENSION pg_buffercache in database {}",
                    facts.database
                )
            } else {
                format!(
                    "install PostgreSQL's contrib modules on the server, then CREATE EXTENSION \
                     pg_buffercache in database {}",
                    facts.database
                )
            };
            bail!(
                "--cold evicts with pg_buffercache, which is not created in database {} on {}.\n\
                 hint: {fix}; or drop --cold",
                facts.database,
                conn.target
            );
        }
        if !facts.superuser {
            bail!(
                "--cold: pg_buffercache_evict is for superusers only, and {} is not one.\n\
                 hint: run as a superuser, or drop --cold",
                facts.user
            );
        }
    }
    match request.mode {
        Mode::Measured | Mode::GenericPlan if facts.in_recovery => bail!(
            "{} is a standby (in recovery): {}, which a standby cannot.\n\
             hint: use --hypothetical (HypoPG, estimates only), or run against a writable copy",
            conn.target,
            builds(request.mode)
        ),
        Mode::Measured | Mode::GenericPlan if facts.read_only => bail!(
            "the session on {} is read-only (default_transaction_read_only is on): {}.\n\
             hint: use --hypothetical (HypoPG, estimates only), or a writable connection",
            conn.target,
            builds(request.mode)
        ),
        Mode::Hypothetical if let Some((problem, fix)) = facts.hypopg_missing() => bail!(
            "{problem} ({}).\n\
             hint: {fix}; or drop --hypothetical to measure with real indexes",
            conn.target
        ),
        Mode::Hypothetical => {
            let version = facts
                .extensions
                .iter()
                .find(|(name, _)| name == "hypopg")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let drops = request
                .candidates
                .iter()
                .any(|c| matches!(c, CandidateSpec::Drop { .. }));
            if drops && version_below(&version, (1, 4)) {
                bail!(
                    "--drop-index with --hypothetical hides the index with hypopg_hide_index, which \
                     HypoPG 1.4 added; this database has HypoPG {version}.\n\
                     hint: ALTER EXTENSION hypopg UPDATE after installing HypoPG 1.4+, or measure the \
                     drop for real without --hypothetical"
                );
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// What compare does that needs a writable transaction, in this mode.
fn builds(mode: Mode) -> &'static str {
    match mode {
        Mode::GenericPlan => {
            "--generic-plan measures nothing, but it builds (or drops) each candidate inside a \
             rolled-back transaction to plan the query with it"
        }
        _ => "measured compare builds (or drops) each candidate inside a rolled-back transaction",
    }
}

/// Whether a dotted version ("1.3.1") is below `(major, minor)`.
fn version_below(version: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (v_major, v_minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (v_major, v_minor) < (major, minor)
}

/// Before anything plans the query: the functions it calls, judged in a read-only transaction
/// (refused when their effects would outlive the rollback) from its text and, when it is run,
/// from its estimate-only plan. The estimate-only modes run nothing but planning, which still
/// evaluates a function marked IMMUTABLE or STABLE on constants: what that reaches is judged
/// from the text, before their first EXPLAIN.
async fn check_effects(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
) -> Result<Vec<String>> {
    if request.mode != Mode::Measured {
        return conn
            .read_only(limits, async |client| {
                guard::check_text(client, &request.query.text, request.allow_lasting_effects).await
            })
            .await
            .map_err(|e| anyhow!("{}", e.message));
    }
    conn.read_only(limits, async |client| {
        run(client, "SAVEPOINT pgplan_work", "setting a savepoint").await?;
        let mut leftovers = Leftovers::default();
        let result = match statement(client, request, &mut leftovers).await {
            Ok(statement) => {
                guard::check_calls(
                    client,
                    &statement,
                    &request.query.text,
                    request.allow_lasting_effects,
                    request.allow_writes,
                )
                .await
            }
            // A query that cannot even be prepared is never planned: the baseline reports its
            // error.
            Err(_) => Ok(Vec::new()),
        };
        // Back to a usable transaction whatever happened (a query that failed to plan leaves
        // it aborted), so the cleanup below can run.
        run(client, "ROLLBACK TO SAVEPOINT pgplan_work", "rolling back").await?;
        clean_up(client, &leftovers).await?;
        result
    })
    .await
    .map_err(|e| anyhow!("{}", e.message))
}

/// Each `--drop-index` name looked up before the baseline runs: a missing index, or (for a real
/// drop) one a constraint owns, is refused before any work rather than after the baseline.
/// HypoPG hides a constraint's index as any other, so --hypothetical only needs it to exist.
async fn check_drops(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
) -> Result<()> {
    let names: Vec<&str> = request
        .candidates
        .iter()
        .filter_map(|c| match c {
            CandidateSpec::Drop { name } => Some(name.as_str()),
            CandidateSpec::Create(_) => None,
        })
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let targets = conn
        .read_only(limits, async |client| {
            let mut targets = Vec::new();
            for name in &names {
                targets.push(crate::db::drop_target::drop_target(client, name).await?);
            }
            Ok(targets)
        })
        .await
        .map_err(|e| anyhow!("{}", e.message))?;
    for (name, mut target) in names.iter().zip(targets) {
        if request.mode == Mode::Hypothetical {
            target.constraint_type = None;
        }
        if let Some(refusal) = crate::compare::drop_target::refusal(name, &target) {
            bail!("{refusal}");
        }
    }
    Ok(())
}

/// Measures the baseline and every candidate, and judges them.
pub async fn run_compare(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
    progress: &dyn Observer,
) -> Result<CompareReport> {
    run_compare_with(conn, request, limits, progress, None).await
}

/// [`run_compare`], yielding to writers and refusing big builds by `writers`' policy.
pub async fn run_compare_with(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
    progress: &dyn Observer,
    writers: Option<&mut Writers>,
) -> Result<CompareReport> {
    check_server(conn, request)?;
    check_drops(conn, request, limits).await?;
    let mut warnings = request.warnings.clone();
    // Whatever the transaction, a function the query calls may make what no rollback undoes,
    // even when the query is only planned (the check below plans it): the planner evaluates an
    // IMMUTABLE function's call on constants, and a function wrongly marked so runs whatever it
    // does inside.
    // Under --allow-writes nextval (and an accepted setval) run, and a sequence keeps what they
    // did: every sequence is read before and after, and what moved is said.
    let read_write = request.allow_writes && request.mode == Mode::Measured;
    let mut lasting = guard::LastingWatch::start(conn, limits, read_write).await;
    // A write may fire a trigger that commits elsewhere (through dblink): the rows of the
    // tables such triggers write are counted too.
    if read_write {
        let written = crate::lasting_rows::written_tables(&request.query.text);
        lasting.watch_rows(conn, limits, written).await;
    }
    warnings.extend(check_effects(conn, request, limits).await?);
    let baseline = match measure(
        conn,
        request,
        limits,
        Setup::Baseline,
        progress,
        "baseline",
        None,
    )
    .await
    {
        Ok((_, measured)) => measured,
        Err(e) => {
            // The error goes to stderr on its own line, not after a progress message.
            progress.clear();
            let held = super::lock_wait::explain(conn, limits, &[], &e).await;
            let error = anyhow!(
                "the query failed in the baseline run: {e}{}",
                held.map(|h| format!("\n{h}")).unwrap_or_default()
            );
            return Err(lasting.error(conn, limits, error).await);
        }
    };
    let tables = watched_tables(request, &baseline);
    let initial = read_estimates(conn, limits, &tables).await?;
    let analyzed = analyzed_tables(request);
    let counters_before = read_analyze_counters(conn, limits, &analyzed).await?;
    let mut comparing = Comparing {
        conn,
        request,
        limits,
        progress,
        writers,
        estimates: initial.clone(),
        tables,
        changes: Vec::new(),
        outcomes: Vec::new(),
        reruns: Vec::new(),
        judged_against: Vec::new(),
        warnings,
    };
    for (i, spec) in request.candidates.iter().enumerate() {
        comparing.candidate(i, spec).await?;
    }
    let Comparing {
        conn,
        mut warnings,
        changes,
        outcomes,
        reruns,
        judged_against,
        ..
    } = comparing;
    if !analyzed.is_empty() {
        let after = read_analyze_counters_after(conn, limits, &analyzed, &counters_before).await?;
        warnings.extend(crate::effects::analyze_after(&counters_before, &after));
    }
    if request.mode != Mode::Hypothetical {
        warnings.extend(super::estimates::put_back(conn, limits, &initial).await);
    }
    warnings.extend(lasting.notes(conn, limits).await);
    progress.clear();
    let ranking = ranking(request, &baseline, &reruns, &outcomes, &judged_against);
    if request.mode == Mode::Measured {
        warnings.extend(side_effects(&baseline, &reruns, &outcomes));
    }
    Ok(CompareReport {
        request: request.clone(),
        server_version: conn.facts.version.clone(),
        baseline,
        baseline_reruns: reruns,
        outcomes,
        ranking,
        estimate_changes: changes,
        warnings,
    })
}

/// One compare's candidates, measured one after the other: what each became, the baselines
/// measured again when a build changed the planner's estimates, and the warnings so far.
struct Comparing<'a> {
    conn: &'a mut Connection,
    request: &'a CompareRequest,
    limits: &'a Limits,
    progress: &'a dyn Observer,
    writers: Option<&'a mut Writers>,
    /// The tables whose row estimates are watched, and their estimates as last read.
    tables: Vec<String>,
    estimates: Vec<TableEstimate>,
    changes: Vec<EstimateChange>,
    outcomes: Vec<CandidateOutcome>,
    reruns: Vec<BaselineRerun>,
    /// Per outcome: the baseline it is judged against (None: the first; Some(n): reruns[n]).
    judged_against: Vec<Option<usize>>,
    warnings: Vec<String>,
}

impl Comparing<'_> {
    /// Measures candidate `i`, names what it became, and measures the baseline again when its
    /// build changed the planner's estimates. Ctrl-C and a lost connection end the compare.
    async fn candidate(&mut self, i: usize, spec: &CandidateSpec) -> Result<()> {
        let (request, limits, progress) = (self.request, self.limits, self.progress);
        let count = request.candidates.len();
        let label = format!("candidate {} of {count} ({})", i + 1, spec.describe());
        let setup = match (spec, request.mode) {
            (CandidateSpec::Create(c), Mode::Hypothetical) => Setup::HypotheticalCreate(c),
            (CandidateSpec::Drop { name }, Mode::Hypothetical) => Setup::HypotheticalDrop(name),
            (CandidateSpec::Create(c), _) => Setup::Create(c),
            (CandidateSpec::Drop { name }, _) => Setup::Drop(name),
        };
        let result = match self.writers.as_deref_mut() {
            Some(writers) => {
                measure_yielding(
                    self.conn,
                    request,
                    limits,
                    (setup, spec),
                    progress,
                    &label,
                    writers,
                    &mut self.warnings,
                )
                .await
            }
            None => measure(self.conn, request, limits, setup, progress, &label, None).await,
        };
        if stop_requested() {
            // The cancelled statement's transaction has been rolled back: start nothing more.
            progress.clear();
            bail!("interrupted while measuring {}", spec.describe());
        }
        if self.conn.is_closed() {
            progress.clear();
            bail!(
                "the connection to {} closed while measuring {}; the server rolled the transaction back",
                self.conn.target,
                spec.describe()
            );
        }
        let result = match result {
            Ok((facts, measurement)) => Ok(self.named_run(spec, facts, measurement)),
            Err(e) => Err(self.failure(spec, &e).await),
        };
        let shown = match &result {
            Ok(run) => run.name.clone(),
            Err(_) => spec.describe().to_owned(),
        };
        self.outcomes.push(CandidateOutcome {
            spec: spec.clone(),
            result,
        });
        self.judged_against.push(self.reruns.len().checked_sub(1));
        if request.mode != Mode::Hypothetical {
            self.baseline_again_if_estimates_changed(i, spec, &shown)
                .await?;
        }
        Ok(())
    }

    /// A measured candidate under the name the report shows: the one PostgreSQL gave it, told
    /// apart from the names already taken.
    fn named_run(
        &mut self,
        spec: &CandidateSpec,
        facts: SetupFacts,
        measurement: Measurement,
    ) -> CandidateRun {
        let request = self.request;
        let taken: Vec<&str> = self
            .outcomes
            .iter()
            .filter_map(|o: &CandidateOutcome| o.result.as_ref().ok())
            .map(|r| r.name.as_str())
            .chain(request.candidates.iter().filter_map(|c| match c {
                CandidateSpec::Create(c) if !c.name_generated => Some(c.name.as_str()),
                CandidateSpec::Drop { name } => Some(name.as_str()),
                CandidateSpec::Create(_) => None,
            }))
            .collect();
        // HypoPG's names (`<13556>btree_events_status`) are not names an index would
        // have in production: an unnamed hypothetical candidate goes by its definition.
        let production_name = if request.mode == Mode::Hypothetical {
            ""
        } else {
            facts.plan_index_names.first().map_or("", String::as_str)
        };
        let name = display_name(spec, production_name, &taken);
        if let CandidateSpec::Create(_) = spec
            && facts.has_expressions
            && !request.analyze
            && request.mode == Mode::Measured
        {
            self.warnings.push(format!(
                "{name}: an expression index has no statistics until ANALYZE, so the planner \
                 estimated its rows with default selectivities; re-run with --analyze"
            ));
        }
        CandidateRun {
            measurement,
            build_ms: facts.build_ms,
            size_bytes: facts.size_bytes,
            plan_index_names: facts.plan_index_names,
            name,
        }
    }

    /// A candidate's error, with who held the lock when it was a lock timeout.
    async fn failure(&mut self, spec: &CandidateSpec, e: &SessionError) -> String {
        let tables: Vec<String> = match spec {
            CandidateSpec::Create(c) => vec![c.table.clone()],
            CandidateSpec::Drop { .. } => Vec::new(),
        };
        let held = super::lock_wait::explain(self.conn, self.limits, &tables, e).await;
        match held {
            Some(h) => format!("{e}\n{h}"),
            None => e.to_string(),
        }
    }

    /// When building (or dropping) candidate `i`, shown as `shown`, changed the planner's
    /// estimates under the baseline, measures the baseline again now, so this candidate (whose
    /// runs already saw the new estimates) and the ones after it are judged against a baseline
    /// planned with the same estimates, and the gain is told apart from fresher row counts.
    async fn baseline_again_if_estimates_changed(
        &mut self,
        i: usize,
        spec: &CandidateSpec,
        shown: &str,
    ) -> Result<()> {
        let (request, limits, progress) = (self.request, self.limits, self.progress);
        let after = read_estimates(self.conn, limits, &self.tables).await?;
        let changed = estimate_changes(&self.estimates, &after);
        for change in changed.iter().cloned() {
            self.warnings.push(format!(
                "{} {} updated the planner estimates of {} in place, and that outlives the \
                 rollback: {}",
                match spec {
                    CandidateSpec::Create(_) => "building",
                    CandidateSpec::Drop { .. } => "dropping",
                },
                shown,
                change.table,
                change.describe()
            ));
            self.changes.push(change);
        }
        self.estimates = after;
        if changed.is_empty() {
            return Ok(());
        }
        let (_, rerun) = measure(
            self.conn,
            request,
            limits,
            Setup::Baseline,
            progress,
            &format!("baseline again after {shown}"),
            None,
        )
        .await
        .map_err(|e| {
            progress.clear();
            anyhow!("the query failed when the baseline was measured again: {e}")
        })?;
        self.reruns.push(BaselineRerun {
            after: i,
            measurement: rerun,
        });
        if let Some(last) = self.judged_against.last_mut() {
            *last = Some(self.reruns.len() - 1);
        }
        // Building the next candidate may change them again; read them afresh.
        self.estimates = read_estimates(self.conn, limits, &self.tables).await?;
        Ok(())
    }
}

/// Every measured candidate judged against the baseline it was measured beside, and ranked.
fn ranking(
    request: &CompareRequest,
    baseline: &Measurement,
    reruns: &[BaselineRerun],
    outcomes: &[CandidateOutcome],
    judged_against: &[Option<usize>],
) -> Vec<Judged> {
    let mut ranking: Vec<Judged> = outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            o.result.as_ref().ok().map(|run| {
                let against = judged_against[i];
                let base = against.map_or(baseline, |n| &reruns[n].measurement);
                let mut judged = judge(
                    i,
                    &o.spec,
                    run,
                    base,
                    request.mode,
                    request.min_gain_percent,
                );
                judged.baseline = against;
                judged
            })
        })
        .collect();
    rank(&mut ranking, outcomes, request.mode);
    ranking
}

/// [`measure`] for a candidate under the writer policy: refused when its table is over
/// `--max-build-size`, and tried again after a pause each time it yielded to a writer, up to
/// [`writer_policy::ATTEMPTS`] times; then "not measured", never a verdict.
#[allow(clippy::too_many_arguments)]
async fn measure_yielding(
    conn: &mut Connection,
    request: &CompareRequest,
    limits: &Limits,
    (setup, spec): (Setup<'_>, &CandidateSpec),
    progress: &dyn Observer,
    label: &str,
    writers: &mut Writers,
    warnings: &mut Vec<String>,
) -> Result<(SetupFacts, Measurement), SessionError> {
    let refused = |message: String| SessionError {
        context: label.to_owned(),
        message,
        sqlstate: None,
    };
    let mut table_bytes = None;
    if let Setup::Create(candidate) = setup {
        let cost = writers
            .before_build(conn, limits, &candidate.table)
            .await
            .map_err(refused)?;
        warnings.push(super::writers::cost_note(
            spec.describe(),
            &candidate.table,
            &cost,
        ));
        table_bytes = Some(cost.table_bytes);
    }
    let mut yields = Vec::new();
    loop {
        let attempt = yields.len() as u32 + 1;
        let Some(pause) = writer_policy::pause_before(attempt) else {
            return Err(refused(writer_policy::not_measured(&yields)));
        };
        if !pause.is_zero() {
            progress.update(&format!(
                "{label}: yielded to writers, trying again in {:.0} s",
                pause.as_secs_f64()
            ));
            tokio::time::sleep(pause).await;
        }
        let result = measure(
            conn,
            request,
            limits,
            setup,
            progress,
            label,
            Some(&mut *writers),
        )
        .await;
        let yielded = writers.take_yield();
        if let Some(wait) = &yielded {
            warnings.push(format!(
                "{}: yielded to a writer (try {attempt} of {}): {}; the lock was released by \
                 rolling back",
                spec.describe(),
                writer_policy::ATTEMPTS,
                wait.describe()
            ));
        }
        match (result, yielded) {
            (Err(_), Some(wait)) if !stop_requested() && !conn.is_closed() => yields.push(wait),
            (Ok((facts, measurement)), _) => {
                if let (Some(bytes), Some(ms)) = (table_bytes, facts.build_ms) {
                    writers.measured_build(bytes, ms);
                }
                return Ok((facts, measurement));
            }
            (Err(e), _) => return Err(e),
        }
    }
}

/// What every measured run left that the rollbacks did not undo: the usage counters of the
/// existing indexes the plans scanned (a candidate's own counters went with it), and a write's
/// dead row versions.
fn side_effects(
    baseline: &Measurement,
    reruns: &[BaselineRerun],
    outcomes: &[CandidateOutcome],
) -> Vec<String> {
    let candidates: Vec<&str> = outcomes
        .iter()
        .filter(|o| matches!(o.spec, CandidateSpec::Create(_)))
        .filter_map(|o| o.result.as_ref().ok())
        .flat_map(|r| r.plan_index_names.iter().map(String::as_str))
        .collect();
    let measurements = std::iter::once(baseline)
        .chain(reruns.iter().map(|r| &r.measurement))
        .chain(
            outcomes
                .iter()
                .filter_map(|o| o.result.as_ref().ok())
                .map(|r| &r.measurement),
        );
    let (mut scans, mut dead) = (Vec::new(), Vec::new());
    for m in measurements {
        for analysis in std::iter::once(&m.cold).chain(&m.warm) {
            let counted = side_effects::index_scans_counted(analysis)
                .into_iter()
                .filter(|s| !candidates.contains(&s.index.as_str()))
                .collect();
            side_effects::add_scans(&mut scans, counted);
            side_effects::add_dead(&mut dead, side_effects::dead_versions(analysis));
        }
    }
    side_effects::side_effect_notes("compare's runs", &scans, &dead)
}
