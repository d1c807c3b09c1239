//! `pgplan advise`: the workload's baseline plans through the `compare --workload` engine, the
//! pure core's proposals from them and the catalog, a shortlist that fits the budget, every
//! shortlisted candidate measured by the engine (built once, rolled back), then the greedy
//! choice, re-measuring the queries each chosen index touches with the chosen ones in place.

use std::io::Write;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use crate::advise::choose::{self, Chooser, Limits as ChoiceLimits};
use crate::advise::report::{AdviseReport, Recommendation, ServedQuery, WorkloadQuery, sort_out};
use crate::advise::{Candidate, Note, TableRef, drops, propose, shortlist};
use crate::audit::{AuditOptions, NodeResult, Scope, audit};
use crate::cli::AdviseArgs;
use crate::compare::workload::verdict::QueryFigures;
use crate::compare::workload::{self as wl, WorkloadMeasurements, judge, workload_updates};
use crate::db::advise::{TableName, read_facts};
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::db::workload as dbw;
use crate::exit;
use crate::plan::Plan;
use crate::report::{Format, TextOptions, advise as render};
use crate::sql::{IndexCandidate, QueryKind, parse_index_candidate, quote_ident};

use super::compare::Progress;
use super::live::{Interrupt, open, read_audit_snapshot, report_destination, resolve, runtime};
use super::workload::{
    EngineOptions, measure_workload, prepare_queries, read_workload_sources, statements_workload,
};

/// What one candidate did to one query, as last measured.
#[derive(Debug, Clone)]
struct QueryEffect {
    figures: QueryFigures,
    saved_per_day: f64,
    regression: bool,
}

/// A measured candidate: its current measurement and its effect on every workload query.
#[derive(Debug, Clone)]
struct Measured {
    measurement: choose::Measurement,
    effects: Vec<Option<QueryEffect>>,
    build_ms: Option<f64>,
    wal_bytes_added_per_day: Option<f64>,
    hot_updates_lost_per_day: Option<f64>,
    write_estimated: bool,
}

impl Measured {
    /// Whether the candidate changed what query `q` reads.
    fn touches(&self, q: usize) -> bool {
        self.effects[q].as_ref().is_some_and(|e| {
            e.figures.used
                || e.figures.pages_before != e.figures.pages_after && e.saved_per_day != 0.0
        })
    }
}

/// The engine's statement for a proposed candidate.
fn index_candidate(c: &Candidate) -> Result<IndexCandidate> {
    let sql = format!("CREATE INDEX {} {}", quote_ident(&c.name), c.definition());
    parse_index_candidate(&sql, &c.name).map_err(|e| anyhow!("proposed {sql}: {e}"))
}

/// The representative plan of query q in a measured pass (its first sample that ran).
fn plan_of(measurements: &WorkloadMeasurements, q: usize) -> Option<Plan> {
    measurements.baselines[0].queries[q]
        .iter()
        .find_map(|r| r.as_ref().ok())
        .map(|m| m.representative().plan.clone())
}

/// Judges `measurements` over `queries` (whose positions in the whole workload are `positions`)
/// into one [`Measured`] per candidate, `None` where it could not be built or measured.
#[allow(clippy::too_many_arguments)]
fn measured_of(
    queries: &[wl::WorkloadQuery],
    positions: &[usize],
    total_queries: usize,
    measurements: &WorkloadMeasurements,
    candidates: &[IndexCandidate],
    updates: &[wl::write_cost::WorkloadUpdate],
    table_of: impl Fn(&IndexCandidate) -> Option<String>,
    min_gain: f64,
) -> Vec<Result<Measured, String>> {
    let judged = judge(
        queries,
        measurements,
        candidates,
        updates,
        table_of,
        min_gain,
    );
    let mut out: Vec<Result<Measured, String>> = measurements
        .candidates
        .iter()
        .map(|r| match r {
            Err(e) => Err(e.clone()),
            Ok(_) => Err("not judged".to_owned()),
        })
        .collect();
    for j in judged {
        let Ok(run) = &measurements.candidates[j.index] else {
            continue;
        };
        let mut effects = vec![None; total_queries];
        for (k, outcome) in j.queries.iter().enumerate() {
            effects[positions[k]] = Some(QueryEffect {
                figures: outcome.figures.clone(),
                saved_per_day: outcome.judgement.pages_saved_per_day.unwrap_or(0.0),
                regression: outcome.judgement.regression,
            });
        }
        out[j.index] = Ok(Measured {
            measurement: choose::Measurement {
                size_bytes: run.size_bytes.unwrap_or(0.0),
                read_pages_saved_per_day: j.verdict.read_pages_saved_per_day,
                write_pages_added_per_day: j.verdict.write_pages_added_per_day.unwrap_or(0.0),
                used: j.queries.iter().any(|q| q.figures.used),
            },
            effects,
            build_ms: run.build_ms,
            wal_bytes_added_per_day: j.verdict.wal_bytes_added_per_day,
            hot_updates_lost_per_day: j.verdict.hot_updates_lost_per_day,
            write_estimated: j.writes.iter().any(|w| w.entry_cost.estimated),
        });
    }
    out
}

