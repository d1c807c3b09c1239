//! `pgplan compare` output: the ranking and verdicts first, then each candidate's figures (cold
//! and warm, before and after), where the planner used it, the plan diff and its findings.
//! Estimated figures (hypothetical indexes, generic plans) are labelled as such everywhere.

use std::io::{self, Write};

use serde::Serialize;

use crate::compare::{
    CandidateOutcome, CandidateRun, CandidateSpec, CompareReport, Figures, IndexUse, Judged, Mode,
    Verdict, pairs,
};
use crate::plan::Pair;

use super::text::{
    Figure, Grid, Tone, cell, new_table, write_changes, write_findings, write_table, write_tree,
};
use super::wire::{DiffDoc, FindingDoc, PairDoc, PlanDoc, count_opt};
use super::{Paint, TextOptions, markdown};
use crate::format::{bytes, change, count, ms, printable};

/// The version of the compare documents, single-query and workload.
/// 2: counts are integers, as in every document of [`super::wire::SCHEMA_VERSION`] 2.
/// 3: the plans and diffs a compare document holds are those of
/// [`super::wire::PLAN_SCHEMA_VERSION`] 3 (each figure once).
pub const COMPARE_SCHEMA_VERSION: u32 = 3;

/// `pgplan compare --format json`.
#[derive(Debug, Serialize)]
pub struct CompareDoc<'a> {
    pub schema_version: u32,
    pub server_version: String,
    /// "measured", "hypothetical" or "generic_plan".
    pub mode: &'static str,
    /// True when every figure is the planner's estimate (hypothetical, generic_plan).
    pub estimated: bool,
    pub query: QueryDoc,
    pub runs: u32,
    pub min_gain_percent: f64,
    pub baseline: MeasurementDoc<'a>,
    /// The last of `baseline_reruns`, or null.
    pub baseline_rerun: Option<MeasurementDoc<'a>>,
    /// The baseline measured again each time a build changed the planner's estimates in place,
    /// right after that candidate and before the next.
    pub baseline_reruns: Vec<RerunDoc<'a>>,
    /// In the order given on the command line.
    pub candidates: Vec<CandidateDoc<'a>>,
    /// Candidate names, best first (failed candidates left out).
    pub ranking: Vec<String>,
    pub best: Option<String>,
    pub estimate_changes: Vec<crate::compare::EstimateChange>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RerunDoc<'a> {
    /// The candidate whose build (or ANALYZE) changed the estimates.
    pub after_candidate: String,
    #[serde(flatten)]
    pub measurement: MeasurementDoc<'a>,
}

