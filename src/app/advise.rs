//! `pgplan advise`: the workload's baseline plans through the `compare --workload` engine, the
//! pure core's proposals from them and the catalog, a shortlist that fits the budget, every
//! shortlisted candidate measured by the engine (built once, rolled back), then the greedy
//! choice, re-measuring the queries each chosen index touches with the chosen ones in place.

use std::io::Write;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use crate::advise::choose::{self, Chooser, Limits as ChoiceLimits};
use crate::advise::coverage::Coverage;
use crate::advise::drops::DropSuggestion;
use crate::advise::report::{
    AdviseReport, NotShortlisted, Recommendation, RejectedCandidate, Replaced, ServedQuery,
    WorkloadQuery, sort_out,
};
use crate::advise::rules::replaces;
use crate::advise::shortlist::Estimate;
use crate::advise::{Candidate, Note, Proposals, TableRef, drops, propose, shortlist};
use crate::audit::{AuditOptions, NodeResult, Scope, audit};
use crate::cli::AdviseArgs;
use crate::compare::workload::probe_residue;
use crate::compare::workload::statements::Screening;
use crate::compare::workload::unmeasured::Unmeasured;
use crate::compare::workload::verdict::QueryFigures;
use crate::compare::workload::{self as wl, WorkloadMeasurements, judge, workload_updates};
use crate::db::advise::{TableName, publish_own_counters, read_facts};
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::exit;
use crate::plan::Plan;
use crate::report::{Format, TextOptions, advise as render};
use crate::sql::{IndexCandidate, parse_index_candidate, quote_ident};

use super::live::{Interrupt, open, read_audit_snapshot, report_destination, resolve, runtime};
use super::progress::Progress;
use super::workload::{lookup_relation, read_workload_sources, relation_names, workload_queries};
use super::writers::open_writers;
use crate::measure::hypothetical::estimate_hypothetical;
use crate::measure::workload::{EngineOptions, measure_workload};
use crate::measure::writers::Writers;

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

    /// Takes `new`'s effects on the `touched` queries (measured again with the chosen indexes
    /// in place) in place of its own, and the pages saved and use that follow from them.
    fn take_effects(&mut self, new: &Measured, touched: &[usize], total_queries: usize) {
        let mut saved = self.measurement.read_pages_saved_per_day;
        for &q in touched {
            saved -= self.effects[q].as_ref().map_or(0.0, |e| e.saved_per_day);
            saved += new.effects[q].as_ref().map_or(0.0, |e| e.saved_per_day);
            self.effects[q] = new.effects[q].clone();
        }
        self.measurement.read_pages_saved_per_day = saved;
        self.measurement.used =
            (0..total_queries).any(|q| self.effects[q].as_ref().is_some_and(|e| e.figures.used));
    }
}

/// A note about one candidate: its message follows the candidate's name, which is written once
/// the names to print are settled.
struct CandidateNote {
    name: String,
    table: String,
    after_name: String,
}

impl CandidateNote {
    fn new(c: &Candidate, after_name: String) -> Self {
        CandidateNote {
            name: c.name.clone(),
            table: c.table.clone(),
            after_name,
        }
    }

