//! `pgplan compare --workload`: does an index pay for a whole workload, writes included? The
//! pure side: where the queries come from ([`source`]), the values their parameters are measured
//! with ([`params`]), the write side ([`write_cost`], [`updates`]) and the verdict and ranking
//! ([`verdict`]). The measurements themselves are [`WorkloadMeasurements`], which the engine in
//! `app::workload` fills (each candidate built once in its own rolled-back transaction, every
//! query measured inside it) and [`judge`] turns into a report.

pub mod logfile;
pub mod params;
pub mod probe_guard;
pub mod probe_residue;
pub mod source;
pub mod statements;
pub mod unmeasured;
pub mod updates;
pub mod verdict;
pub mod write_cost;

use crate::compare::{
    EstimateChange, Figures, Measurement, Spread, Verdict, index_uses, within_noise,
};
use crate::sql::IndexCandidate;

pub use params::Sample;
pub use source::SourceQuery;
pub use verdict::{QueryFigures, QueryJudgement, WorkloadVerdict, judge_workload, rank_workload};
pub use write_cost::{EntryCost, TableActivity, WorkloadUpdate, WriteCost};

/// A workload query ready to measure: where it came from and the samples it runs with.
#[derive(Debug, Clone)]
pub struct WorkloadQuery {
    pub source: SourceQuery,
    pub samples: Vec<Sample>,
    /// Whether pgplan runs it: writes only with --allow-writes (and still rolled back).
    pub runnable: bool,
}

/// One query's measurements in one transaction: one per sample, or why it could not run.
pub type QueryRuns = Vec<Result<Measurement, String>>;

/// The baseline of every query, as measured once (and again when a build changed estimates).
#[derive(Debug, Clone)]
pub struct WorkloadBaseline {
    /// In workload order, then sample order.
    pub queries: Vec<QueryRuns>,
    /// The candidate whose build changed the planner's estimates, for a re-measurement.
    pub after: Option<usize>,
    /// A representative write's cost per table, measured with --allow-writes.
    pub write_probes: Vec<(String, Option<ProbeFigures>)>,
}

/// Pages written and WAL of one representative write (EXPLAIN (ANALYZE, BUFFERS, WAL)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeFigures {
    pub pages_written: f64,
    pub wal_bytes: f64,
    /// Rows its runs inserted and deleted that the table's statistics counters kept (0 when
    /// pgplan turned track_counts off for them).
    pub rows_counted: f64,
}

/// One candidate measured over the workload.
#[derive(Debug, Clone)]
pub struct WorkloadCandidateRun {
    pub name: String,
    pub plan_index_names: Vec<String>,
    pub size_bytes: Option<f64>,
    pub build_ms: Option<f64>,
    pub queries: Vec<QueryRuns>,
    /// Which baseline it is judged against (an index into `WorkloadMeasurements::baselines`).
    pub baseline: usize,
    /// The index's entries over the table's rows, both as the build counted them (a partial
    /// index holds only the rows its predicate selects).
    pub entries_per_row: f64,
    pub entries: f64,
    /// The table's columns the index reads (keys, INCLUDE, expressions, predicate).
    pub covered_columns: Vec<String>,
    /// The representative write with the index in place (--allow-writes).
    pub write_probe: Option<ProbeFigures>,
}

/// Everything the engine measured.
#[derive(Debug, Clone)]
pub struct WorkloadMeasurements {
    pub baselines: Vec<WorkloadBaseline>,
    /// In the order given; an error is why the candidate could not be built or measured.
    pub candidates: Vec<Result<WorkloadCandidateRun, String>>,
    /// The write counters of every candidate's table.
    pub activity: Vec<TableActivity>,
    pub estimate_changes: Vec<EstimateChange>,
    /// What the representative writes left on their tables (with --allow-writes).
    pub probe_residue: Vec<probe_residue::Residue>,
    /// What became of the changed figures at the end of the run, one note per table.
    pub figures_put_back: Vec<String>,
    /// Candidates not measured because `--budget` ran out.
    pub skipped_for_budget: Vec<usize>,
}

/// Per sample: baseline and candidate warm figures (None where a run failed).
pub type SamplePairs = Vec<Option<(Figures, Figures)>>;

/// One query under one candidate, as the report shows it.
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    pub figures: QueryFigures,
    pub judgement: QueryJudgement,
    pub samples: SamplePairs,
}

