//! A workload measured: values found for its parameters, then the baseline first, then each
//! candidate built once in its own always-rolled-back transaction with every query measured
//! inside it, the baseline again whenever a build changed the planner's estimates, and the
//! write side of every candidate's table read.

use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use crate::compare::workload::unmeasured;
use crate::compare::workload::{
    ProbeFigures, QueryRuns, TableActivity, WorkloadBaseline, WorkloadCandidateRun,
    WorkloadMeasurements, WorkloadQuery, updates,
};
use crate::compare::{EstimateChange, Measurement, TableEstimate, estimate_changes};
use crate::db::connect::Connection;
use crate::db::explain::{self, explain_sql, run};
use crate::db::session::{Limits, SessionError};
use crate::db::workload as dbw;
use crate::plan::{Analysis, parse_plan};
use crate::sql::{IndexCandidate, QueryKind, quote_literal, tokenize};

use super::Observer;
use super::build::build_index;
use super::writers::{Writers, rolled_back_yielding};
use crate::db::cancel::stop_requested;

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

pub(crate) fn session_error(context: &str, message: impl Into<String>) -> SessionError {
    SessionError {
        context: context.to_owned(),
        message: message.into(),
        sqlstate: None,
    }
}

/// The relations a plan reads: (schema, table, alias).
pub(super) fn plan_relations(analysis: &Analysis) -> Vec<(String, String, Option<String>)> {
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
pub(super) fn statement_name() -> String {
    format!("pgplan_w{}", std::process::id())
}

/// `EXECUTE name(args)`, or `EXECUTE name` without parameters.
pub(super) fn execute_sql(name: &str, args: &[String]) -> String {
    if args.is_empty() {
        format!("EXECUTE {name}")
    } else {
        format!("EXECUTE {name}({})", args.join(", "))
    }
}

/// Measures one sample of one query in the caller's transaction, under a savepoint that is
/// rolled back afterwards (so writes, and every run, see the same rows). A failure of the
/// query itself is the sample's result; a cancel (Ctrl-C) or a lost connection ends the work.
async fn measure_sample(
    client: &tokio_postgres::Client,
    query: &WorkloadQuery,
    sample: usize,
    options: &EngineOptions,
    progress: &dyn Observer,
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
    progress: &dyn Observer,
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
    progress: &dyn Observer,
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
    progress: &dyn Observer,
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

/// The tables a workload's candidates are on, as the catalog names them, read before anything
/// is built.
struct Tables {
    /// Per candidate, then per chosen index: its table (None when the catalog has no such table).
    of_candidate: Vec<Option<String>>,
    /// Every table a candidate or a chosen index is on, once: their estimates and write
    /// counters are read.
    watched: Vec<String>,
    /// Per candidate on a known table: the table and the candidate's predicate, for the
    /// representative write.
    probes: Vec<(String, Option<String>)>,
    /// The probed tables once, under `--allow-writes`: their pages are counted before and after.
    probed: Vec<String>,
}

impl Tables {
    async fn read(
        conn: &mut Connection,
        limits: &Limits,
        candidates: &[IndexCandidate],
        chosen: &[IndexCandidate],
        allow_writes: bool,
    ) -> Result<Self, SessionError> {
        let of_candidate: Vec<Option<String>> = conn
            .read_only(limits, async |client| {
                let mut names = Vec::new();
                for c in candidates.iter().chain(chosen) {
                    names.push(dbw::relation_name(client, &c.table).await?);
                }
                Ok(names)
            })
            .await?;
        let mut watched: Vec<String> = of_candidate.iter().flatten().cloned().collect();
        watched.sort();
        watched.dedup();
        let probes: Vec<(String, Option<String>)> = candidates
            .iter()
            .zip(&of_candidate)
            .filter_map(|(c, t)| Some((t.clone()?, predicate(&c.definition))))
            .collect();
        let mut probed: Vec<String> = probes.iter().map(|(t, _)| t.clone()).collect();
        probed.sort();
        probed.dedup();
        if !allow_writes {
            probed.clear();
        }
        Ok(Self {
            of_candidate,
            watched,
            probes,
            probed,
        })
    }
}

/// The planner's estimates of `tables`, read-only.
async fn read_estimates(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
) -> Result<Vec<TableEstimate>, SessionError> {
    conn.read_only(limits, async |client| {
        explain::table_estimates(client, tables).await
    })
    .await
}

/// The pages of `tables`, to name the pages the representative writes add.
async fn read_pages(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
) -> Result<Vec<(String, Option<f64>)>, SessionError> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    conn.read_only(limits, async |client| {
        dbw::relation_pages(client, tables).await
    })
    .await
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
    writers: Option<&mut Writers>,
    progress: &dyn Observer,
) -> Result<WorkloadMeasurements> {
    let tables = Tables::read(conn, limits, candidates, chosen, options.allow_writes).await?;
    // Before the baseline, which builds the chosen indexes: what every build changes in place
    // is put back to these figures at the end.
    let initial = read_estimates(conn, limits, &tables.watched).await?;
    let pages_before = read_pages(conn, limits, &tables.probed).await?;
    let work = Work {
        queries,
        chosen,
        probe_tables: &tables.probes,
        options,
    };
    let mut measuring = Measuring {
        conn,
        limits,
        work: &work,
        writers,
        progress,
        watched: &tables.watched,
        baselines: Vec::new(),
        estimates: Vec::new(),
        changes: Vec::new(),
    };
    measuring.baseline("baseline", None).await?;
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let table = tables.of_candidate[i].as_deref();
        let outcome = measuring
            .candidate(i, candidates.len(), candidate, table)
            .await?;
        if outcome.over_budget {
            skipped.push(i);
        }
        results.push(outcome.result);
    }
    let Measuring {
        conn,
        baselines,
        changes,
        ..
    } = measuring;
    let figures_put_back = super::estimates::put_back(conn, limits, &initial).await;
    let pages_after = read_pages(conn, limits, &tables.probed).await?;
    let probe_residue = crate::compare::workload::probe_residue::residues(
        &pages_before,
        &pages_after,
        &rows_counted(&baselines, &results, &tables.of_candidate),
    );
    let activity = read_activity(conn, limits, &tables.watched).await?;
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

/// One workload's measuring between its transactions: the baselines so far, the planner
/// estimates the last one was measured with, and what builds changed of them.
struct Measuring<'a> {
    conn: &'a mut Connection,
    limits: &'a Limits,
    work: &'a Work<'a>,
    writers: Option<&'a mut Writers>,
    progress: &'a dyn Observer,
    watched: &'a [String],
    baselines: Vec<WorkloadBaseline>,
    estimates: Vec<TableEstimate>,
    changes: Vec<EstimateChange>,
}