    fn note(self, final_name: &dyn Fn(&str) -> String) -> Note {
        Note {
            query: None,
            table: Some(self.table),
            message: format!("{}{}", final_name(&self.name), self.after_name),
        }
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

/// The representative plan of query q with candidate i built, in the first pass.
fn candidate_plan(measurements: &WorkloadMeasurements, i: usize, q: usize) -> Option<Plan> {
    let run = measurements.candidates.get(i)?.as_ref().ok()?;
    run.queries
        .get(q)?
        .iter()
        .find_map(|r| r.as_ref().ok())
        .map(|m| m.representative().plan.clone())
}

/// The existing indexes `c` makes redundant, with the evidence: the rule's, and which queries
/// scanned each in the baseline (`baseline[q]`) and still did with `c` built (`with[q]`).
fn replaced_by(
    c: &Candidate,
    facts: &crate::advise::Facts,
    baseline: &[Plan],
    with: &[Option<Plan>],
) -> Vec<Replaced> {
    let Some(table) = facts.table(Some(&c.schema), &c.table) else {
        return Vec::new();
    };
    let scans = |plan: &Plan, index: &str| {
        plan.nodes
            .iter()
            .any(|n| n.index_name.as_deref() == Some(index))
    };
    replaces::replaced(c, table)
        .into_iter()
        .map(|e| {
            let used_before: Vec<usize> = (0..baseline.len())
                .filter(|&q| scans(&baseline[q], &e.name))
                .collect();
            let used_after = used_before
                .iter()
                .copied()
                .filter(|&q| {
                    with.get(q)
                        .and_then(Option::as_ref)
                        .is_some_and(|p| scans(p, &e.name))
                })
                .collect();
            Replaced {
                schema: c.schema.clone(),
                index: e.name.clone(),
                statement: replaces::drop_statement(&c.schema, &e.name),
                size_bytes: e.size_bytes,
                scans: e.scans,
                evidence: replaces::evidence(e, c),
                used_before,
                used_after,
            }
        })
        .collect()
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

/// The greedy choice can take an index, then a later one that extends it (the same keys and
/// more, chosen because with the first in place it still saved pages): the first is then
/// redundant. It is moved to the rejected as superseded, and the later one is reported with
/// its measurement against the baseline, where it does the first one's work too.
fn supersede(
    choice: &mut choose::Choice,
    chosen_at: &mut Vec<Measured>,
    candidates: &[Candidate],
    initial: &[Measured],
) {
    loop {
        let order: Vec<usize> = choice.chosen.iter().map(|(i, _)| *i).collect();
        let found = order.iter().enumerate().find_map(|(pa, &a)| {
            order[pa + 1..]
                .iter()
                .find(|&&b| candidates[b].extends(&candidates[a]))
                .map(|&b| (pa, a, b))
        });
        let Some((pa, a, b)) = found else { return };
        let (_, measurement) = choice.chosen.remove(pa);
        chosen_at.remove(pa);
        let pb = choice.chosen.iter().position(|(i, _)| *i == b).unwrap_or(0);
        choice.chosen[pb].1 = initial[b].measurement;
        chosen_at[pb] = initial[b].clone();
        choice.rejected.push(choose::Rejected {
            candidate: a,
            reason: choose::Rejection::Superseded,
            measurement,
            with_chosen: pb + 1,
        });
    }
}

/// Refuses, before anything connects, the options advise cannot run with.
fn check_args(args: &AdviseArgs) -> Result<()> {
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
    Ok(())
}

/// `pgplan advise`.
pub fn advise(args: AdviseArgs, options: &TextOptions) -> Result<u8> {
    let (source_name, file_queries) = read_workload_sources(Some(&args.workload), &[])?;
    let settings = AdviseSettings::of(&args, source_name);
    check_args(&args)?;
    let params = resolve(&args.conn)?;
    let limits =
        Limits::compare_defaults().with(args.session.statement_timeout, args.session.lock_timeout);
    let interrupt = Interrupt::new();
    let started = Instant::now();
    let progress = Progress::new();
    let report = runtime()?.block_on(interrupt.run(async {
        let mut conn = open(&params, &args.session, &interrupt).await?;
        let mut writers = open_writers(
            args.writers.policy(),
            &params,
            &args.session,
            &interrupt,
            &conn,
            true,
        )
        .await?;
        run_advise(
            &mut conn,
            &limits,
            &settings,
            file_queries,
            started,
            Some(&mut writers),
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
    super::workload::warn_probe_notes(report.notes.iter().map(|n| &n.message));
    super::workload::warn_unmeasured(&report.unmeasured);
    if report.coverage.nothing_measured() {
        eprintln!("pgplan: {}", report.coverage.no_advice_line());
    }
    let notes: Vec<String> = report.notes.iter().map(|n| n.message.clone()).collect();
    // Anything asked for and not measured is no success, whatever the advice.
    Ok(
        if !report.unmeasured.is_empty() || report.coverage.nothing_measured() {
            exit::ERROR
        } else if crate::lasting_state::any_left(&notes) {
            exit::LEFT_BEHIND
        } else if args.fail_if_advice && report.has_advice() {
            exit::FINDINGS
        } else {
            exit::SUCCESS
        },
    )
}

/// What an advise run is asked for, besides its connection and file queries: `pgplan advise`'s
/// options, and the demo's.
#[derive(Debug, Clone)]
pub struct AdviseSettings {
    /// How the report names the workload.
    pub source_name: String,
    /// Read pg_stat_statements' top statements (top, min calls) besides the file queries.
    pub statements: Option<(u32, u64)>,
    pub hypothetical: bool,
    pub budget: std::time::Duration,
    pub runs: u32,
    pub min_gain: f64,
    pub allow_writes: bool,
    pub allow_lasting_effects: bool,
    /// `--allow-probe-triggers`: the tables, as the user wrote them, whose representative
    /// write runs despite their triggers, rules or publications.
    pub probe_triggers: Vec<String>,
    pub max_indexes: Option<usize>,
    pub max_size: Option<u64>,
}

impl AdviseSettings {
    fn of(args: &AdviseArgs, source_name: String) -> Self {
        AdviseSettings {
            source_name,
            statements: (args.workload == "pg_stat_statements")
                .then_some((args.top, args.min_calls)),
            hypothetical: args.hypothetical,
            budget: args.budget,
            runs: args.runs,
            min_gain: args.min_gain,
            allow_writes: args.allow_writes,
            allow_lasting_effects: args.allow_lasting_effects,
            probe_triggers: args.allow_probe_triggers.clone(),
            max_indexes: args.max_indexes,
            max_size: args.max_size,
        }
    }
}

/// Advises on a workload over an open connection, `started` being when the run began (the
/// budget counts from it): `pgplan advise` and the demo's advise step. What the runs left on
/// the server is read before and after them, and is in the report's notes (or the error's).
pub async fn run_advise(
    conn: &mut Connection,
    limits: &Limits,
    args: &AdviseSettings,
    file_queries: Vec<wl::SourceQuery>,
    started: Instant,
    writers: Option<&mut Writers>,
    progress: &Progress,
) -> Result<AdviseReport> {
    // A table accepted by a name that resolves to none is an error before any work.
    let accepted = super::probe_guard::resolve_accepted(conn, limits, &args.probe_triggers).await?;
    let mut lasting =
        crate::measure::guard::LastingWatch::start(conn, limits, args.allow_writes).await;
    let work = Work {
        file_queries,
        started,
        accepted: &accepted,
    };
    match advise_on(conn, limits, args, work, &mut lasting, writers, progress).await {
        Ok(mut report) => {
            let notes = lasting.notes(conn, limits).await;
            // After the notes on the whole workload, before those on one query.
            let at = report
                .notes
                .iter()
                .position(|n| n.query.is_some())
                .unwrap_or(report.notes.len());
            report.notes.splice(
                at..at,
                notes.into_iter().map(|message| Note {
                    query: None,
                    table: None,
                    message,
                }),
            );
            Ok(report)
        }
        Err(e) => Err(lasting.error(conn, limits, e).await),
    }
}

/// What [`advise_on`] works on besides its settings.
struct Work<'a> {
    file_queries: Vec<wl::SourceQuery>,
    /// When the run began (the budget counts from it).
    started: Instant,
    /// The tables the representative write is accepted on.
    accepted: &'a [crate::compare::workload::probe_guard::Accepted],
}

/// [`run_advise`]'s work, between the two readings of the server's lasting state (`lasting`
/// also counts, from before the workload's writes run, the rows their triggers commit).
async fn advise_on(
    conn: &mut Connection,
    limits: &Limits,
    args: &AdviseSettings,
    work: Work<'_>,
    lasting: &mut crate::measure::guard::LastingWatch,
    writers: Option<&mut Writers>,
    progress: &Progress,
) -> Result<AdviseReport> {
    if args.hypothetical
        && let Some((problem, fix)) = conn.facts.hypopg_missing()
    {
        bail!(
            "--hypothetical shortlists the candidates with HypoPG's estimates: {problem} ({}).\n\
             hint: {fix}; or drop --hypothetical to shortlist by the pages each scan reads today",
            conn.target
        );
    }
    let mut run = AdviseRun::start(conn, limits, args, work, lasting, writers, progress).await?;
    // 1. The baseline plans, measured.
    let baseline = run.measure_baseline().await?;
    // 2. Proposals from the plans and the catalog.
    let (facts, proposals) = run.proposals(&baseline.plans).await?;
    // 3. The shortlist: what fits in the budget, most promising first.
    let short = run.shortlist(&proposals, &baseline).await?;
    // 4. Measure the shortlist: each built once, rolled back, every query measured.
    let mut pool = run
        .measure_shortlist(&short, proposals.candidates.len())
        .await?;
    // 5. The greedy choice, re-measuring what each chosen index touched with it in place.
    let picked = run.choose(&mut pool).await?;
    run.report(Outcome {
        facts,
        proposals,
        baseline,
        short,
        pool,
        picked,
    })
    .await
}

/// One [`advise_on`] run: the connection side every measuring pass is given, the workload and
/// how the engine measures it, and what the phases gather for the report as they go.
struct AdviseRun<'a> {
    conn: &'a mut Connection,
    limits: &'a Limits,
    writers: Option<&'a mut Writers>,
    progress: &'a Progress,
    args: &'a AdviseSettings,
    /// The tables the representative write is accepted on.
    accepted: &'a [crate::compare::workload::probe_guard::Accepted],
    /// When the run began (the budget counts from it).
    started: Instant,
    /// When the budget runs out.
    deadline: Instant,
    queries: Vec<wl::WorkloadQuery>,
    engine: EngineOptions,
    /// Notes on the whole workload: its reading's, the write probe's, the writers'.
    notes_text: Vec<String>,
    /// Notes on one query or table, the proposals' first.
    notes: Vec<Note>,
    /// Notes on one candidate, worded once the names to print are settled.
    candidate_notes: Vec<CandidateNote>,
    screening: Screening,
    unmeasured: Vec<Unmeasured>,
    residue: Vec<probe_residue::Residue>,
    not_rolled_back: Vec<String>,
}

/// Phase 1's answer: each query's representative baseline plan, and what one pass took.
struct Baseline {
    plans: Vec<Plan>,
    pass_ms: f64,
}

/// Phase 3's answer: the shortlist in the order it is measured, and what was left out of it.
struct Shortlisted {
    candidates: Vec<Candidate>,
    estimates: Vec<Option<Estimate>>,
    specs: Vec<IndexCandidate>,
    /// Left out because the planner would not use them (HypoPG's estimate).
    not_shortlisted: Vec<NotShortlisted>,
    /// How many the budget left no room for.
    over_budget: usize,
    /// Whether any HypoPG estimate ordered the shortlist.
    estimated_any: bool,
}

/// Phase 4's answer: the shortlisted candidates that were measured, in the choice's numbering.
struct Pool {
    candidates: Vec<Candidate>,
    estimates: Vec<Option<Estimate>>,
    /// The plans of the first pass, per candidate and query: which existing indexes they scan.
    first_pass_plans: Vec<Vec<Option<Plan>>>,
    specs: Vec<IndexCandidate>,
    /// Each candidate's measurement, updated as the choice measures again.
    current: Vec<Measured>,
    coverage: Coverage,
}

/// Phase 5's answer: the choice, and the measurement each chosen index is reported with.
struct Picked {
    choice: choose::Choice,
    chosen_at: Vec<Measured>,
    /// Each candidate's measurement against the baseline.
    initial: Vec<Measured>,
}

/// Everything the phases handed on, for the report.
struct Outcome {
    facts: crate::advise::Facts,
    proposals: Proposals,
    baseline: Baseline,
    short: Shortlisted,
    pool: Pool,
    picked: Picked,
}

impl<'a> AdviseRun<'a> {
    /// Reads the workload (with --allow-writes, watching the rows its writes' triggers may
    /// commit), ready for the baseline.
    async fn start(
        conn: &'a mut Connection,
        limits: &'a Limits,
        args: &'a AdviseSettings,
        work: Work<'a>,
        lasting: &mut crate::measure::guard::LastingWatch,
        writers: Option<&'a mut Writers>,
        progress: &'a Progress,
    ) -> Result<Self> {
        let Work {
            file_queries,
            started,
            accepted,
        } = work;
        let deadline = started + args.budget;
        let mut notes_text: Vec<String> = Vec::new();
        let mut screening = Screening::default();
        let queries = workload_queries(
            conn,
            limits,
            "advise",
            args.statements,
            file_queries,
            args.allow_writes,
            args.allow_lasting_effects,
            &mut notes_text,
            &mut screening,
            progress,
        )
        .await?;
        if args.allow_writes {
            lasting
                .watch_rows(
                    conn,
                    limits,
                    super::workload::written_tables(&queries, accepted),
                )
                .await;
        }
        let engine = EngineOptions {
            runs: args.runs,
            allow_writes: args.allow_writes,
            analyze: false,
            deadline: Some(deadline),
            allow_lasting_effects: args.allow_lasting_effects,
            untracked: conn.facts.superuser,
            probe_accepted: accepted.iter().map(|a| a.table.clone()).collect(),
        };
        let not_rolled_back = own_runs_counted(conn.facts.superuser);
        Ok(AdviseRun {
            conn,
            limits,
            writers,
            progress,
            args,
            accepted,
            started,
            deadline,
            queries,
            engine,
            notes_text,
            notes: Vec::new(),
            candidate_notes: Vec::new(),
            screening,
            unmeasured: Vec::new(),
            residue: Vec::new(),
            not_rolled_back,
        })
    }

    /// Step 1: Every query measured as the database is: its representative plan, and how long the
    /// pass took (what the shortlist's budget is counted in).
    async fn measure_baseline(&mut self) -> Result<Baseline> {
        let pass_started = Instant::now();
        let baseline = measure_workload(
            self.conn,
            self.limits,
            &self.queries,
            &[],
            &[],
            &self.engine,
            self.writers.as_deref_mut(),
            self.progress,
        )
        .await?;
        let pass_ms = pass_started.elapsed().as_secs_f64() * 1000.0;
        self.residue = baseline.probe_residue.clone();
        self.unmeasured =
            crate::compare::workload::unmeasured::unmeasured(&self.queries, &baseline, &[]);
        let plans = (0..self.queries.len())
            .map(|q| plan_of(&baseline, q).unwrap_or_default())
            .collect();
        Ok(Baseline { plans, pass_ms })
    }

    /// Step 2: The catalog's facts on the tables the baseline plans read, and the proposals from
    /// both.
    async fn proposals(&mut self, plans: &[Plan]) -> Result<(crate::advise::Facts, Proposals)> {
        let mut tables: Vec<TableName> = Vec::new();
        for plan in plans {
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
        let server = self.conn.facts.clone();
        let facts = self
            .conn
            .read_only(self.limits, async |client| {
                read_facts(client, &server, &tables).await.map_err(|e| {
                    crate::db::session::SessionError {
                        context: "reading the catalog".into(),
                        message: e.to_string(),
                        sqlstate: None,
                    }
                })
            })
            .await?;
        let plan_refs: Vec<&Plan> = plans.iter().collect();
        let proposals = propose(&plan_refs, &facts);
        self.notes = proposals.notes.clone();
        Ok((facts, proposals))
    }

    /// Step 3: What fits in the budget, most promising first. With --hypothetical, HypoPG's
    /// estimates order it and leave out what the planner would not choose; no estimate decides
    /// a recommendation.
    async fn shortlist(
        &mut self,
        proposals: &Proposals,
        baseline: &Baseline,
    ) -> Result<Shortlisted> {
        let all_specs: Vec<IndexCandidate> = proposals
            .candidates
            .iter()
            .map(index_candidate)
            .collect::<Result<_>>()?;
        let estimates = self
            .estimates(proposals, &baseline.plans, &all_specs)
            .await?;
        let estimated_any = estimates.iter().any(Option::is_some);
        let plan_refs: Vec<&Plan> = baseline.plans.iter().collect();
        let calls: Vec<f64> = self
            .queries
            .iter()
            .map(|q| q.source.calls_per_day)
            .collect();
        let prospects: Vec<shortlist::Prospect> = proposals
            .candidates
            .iter()
            .zip(&estimates)
            .map(|(c, e)| shortlist::prospect(c, &plan_refs, &calls, e.as_ref()))
            .collect();
        let cap = self.candidates_within_budget(baseline.pass_ms);
        let short = shortlist::shortlist(&prospects, cap);
        for &i in &short.over_budget {
            self.candidate_notes.push(CandidateNote::new(
                &proposals.candidates[i],
                format!(
                    " was proposed but not measured: the --budget leaves room for {cap} candidate(s)"
                ),
            ));
        }
        let not_shortlisted: Vec<NotShortlisted> = short
            .unused_by_planner
            .iter()
            .filter_map(|&i| {
                Some(NotShortlisted {
                    candidate: proposals.candidates[i].clone(),
                    estimate: estimates[i]?,
                })
            })
            .collect();
        let order = short.measure;
        let specs: Vec<IndexCandidate> = order.iter().map(|&i| all_specs[i].clone()).collect();
        // Which shortlisted tables' representative write is not run (their triggers), or runs
        // because accepted.
        if self.args.allow_writes {
            self.notes_text.extend(
                super::probe_guard::probe_notes(self.conn, self.limits, &specs, self.accepted)
                    .await?,
            );
        }
        Ok(Shortlisted {
            candidates: order
                .iter()
                .map(|&i| proposals.candidates[i].clone())
                .collect(),
            estimates: order.iter().map(|&i| estimates[i]).collect(),
            specs,
            not_shortlisted,
            over_budget: short.over_budget.len(),
            estimated_any,
        })
    }

    /// How many candidates the budget left has room for, a pass taking `pass_ms`.
    fn candidates_within_budget(&self, pass_ms: f64) -> usize {
        let remaining_ms = self
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            * 1000.0;
        shortlist::measurable_within(remaining_ms, pass_ms, pass_ms)
    }

    /// With --hypothetical, HypoPG's estimate of each proposal (a note on each it could not
    /// estimate); without it, none.
    async fn estimates(
        &mut self,
        proposals: &Proposals,
        plans: &[Plan],
        all_specs: &[IndexCandidate],
    ) -> Result<Vec<Option<Estimate>>> {
        if !self.args.hypothetical {
            return Ok(vec![None; proposals.candidates.len()]);
        }
        // Every query that reads the candidate's table, not only those it was proposed for:
        // a merged index may serve others.
        let serves: Vec<Vec<usize>> = proposals
            .candidates
            .iter()
            .map(|c| {
                (0..plans.len())
                    .filter(|&q| {
                        crate::advise::access::accesses(&plans[q]).iter().any(|a| {
                            a.table == c.table && a.schema.as_deref().is_none_or(|s| s == c.schema)
                        })
                    })
                    .collect()
            })
            .collect();
        let found = estimate_hypothetical(
            self.conn,
            self.limits,
            &self.queries,
            all_specs,
            &serves,
            self.progress,
        )
        .await?;
        Ok(found
            .into_iter()
            .zip(&proposals.candidates)
            .map(|(r, c)| match r {
                Ok(e) => Some(e),
                Err(e) => {
                    self.candidate_notes.push(CandidateNote::new(
                        c,
                        format!(
                            ": no HypoPG estimate ({e}); shortlisted by the pages its scans read today"
                        ),
                    ));
                    None
                }
            })
            .collect())
    }

    /// Step 4: Every shortlisted candidate built once, rolled back, and every query measured with
    /// it, judged against the baseline; `proposed` is how many candidates were proposed.
    async fn measure_shortlist(&mut self, short: &Shortlisted, proposed: usize) -> Result<Pool> {
        let measurements = measure_workload(
            self.conn,
            self.limits,
            &self.queries,
            &short.specs,
            &[],
            &self.engine,
            self.writers.as_deref_mut(),
            self.progress,
        )
        .await?;
        let shortlisted_names: Vec<String> =
            short.candidates.iter().map(|c| c.name.clone()).collect();
        for u in crate::compare::workload::unmeasured::unmeasured(
            &self.queries,
            &measurements,
            &shortlisted_names,
        ) {
            if !self
                .unmeasured
                .iter()
                .any(|k| k.query == u.query && k.error == u.error)
            {
                self.unmeasured.push(u);
            }
        }
        let resolved = relation_names(self.conn, self.limits, &self.queries, &short.specs).await?;
        let lookup = |t: &str| lookup_relation(&resolved, t);
        let updates = workload_updates(&self.queries, lookup);
        let positions: Vec<usize> = (0..self.queries.len()).collect();
        let first = measured_of(
            &self.queries,
            &positions,
            self.queries.len(),
            &measurements,
            &short.specs,
            &updates,
            |c| lookup(&c.table),
            self.args.min_gain,
        );
        for e in &measurements.estimate_changes {
            self.not_rolled_back.push(format!(
                "a build updated the planner estimates of {} ({}); the baseline was measured again",
                e.table,
                e.describe()
            ));
        }
        push_new(&mut self.not_rolled_back, &measurements.figures_put_back);
        probe_residue::merge(&mut self.residue, &measurements.probe_residue);
        Ok(self.pool(first, &measurements, short, proposed))
    }

    /// Only what was measured enters the choice; a failed candidate is named with its error.
    fn pool(
        &mut self,
        first: Vec<Result<Measured, String>>,
        measurements: &WorkloadMeasurements,
        short: &Shortlisted,
        proposed: usize,
    ) -> Pool {
        let mut current: Vec<Measured> = Vec::new();
        let mut measured_ids: Vec<usize> = Vec::new();
        let mut coverage = Coverage {
            proposed,
            over_budget: short.over_budget,
            ..Default::default()
        };
        for (i, r) in first.into_iter().enumerate() {
            match r {
                Ok(m) => {
                    measured_ids.push(i);
                    current.push(m);
                }
                Err(_) if measurements.skipped_for_budget.contains(&i) => {
                    coverage.over_budget += 1;
                    self.candidate_notes.push(CandidateNote::new(
                        &short.candidates[i],
                        " was proposed but not measured (budget): --budget ran out before it"
                            .into(),
                    ));
                }
                Err(e) => self.candidate_notes.push(CandidateNote::new(
                    &short.candidates[i],
                    format!(" could not be measured: {e}"),
                )),
            }
        }
        coverage.measured = measured_ids.len();
        coverage.failed = coverage
            .proposed
            .saturating_sub(coverage.measured + coverage.over_budget + short.not_shortlisted.len());
        Pool {
            candidates: measured_ids
                .iter()
                .map(|&i| short.candidates[i].clone())
                .collect(),
            estimates: measured_ids.iter().map(|&i| short.estimates[i]).collect(),
            first_pass_plans: measured_ids
                .iter()
                .map(|&i| {
                    (0..self.queries.len())
                        .map(|q| candidate_plan(measurements, i, q))
                        .collect()
                })
                .collect(),
            specs: measured_ids
                .iter()
                .map(|&i| short.specs[i].clone())
                .collect(),
            current,
            coverage,
        }
    }

    /// Step 5: The greedy choice: after each index chosen, the open candidates that read a query it
    /// touched are measured again with it in place; then what later choices made redundant is
    /// taken out.
    async fn choose(&mut self, pool: &mut Pool) -> Result<Picked> {
        let choice_limits = ChoiceLimits {
            max_indexes: self.args.max_indexes,
            max_size_bytes: self.args.max_size.map(|s| s as f64),
        };
        let mut chooser = Chooser::new(
            pool.current.iter().map(|m| m.measurement).collect(),
            &choice_limits,
        );
        let initial = pool.current.clone();
        let mut chosen_at: Vec<Measured> = Vec::new();
        while let Some(best) = chooser.choose_next() {
            chosen_at.push(pool.current[best].clone());
            if chooser.open().is_empty() || Instant::now() >= self.deadline {
                break;
            }
            let touched: Vec<usize> = (0..self.queries.len())
                .filter(|&q| pool.current[best].touches(q))
                .collect();
            let affected: Vec<usize> = chooser
                .open()
                .iter()
                .copied()
                .filter(|&i| touched.iter().any(|&q| pool.current[i].touches(q)))
                .collect();
            if affected.is_empty() {
                continue;
            }
            let updates = self
                .remeasure(pool, &chooser.chosen(), &touched, &affected)
                .await?;
            chooser.remeasured(updates);
        }
        let mut picked = Picked {
            choice: chooser.finish(),
            chosen_at,
            initial,
        };
        supersede(
            &mut picked.choice,
            &mut picked.chosen_at,
            &pool.candidates,
            &picked.initial,
        );
        // A last pass with every chosen index in place: one no plan uses any more was made
        // redundant by later choices (a covering index over the partial one it was chosen after).
        if picked.choice.chosen.len() > 1 {
            let used = self
                .used_with_all_chosen(&picked.choice, &pool.specs)
                .await?;
            picked.drop_unused(&used, &pool.specs, self.queries.len());
        }
        Ok(picked)
    }

    /// Measures the `affected` open candidates again over the `touched` queries with every
    /// `chosen` index in place, and takes in their new effects: what the chooser is handed.
    async fn remeasure(
        &mut self,
        pool: &mut Pool,
        chosen: &[usize],
        touched: &[usize],
        affected: &[usize],
    ) -> Result<Vec<(usize, choose::Measurement)>> {
        let chosen_specs: Vec<IndexCandidate> =
            chosen.iter().map(|&i| pool.specs[i].clone()).collect();
        let subset: Vec<wl::WorkloadQuery> =
            touched.iter().map(|&q| self.queries[q].clone()).collect();
        let again_specs: Vec<IndexCandidate> =
            affected.iter().map(|&i| pool.specs[i].clone()).collect();
        let again = measure_workload(
            self.conn,
            self.limits,
            &subset,
            &again_specs,
            &chosen_specs,
            &self.engine,
            self.writers.as_deref_mut(),
            self.progress,
        )
        .await?;
        push_new(&mut self.not_rolled_back, &again.figures_put_back);
        probe_residue::merge(&mut self.residue, &again.probe_residue);
        let judged = measured_of(
            &subset,
            touched,
            self.queries.len(),
            &again,
            &again_specs,
            &[],
            |_| None,
            self.args.min_gain,
        );
        let mut updates_for_chooser = Vec::new();
        for (k, r) in judged.into_iter().enumerate() {
            let i = affected[k];
            let Ok(new) = r else { continue };
            let old = &mut pool.current[i];
            old.take_effects(&new, touched, self.queries.len());
            updates_for_chooser.push((i, old.measurement));
        }
        Ok(updates_for_chooser)
    }

    /// The chosen indexes some plan scans when every query is measured with all of them in
    /// place.
    async fn used_with_all_chosen(
        &mut self,
        choice: &choose::Choice,
        specs: &[IndexCandidate],
    ) -> Result<Vec<String>> {
        let chosen_specs: Vec<IndexCandidate> = choice
            .chosen
            .iter()
            .map(|(i, _)| specs[*i].clone())
            .collect();
        let all_in = measure_workload(
            self.conn,
            self.limits,
            &self.queries,
            &[],
            &chosen_specs,
            &self.engine,
            self.writers.as_deref_mut(),
            self.progress,
        )
        .await?;
        push_new(&mut self.not_rolled_back, &all_in.figures_put_back);
        probe_residue::merge(&mut self.residue, &all_in.probe_residue);
        let plans: Vec<&crate::plan::Analysis> = all_in.baselines[0]
            .queries
            .iter()
            .flatten()
            .filter_map(|r| r.as_ref().ok())
            .map(|m| m.representative())
            .collect();
        Ok(chosen_specs
            .iter()
            .filter(|s| {
                let names = [s.name.clone()];
                plans
                    .iter()
                    .any(|p| !crate::compare::index_uses(p, &names).is_empty())
            })
            .map(|s| s.name.clone())
            .collect())
    }

    /// The report: the names to print settled, the recommendations with their evidence, the
    /// existing indexes to drop, and the notes in their order.
    async fn report(mut self, mut outcome: Outcome) -> Result<AdviseReport> {
        self.settle_names(&mut outcome);
        let (recommended, rejected) = outcome.sorted_out(self.queries.len());
        let drops = self.drops(&outcome.facts).await;
        let notes = self.notes_in_order(&recommended);
        self.not_rolled_back
            .extend(probe_residue::residue_notes(&self.residue));
        Ok(AdviseReport {
            server_version: self.conn.facts.version.clone(),
            database: self.conn.facts.database.clone(),
            workload_source: self.args.source_name.clone(),
            queries: self
                .queries
                .iter()
                .map(|q| WorkloadQuery {
                    id: q.source.id.clone(),
                    text: q.source.query.text.clone(),
                    calls_per_day: q.source.calls_per_day,
                    estimated: !q.runnable || q.samples.iter().any(|s| s.generic),
                })
                .collect(),
            shortlist_estimated: outcome.short.estimated_any,
            recommended,
            drops,
            rejected,
            not_shortlisted: outcome.short.not_shortlisted,
            covered: outcome.proposals.covered,
            notes,
            not_rolled_back: self.not_rolled_back,
            screening: self.screening,
            unmeasured: self.unmeasured,
            coverage: outcome.pool.coverage,
            elapsed_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            budget_ms: self.args.budget.as_secs_f64() * 1000.0,
        })
    }

    /// The names to print: each as PostgreSQL gives it when the report's statements run unnamed
    /// from the top, the recommendations in their order, then the rejected candidates, then
    /// those not measured. Measuring named every candidate in the order proposed, so a
    /// recommendation proposed after a rejected candidate of the same columns would otherwise
    /// read `..._idx1` where no `..._idx` is to be built.
    fn settle_names(&mut self, outcome: &mut Outcome) {
        let (chosen_ids, rejected_ids) = outcome.picked.ids();
        let candidates = &mut outcome.pool.candidates;
        let not_shortlisted = &mut outcome.short.not_shortlisted;
        let mut in_order: Vec<&Candidate> = chosen_ids
            .iter()
            .chain(&rejected_ids)
            .map(|&i| &candidates[i])
            .chain(not_shortlisted.iter().map(|n| &n.candidate))
            .collect();
        for c in &outcome.proposals.candidates {
            if !in_order.iter().any(|o| o.name == c.name) {
                in_order.push(c);
            }
        }
        let provisional: Vec<String> = in_order.iter().map(|c| c.name.clone()).collect();
        let mut renamed: Vec<Candidate> = in_order.into_iter().cloned().collect();
        crate::advise::assign_names(&mut renamed, &outcome.facts);
        let final_name = |name: &str| -> String {
            provisional
                .iter()
                .position(|p| p == name)
                .map_or_else(|| name.to_owned(), |k| renamed[k].name.clone())
        };
        for c in candidates.iter_mut() {
            c.name = final_name(&c.name);
        }
        for n in not_shortlisted.iter_mut() {
            n.candidate.name = final_name(&n.candidate.name);
        }
        for u in &mut self.unmeasured {
            if u.during != "baseline" {
                u.during = final_name(&u.during);
            }
        }
        let candidate_notes = std::mem::take(&mut self.candidate_notes);
        self.notes
            .extend(candidate_notes.into_iter().map(|n| n.note(&final_name)));
    }

    /// Existing indexes to drop: audit's unused, duplicate and redundant findings on the
    /// workload's tables.
    async fn drops(&mut self, facts: &crate::advise::Facts) -> Vec<DropSuggestion> {
        let table_refs: Vec<TableRef> = facts
            .tables
            .iter()
            .map(|t| TableRef {
                schema: t.schema.clone(),
                name: t.name.clone(),
            })
            .collect();
        if table_refs.is_empty() {
            return Vec::new();
        }
        let scope = Scope {
            tables: table_refs
                .iter()
                .map(|t| format!("{}.{}", quote_ident(&t.schema), quote_ident(&t.name)))
                .collect(),
            ..Scope::default()
        };
        // The scans of this run's last measurements, counted by the same counters audit
        // reads: published first, or a duplicate the workload scanned would read as unscanned.
        let snapshot = match publish_own_counters(self.conn, self.limits).await {
            Ok(()) => read_audit_snapshot(self.conn, self.limits, &scope, None).await,
            Err(e) => Err(e.to_string()),
        };
        let audited = audit(
            &[NodeResult {
                name: self.conn.target.clone(),
                outcome: snapshot,
            }],
            &AuditOptions::default(),
        );
        drops::drops(&audited, &table_refs)
    }

    /// What concerns the workload as a whole comes first, then what concerns one query; a
    /// query's note a recommendation contradicts (it serves the query) is left out.
    fn notes_in_order(&mut self, recommended: &[Recommendation]) -> Vec<Note> {
        if let Some(writers) = self.writers.as_deref_mut() {
            self.notes_text.extend(writers.take_notes());
        }
        let mut all_notes: Vec<Note> = std::mem::take(&mut self.notes_text)
            .into_iter()
            .map(|message| Note {
                query: None,
                table: None,
                message,
            })
            .collect();
        let served: Vec<usize> = recommended
            .iter()
            .flat_map(|r| r.queries.iter().map(|q| q.query))
            .collect();
        all_notes.extend(
            std::mem::take(&mut self.notes)
                .into_iter()
                .filter(|n| !n.contradicted_by(&served)),
        );
        all_notes.sort_by_key(|n| n.query.is_some());
        all_notes
    }
}

impl Outcome {
    /// The recommendations with their evidence, and the rejected candidates, in the choice's
    /// order.
    fn sorted_out(&self, total_queries: usize) -> (Vec<Recommendation>, Vec<RejectedCandidate>) {
        let (pool, picked) = (&self.pool, &self.picked);
        let (chosen_ids, rejected_ids) = picked.ids();
        let (chosen, mut rejected) = sort_out(&pool.candidates, &picked.choice);
        for (r, &i) in rejected.iter_mut().zip(&rejected_ids) {
            r.estimate = pool.estimates[i];
            r.hot_updates_lost_per_day = pool.current[i].hot_updates_lost_per_day;
        }
        let recommended = chosen
            .into_iter()
            .zip(&picked.chosen_at)
            .zip(&chosen_ids)
            .map(|(((candidate, measurement), m), &i)| Recommendation {
                replaces: replaced_by(
                    &candidate,
                    &self.facts,
                    &self.baseline.plans,
                    &pool.first_pass_plans[i],
                ),
                estimate: pool.estimates[i],
                candidate,
                measurement,
                build_ms: m.build_ms,
                queries: served_queries(m, total_queries),
                wal_bytes_added_per_day: m.wal_bytes_added_per_day,
                hot_updates_lost_per_day: m.hot_updates_lost_per_day,
                write_estimated: m.write_estimated,
            })
            .collect();
        (recommended, rejected)
    }
}

impl Picked {
    /// The candidates chosen, in their order, and those rejected.
    fn ids(&self) -> (Vec<usize>, Vec<usize>) {
        (
            self.choice.chosen.iter().map(|(i, _)| *i).collect(),
            self.choice.rejected.iter().map(|r| r.candidate).collect(),
        )
    }

    /// Takes out of the choice each chosen index no plan scans with all of them in place
    /// (`used` names those some plan scans), as superseded.
    fn drop_unused(&mut self, used: &[String], specs: &[IndexCandidate], total_queries: usize) {
        let (choice, chosen_at) = (&mut self.choice, &mut self.chosen_at);
        let mut k = 0;
        let mut removed: Vec<Measured> = Vec::new();
        while k < choice.chosen.len() {
            let i = choice.chosen[k].0;
            if used.contains(&specs[i].name) {
                // Measured with an index in place that is no longer recommended, on a query
                // they both touch: its figures against that index are not what it does alone
                // (a covering index measured 46 → 5 pages over a partial one that took the
                // query from 3,563 to 46). Reported with its measurement against the baseline.
                if removed
                    .iter()
                    .any(|r| (0..total_queries).any(|q| r.touches(q) && chosen_at[k].touches(q)))
                {
                    chosen_at[k] = self.initial[i].clone();
                    choice.chosen[k].1 = self.initial[i].measurement;
                }
                k += 1;
                continue;
            }
            let (_, measurement) = choice.chosen.remove(k);
            removed.push(chosen_at.remove(k));
            choice.rejected.push(choose::Rejected {
                candidate: i,
                reason: choose::Rejection::Superseded,
                measurement,
                with_chosen: usize::MAX,
            });
        }
        let total = choice.chosen.len();
        for r in &mut choice.rejected {
            r.with_chosen = r.with_chosen.min(total);
        }
    }
}

/// What no rollback undoes of any run: the statistics counters count pgplan's own runs, and
/// without a superuser pg_stat_statements may too.
fn own_runs_counted(superuser: bool) -> Vec<String> {
    let mut not_rolled_back = vec![
        "statistics counters (pg_stat_user_tables, pg_statio_*, pg_stat_user_indexes) count pgplan's own runs"
            .to_owned(),
    ];
    if !superuser {
        not_rolled_back.push(
            "pgplan's own runs may show in pg_stat_statements (keeping them out needs a superuser)"
                .into(),
        );
    }
    not_rolled_back
}

/// The queries a chosen index serves, with their figures before and after it.
fn served_queries(m: &Measured, total_queries: usize) -> Vec<ServedQuery> {
    (0..total_queries)
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
        .collect()
}

/// Adds the notes `list` does not hold yet: each measuring pass reports the figures it put back.
fn push_new(list: &mut Vec<String>, notes: &[String]) {
    for note in notes {
        if !list.contains(note) {
            list.push(note.clone());
        }
    }
}
