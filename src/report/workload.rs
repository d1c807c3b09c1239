//! `pgplan compare --workload` output: the workload (queries, calls per day, the parameter
//! values each was measured with), the candidates ranked by net pages saved per day with their
//! verdicts, then per candidate the per-query table (regressions named) and the write side.
//! Estimated figures (generic plans, estimated write costs) are labelled as such everywhere.

use std::io::{self, Write};

use serde::Serialize;

use crate::compare::workload::{
    JudgedCandidate, QueryOutcome, Sample, WorkloadCandidateRun, WorkloadReport, WriteCost,
};
use crate::compare::{EstimateChange, Spread, Verdict};

use super::compare::{COMPARE_SCHEMA_VERSION, FiguresDoc};

use super::text::{align_numbers, new_table, write_table};
use super::{Paint, TextOptions, markdown};
use crate::format::{bytes, change, count, ms, printable};

/// `pgplan compare --workload --format json`.
#[derive(Debug, Serialize)]
pub struct WorkloadDoc {
    pub schema_version: u32,
    pub server_version: String,
    /// Always "workload".
    pub mode: &'static str,
    /// True when any figure of any candidate is an estimate.
    pub estimated: bool,
    pub workload: WorkloadSourceDoc,
    pub runs: u32,
    pub min_gain_percent: f64,
    pub allow_writes: bool,
    /// The first is the baseline; each later one was measured again after `after_candidate`
    /// changed the planner's estimates.
    pub baselines: Vec<BaselineDoc>,
    /// In the order given.
    pub candidates: Vec<WorkloadCandidateDoc>,
    /// Candidate names, best first.
    pub ranking: Vec<String>,
    pub best: Option<String>,
    pub skipped_for_budget: Vec<String>,
    pub estimate_changes: Vec<EstimateChange>,
    pub warnings: Vec<String>,
    /// The statements of pg_stat_statements set aside, with why.
    pub skipped_statements: super::skipped::SkippedDoc,
    /// Queries that could not be measured: in the baseline or with a candidate, and why.
    pub unmeasured_queries: Vec<crate::compare::workload::unmeasured::Unmeasured>,
}

#[derive(Debug, Serialize)]
pub struct WorkloadSourceDoc {
    pub source: String,
    pub queries: Vec<WorkloadQueryDoc>,
}

#[derive(Debug, Serialize)]
pub struct WorkloadQueryDoc {
    /// The queryid where known, else the file name (`#n` for the n-th statement of a file).
    pub id: String,
    pub queryid: Option<String>,
    pub text: String,
    /// Calls counted by pg_stat_statements (null for files).
    pub calls: Option<f64>,
    pub calls_per_day: f64,
    /// False for a write without --allow-writes: never run, only read for its SET list.
    pub runnable: bool,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Serialize)]
pub struct BaselineDoc {
    pub after_candidate: Option<String>,
    pub queries: Vec<BaselineQueryDoc>,
}

#[derive(Debug, Serialize)]
pub struct BaselineQueryDoc {
    pub id: String,
    pub samples: Vec<SampleFiguresDoc>,
}