/// What became of one candidate: its runs or its error, and whether the budget was the reason.
struct CandidateOutcome {
    result: Result<WorkloadCandidateRun, String>,
    over_budget: bool,
}

impl Measuring<'_> {
    /// Measures the baseline (again after candidate `after`, when that is set), which the next
    /// candidates are judged against, and the estimates it was measured with.
    async fn baseline(&mut self, label: &str, after: Option<usize>) -> Result<()> {
        let writers = self.writers.as_deref_mut();
        let mut baseline = measure_baseline(
            self.conn,
            self.limits,
            self.work,
            writers,
            self.progress,
            label,
        )
        .await?;
        baseline.after = after;
        self.baselines.push(baseline);
        self.estimates = read_estimates(self.conn, self.limits, self.watched).await?;
        Ok(())
    }

    /// Candidate `i` of `count`: refused by the writer policy, or measured in its own
    /// rolled-back transaction; then, when its build changed the planner's estimates, the
    /// baseline again.
    async fn candidate(
        &mut self,
        i: usize,
        count: usize,
        candidate: &IndexCandidate,
        table: Option<&str>,
    ) -> Result<CandidateOutcome> {
        let (work, progress) = (self.work, self.progress);
        if work.options.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(CandidateOutcome {
                result: Err("not measured (budget): --budget ran out before it".to_owned()),
                over_budget: true,
            });
        }
        let label = format!("candidate {} of {count} ({})", i + 1, candidate.describe());
        let mut table_bytes = None;
        if let (Some(writers), Some(t)) = (self.writers.as_deref_mut(), table) {
            match writers
                .note_build(self.conn, self.limits, candidate.describe(), t)
                .await
            {
                Ok(cost) => table_bytes = Some(cost.table_bytes),
                Err(refusal) => {
                    return Ok(CandidateOutcome {
                        result: Err(refusal),
                        over_budget: false,
                    });
                }
            }
        }
        let say = |message: &str| progress.update(message);
        let result = rolled_back_yielding(
            self.conn,
            self.limits,
            self.writers.as_deref_mut(),
            &label,
            &say,
            async |client| candidate_run(client, work, candidate, table, &label, progress).await,
        )
        .await;
        self.still_going(candidate)?;
        let (mut result, over_budget) = match result {
            Err(e) if e.context == BUDGET_CONTEXT => (
                Err("not measured (budget): --budget ran out while it was measured".to_owned()),
                true,
            ),
            other => (other.map_err(|e| e.to_string()), false),
        };
        if let Ok(run) = &mut result
            && let (Some(writers), Some(bytes), Some(ms)) =
                (self.writers.as_deref_mut(), table_bytes, run.build_ms)
        {
            writers.measured_build(bytes, ms);
        }
        self.baseline_again_if_estimates_changed(i, candidate)
            .await?;
        if let Ok(run) = &mut result {
            run.baseline = self.baselines.len() - 1;
        }
        Ok(CandidateOutcome {
            result,
            over_budget,
        })
    }

    /// Ends the run once the user interrupted or the connection closed (the server has rolled
    /// the candidate's transaction back either way).
    fn still_going(&self, candidate: &IndexCandidate) -> Result<()> {
        if stop_requested() {
            self.progress.clear();
            bail!("interrupted while measuring {}", candidate.describe());
        }
        if self.conn.is_closed() {
            self.progress.clear();
            bail!(
                "the connection to {} closed while measuring {}; the server rolled the transaction back",
                self.conn.target,
                candidate.describe()
            );
        }
        Ok(())
    }

    /// When building candidate `i` changed the planner's estimates (relpages/reltuples outlive
    /// the rollback), measures the baseline again now: this candidate, whose runs already saw
    /// the new estimates, and the next ones are judged against it.
    async fn baseline_again_if_estimates_changed(
        &mut self,
        i: usize,
        candidate: &IndexCandidate,
    ) -> Result<()> {
        let after = read_estimates(self.conn, self.limits, self.watched).await?;
        let changed = estimate_changes(&self.estimates, &after);
        if changed.is_empty() {
            self.estimates = after;
            return Ok(());
        }
        let label = format!("baseline again after {}", candidate.describe());
        self.baseline(&label, Some(i)).await?;
        self.changes.extend(changed);
        Ok(())
    }
}