#[derive(Debug, Serialize)]
pub struct QueryDoc {
    pub source: String,
    pub text: String,
    pub params: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct FiguresDoc {
    pub execution_ms: Option<f64>,
    pub planning_ms: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub shared_hit_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub shared_read_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub pages_touched: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub temp_blocks: Option<f64>,
    pub total_cost: Option<f64>,
}

impl From<Figures> for FiguresDoc {
    fn from(f: Figures) -> Self {
        FiguresDoc {
            execution_ms: f.execution_ms,
            planning_ms: f.planning_ms,
            shared_hit_blocks: f.shared_hit_blocks,
            shared_read_blocks: f.shared_read_blocks,
            pages_touched: f.pages_touched,
            temp_blocks: f.temp_blocks,
            total_cost: f.total_cost,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct MeasurementDoc<'a> {
    /// Plans captured: the cold run plus the counted runs (1 for estimates).
    pub runs: usize,
    /// The first run (truly cold only when `first_run` is "cold").
    pub cold: FiguresDoc,
    /// "cold": the query's relations were evicted from shared buffers before it (`--cold`);
    /// "as_cached": it ran on the cache as it was.
    pub first_run: &'static str,
    /// With `--cold`: the buffers evicted before the first run.
    pub evicted_buffers: Option<f64>,
    /// The median of the counted runs.
    pub warm: FiguresDoc,
    /// The fastest and slowest counted run's execution time (null without counted runs): a
    /// time difference inside this spread is within noise.
    pub warm_execution_ms_spread: Option<crate::compare::Spread>,
    /// The representative plan (the median warm run), as `pgplan explain --format json` gives it.
    pub plan: PlanDoc<'a>,
}

impl<'a> MeasurementDoc<'a> {
    fn new(m: &'a crate::compare::Measurement) -> Self {
        MeasurementDoc {
            runs: 1 + m.warm.len(),
            cold: m.cold_figures().into(),
            first_run: if m.evicted_buffers.is_some() {
                "cold"
            } else {
                "as_cached"
            },
            evicted_buffers: m.evicted_buffers,
            warm: m.warm_figures().into(),
            warm_execution_ms_spread: m.warm_spread(),
            plan: PlanDoc::new(m.representative()),
        }
    }
}

/// Before, after and ratio for each figure.
#[derive(Debug, Serialize)]
pub struct SummaryPairsDoc {
    pub execution_ms: PairDoc,
    /// The execution times differ by no more than the warm runs' spread: neither is faster.
    pub execution_within_noise: bool,
    pub pages_touched: PairDoc,
    pub shared_hit_blocks: PairDoc,
    pub shared_read_blocks: PairDoc,
    pub temp_blocks: PairDoc,
    pub total_cost: PairDoc,
}

impl SummaryPairsDoc {
    fn new(f: &(Figures, Figures), execution_within_noise: bool) -> Self {
        let [exec, pages, hit, read, temp] = pairs(f).map(|(_, p)| p);
        SummaryPairsDoc {
            execution_ms: exec.into(),
            execution_within_noise,
            pages_touched: PairDoc::count(pages),
            shared_hit_blocks: PairDoc::count(hit),
            shared_read_blocks: PairDoc::count(read),
            temp_blocks: PairDoc::count(temp),
            total_cost: Pair::new(f.0.total_cost, f.1.total_cost).into(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct SummaryDoc {
    pub cold: SummaryPairsDoc,
    pub warm: SummaryPairsDoc,
}

#[derive(Debug, Serialize)]
pub struct CandidateDoc<'a> {
    /// "create" or "drop".
    pub action: &'static str,
    pub index_sql: String,
    pub index_name: String,
    /// The name plans show for it (HypoPG names hypothetical indexes itself).
    pub plan_index_name: Option<String>,
    pub used: Option<bool>,
    pub used_by: Vec<IndexUse>,
    /// "pays", "does_not_pay" or "unused"; null when the candidate failed.
    pub verdict: Option<&'static str>,
    /// 1 for the best; null when the candidate failed.
    pub rank: Option<usize>,
    #[serde(serialize_with = "count_opt")]
    pub index_size_bytes: Option<f64>,
    /// CREATE INDEX (or DROP INDEX) wall time; null for hypothetical indexes.
    pub build_ms: Option<f64>,
    /// Before is the baseline; after is the run with the candidate (for a dropped index: without it).
    pub summary: Option<SummaryDoc>,
    /// The baseline "before" is: null for `baseline`, n for `baseline_reruns[n]` (measured
    /// again after a build changed the planner's estimates, before the next candidate).
    pub judged_against_rerun: Option<usize>,
    /// The candidate's counted runs' spread of execution time.
    pub warm_execution_ms_spread: Option<crate::compare::Spread>,
    pub plan: Option<PlanDoc<'a>>,
    /// As `pgplan diff --format json` gives it: baseline before, the candidate's plan after.
    pub diff: Option<DiffDoc<'a>>,
    /// Findings on the candidate's plan.
    pub findings: Vec<FindingDoc>,
    /// Why the candidate could not be measured (the server's message with SQLSTATE, DETAIL, HINT).
    pub error: Option<String>,
}

impl<'a> CompareDoc<'a> {
    pub fn new(report: &'a CompareReport) -> Self {
        let request = &report.request;
        let judged_of = |i: usize| report.ranking.iter().position(|j| j.index == i);
        let candidates = report
            .outcomes
            .iter()
            .enumerate()
            .map(|(i, outcome)| {
                // The statement as the user would run it in production (CONCURRENTLY kept),
                // not the form pgplan ran inside its transaction.
                let action = match &outcome.spec {
                    CandidateSpec::Create(_) => "create",
                    CandidateSpec::Drop { .. } => "drop",
                };
                let index_sql = outcome.spec.user_sql();
                let mut doc = CandidateDoc {
                    action,
                    index_sql,
                    index_name: report.name(i).to_owned(),
                    plan_index_name: None,
                    used: None,
                    used_by: Vec::new(),
                    verdict: None,
                    rank: None,
                    index_size_bytes: None,
                    build_ms: None,
                    summary: None,
                    judged_against_rerun: None,
                    warm_execution_ms_spread: None,
                    plan: None,
                    diff: None,
                    findings: Vec::new(),
                    error: None,
                };
                match (&outcome.result, judged_of(i)) {
                    (Ok(run), Some(position)) => {
                        let judged = &report.ranking[position];
                        let representative = run.measurement.representative();
                        doc.plan_index_name = Some(run.plan_index_name().to_owned());
                        doc.used = Some(!judged.uses.is_empty());
                        doc.used_by = judged.uses.clone();
                        doc.verdict = Some(judged.verdict.as_str());
                        doc.rank = Some(position + 1);
                        doc.index_size_bytes = run.size_bytes;
                        doc.build_ms = run.build_ms;
                        doc.summary = Some(SummaryDoc {
                            cold: SummaryPairsDoc::new(&judged.cold, judged.time_within_noise.cold),
                            warm: SummaryPairsDoc::new(&judged.warm, judged.time_within_noise.warm),
                        });
                        doc.judged_against_rerun = judged.baseline;
                        doc.warm_execution_ms_spread = judged.spreads[1];
                        doc.plan = Some(PlanDoc::new(representative));
                        doc.diff = Some(DiffDoc::new(&judged.comparison));
                        doc.findings = representative
                            .findings
                            .iter()
                            .map(FindingDoc::from)
                            .collect();
                    }
                    (Err(e), _) => doc.error = Some(e.clone()),
                    (Ok(_), None) => {}
                }
                doc
            })
            .collect();
        CompareDoc {
            schema_version: COMPARE_SCHEMA_VERSION,
            server_version: report.server_version.clone(),
            mode: request.mode.as_str(),
            estimated: request.mode.is_estimate(),
            query: QueryDoc {
                source: request.query_source.clone(),
                text: request.query.text.clone(),
                params: request.params.clone(),
            },
            runs: request.runs,
            min_gain_percent: request.min_gain_percent,
            baseline: MeasurementDoc::new(&report.baseline),
            baseline_rerun: report
                .baseline_reruns
                .last()
                .map(|r| MeasurementDoc::new(&r.measurement)),
            baseline_reruns: report
                .baseline_reruns
                .iter()
                .map(|r| RerunDoc {
                    after_candidate: report.name(r.after).to_owned(),
                    measurement: MeasurementDoc::new(&r.measurement),
                })
                .collect(),
            candidates,
            ranking: report
                .ranking
                .iter()
                .map(|j| report.name(j.index).to_owned())
                .collect(),
            best: report.best().map(|j| report.name(j.index).to_owned()),
            estimate_changes: report.estimate_changes.clone(),
            warnings: report.warnings.clone(),
        }
    }
}

/// What "no best" means: on pages touched when measured, on the estimated cost otherwise.
fn no_best(report: &CompareReport) -> String {
    let what = if report.request.mode.is_estimate() {
        "the query's estimated cost"
    } else {
        "the pages the query touches"
    };
    format!(
        "no candidate cuts {what} by {}% or more",
        count(report.request.min_gain_percent)
    )
}

/// HypoPG names hypothetical indexes `<13556>btree_events_status`: inside HTML (a `<summary>`),
/// the angle brackets would read as a tag.
fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn mode_line(report: &CompareReport) -> String {
    let r = &report.request;
    match r.mode {
        Mode::Measured => format!(
            "measured: EXPLAIN (ANALYZE, BUFFERS) · 1 {} + {} warm run{} per index (warm = median) · \
             verdict on pages touched, min gain {}%",
            if r.cold {
                "cold run (the query's tables and indexes evicted from shared buffers first)"
            } else {
                "first run (on the cache as it was)"
            },
            r.runs,
            if r.runs == 1 { "" } else { "s" },
            count(r.min_gain_percent)
        ),
        Mode::Hypothetical => format!(
            // Planned, not executed: planning still evaluates an IMMUTABLE function called on
            // constants, so "nothing ran" would claim more than pgplan knows.
            "ESTIMATED: hypothetical indexes (HypoPG), EXPLAIN without ANALYZE · nothing was built; \
             the query was planned, not executed · verdict on estimated cost, min gain {}%",
            count(r.min_gain_percent)
        ),
        Mode::GenericPlan => format!(
            "ESTIMATED: the generic plan, EXPLAIN without ANALYZE · the query was planned, not \
             executed · verdict on estimated cost, min gain {}%",
            count(r.min_gain_percent)
        ),
    }
}

fn verdict_text(paint: &Paint, verdict: Verdict) -> String {
    match verdict {
        Verdict::Pays => paint.good("pays"),
        Verdict::DoesNotPay => paint.warn("does not pay"),
        Verdict::Unused => paint.bad("unused"),
    }
}

/// "9,205 → 5 (1,841× fewer)" for the deciding figure of a candidate.
/// The ranking's figure cells, the same in text and Markdown: the deciding figure, the warm
/// time (measured only), the index size and the build time.
fn figure_cells(report: &CompareReport, judged: &Judged) -> [String; 4] {
    let run = report.outcomes[judged.index].result.as_ref().ok();
    [
        deciding(report, judged),
        if report.request.mode == Mode::Measured {
            time_text(judged)
        } else {
            "—".into()
        },
        run.and_then(|r| r.size_bytes)
            .map(bytes)
            .unwrap_or_default(),
        run.and_then(|r| r.build_ms)
            .map(ms)
            .unwrap_or_else(|| "—".into()),
    ]
}

fn deciding(report: &CompareReport, judged: &Judged) -> String {
    let (b, a) = &judged.warm;
    match report.request.mode {
        Mode::Measured => format!(
            "{} → {} ({})",
            b.pages_touched.map(count).unwrap_or_default(),
            a.pages_touched.map(count).unwrap_or_default(),
            change(b.pages_touched, a.pages_touched, "fewer", "more")
        ),
        _ => format!(
            "{} → {} ({})",
            b.total_cost.map(|c| format!("{c:.2}")).unwrap_or_default(),
            a.total_cost.map(|c| format!("{c:.2}")).unwrap_or_default(),
            change(b.total_cost, a.total_cost, "cheaper", "dearer")
        ),
    }
}

fn time_text(judged: &Judged) -> String {
    let (b, a) = &judged.warm;
    match (b.execution_ms, a.execution_ms) {
        (Some(bt), Some(at)) => format!(
            "{} → {} ({})",
            ms(bt),
            ms(at),
            time_change(
                Some(bt),
                Some(at),
                judged.time_within_noise.warm,
                judged.time_within_noise.one_run
            )
        ),
        _ => "—".into(),
    }
}

/// A time's change, or "within noise" when the difference is inside the warm runs' spread, or
/// "one run" when there is no spread to tell: one sample a side is never faster or slower.
pub(crate) fn time_change(
    before: Option<f64>,
    after: Option<f64>,
    within_noise: bool,
    one_run: bool,
) -> String {
    let differ = before.is_some() && after.is_some() && before != after;
    if one_run && differ {
        "one run: no spread to judge by".into()
    } else if within_noise && differ {
        "within noise".into()
    } else {
        change(before, after, "faster", "slower")
    }
}

/// "101.0–110.3 ms": the warm runs' spread.
fn spread_text(spread: Option<crate::compare::Spread>) -> Option<String> {
    let s = spread?;
    Some(format!(
        "{}–{}",
        ms(s.min).trim_end_matches(" ms"),
        ms(s.max)
    ))
}

fn uses_text(uses: &[IndexUse]) -> String {
    if uses.is_empty() {
        return "no".into();
    }
    let list: Vec<String> = uses
        .iter()
        .map(|u| format!("{} (node {})", u.node_type, u.node))
        .collect();
    list.join(", ")
}

/// One before/after row of a candidate's figures, already worded.
struct SummaryRow {
    label: &'static str,
    before: String,
    after: String,
    change: String,
    /// Whether the figure fell (green) or rose (red); `None` when neither or within noise.
    fell: Option<bool>,
}

/// The before/after rows of a candidate: the cold run and the median of the warm runs when
/// measured (with the warm runs' spread, and "within noise" for a time difference inside it),
/// the estimated cost otherwise. Text and Markdown show the same rows.
fn summary_rows(judged: &Judged, mode: Mode, cold: bool) -> Vec<SummaryRow> {
    let row = |label, pair: Pair, figure: Figure, noise: bool| {
        let (fewer, more) = figure.words();
        let one_run = judged.time_within_noise.one_run;
        let change = if figure == Figure::Time {
            time_change(pair.before, pair.after, noise, one_run)
        } else {
            change(pair.before, pair.after, fewer, more)
        };
        let fell = match (pair.before, pair.after) {
            _ if (noise || one_run) && figure == Figure::Time => None,
            (Some(b), Some(a)) if a != b => Some(a < b),
            _ => None,
        };
        SummaryRow {
            label,
            before: figure.show(pair.before),
            after: figure.show(pair.after),
            change,
            fell,
        }
    };
    let mut rows = Vec::new();
    if mode == Mode::Measured {
        for (label, (b, a), noise) in [
            (
                // Cold only when --cold evicted the query's relations first; otherwise the
                // first run ran on whatever the cache held.
                if cold {
                    "cold: execution"
                } else {
                    "first: execution"
                },
                &judged.cold,
                judged.time_within_noise.cold,
            ),
            (
                "warm: execution",
                &judged.warm,
                judged.time_within_noise.warm,
            ),
        ] {
            rows.push(row(
                label,
                Pair::new(b.execution_ms, a.execution_ms),
                Figure::Time,
                noise,
            ));
            if label.starts_with("warm")
                && let [Some(_), _] | [_, Some(_)] = judged.spreads
            {
                let [before, after] = judged.spreads.map(|s| spread_text(s).unwrap_or_default());
                rows.push(SummaryRow {
                    label: "      min–max",
                    before,
                    after,
                    change: String::new(),
                    fell: None,
                });
            }
            for (label, pair) in [
                (
                    "      pages touched",
                    Pair::new(b.pages_touched, a.pages_touched),
                ),
                (
                    "      pages read",
                    Pair::new(b.shared_read_blocks, a.shared_read_blocks),
                ),
                ("      temp blocks", Pair::new(b.temp_blocks, a.temp_blocks)),
            ] {
                rows.push(row(label, pair, Figure::Count, false));
            }
        }
    } else {
        let (b, a) = &judged.warm;
        rows.push(row(
            "estimated cost",
            Pair::new(b.total_cost, a.total_cost),
            Figure::Cost,
            false,
        ));
    }
    rows.retain(|r| r.before != "—" || r.after != "—");
    rows
}

fn figures_table(
    out: &mut dyn Write,
    judged: &Judged,
    options: &TextOptions,
    mode: Mode,
    cold: bool,
) -> io::Result<()> {
    let mut grid = Grid::new(&["", "before", "after", "change"], 1);
    for row in summary_rows(judged, mode, cold) {
        let tone = match row.fell {
            Some(true) => Tone::Good,
            Some(false) => Tone::Bad,
            None => Tone::Plain,
        };
        grid.push(vec![
            cell(Tone::Plain, row.label),
            cell(Tone::Plain, row.before),
            cell(Tone::Plain, row.after),
            cell(tone, row.change),
        ]);
    }
    grid.write(out, options.color)
}

/// [`summary_rows`] as a Markdown table.
fn markdown_figures_table(
    out: &mut dyn Write,
    judged: &Judged,
    mode: Mode,
    cold: bool,
) -> io::Result<()> {
    writeln!(out, "| | before | after | change |")?;
    writeln!(out, "|---|---:|---:|---:|")?;
    // The text table groups rows under "cold:"/"warm:" by indentation; Markdown tables have
    // no such grouping, so each row names its run.
    let mut run = "";
    for row in summary_rows(judged, mode, cold) {
        let label = row.label;
        let label = match label.split_once(": ") {
            Some((prefix, rest)) if !label.starts_with(' ') => {
                run = prefix;
                format!("{prefix}: {rest}")
            }
            _ if !run.is_empty() => format!("{run}: {}", label.trim()),
            _ => label.trim().to_owned(),
        };
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            label, row.before, row.after, row.change
        )?;
    }
    Ok(())
}

/// The baseline's figures in words (the same lines in text and Markdown).
fn baseline_lines(
    report: &CompareReport,
    measurement: &crate::compare::Measurement,
) -> Vec<String> {
    let warm = measurement.warm_figures();
    let cold = measurement.cold_figures();
    if report.request.mode == Mode::Measured {
        vec![
            format!(
                "{}: execution {}, pages touched {} ({} read from outside shared buffers)",
                match measurement.evicted_buffers {
                    Some(n) => format!("cold run ({} buffers evicted first)", count(n)),
                    None => "first run".to_owned(),
                },
                cold.execution_ms.map(ms).unwrap_or_default(),
                cold.pages_touched.map(count).unwrap_or_default(),
                cold.shared_read_blocks.map(count).unwrap_or_default()
            ),
            format!(
                "warm: execution {}{}, pages touched {} ({})",
                warm.execution_ms.map(ms).unwrap_or_default(),
                spread_text(measurement.warm_spread())
                    .filter(|_| measurement.warm.len() > 1)
                    .map(|s| format!(" (min–max {s})"))
                    .unwrap_or_default(),
                warm.pages_touched.map(count).unwrap_or_default(),
                match measurement.warm.len() {
                    1 => "one run".to_owned(),
                    n => format!("median of {n} runs"),
                }
            ),
        ]
    } else {
        vec![format!(
            "estimated cost {}",
            warm.total_cost
                .map(|c| format!("{c:.2}"))
                .unwrap_or_default()
        )]
    }
}

/// The notes on the baseline measured again after candidates changed row estimates in place:
/// which candidates were judged against which baseline.
fn rerun_lines(report: &CompareReport) -> Vec<String> {
    let mut previous = report.baseline.warm_figures();
    report
        .baseline_reruns
        .iter()
        .map(|rerun| {
            let again = rerun.measurement.warm_figures();
            // An estimate-only mode measured nothing: its baseline moved in estimated cost.
            let figures = if report.request.mode == Mode::Measured {
                format!(
                    "pages touched {} → {}, execution {} → {}",
                    previous.pages_touched.map(count).unwrap_or_default(),
                    again.pages_touched.map(count).unwrap_or_default(),
                    previous.execution_ms.map(ms).unwrap_or_default(),
                    again.execution_ms.map(ms).unwrap_or_default(),
                )
            } else {
                format!(
                    "estimated cost {} → {}",
                    previous
                        .total_cost
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_default(),
                    again
                        .total_cost
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_default(),
                )
            };
            let line = format!(
                "building {} changed the planner's estimates, so the baseline was {} again \
                 before the next candidate ({figures}); {} and the candidates after it are judged \
                 against that baseline",
                report.name(rerun.after),
                if report.request.mode == Mode::Measured {
                    "measured"
                } else {
                    "planned"
                },
                report.name(rerun.after),
            );
            previous = again;
            line
        })
        .collect()
}

/// `pgplan compare` as text.
pub fn write_text(
    out: &mut dyn Write,
    report: &CompareReport,
    options: &TextOptions,
) -> io::Result<()> {
    let text = CompareText {
        report,
        options,
        paint: Paint::new(options.color),
    };
    text.headline(out)?;
    text.baseline(out)?;
    text.ranking_table(out)?;
    text.failed_candidates(out)?;
    text.best_line(out)?;
    for (position, judged) in report.ranking.iter().enumerate() {
        let outcome = &report.outcomes[judged.index];
        let Ok(run) = &outcome.result else { continue };
        text.candidate_heading(out, position, judged, outcome, run)?;
        text.candidate_plans(out, judged, run)?;
    }
    text.notes(out)
}

/// What every section of the compare text report shares: the report and how text looks.
struct CompareText<'a> {
    report: &'a CompareReport,
    options: &'a TextOptions,
    paint: Paint,
}

impl CompareText<'_> {
    /// The title, how it was measured, and the query with its parameter values.
    fn headline(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        let r = &report.request;
        writeln!(
            out,
            "{} · PostgreSQL {}",
            paint.bold("pgplan compare"),
            report.server_version
        )?;
        writeln!(out, "{}", mode_line(report))?;
        writeln!(out)?;
        writeln!(
            out,
            "{} {}",
            paint.bold("Query"),
            printable(&r.query_source)
        )?;
        for line in r.query.text.lines() {
            writeln!(out, "  {}", printable(line))?;
        }
        if !r.params.is_empty() {
            let params: Vec<String> = r
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| format!("${} = {}", i + 1, printable(p)))
                .collect();
            writeln!(out, "  with {}", params.join(", "))?;
        }
        writeln!(out)
    }

    /// The baseline's figures, as the database is now.
    fn baseline(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            self.paint.bold("Baseline (as the database is now)")
        )?;
        for line in baseline_lines(self.report, &self.report.baseline) {
            writeln!(out, "  {line}")?;
        }
        writeln!(out)
    }