#[derive(Debug, Serialize)]
pub struct SampleFiguresDoc {
    pub label: String,
    /// The first run.
    pub cold: Option<FiguresDoc>,
    /// Median of the warm runs.
    pub warm: Option<FiguresDoc>,
    pub warm_execution_ms_spread: Option<Spread>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct WorkloadCandidateDoc {
    pub index_sql: String,
    pub index_name: String,
    #[serde(serialize_with = "crate::report::wire::count_opt")]
    pub index_size_bytes: Option<f64>,
    pub build_ms: Option<f64>,
    /// The position in `baselines` this candidate was judged against.
    pub judged_against_baseline: Option<usize>,
    pub rank: Option<usize>,
    pub workload: Option<CandidateWorkloadDoc>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CandidateWorkloadDoc {
    /// "pays", "does_not_pay" or "unused".
    pub verdict: &'static str,
    pub read_pages_saved_per_day: f64,
    pub write_pages_added_per_day: Option<f64>,
    pub wal_bytes_added_per_day: Option<f64>,
    pub hot_updates_lost_per_day: Option<f64>,
    pub net_pages_saved_per_day: f64,
    /// True where any figure is an estimate (a generic plan, the write cost).
    pub estimated: bool,
    pub queries: Vec<CandidateQueryDoc>,
    pub writes: Vec<WriteCost>,
}

#[derive(Debug, Serialize)]
pub struct CandidateQueryDoc {
    pub id: String,
    pub verdict: &'static str,
    pub used: bool,
    /// Mean over the samples of the median warm pages touched; null for an estimated query.
    /// Pages per call, averaged over the query's samples: an integer when whole.
    #[serde(serialize_with = "crate::report::wire::count_opt")]
    pub pages_before: Option<f64>,
    #[serde(serialize_with = "crate::report::wire::count_opt")]
    pub pages_after: Option<f64>,
    pub execution_ms_before: Option<f64>,
    pub execution_ms_after: Option<f64>,
    pub execution_within_noise: bool,
    /// Measured with one warm run (--runs 1): no spread, so the times are not compared.
    pub execution_one_run: bool,
    /// Estimated cost (the only figure of a generic plan).
    pub total_cost_before: Option<f64>,
    pub total_cost_after: Option<f64>,
    /// False for a generic plan: estimated, and left out of the pages per day.
    pub measured: bool,
    pub regression: bool,
    pub pages_saved_per_day: Option<f64>,
    /// Why it could not be measured with this candidate (or in its baseline); null when it was.
    pub error: Option<String>,
    /// False when its plans read none of the candidate's tables: its figures are noise, not
    /// counted as a gain or a loss.
    pub affected: bool,
}

fn baseline_doc(report: &WorkloadReport, n: usize) -> BaselineDoc {
    let baseline = &report.measurements.baselines[n];
    BaselineDoc {
        after_candidate: baseline.after.map(|i| report.names[i].clone()),
        queries: report
            .queries
            .iter()
            .zip(&baseline.queries)
            .map(|(q, runs)| BaselineQueryDoc {
                id: q.source.id.clone(),
                samples: q
                    .samples
                    .iter()
                    .zip(runs)
                    .map(|(s, r)| match r {
                        Ok(m) => SampleFiguresDoc {
                            label: s.label.clone(),
                            cold: Some(m.cold_figures().into()),
                            warm: Some(m.warm_figures().into()),
                            warm_execution_ms_spread: m.warm_spread(),
                            error: None,
                        },
                        Err(e) => SampleFiguresDoc {
                            label: s.label.clone(),
                            cold: None,
                            warm: None,
                            warm_execution_ms_spread: None,
                            error: Some(e.clone()),
                        },
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn query_doc(q: &QueryOutcome, error: Option<&str>) -> CandidateQueryDoc {
    let f = &q.figures;
    CandidateQueryDoc {
        id: f.id.clone(),
        verdict: q.judgement.verdict.as_str(),
        used: f.used,
        pages_before: f.pages_before,
        pages_after: f.pages_after,
        execution_ms_before: f.ms_before,
        execution_ms_after: f.ms_after,
        execution_within_noise: f.time_within_noise,
        execution_one_run: f.one_run,
        total_cost_before: f.cost_before,
        total_cost_after: f.cost_after,
        measured: f.measured,
        regression: q.judgement.regression,
        pages_saved_per_day: q.judgement.pages_saved_per_day,
        error: error.map(str::to_owned),
        affected: q.judgement.affected,
    }
}

impl WorkloadDoc {
    pub fn new(report: &WorkloadReport) -> Self {
        let m = &report.measurements;
        let candidates = report
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let position = report.ranking.iter().position(|j| j.index == i);
                let run = m.candidates[i].as_ref().ok();
                WorkloadCandidateDoc {
                    index_sql: c.original.clone(),
                    index_name: report.names[i].clone(),
                    index_size_bytes: run.and_then(|r| r.size_bytes),
                    build_ms: run.and_then(|r| r.build_ms),
                    judged_against_baseline: run.map(|r| r.baseline),
                    rank: position.map(|p| p + 1),
                    workload: position.map(|p| {
                        let j = &report.ranking[p];
                        CandidateWorkloadDoc {
                            verdict: j.verdict.verdict.as_str(),
                            read_pages_saved_per_day: j.verdict.read_pages_saved_per_day,
                            write_pages_added_per_day: j.verdict.write_pages_added_per_day,
                            wal_bytes_added_per_day: j.verdict.wal_bytes_added_per_day,
                            hot_updates_lost_per_day: j.verdict.hot_updates_lost_per_day,
                            net_pages_saved_per_day: j.verdict.net_pages_saved_per_day,
                            estimated: j.estimated,
                            queries: j
                                .queries
                                .iter()
                                .map(|q| query_doc(q, report.query_error(&q.figures.id, i)))
                                .collect(),
                            writes: j.writes.clone(),
                        }
                    }),
                    error: m.candidates[i].as_ref().err().cloned(),
                }
            })
            .collect();
        WorkloadDoc {
            schema_version: COMPARE_SCHEMA_VERSION,
            server_version: report.server_version.clone(),
            mode: "workload",
            estimated: report.ranking.iter().any(|j| j.estimated),
            workload: WorkloadSourceDoc {
                source: report.source.clone(),
                queries: report
                    .queries
                    .iter()
                    .map(|q| WorkloadQueryDoc {
                        id: q.source.id.clone(),
                        queryid: q.source.queryid.clone(),
                        text: q.source.query.text.clone(),
                        calls: q.source.calls,
                        calls_per_day: q.source.calls_per_day,
                        runnable: q.runnable,
                        samples: q.samples.clone(),
                    })
                    .collect(),
            },
            runs: report.runs,
            min_gain_percent: report.min_gain_percent,
            allow_writes: report.allow_writes,
            baselines: (0..m.baselines.len())
                .map(|n| baseline_doc(report, n))
                .collect(),
            candidates,
            ranking: report
                .ranking
                .iter()
                .map(|j| report.names[j.index].clone())
                .collect(),
            best: report.best().map(|j| report.names[j.index].clone()),
            skipped_for_budget: m
                .skipped_for_budget
                .iter()
                .map(|&i| report.names[i].clone())
                .collect(),
            estimate_changes: m.estimate_changes.clone(),
            warnings: report.warnings.clone(),
            skipped_statements: super::skipped::SkippedDoc::new(&report.screening),
            unmeasured_queries: report.unmeasured.clone(),
        }
    }
}

fn opt_count(v: Option<f64>) -> String {
    v.map(|v| count(v.round())).unwrap_or_else(|| "—".into())
}

fn verdict_word(paint: &Paint, verdict: Verdict) -> String {
    match verdict {
        Verdict::Pays => paint.good("pays"),
        Verdict::DoesNotPay => paint.warn("does not pay"),
        Verdict::Unused => paint.bad("unused"),
    }
}

/// "9,205 → 5 (1,841× fewer)", or the estimated cost of a generic plan, labelled.
fn query_pages(q: &QueryOutcome) -> String {
    let f = &q.figures;
    if f.measured {
        format!(
            "{} → {} ({})",
            opt_count(f.pages_before),
            opt_count(f.pages_after),
            change(f.pages_before, f.pages_after, "fewer", "more")
        )
    } else {
        format!(
            "ESTIMATED cost {} → {} ({})",
            f.cost_before.map(|c| format!("{c:.2}")).unwrap_or_default(),
            f.cost_after.map(|c| format!("{c:.2}")).unwrap_or_default(),
            change(f.cost_before, f.cost_after, "cheaper", "dearer")
        )
    }
}

fn query_time(q: &QueryOutcome) -> String {
    let f = &q.figures;
    match (f.measured, f.ms_before, f.ms_after) {
        (true, Some(b), Some(a)) => format!(
            "{} → {} ({})",
            ms(b),
            ms(a),
            if f.one_run {
                "one run: no spread to judge by".to_owned()
            } else if f.time_within_noise && a != b {
                "within noise".to_owned()
            } else {
                change(Some(b), Some(a), "faster", "slower")
            }
        ),
        _ => "—".into(),
    }
}

fn write_note(w: &WriteCost) -> String {
    let cost = if w.entry_cost.estimated {
        format!(
            "ESTIMATED {} page and {} of WAL per entry (from the built index's size; page splits and full-page images not counted)",
            count(w.entry_cost.pages_written),
            bytes(w.entry_cost.wal_bytes)
        )
    } else {
        format!(
            "measured {} pages dirtied and {} of WAL per entry (a representative write with and without the index)",
            count(w.entry_cost.pages_written),
            bytes(w.entry_cost.wal_bytes)
        )
    };
    format!(
        "{}: {} inserts, {} updates ({} HOT), {} deletes per day; index entries per row {}; {cost}",
        printable(&w.table),
        opt_count(w.inserts_per_day),
        opt_count(w.updates_per_day),
        opt_count(w.hot_updates_per_day),
        opt_count(w.deletes_per_day),
        format_share(w.entries_per_insert),
    )
}

fn format_share(share: f64) -> String {
    if share >= 0.9995 {
        "1".into()
    } else {
        format!("{share:.3}")
    }
}

fn mode_line(report: &WorkloadReport) -> String {
    format!(
        "measured: EXPLAIN (ANALYZE, BUFFERS) · each candidate built once, in its own rolled-back \
         transaction, every query measured inside it · 1 first run + {} warm run{} per query and \
         sample (warm = median) · verdict on pages per day (reads saved − writes added), min gain {}%",
        report.runs,
        if report.runs == 1 { "" } else { "s" },
        count(report.min_gain_percent)
    )
}

/// An error's first line, printable and shortened for a table cell.
fn first_line(error: &str) -> String {
    crate::format::printable(&one_line(error.lines().next().unwrap_or(error)))
}

fn one_line(text: &str) -> String {
    // Escaped before it is cut: a table cell must hold no escape sequence for the table to end
    // with a reset of its own.
    let joined = printable(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    if joined.chars().count() > 70 {
        format!("{}…", joined.chars().take(69).collect::<String>())
    } else {
        joined
    }
}

fn ranking_cells(report: &WorkloadReport, j: &JudgedCandidate) -> [String; 7] {
    let run = report.measurements.candidates[j.index].as_ref().ok();
    let est = if j.writes.iter().any(|w| w.entry_cost.estimated) {
        " (est.)"
    } else {
        ""
    };
    [
        opt_count(Some(j.verdict.read_pages_saved_per_day)),
        format!("{}{est}", opt_count(j.verdict.write_pages_added_per_day)),
        opt_count(j.verdict.hot_updates_lost_per_day),
        opt_count(Some(j.verdict.net_pages_saved_per_day)),
        j.queries
            .iter()
            .filter(|q| q.judgement.regression)
            .map(|q| q.figures.id.clone())
            .collect::<Vec<_>>()
            .join(", "),
        run.and_then(|r| r.size_bytes)
            .map(bytes)
            .unwrap_or_default(),
        run.and_then(|r| r.build_ms).map(ms).unwrap_or_default(),
    ]
}

/// `pgplan compare --workload` as text.
pub fn write_text(
    out: &mut dyn Write,
    report: &WorkloadReport,
    options: &TextOptions,
) -> io::Result<()> {
    let text = WorkloadText {
        report,
        options,
        paint: Paint::new(options.color),
        // Index names are catalog names: escaped once here for every line that prints one.
        names: report.names.iter().map(|n| printable(n)).collect(),
    };
    text.headline(out)?;
    text.workload_table(out)?;
    text.ranking_table(out)?;
    text.failed_candidates(out)?;
    text.unmeasured_queries(out)?;
    text.best_line(out)?;
    for (position, j) in report.ranking.iter().enumerate() {
        let Ok(run) = &report.measurements.candidates[j.index] else {
            continue;
        };
        text.candidate_heading(out, position, j, run)?;
        text.candidate_queries(out, j)?;
        text.write_side(out, j)?;
    }
    text.parameter_values(out)?;
    super::skipped::write_text(out, &text.paint, &report.screening)?;
    text.notes(out)
}

/// What every section of the text report shares: the report, how text looks, and the index
/// names already escaped.
struct WorkloadText<'a> {
    report: &'a WorkloadReport,
    options: &'a TextOptions,
    paint: Paint,
    names: Vec<String>,
}

impl WorkloadText<'_> {
    /// The title, how it was measured, and the workload's source.
    fn headline(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        writeln!(
            out,
            "{} · PostgreSQL {}",
            paint.bold("pgplan compare --workload"),
            report.server_version
        )?;
        writeln!(out, "{}", mode_line(report))?;
        writeln!(out)?;
        writeln!(
            out,
            "{} {} ({} quer{})",
            paint.bold("Workload"),
            report.source,
            report.queries.len(),
            if report.queries.len() == 1 {
                "y"
            } else {
                "ies"
            }
        )
    }

    /// One row per query: calls per day, the parameter values it was measured with, its text.
    fn workload_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut table = new_table(
            &["query", "calls/day", "measured with", "text"],
            self.options,
        );
        for q in &self.report.queries {
            let samples = if !q.runnable {
                "not run (a write: --allow-writes)".to_owned()
            } else {
                q.samples
                    .iter()
                    .map(sample_label)
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            table.add_row(vec![
                q.source.id.clone(),
                count(q.source.calls_per_day.round()),
                samples,
                one_line(&q.source.query.text),
            ]);
        }
        write_table(out, &table)?;
        writeln!(out)
    }

    /// The measured candidates best first, then those the budget left unmeasured.
    fn ranking_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        writeln!(out, "{}", paint.bold("Candidates, best first (per day)"))?;
        let mut table = new_table(
            &[
                "#",
                "index",
                "verdict",
                "read pages saved",
                "write pages added",
                "HOT updates lost",
                "net pages saved",
                "regressions",
                "size",
                "build",
            ],
            self.options,
        );
        for (position, j) in report.ranking.iter().enumerate() {
            let [read, write, hot, net, regressions, size, build] = ranking_cells(report, j);
            table.add_row(vec![
                (position + 1).to_string(),
                self.names[j.index].clone(),
                verdict_word(paint, j.verdict.verdict),
                read,
                write,
                hot,
                net,
                regressions,
                size,
                build,
            ]);
        }
        for &i in &report.measurements.skipped_for_budget {
            let mut row = vec![
                "—".to_owned(),
                self.names[i].clone(),
                paint.warn("not measured (budget)"),
            ];
            row.extend(std::iter::repeat_n(String::new(), 7));
            table.add_row(row);
        }
        align_numbers(&mut table, 3);
        write_table(out, &table)?;
        writeln!(out)
    }

    /// The candidates that could not be built or measured, each with its error.
    fn failed_candidates(&self, out: &mut dyn Write) -> io::Result<()> {
        let failed: Vec<(usize, &str)> = self.report.failed().collect();
        if failed.is_empty() {
            return Ok(());
        }
        writeln!(out, "{}", self.paint.bad("Could not be measured"))?;
        for (i, error) in failed {
            writeln!(
                out,
                "  {}: {}",
                self.paint.bold(&self.names[i]),
                self.report.candidates[i].original
            )?;
            for line in error.lines() {
                writeln!(out, "    {line}")?;
            }
        }
        writeln!(out)
    }

    /// The queries that could not be measured, in the baseline or with a candidate, and why.
    fn unmeasured_queries(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.unmeasured.is_empty() {
            return Ok(());
        }
        super::skipped::write_unmeasured_text(out, &self.paint, &self.report.unmeasured)?;
        writeln!(out)
    }

    /// The best candidate, or why there is none.
    fn best_line(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        match report.best() {
            Some(best) => writeln!(
                out,
                "{} {} — {}",
                paint.bold("Best:"),
                paint.good(&self.names[best.index]),
                report.candidates[best.index].original
            ),
            None if report.ranking.is_empty() => writeln!(
                out,
                "{} nothing was measured: none of the {} candidate(s) could be measured; this is no verdict on them",
                paint.bold("Best:"),
                report.candidates.len()
            ),
            None => writeln!(
                out,
                "{} no measured candidate ({} of {}) saves more pages per day than it writes, by {}% of what its queries read",
                paint.bold("Best:"),
                report.ranking.len(),
                report.candidates.len(),
                count(report.min_gain_percent)
            ),
        }
    }

    /// A measured candidate's place, name and verdict, its definition, and its build facts.
    fn candidate_heading(
        &self,
        out: &mut dyn Write,
        position: usize,
        j: &JudgedCandidate,
        run: &WorkloadCandidateRun,
    ) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        writeln!(out)?;
        writeln!(
            out,
            "{} {}  {}",
            paint.bold(&format!("{}.", position + 1)),
            paint.bold(&self.names[j.index]),
            verdict_word(paint, j.verdict.verdict)
        )?;
        writeln!(out, "  {}", printable(&report.candidates[j.index].original))?;
        let mut facts = Vec::new();
        if let Some(b) = run.build_ms {
            facts.push(format!("built once in {}", ms(b)));
        }
        if let Some(s) = run.size_bytes {
            facts.push(format!("size {}", bytes(s)));
        }
        facts.push(if run.baseline == 0 {
            "judged against the baseline".to_owned()
        } else {
            format!(
                "judged against the baseline measured again after {} changed the planner's estimates",
                report.measurements.baselines[run.baseline]
                    .after
                    .map(|i| self.names[i].as_str())
                    .unwrap_or("a build")
            )
        });
        writeln!(out, "  {}", facts.join(" · "))?;
        writeln!(out)
    }

    /// A candidate's per-query table, then a line for each query it makes worse.
    fn candidate_queries(&self, out: &mut dyn Write, j: &JudgedCandidate) -> io::Result<()> {
        let paint = &self.paint;
        let mut table = new_table(
            &[
                "query",
                "calls/day",
                "verdict",
                "pages touched (warm)",
                "time (warm)",
                "pages saved/day",
            ],
            self.options,
        );
        for q in &j.queries {
            if let Some(error) = self.report.query_error(&q.figures.id, j.index) {
                table.add_row(vec![
                    q.figures.id.clone(),
                    count(q.figures.calls_per_day.round()),
                    paint.bad("NOT MEASURED"),
                    first_line(error),
                    "—".into(),
                    "—".into(),
                ]);
                continue;
            }
            let verdict = if !q.judgement.affected {
                "not affected".to_owned()
            } else if q.judgement.regression {
                paint.bad(&format!("{} · REGRESSION", q.judgement.verdict.as_str()))
            } else {
                q.judgement.verdict.as_str().to_owned()
            };
            table.add_row(vec![
                q.figures.id.clone(),
                count(q.figures.calls_per_day.round()),
                verdict,
                query_pages(q),
                query_time(q),
                opt_count(q.judgement.pages_saved_per_day),
            ]);
        }
        write_table(out, &table)?;
        for q in j.queries.iter().filter(|q| q.judgement.regression) {
            writeln!(
                out,
                "  {} {} is worse with this index: pages {}, time {}",
                paint.bad("Regression:"),
                q.figures.id,
                query_pages(q),
                query_time(q)
            )?;
        }
        Ok(())
    }

    /// What a candidate costs on each table it is written through.
    fn write_side(&self, out: &mut dyn Write, j: &JudgedCandidate) -> io::Result<()> {
        writeln!(out)?;
        writeln!(out, "  Write side")?;
        for w in &j.writes {
            writeln!(out, "    {}", write_note(w))?;
            writeln!(
                out,
                "    → {} index entries, {} pages written{}, {} of WAL, {} HOT updates lost per day",
                opt_count(w.index_entries_per_day),
                opt_count(w.write_pages_added_per_day),
                if w.entry_cost.estimated {
                    " (ESTIMATED)"
                } else {
                    ""
                },
                w.wal_bytes_added_per_day
                    .map(bytes)
                    .unwrap_or_else(|| "—".into()),
                w.hot_updates_lost_per_day
                    .map(|v| count(v.round()))
                    .unwrap_or_else(|| "unknown".into()),
            )?;
            for note in &w.notes {
                writeln!(out, "    - {}", printable(note))?;
            }
        }
        if j.writes.is_empty() {
            writeln!(out, "    no write counters for the table")?;
        }
        Ok(())
    }

    /// Why each sample's parameter values were chosen.
    fn parameter_values(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out)?;
        writeln!(out, "{}", self.paint.bold("Parameter values"))?;
        for q in &self.report.queries {
            for s in &q.samples {
                if s.why.is_empty() {
                    continue;
                }
                writeln!(
                    out,
                    "  {} · {}: {}",
                    q.source.id,
                    printable(&s.label),
                    printable(&s.why.join("; "))
                )?;
            }
        }
        Ok(())
    }

    /// The warnings gathered while measuring, if any.
    fn notes(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.warnings.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{}", self.paint.bold("Notes"))?;
        for w in &self.report.warnings {
            writeln!(out, "  - {}", printable(w))?;
        }
        Ok(())
    }
}

/// How one sample was measured: a generic plan, or its label with the parameter values.
fn sample_label(s: &Sample) -> String {
    if s.generic {
        "generic plan (ESTIMATED)".to_owned()
    } else if s.params.is_empty() {
        s.label.clone()
    } else {
        format!("{} ({})", s.label, s.params.join(", "))
    }
}

/// `pgplan compare --workload --format markdown`.
pub fn write_markdown(out: &mut dyn Write, report: &WorkloadReport) -> io::Result<()> {
    let names: Vec<String> = report.names.iter().map(|n| markdown::inline(n)).collect();
    writeln!(
        out,
        "### pgplan compare --workload — PostgreSQL {}",
        report.server_version
    )?;
    writeln!(out)?;
    writeln!(out, "{}", mode_line(report))?;
    writeln!(out)?;
    writeln!(out, "| query | calls/day | text |")?;
    writeln!(out, "|---|---:|---|")?;
    for q in &report.queries {
        writeln!(
            out,
            "| `{}` | {} | {} |",
            q.source.id,
            count(q.source.calls_per_day.round()),
            markdown::cell(&one_line(&q.source.query.text))
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| # | index | verdict | read pages saved/day | write pages added/day | HOT updates lost/day | net pages saved/day | regressions | size | build |"
    )?;
    writeln!(out, "|---|---|---|---:|---:|---:|---:|---|---:|---:|")?;
    for (position, j) in report.ranking.iter().enumerate() {
        let [read, write, hot, net, regressions, size, build] = ranking_cells(report, j);
        writeln!(
            out,
            "| {} | {} | {} | {read} | {write} | {hot} | {net} | {} | {size} | {build} |",
            position + 1,
            markdown::code(&report.names[j.index]).replace('|', "\\|"),
            j.verdict.verdict.as_str(),
            markdown::cell(&regressions),
        )?;
    }
    for (i, error) in report.failed() {
        writeln!(
            out,
            "| — | {} | failed | | | | | {} | | |",
            markdown::code(&report.names[i]).replace('|', "\\|"),
            markdown::cell(error.lines().next().unwrap_or(error))
        )?;
    }
    for &i in &report.measurements.skipped_for_budget {
        writeln!(
            out,
            "| — | {} | not measured (budget) | | | | | | | |",
            markdown::code(&report.names[i]).replace('|', "\\|")
        )?;
    }
    writeln!(out)?;
    for j in &report.ranking {
        writeln!(
            out,
            "<details><summary><code>{}</code>: {}</summary>",
            names[j.index],
            j.verdict.verdict.as_str()
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "| query | calls/day | verdict | pages touched (warm) | time (warm) |"
        )?;
        writeln!(out, "|---|---:|---|---|---|")?;
        for q in &j.queries {
            if let Some(error) = report.query_error(&q.figures.id, j.index) {
                writeln!(
                    out,
                    "| `{}` | {} | **not measured** | {} | — |",
                    q.figures.id,
                    count(q.figures.calls_per_day.round()),
                    markdown::cell(&first_line(error))
                )?;
                continue;
            }
            writeln!(
                out,
                "| `{}` | {} | {}{} | {} | {} |",
                q.figures.id,
                count(q.figures.calls_per_day.round()),
                if q.judgement.affected {
                    q.judgement.verdict.as_str()
                } else {
                    "not affected"
                },
                if q.judgement.regression {
                    " · **regression**"
                } else {
                    ""
                },
                query_pages(q),
                query_time(q)
            )?;
        }
        writeln!(out)?;
        for w in &j.writes {
            writeln!(out, "- {}", markdown::cell(&write_note(w)))?;
        }
        writeln!(out)?;
        writeln!(out, "</details>")?;
        writeln!(out)?;
    }
    super::skipped::write_unmeasured_markdown(
        out,
        "**Queries that could not be measured**",
        &report.unmeasured,
    )?;
    super::skipped::write_markdown(out, &report.screening)?;
    for w in &report.warnings {
        writeln!(out, "> {}", markdown::inline(&w.replace('\n', " ")))?;
    }
    Ok(())
}