/// A candidate's transaction: the chosen indexes and then the candidate built, its entries and
/// its table's columns read, every query measured (cut short when `--budget` runs out between
/// two runs, so the budget overruns by one run at most), and the representative write.
async fn candidate_run(
    client: &tokio_postgres::Client,
    work: &Work<'_>,
    candidate: &IndexCandidate,
    table: Option<&str>,
    label: &str,
    progress: &dyn Observer,
) -> Result<WorkloadCandidateRun, SessionError> {
    let options = work.options;
    transaction_setup(client, options).await?;
    build_chosen(client, work.chosen, progress).await?;
    let facts = build_index(client, candidate, options.analyze, progress, label).await?;
    let name = facts.plan_index_names.first().cloned().unwrap_or_default();
    let (entries, rows, columns) = match table {
        Some(t) => {
            let (entries, rows) = dbw::index_entries(client, &name, t)
                .await?
                .unwrap_or((0.0, 0.0));
            let columns = dbw::table_activity(client, t)
                .await?
                .map(|(_, cols)| cols)
                .unwrap_or_default();
            (entries, rows, columns)
        }
        None => (0.0, 0.0, Vec::new()),
    };
    let runs = measure_queries(
        client,
        work.queries,
        options,
        progress,
        label,
        options.deadline,
    )
    .await?;
    let write_probe = match (table, options.allow_writes) {
        (Some(t), true) => {
            let predicate = predicate(&candidate.definition);
            write_probe(
                client,
                t,
                predicate.as_deref(),
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
        write_probe,
    })
}

/// The rows each representative write counted in its table's statistics, per table.
fn rows_counted(
    baselines: &[WorkloadBaseline],
    results: &[Result<WorkloadCandidateRun, String>],
    tables: &[Option<String>],
) -> Vec<(String, f64)> {
    let mut counted: Vec<(String, f64)> = Vec::new();
    for b in baselines {
        for (table, figures) in &b.write_probes {
            if let Some(f) = figures {
                counted.push((table.clone(), f.rows_counted));
            }
        }
    }
    for (run, table) in results.iter().zip(tables) {
        if let (Ok(run), Some(table)) = (run, table)
            && let Some(f) = &run.write_probe
        {
            counted.push((table.clone(), f.rows_counted));
        }
    }
    counted
}

/// The write counters of each watched table, with the audit's counting window.
async fn read_activity(
    conn: &mut Connection,
    limits: &Limits,
    watched: &[String],
) -> Result<Vec<TableActivity>, SessionError> {
    let facts = conn.facts.clone();
    conn.read_only(limits, async |client| {
        let window = crate::db::catalog::read_stats_window(client, &facts)
            .await
            .ok()
            .flatten();
        let mut found: Vec<TableActivity> = Vec::new();
        for table in watched {
            if let Some((mut a, _)) = dbw::table_activity(client, table).await? {
                a.window_seconds = window.map(|w| w.seconds());
                found.push(a);
            }
        }
        Ok(found)
    })
    .await
}