/// `pgplan advise`.
pub fn advise(args: AdviseArgs, options: &TextOptions) -> Result<u8> {
    let statements = args.workload == "pg_stat_statements";
    let (source_name, file_queries) = read_workload_sources(Some(&args.workload), &[])?;
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
    if args.format == Format::Html {
        bail!("advise writes text, markdown or json (--format html is not available for it)");
    }
    if args.max_indexes == Some(0) {
        bail!("--max-indexes must be at least 1 (got 0)");
    }
    let params = resolve(&args.conn)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let started = Instant::now();
    let progress = Progress::new();
    let report = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        run_advise(
            &mut conn,
            &limits,
            &args,
            statements,
            source_name,
            file_queries,
            started,
            &progress,
        )
        .await
    }))?;
    progress.clear();
    let (mut out, text_options) = report_destination(args.output.as_deref(), options)?;
    match args.format {
        Format::Text => render::write_text(&mut out, &report, &text_options)?,
        Format::Json => render::write_json(&mut out, &report)?,
        Format::Markdown => render::write_markdown(&mut out, &report)?,
        Format::Html => bail!("advise writes text, markdown or json"),
    }
    out.flush()?;
    Ok(if args.fail_if_advice && report.has_advice() {
        exit::FINDINGS
    } else {
        exit::SUCCESS
    })
}