    /// The measured candidates best first, one row each.
    fn ranking_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let report = self.report;
        writeln!(out, "{}", self.paint.bold("Candidates, best first"))?;
        let figure_header = if report.request.mode == Mode::Measured {
            "pages touched (warm)"
        } else {
            "estimated cost"
        };
        let mut table = new_table(
            &[
                "#",
                "index",
                "verdict",
                "used by",
                figure_header,
                "time (warm)",
                "size",
                "build",
            ],
            self.options,
        );
        for (position, judged) in report.ranking.iter().enumerate() {
            let outcome = &report.outcomes[judged.index];
            let name = match outcome.spec {
                CandidateSpec::Drop { .. } => {
                    format!("without {}", printable(report.name(judged.index)))
                }
                CandidateSpec::Create(_) => printable(report.name(judged.index)),
            };
            let [deciding, time, size, build] = figure_cells(report, judged);
            table.add_row(vec![
                (position + 1).to_string(),
                name,
                verdict_text(&self.paint, judged.verdict),
                uses_text(&judged.uses),
                deciding,
                time,
                size,
                build,
            ]);
        }
        write_table(out, &table)?;
        writeln!(out)
    }

    /// The candidates that could not be built or measured, each with its error.
    fn failed_candidates(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        let failed: Vec<(usize, &str)> = report.failed().collect();
        if failed.is_empty() {
            return Ok(());
        }
        writeln!(out, "{}", paint.bad("Could not be measured"))?;
        for (i, error) in failed {
            writeln!(
                out,
                "  {}: {}",
                paint.bold(&printable(report.name(i))),
                printable(&report.outcomes[i].spec.user_sql())
            )?;
            for line in error.lines() {
                writeln!(out, "    {}", printable(line))?;
            }
        }
        writeln!(out)
    }