/// A candidate judged over the workload.
#[derive(Debug, Clone)]
pub struct JudgedCandidate {
    pub index: usize,
    pub verdict: WorkloadVerdict,
    pub writes: Vec<WriteCost>,
    pub queries: Vec<QueryOutcome>,
    /// True when any figure is an estimate: a generic plan, or the write cost.
    pub estimated: bool,
}

/// The queries' UPDATEs with their tables resolved by `resolve` (schema.table as the catalog
/// names it) and their calls per day.
pub fn workload_updates(
    queries: &[WorkloadQuery],
    resolve: impl Fn(&str) -> Option<String>,
) -> Vec<WorkloadUpdate> {
    queries
        .iter()
        .filter_map(|q| {
            let (table, set_columns) = updates::update_target(&q.source.query.text)?;
            Some(WorkloadUpdate {
                table: resolve(&table)?,
                set_columns: set_columns.iter().map(|c| c.to_lowercase()).collect(),
                calls_per_day: q.source.calls_per_day,
            })
        })
        .collect()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// One query's figures over its samples without and with the candidate.
fn query_figures(
    query: &WorkloadQuery,
    baseline: &QueryRuns,
    with: &QueryRuns,
    plan_index_names: &[String],
    table: Option<&str>,
) -> (QueryFigures, SamplePairs) {
    let measured = query.samples.iter().all(|s| !s.generic) && query.runnable;
    let mut pairs = Vec::new();
    let mut used = false;
    let mut noise = true;
    let mut one_run = false;
    // Whether any plan, with or without the candidate, reads its table.
    let mut reads_table = table.is_none();
    let reads = |m: &Measurement, t: &str| {
        m.representative().plan.nodes.iter().any(|n| {
            matches!((&n.schema, &n.relation_name), (Some(s), Some(r))
                if format!("{}.{}", crate::sql::quote_ident(s), crate::sql::quote_ident(r)) == t)
        })
    };
    for (b, a) in baseline.iter().zip(with) {
        match (b, a) {
            (Ok(b), Ok(a)) => {
                if let Some(t) = table {
                    reads_table |= reads(b, t) || reads(a, t);
                }
                used |= !index_uses(a.representative(), plan_index_names).is_empty();
                let (bf, af) = (b.warm_figures(), a.warm_figures());
                let spreads: [Option<Spread>; 2] = [b.warm_spread(), a.warm_spread()];
                // One warm run has no spread: a difference on one sample is no evidence.
                if b.warm.len() < 2 || a.warm.len() < 2 {
                    one_run = true;
                } else if let (Some(x), Some(y)) = (bf.execution_ms, af.execution_ms) {
                    noise &= within_noise(x, y, spreads);
                }
                pairs.push(Some((bf, af)));
            }
            _ => pairs.push(None),
        }
    }
    let all: Vec<&(Figures, Figures)> = pairs.iter().flatten().collect();
    let complete = all.len() == pairs.len() && !all.is_empty();
    let avg = |f: fn(&Figures) -> Option<f64>, side: usize| {
        if !complete {
            return None;
        }
        let v: Vec<f64> = all
            .iter()
            .filter_map(|p| f(if side == 0 { &p.0 } else { &p.1 }))
            .collect();
        (v.len() == all.len()).then(|| mean(&v)).flatten()
    };
    let figures = QueryFigures {
        id: query.source.id.clone(),
        calls_per_day: query.source.calls_per_day,
        measured,
        used,
        pages_before: if measured {
            avg(|f| f.pages_touched, 0)
        } else {
            None
        },
        pages_after: if measured {
            avg(|f| f.pages_touched, 1)
        } else {
            None
        },
        ms_before: if measured {
            avg(|f| f.execution_ms, 0)
        } else {
            None
        },
        ms_after: if measured {
            avg(|f| f.execution_ms, 1)
        } else {
            None
        },
        time_within_noise: noise,
        cost_before: avg(|f| f.total_cost, 0),
        cost_after: avg(|f| f.total_cost, 1),
        // Only when every sample ran both ways: a failed run proves nothing about the table.
        unaffected: !reads_table && complete,
        one_run,
    };
    (figures, pairs)
}

/// Judges every measured candidate, best first (see [`rank_workload`]).
pub fn judge(
    queries: &[WorkloadQuery],
    measurements: &WorkloadMeasurements,
    candidates: &[IndexCandidate],
    updates: &[WorkloadUpdate],
    table_of: impl Fn(&IndexCandidate) -> Option<String>,
    min_gain_percent: f64,
) -> Vec<JudgedCandidate> {
    let mut judged = Vec::new();
    for (i, result) in measurements.candidates.iter().enumerate() {
        let Ok(run) = result else { continue };
        let baseline = &measurements.baselines[run.baseline];
        let table = table_of(&candidates[i]);
        let outcomes: Vec<(QueryFigures, SamplePairs)> = queries
            .iter()
            .enumerate()
            .map(|(q, query)| {
                query_figures(
                    query,
                    &baseline.queries[q],
                    &run.queries[q],
                    &run.plan_index_names,
                    table.as_deref(),
                )
            })
            .collect();
        let writes: Vec<WriteCost> = table
            .as_ref()
            .and_then(|t| measurements.activity.iter().find(|a| &a.table == t))
            .map(|activity| {
                let probe_before = baseline
                    .write_probes
                    .iter()
                    .find(|(t, _)| t == &activity.table)
                    .and_then(|(_, p)| *p);
                let entry_cost = match (probe_before, run.write_probe) {
                    // An entry always writes WAL: no difference means the probe measured noise.
                    (Some(b), Some(a)) if a.wal_bytes > b.wal_bytes => EntryCost {
                        pages_written: (a.pages_written - b.pages_written).max(0.0),
                        wal_bytes: (a.wal_bytes - b.wal_bytes).max(0.0),
                        estimated: false,
                    },
                    _ => {
                        write_cost::estimated_entry_cost(run.size_bytes.unwrap_or(0.0), run.entries)
                    }
                };
                vec![write_cost::write_cost(
                    activity,
                    Some(&run.covered_columns),
                    run.entries_per_row,
                    updates,
                    entry_cost,
                )]
            })
            .unwrap_or_default();
        let figures: Vec<QueryFigures> = outcomes.iter().map(|(f, _)| f.clone()).collect();
        let verdict = judge_workload(&figures, &writes, min_gain_percent);
        let estimated =
            figures.iter().any(|f| !f.measured) || writes.iter().any(|w| w.entry_cost.estimated);
        let queries = outcomes
            .into_iter()
            .zip(verdict.queries.iter().cloned())
            .map(|((figures, samples), judgement)| QueryOutcome {
                figures,
                judgement,
                samples,
            })
            .collect();
        judged.push(JudgedCandidate {
            index: i,
            verdict,
            writes,
            queries,
            estimated,
        });
    }
    let verdicts: Vec<WorkloadVerdict> = judged.iter().map(|j| j.verdict.clone()).collect();
    let order = rank_workload(&verdicts);
    let mut slots: Vec<Option<JudgedCandidate>> = judged.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Whether any judged candidate pays.
pub fn any_pays(judged: &[JudgedCandidate]) -> bool {
    judged.iter().any(|j| j.verdict.verdict == Verdict::Pays)
}

/// Everything `compare --workload` reports.
#[derive(Debug, Clone)]
pub struct WorkloadReport {
    pub server_version: String,
    /// "pg_stat_statements", the file or directory, or "query files".
    pub source: String,
    pub queries: Vec<WorkloadQuery>,
    pub candidates: Vec<IndexCandidate>,
    /// The name each candidate goes by (PostgreSQL's for an unnamed one, made unique).
    pub names: Vec<String>,
    pub measurements: WorkloadMeasurements,
    /// Measured candidates, best first.
    pub ranking: Vec<JudgedCandidate>,
    pub runs: u32,
    pub min_gain_percent: f64,
    pub allow_writes: bool,
    pub warnings: Vec<String>,
    /// pg_stat_statements' statements set aside, and the time of those read.
    pub screening: statements::Screening,
    /// Queries that could not be measured, where and why.
    pub unmeasured: Vec<unmeasured::Unmeasured>,
}

impl WorkloadReport {
    /// The best candidate that pays for the workload.
    pub fn best(&self) -> Option<&JudgedCandidate> {
        self.ranking
            .iter()
            .find(|j| j.verdict.verdict == Verdict::Pays)
    }

    /// Why query `id` could not be measured with candidate `i` (or in its baseline).
    pub fn query_error(&self, id: &str, i: usize) -> Option<&str> {
        self.unmeasured
            .iter()
            .find(|u| u.query == id && (u.during == "baseline" || u.during == self.names[i]))
            .map(|u| u.error.as_str())
    }

    /// Candidates that could not be built or measured (not those the budget left out).
    pub fn failed(&self) -> impl Iterator<Item = (usize, &str)> {
        self.measurements
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.measurements.skipped_for_budget.contains(i))
            .filter_map(|(i, r)| r.as_ref().err().map(|e| (i, e.as_str())))
    }
}