#[allow(clippy::too_many_arguments)]
async fn run_advise(
    conn: &mut Connection,
    limits: &Limits,
    args: &AdviseArgs,
    statements: bool,
    source_name: String,
    file_queries: Vec<wl::SourceQuery>,
    started: Instant,
    progress: &Progress,
) -> Result<AdviseReport> {
    if conn.facts.in_recovery || conn.facts.read_only {
        bail!(
            "{} is read-only (a standby, or default_transaction_read_only): advise builds each \
             candidate inside a rolled-back transaction.\n\
             hint: run it against a writable copy",
            conn.target
        );
    }
    let deadline = started + args.budget;
    let mut notes_text: Vec<String> = Vec::new();
    let mut sources = file_queries;
    if statements {
        let (queries, notes) = statements_workload(conn, limits, args.top, args.min_calls).await?;
        notes_text.extend(notes);
        sources.extend(queries);
    }
    if sources.is_empty() {
        bail!("the workload holds no query to measure");
    }
    progress.update("choosing parameter values");
    let queries = prepare_queries(conn, limits, sources, args.allow_writes).await?;
    let engine = EngineOptions {
        runs: args.runs,
        allow_writes: args.allow_writes,
        analyze: false,
        deadline: Some(deadline),
        allow_lasting_effects: args.allow_lasting_effects,
        untracked: conn.facts.superuser,
    };

    // 1. The baseline plans, measured.
    let pass_started = Instant::now();
    let baseline = measure_workload(conn, limits, &queries, &[], &[], &engine, progress).await?;
    let pass_ms = pass_started.elapsed().as_secs_f64() * 1000.0;
    let plans: Vec<Plan> = (0..queries.len())
        .map(|q| plan_of(&baseline, q).unwrap_or_default())
        .collect();
    let plan_refs: Vec<&Plan> = plans.iter().collect();

    // 2. Proposals from the plans and the catalog.
    let mut tables: Vec<TableName> = Vec::new();
    for plan in &plans {
        for a in crate::advise::access::accesses(plan) {
            let t = TableName {
                schema: a.schema,
                name: a.table,
            };
            if !tables.contains(&t) {
                tables.push(t);
            }
        }
    }
    let server = conn.facts.clone();
    let facts = conn
        .read_only(limits, async |client| {
            read_facts(client, &server, &tables).await.map_err(|e| {
                crate::db::session::SessionError {
                    context: "reading the catalog".into(),
                    message: e.to_string(),
                    sqlstate: None,
                }
            })
        })
        .await?;
    let proposals = propose(&plan_refs, &facts);
    let mut notes = proposals.notes.clone();

    // 3. The shortlist: what fits in the budget, most promising first (no estimate decides).
    let calls: Vec<f64> = queries.iter().map(|q| q.source.calls_per_day).collect();
    let prospects: Vec<shortlist::Prospect> = proposals
        .candidates
        .iter()
        .map(|c| shortlist::prospect(c, &plan_refs, &calls))
        .collect();
    let remaining_ms = deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        * 1000.0;
    let cap = shortlist::measurable_within(remaining_ms, pass_ms, pass_ms);
    let order = shortlist::shortlist(&prospects, cap);
    for (i, c) in proposals.candidates.iter().enumerate() {
        if !order.contains(&i) {
            notes.push(Note {
                query: c.serves.first().map_or(0, |s| s.query),
                table: Some(c.table.clone()),
                message: format!(
                    "{} was proposed but not measured: the --budget leaves room for {cap} candidate(s)",
                    c.name
                ),
            });
        }
    }
    let shortlisted: Vec<Candidate> = order
        .iter()
        .map(|&i| proposals.candidates[i].clone())
        .collect();
    let specs: Vec<IndexCandidate> = shortlisted
        .iter()
        .map(index_candidate)
        .collect::<Result<_>>()?;

    // 4. Measure the shortlist: each built once, rolled back, every query measured.
    let measurements =
        measure_workload(conn, limits, &queries, &specs, &[], &engine, progress).await?;
    let resolved = conn
        .read_only(limits, async |client| {
            let mut map = Vec::new();
            for q in &queries {
                if let Some((table, _)) = wl::updates::update_target(&q.source.query.text)
                    && let Some(name) = dbw::relation_name(client, &table).await?
                {
                    map.push((table, name));
                }
            }
            for c in &specs {
                if let Some(name) = dbw::relation_name(client, &c.table).await? {
                    map.push((c.table.clone(), name));
                }
            }
            Ok(map)
        })
        .await?;
    let lookup = |t: &str| {
        resolved
            .iter()
            .find(|(k, _)| k == t)
            .map(|(_, v)| v.clone())
    };
    let updates = workload_updates(&queries, lookup);
    let positions: Vec<usize> = (0..queries.len()).collect();
    let first = measured_of(
        &queries,
        &positions,
        queries.len(),
        &measurements,
        &specs,
        &updates,
        |c| lookup(&c.table),
        args.min_gain,
    );
    let mut not_rolled_back = vec![
        "statistics counters (pg_stat_user_tables, pg_statio_*, pg_stat_user_indexes) count pgplan's own runs"
            .to_owned(),
    ];
    if !conn.facts.superuser {
        not_rolled_back.push(
            "pgplan's own runs may show in pg_stat_statements (keeping them out needs a superuser)"
                .into(),
        );
    }
    for e in &measurements.estimate_changes {
        not_rolled_back.push(format!(
            "a build updated {}'s planner estimates (relpages {} → {}, reltuples {} → {}); the baseline was measured again",
            e.table, e.relpages.before, e.relpages.after, e.reltuples.before, e.reltuples.after
        ));
    }
    // Only what was measured enters the choice; a failed candidate is named with its error.
    let mut current: Vec<Measured> = Vec::new();
    let mut measured_ids: Vec<usize> = Vec::new();
    for (i, r) in first.into_iter().enumerate() {
        match r {
            Ok(m) => {
                measured_ids.push(i);
                current.push(m);
            }
            Err(e) => notes.push(Note {
                query: shortlisted[i].serves.first().map_or(0, |s| s.query),
                table: Some(shortlisted[i].table.clone()),
                message: format!("{} could not be measured: {e}", shortlisted[i].name),
            }),
        }
    }
    let candidates: Vec<Candidate> = measured_ids
        .iter()
        .map(|&i| shortlisted[i].clone())
        .collect();
    let specs: Vec<IndexCandidate> = measured_ids.iter().map(|&i| specs[i].clone()).collect();

    // 5. The greedy choice, re-measuring what each chosen index touched with it in place.
    let choice_limits = ChoiceLimits {
        max_indexes: args.max_indexes,
        max_size_bytes: args.max_size.map(|s| s as f64),
    };
    let mut chooser = Chooser::new(
        current.iter().map(|m| m.measurement).collect(),
        &choice_limits,
    );
    let mut chosen_at: Vec<Measured> = Vec::new();
    while let Some(best) = chooser.choose_next() {
        chosen_at.push(current[best].clone());
        if chooser.open().is_empty() || Instant::now() >= deadline {
            break;
        }
        let touched: Vec<usize> = (0..queries.len())
            .filter(|&q| current[best].touches(q))
            .collect();
        let affected: Vec<usize> = chooser
            .open()
            .iter()
            .copied()
            .filter(|&i| touched.iter().any(|&q| current[i].touches(q)))
            .collect();
        if affected.is_empty() {
            continue;
        }
        let chosen_specs: Vec<IndexCandidate> =
            chooser.chosen().iter().map(|&i| specs[i].clone()).collect();
        let subset: Vec<wl::WorkloadQuery> = touched.iter().map(|&q| queries[q].clone()).collect();
        let again_specs: Vec<IndexCandidate> = affected.iter().map(|&i| specs[i].clone()).collect();
        let again = measure_workload(
            conn,
            limits,
            &subset,
            &again_specs,
            &chosen_specs,
            &engine,
            progress,
        )
        .await?;
        let judged = measured_of(
            &subset,
            &touched,
            queries.len(),
            &again,
            &again_specs,
            &[],
            |_| None,
            args.min_gain,
        );
        let mut updates_for_chooser = Vec::new();
        for (k, r) in judged.into_iter().enumerate() {
            let i = affected[k];
            let Ok(new) = r else { continue };
            let old = &mut current[i];
            let mut saved = old.measurement.read_pages_saved_per_day;
            for &q in &touched {
                saved -= old.effects[q].as_ref().map_or(0.0, |e| e.saved_per_day);
                saved += new.effects[q].as_ref().map_or(0.0, |e| e.saved_per_day);
                old.effects[q] = new.effects[q].clone();
            }
            old.measurement.read_pages_saved_per_day = saved;
            old.measurement.used =
                (0..queries.len()).any(|q| old.effects[q].as_ref().is_some_and(|e| e.figures.used));
            updates_for_chooser.push((i, old.measurement));
        }
        chooser.remeasured(updates_for_chooser);
    }
    let choice = chooser.finish();
    let (chosen, rejected) = sort_out(&candidates, &choice);
    let recommended: Vec<Recommendation> = chosen
        .into_iter()
        .zip(&chosen_at)
        .map(|((candidate, measurement), m)| Recommendation {
            candidate,
            measurement,
            build_ms: m.build_ms,
            queries: (0..queries.len())
                .filter(|&q| m.touches(q))
                .filter_map(|q| {
                    let e = m.effects[q].as_ref()?;
                    Some(ServedQuery {
                        query: q,
                        pages_before: e.figures.pages_before?,
                        pages_after: e.figures.pages_after?,
                        ms_before: e.figures.ms_before,
                        ms_after: e.figures.ms_after,
                        time_within_noise: e.figures.time_within_noise,
                        regression: e.regression,
                    })
                })
                .collect(),
            wal_bytes_added_per_day: m.wal_bytes_added_per_day,
            hot_updates_lost_per_day: m.hot_updates_lost_per_day,
            write_estimated: m.write_estimated,
            replaces: Vec::new(),
        })
        .collect();

    // Existing indexes the workload does not need: audit's unused check on its tables.
    let table_refs: Vec<TableRef> = facts
        .tables
        .iter()
        .map(|t| TableRef {
            schema: t.schema.clone(),
            name: t.name.clone(),
        })
        .collect();
    let drops = if table_refs.is_empty() {
        Vec::new()
    } else {
        let scope = Scope {
            tables: table_refs
                .iter()
                .map(|t| format!("{}.{}", quote_ident(&t.schema), quote_ident(&t.name)))
                .collect(),
            ..Scope::default()
        };
        let snapshot = read_audit_snapshot(conn, limits, &scope).await;
        let audited = audit(
            &[NodeResult {
                name: conn.target.clone(),
                outcome: snapshot,
            }],
            &AuditOptions::default(),
        );
        drops::unused_indexes(&audited, &table_refs)
    };
    if queries
        .iter()
        .any(|q| matches!(q.source.query.kind, QueryKind::Write(_)))
        && !args.allow_writes
    {
        notes_text.push(
            "the workload's writes were not run (--allow-writes runs them, rolled back); their SET lists still count for the HOT updates an index ends".into(),
        );
    }
    for n in notes_text {
        notes.push(Note {
            query: 0,
            table: None,
            message: n,
        });
    }
    Ok(AdviseReport {
        server_version: conn.facts.version.clone(),
        database: conn.facts.database.clone(),
        workload_source: source_name,
        queries: queries
            .iter()
            .map(|q| WorkloadQuery {
                id: q.source.id.clone(),
                text: q.source.query.text.clone(),
                calls_per_day: q.source.calls_per_day,
                estimated: !q.runnable || q.samples.iter().any(|s| s.generic),
            })
            .collect(),
        shortlist_estimated: false,
        recommended,
        drops,
        rejected,
        covered: proposals.covered,
        notes,
        not_rolled_back,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        budget_ms: args.budget.as_secs_f64() * 1000.0,
    })
}