    /// The best candidate or why there is none, then what to run again.
    fn best_line(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        match report.best() {
            Some(best) => {
                let outcome = &report.outcomes[best.index];
                writeln!(
                    out,
                    "{} {} — {}",
                    paint.bold("Best:"),
                    paint.good(&printable(report.name(best.index))),
                    printable(&outcome.spec.user_sql())
                )?;
            }
            None => writeln!(out, "{} {}", paint.bold("Best:"), no_best(report))?,
        }
        for line in rerun_lines(report) {
            writeln!(out, "{} {line}", paint.warn("Note:"))?;
        }
        Ok(())
    }

    /// A measured candidate's place, name and verdict, its statement, its build facts, and the
    /// baseline it was judged against.
    fn candidate_heading(
        &self,
        out: &mut dyn Write,
        position: usize,
        judged: &Judged,
        outcome: &CandidateOutcome,
        run: &CandidateRun,
    ) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        writeln!(out)?;
        writeln!(
            out,
            "{} {}  {}",
            paint.bold(&format!("{}.", position + 1)),
            paint.bold(&printable(report.name(judged.index))),
            verdict_text(paint, judged.verdict)
        )?;
        writeln!(out, "  {}", printable(&outcome.spec.user_sql()))?;
        let mut facts = Vec::new();
        if let Some(b) = run.build_ms {
            facts.push(match outcome.spec {
                CandidateSpec::Drop { .. } => format!("dropped in {}", ms(b)),
                CandidateSpec::Create(_) => format!("built in {}", ms(b)),
            });
        }
        if let Some(s) = run.size_bytes {
            facts.push(if report.request.mode == Mode::Hypothetical {
                format!("estimated size {}", bytes(s))
            } else {
                format!("size {}", bytes(s))
            });
        }
        facts.push(format!("used by: {}", uses_text(&judged.uses)));
        writeln!(out, "  {}", facts.join(" · "))?;
        if judged.baseline.is_some() {
            writeln!(out, "  before: {}", report.baseline_label(judged))?;
        }
        writeln!(out)
    }

    /// A candidate's figures against its baseline, the plan's changes, its plan tree and
    /// findings.
    fn candidate_plans(
        &self,
        out: &mut dyn Write,
        judged: &Judged,
        run: &CandidateRun,
    ) -> io::Result<()> {
        let (options, r) = (self.options, &self.report.request);
        figures_table(out, judged, options, r.mode, r.cold)?;
        writeln!(out)?;
        write_changes(out, &judged.comparison, options)?;
        writeln!(out)?;
        write_tree(out, run.measurement.representative(), options)?;
        writeln!(out)?;
        write_findings(out, &run.measurement.representative().findings, options)
    }

    /// The warnings gathered while comparing, if any.
    fn notes(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.warnings.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{}", self.paint.bold("Notes"))?;
        for warning in &self.report.warnings {
            writeln!(out, "  - {}", printable(warning))?;
        }
        Ok(())
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// `pgplan compare --format markdown`, for a pull-request comment.
pub fn write_markdown(out: &mut dyn Write, report: &CompareReport) -> io::Result<()> {
    let r = &report.request;
    writeln!(
        out,
        "### pgplan compare — PostgreSQL {}",
        report.server_version
    )?;
    writeln!(out)?;
    writeln!(out, "{}", mode_line(report))?;
    writeln!(out)?;
    writeln!(out, "```sql")?;
    for line in r.query.text.lines() {
        writeln!(out, "{}", printable(line))?;
    }
    writeln!(out, "```")?;
    writeln!(out)?;
    writeln!(out, "**Baseline** (as the database is now):")?;
    writeln!(out)?;
    for line in baseline_lines(report, &report.baseline) {
        writeln!(out, "- {line}")?;
    }
    writeln!(out)?;
    let figure = if r.mode == Mode::Measured {
        "pages touched (warm)"
    } else {
        "estimated cost"
    };
    writeln!(
        out,
        "| # | index | verdict | used by | {figure} | time (warm) | size | build |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---:|---:|")?;
    for (position, judged) in report.ranking.iter().enumerate() {
        let [deciding, time, size, build] = figure_cells(report, judged);
        writeln!(
            out,
            "| {} | `{}` | {} | {} | {deciding} | {time} | {size} | {build} |",
            position + 1,
            printable(report.name(judged.index)),
            judged.verdict.as_str(),
            markdown::cell(&uses_text(&judged.uses)),
        )?;
    }
    for (i, error) in report.failed() {
        writeln!(
            out,
            "| — | `{}` | failed | | {} | | | |",
            printable(report.name(i)),
            markdown::cell(first_line(error))
        )?;
    }
    writeln!(out)?;
    match report.best() {
        Some(best) => writeln!(
            out,
            "**Best:** `{}`\n\n```sql\n{}\n```",
            printable(report.name(best.index)),
            printable(&report.outcomes[best.index].spec.user_sql())
        )?,
        None => {
            let text = no_best(report);
            let mut chars = text.chars();
            let first = chars.next().map(|c| c.to_uppercase().to_string());
            writeln!(out, "**{}{}.**", first.unwrap_or_default(), chars.as_str())?
        }
    }
    for line in rerun_lines(report) {
        writeln!(out)?;
        writeln!(out, "**Note:** {line}")?;
    }
    for judged in &report.ranking {
        let outcome = &report.outcomes[judged.index];
        let Ok(run) = &outcome.result else { continue };
        writeln!(out)?;
        writeln!(
            out,
            "<details><summary><code>{}</code>: {}</summary>",
            html_escape(&printable(report.name(judged.index))),
            judged.verdict.as_str()
        )?;
        writeln!(out)?;
        if judged.baseline.is_some() {
            writeln!(out, "Before: {}.", report.baseline_label(judged))?;
            writeln!(out)?;
        }
        markdown_figures_table(out, judged, r.mode, r.cold)?;
        writeln!(out)?;
        markdown::write_changes(out, &judged.comparison)?;
        writeln!(out)?;
        markdown::write_tree_block(out, run.measurement.representative())?;
        writeln!(out)?;
        markdown::write_findings(out, &run.measurement.representative().findings)?;
        writeln!(out)?;
        writeln!(out, "</details>")?;
    }
    if !report.warnings.is_empty() {
        writeln!(out)?;
        for warning in &report.warnings {
            // A warning quotes names (a table in a build's cost, say): text, never markup.
            writeln!(out, "> {}", markdown::inline(&warning.replace('\n', " ")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::time_change;

    /// One warm run a side has no spread: a difference is neither faster nor slower, whatever
    /// its size; with a spread, inside it is noise and outside it is a change.
    #[test]
    fn one_sample_is_never_faster_or_slower() {
        let (b, a) = (Some(0.853), Some(0.099));
        assert_eq!(
            time_change(b, a, false, true),
            "one run: no spread to judge by"
        );
        assert_eq!(time_change(b, a, true, false), "within noise");
        assert!(time_change(b, a, false, false).ends_with("faster"));
        // A tie is a tie, runs or not.
        assert_eq!(
            time_change(b, b, false, true),
            time_change(b, b, false, false)
        );
    }
}
