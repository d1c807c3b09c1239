//! `pgplan advise` output: the recommended set best first (each CREATE INDEX CONCURRENTLY
//! with its size, build time, the queries it serves before → after, its write cost and what it
//! replaces), then indexes to drop, candidates rejected with the measured reason, candidates an
//! existing index already is, and notes. As text, Markdown, or the JSON document below.

use std::io::{self, Write};

use serde::Serialize;

use crate::advise::report::{
    AdviseReport, Recommendation, RejectedCandidate, Replaced, ServedQuery,
};
use crate::advise::shortlist::Estimate;
use crate::advise::{Candidate, Note};

use super::text::{align_numbers, new_table, write_table};
use super::{Paint, TextOptions, markdown};
use crate::format::{bytes, change, count, ms, printable};

/// The version of the advise document. Changing a field's meaning or removing one bumps it;
/// adding one does not.
/// 2: `replaces` holds objects (the statement and the evidence), a note's `query_id` is null
/// for the workload as a whole; `hypopg_estimate` and `not_shortlisted` were added.
pub const ADVISE_SCHEMA_VERSION: u32 = 2;

/// `pgplan advise --format json`.
#[derive(Debug, Serialize)]
pub struct AdviseDoc {
    pub schema_version: u32,
    pub server_version: String,
    pub database: String,
    pub workload: WorkloadDoc,
    /// True when HypoPG's estimates ordered the shortlist; every recommendation is measured.
    pub shortlist_estimated: bool,
    /// Best first: the order the greedy choice took them in.
    pub recommended: Vec<RecommendationDoc>,
    pub drops: Vec<DropDoc>,
    pub rejected: Vec<RejectedDoc>,
    /// With --hypothetical: candidates not measured because, with HypoPG, the planner chose
    /// them for none of their queries (an estimate).
    pub not_shortlisted: Vec<NotShortlistedDoc>,
    pub covered: Vec<CoveredDoc>,
    pub notes: Vec<NoteDoc>,
    /// What PostgreSQL does not roll back (statistics counters, planner estimates).
    pub not_rolled_back: Vec<String>,
    /// The statements of pg_stat_statements set aside, with why.
    pub skipped_statements: super::skipped::SkippedDoc,
    /// Queries that could not be measured: in the baseline or with a candidate, and why.
    pub unmeasured_queries: Vec<crate::compare::workload::unmeasured::Unmeasured>,
    /// Candidates proposed, measured, failed and left out by --budget.
    pub candidate_counts: crate::advise::coverage::Coverage,
    pub elapsed_ms: f64,
    pub budget_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct WorkloadDoc {
    pub source: String,
    pub queries: Vec<QueryDoc>,
}

#[derive(Debug, Serialize)]
pub struct QueryDoc {
    pub id: String,
    pub text: String,
    pub calls_per_day: f64,
    /// Planned generically: its figures are the planner's estimates.
    pub estimated: bool,
}

#[derive(Debug, Serialize)]
pub struct CandidateDoc {
    pub name: String,
    /// `CREATE INDEX CONCURRENTLY name ON ...`.
    pub statement: String,
    /// Everything from ON on.
    pub definition: String,
    pub schema: String,
    pub table: String,
    pub method: &'static str,
    /// The rules that proposed it: btree, partial, expression, include, gin, gist, trigram,
    /// brin, join_key.
    pub kinds: Vec<&'static str>,
    pub reasons: Vec<String>,
    /// The workload queries (ids) it was proposed for.
    pub proposed_for: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RecommendationDoc {
    #[serde(flatten)]
    pub candidate: CandidateDoc,
    #[serde(serialize_with = "crate::report::wire::count")]
    pub size_bytes: f64,
    pub build_ms: Option<f64>,
    pub read_pages_saved_per_day: f64,
    pub write_pages_added_per_day: f64,
    pub net_pages_saved_per_day: f64,
    pub wal_bytes_added_per_day: Option<f64>,
    pub hot_updates_lost_per_day: Option<f64>,
    pub write_estimated: bool,
    /// Existing indexes this one makes redundant: drop them once it is built.
    pub replaces: Vec<ReplacedDoc>,
    /// With --hypothetical: HypoPG's estimate, which only ordered the measuring.
    pub hypopg_estimate: Option<EstimateDoc>,
    pub queries: Vec<ServedDoc>,
}

#[derive(Debug, Serialize)]
pub struct ReplacedDoc {
    pub schema: String,
    pub index: String,
    /// `DROP INDEX CONCURRENTLY ...;`, to run after the recommendation is built.
    pub statement: String,
    pub size_bytes: Option<f64>,
    /// Its idx_scan since the statistics were reset.
    pub scans: Option<f64>,
    pub evidence: String,
    /// Workload queries (ids) whose baseline plan scanned it.
    pub used_before: Vec<String>,
    /// Of those, the ones whose plan still scanned it with the recommendation built.
    pub used_after: Vec<String>,
}

/// HypoPG's estimate for a candidate: labelled, never a verdict.
#[derive(Debug, Serialize)]
pub struct EstimateDoc {
    /// Planner cost units saved per day (cost before − after, times calls per day).
    pub cost_saved_per_day: f64,
    /// Whether any plan chose the hypothetical index.
    pub planner_chose_it: bool,
    pub size_bytes: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct NotShortlistedDoc {
    #[serde(flatten)]
    pub candidate: CandidateDoc,
    pub hypopg_estimate: EstimateDoc,
}

#[derive(Debug, Serialize)]
pub struct ServedDoc {
    pub id: String,
    /// Pages per call, averaged over the query's samples: an integer when whole.
    #[serde(serialize_with = "crate::report::wire::count")]
    pub pages_before: f64,
    #[serde(serialize_with = "crate::report::wire::count")]
    pub pages_after: f64,
    pub ms_before: Option<f64>,
    pub ms_after: Option<f64>,
    pub time_within_noise: bool,
    pub regression: bool,
}

#[derive(Debug, Serialize)]
pub struct DropDoc {
    pub schema: String,
    pub table: String,
    pub index: String,
    pub statement: String,
    pub message: String,
    pub severity: &'static str,
    /// The audit check whose finding it is: unused_index, duplicate_index, redundant_index.
    pub check: &'static str,
    /// For a duplicate or redundant index, the index audit keeps in its place; else null.
    pub kept_index: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RejectedDoc {
    #[serde(flatten)]
    pub candidate: CandidateDoc,
    /// unused, does_not_pay, writes_exceed_savings, over_max_indexes, over_max_size.
    pub reason: &'static str,
    pub explanation: String,
    #[serde(serialize_with = "crate::report::wire::count")]
    pub size_bytes: f64,
    pub read_pages_saved_per_day: f64,
    pub write_pages_added_per_day: f64,
    pub used: bool,
    pub measured_with: Vec<String>,
    pub hypopg_estimate: Option<EstimateDoc>,
    /// HOT updates a day the index would end; null when the table's write counters are
    /// unknown.
    pub hot_updates_lost_per_day: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct CoveredDoc {
    pub definition: String,
    pub by_index: String,
}

#[derive(Debug, Serialize)]
pub struct NoteDoc {
    /// The query it concerns; null for the workload as a whole or a candidate.
    pub query_id: Option<String>,
    pub table: Option<String>,
    pub message: String,
}

fn query_id(report: &AdviseReport, query: usize) -> String {
    report
        .queries
        .get(query)
        .map_or_else(|| format!("#{}", query + 1), |q| q.id.clone())
}

/// The query as text and Markdown name it: its id, and when that is a bare number (a
/// pg_stat_statements queryid, which says nothing to a reader) the start of its text too.
fn query_label(report: &AdviseReport, query: usize) -> String {
    let id = query_id(report, query);
    let Some(q) = report.queries.get(query) else {
        return id;
    };
    if id.parse::<i64>().is_err() {
        return id;
    }
    // Escaped before it is cut, so a cut never splits an escape.
    let text = printable(&q.text.split_whitespace().collect::<Vec<_>>().join(" "));
    let cut = if text.chars().count() > LABEL_CHARS {
        let start: String = text.chars().take(LABEL_CHARS - 1).collect();
        format!("{}…", start.trim_end())
    } else {
        text
    };
    format!("{id} ({cut})")
}

/// Characters of a query's text in its label.
const LABEL_CHARS: usize = 40;

fn estimate_doc(e: &Estimate) -> EstimateDoc {
    EstimateDoc {
        cost_saved_per_day: e.cost_saved_per_day,
        planner_chose_it: e.used,
        size_bytes: e.size_bytes,
    }
}

fn replaced_doc(report: &AdviseReport, r: &Replaced) -> ReplacedDoc {
    let ids = |qs: &[usize]| qs.iter().map(|&q| query_id(report, q)).collect();
    ReplacedDoc {
        schema: r.schema.clone(),
        index: r.index.clone(),
        statement: r.statement.clone(),
        size_bytes: r.size_bytes,
        scans: r.scans,
        evidence: r.evidence.clone(),
        used_before: ids(&r.used_before),
        used_after: ids(&r.used_after),
    }
}

fn candidate_doc(report: &AdviseReport, c: &Candidate) -> CandidateDoc {
    let mut proposed_for: Vec<String> = Vec::new();
    for s in &c.serves {
        let id = query_id(report, s.query);
        if !proposed_for.contains(&id) {
            proposed_for.push(id);
        }
    }
    CandidateDoc {
        name: c.name.clone(),
        statement: c.create_statement(),
        definition: c.definition(),
        schema: c.schema.clone(),
        table: c.table.clone(),
        method: c.method.name(),
        kinds: c.kinds.iter().map(|k| k.name()).collect(),
        reasons: c.reasons.clone(),
        proposed_for,
    }
}

impl AdviseDoc {
    pub fn of(report: &AdviseReport) -> Self {
        AdviseDoc {
            schema_version: ADVISE_SCHEMA_VERSION,
            server_version: report.server_version.clone(),
            database: report.database.clone(),
            workload: WorkloadDoc {
                source: report.workload_source.clone(),
                queries: report
                    .queries
                    .iter()
                    .map(|q| QueryDoc {
                        id: q.id.clone(),
                        text: q.text.clone(),
                        calls_per_day: q.calls_per_day,
                        estimated: q.estimated,
                    })
                    .collect(),
            },
            shortlist_estimated: report.shortlist_estimated,
            recommended: report
                .recommended
                .iter()
                .map(|r| RecommendationDoc {
                    candidate: candidate_doc(report, &r.candidate),
                    size_bytes: r.measurement.size_bytes,
                    build_ms: r.build_ms,
                    read_pages_saved_per_day: r.measurement.read_pages_saved_per_day,
                    write_pages_added_per_day: r.measurement.write_pages_added_per_day,
                    net_pages_saved_per_day: r.measurement.net_pages_per_day(),
                    wal_bytes_added_per_day: r.wal_bytes_added_per_day,
                    hot_updates_lost_per_day: r.hot_updates_lost_per_day,
                    write_estimated: r.write_estimated,
                    replaces: r.replaces.iter().map(|x| replaced_doc(report, x)).collect(),
                    hypopg_estimate: r.estimate.as_ref().map(estimate_doc),
                    queries: r
                        .queries
                        .iter()
                        .map(|q| ServedDoc {
                            id: query_id(report, q.query),
                            pages_before: q.pages_before,
                            pages_after: q.pages_after,
                            ms_before: q.ms_before,
                            ms_after: q.ms_after,
                            time_within_noise: q.time_within_noise,
                            regression: q.regression,
                        })
                        .collect(),
                })
                .collect(),
            drops: report
                .drops
                .iter()
                .map(|d| DropDoc {
                    schema: d.schema.clone(),
                    table: d.table.clone(),
                    index: d.index.clone(),
                    statement: d.statement.clone(),
                    message: d.message.clone(),
                    severity: d.severity.as_str(),
                    check: d.check.as_str(),
                    kept_index: d.kept_index.clone(),
                })
                .collect(),
            rejected: report
                .rejected
                .iter()
                .map(|r| RejectedDoc {
                    candidate: candidate_doc(report, &r.candidate),
                    reason: r.reason.name(),
                    explanation: r.explanation(),
                    size_bytes: r.measurement.size_bytes,
                    read_pages_saved_per_day: r.measurement.read_pages_saved_per_day,
                    write_pages_added_per_day: r.measurement.write_pages_added_per_day,
                    used: r.measurement.used,
                    measured_with: r.with_chosen.clone(),
                    hypopg_estimate: r.estimate.as_ref().map(estimate_doc),
                    hot_updates_lost_per_day: r.hot_updates_lost_per_day,
                })
                .collect(),
            not_shortlisted: report
                .not_shortlisted
                .iter()
                .map(|n| NotShortlistedDoc {
                    candidate: candidate_doc(report, &n.candidate),
                    hypopg_estimate: estimate_doc(&n.estimate),
                })
                .collect(),
            covered: report
                .covered
                .iter()
                .map(|c| CoveredDoc {
                    definition: c.candidate.definition(),
                    by_index: c.by_index.clone(),
                })
                .collect(),
            notes: report
                .notes
                .iter()
                .map(|n| NoteDoc {
                    query_id: n.query.map(|q| query_id(report, q)),
                    table: n.table.clone(),
                    message: n.message.clone(),
                })
                .collect(),
            not_rolled_back: report.not_rolled_back.clone(),
            skipped_statements: super::skipped::SkippedDoc::new(&report.screening),
            unmeasured_queries: report.unmeasured.clone(),
            candidate_counts: report.coverage,
            elapsed_ms: report.elapsed_ms,
            budget_ms: report.budget_ms,
        }
    }
}

pub fn write_json(out: &mut dyn Write, report: &AdviseReport) -> io::Result<()> {
    super::write_json(out, &AdviseDoc::of(report))
}

fn headline(report: &AdviseReport) -> String {
    let n = report.queries.len();
    format!(
        "pgplan advise · PostgreSQL {} · database {} · workload {} ({n} {})",
        report.server_version,
        report.database,
        report.workload_source,
        if n == 1 { "query" } else { "queries" }
    )
}

/// "saves 1,200 pages read a day; its writes add 30 (estimated)". Figures a day are rounded to
/// whole pages: they are means over samples times calls, and their fractions are noise.
fn cost_line(r: &Recommendation) -> String {
    let m = &r.measurement;
    let mut s = format!(
        "{} · saves {} pages read a day, its writes add {}{}",
        bytes(m.size_bytes),
        count(m.read_pages_saved_per_day.round()),
        count(m.write_pages_added_per_day.round()),
        if r.write_estimated {
            " (estimated)"
        } else {
            ""
        }
    );
    if let Some(b) = r.build_ms {
        s = format!("{s} · built in {}", ms(b));
    }
    if let Some(wal) = r.wal_bytes_added_per_day {
        s.push_str(&format!(" · {} of WAL a day", bytes(wal)));
    }
    if let Some(hot) = r.hot_updates_lost_per_day
        && hot > 0.0
    {
        s.push_str(&format!(" · {} HOT updates a day lost", count(hot.round())));
    }
    s
}

/// "HypoPG estimated (ordering only): planner cost 1,200 lower a day, chosen by the planner".
fn estimate_line(e: &Estimate) -> String {
    let cost = if e.cost_saved_per_day >= 0.0 {
        format!(
            "planner cost {} lower a day",
            count(e.cost_saved_per_day.round())
        )
    } else {
        format!(
            "planner cost {} higher a day",
            count(-e.cost_saved_per_day.round())
        )
    };
    let mut s = format!(
        "HypoPG estimated (it only ordered the measuring): {cost}, {}",
        if e.used {
            "chosen by the planner"
        } else {
            "chosen by no plan"
        }
    );
    if let Some(size) = e.size_bytes {
        s.push_str(&format!(", about {}", bytes(size)));
    }
    s
}

/// "public.tickets_account_id_idx (2.1 MB, 340 scans): its keys ... lead ...; scanned by
/// q1.sql in the baseline, by none of them with this one built".
fn replaced_line(report: &AdviseReport, x: &Replaced) -> String {
    let mut facts = Vec::new();
    if let Some(b) = x.size_bytes {
        facts.push(bytes(b));
    }
    if let Some(n) = x.scans {
        facts.push(format!("{} scans", count(n)));
    }
    let mut s = format!("{}.{}", x.schema, x.index);
    if !facts.is_empty() {
        s.push_str(&format!(" ({})", facts.join(", ")));
    }
    s.push_str(&format!(": {}", x.evidence));
    let ids =
        |qs: &[usize]| -> Vec<String> { qs.iter().map(|&q| query_label(report, q)).collect() };
    if !x.used_before.is_empty() {
        let after = if x.used_after.is_empty() {
            "by none of them with this one built".to_owned()
        } else {
            format!(
                "still by {} with this one built",
                ids(&x.used_after).join(", ")
            )
        };
        s.push_str(&format!(
            "; scanned by {} in the baseline, {after}",
            ids(&x.used_before).join(", ")
        ));
    }
    s
}

/// Where a query's regression is: in the pages it reads, or (pages fewer or the same) in its
/// time outside the runs' spread. A row never reads "1.5× fewer (regression)".
fn regression_in(q: &ServedQuery) -> (bool, bool) {
    let pages = q.regression && q.pages_after > q.pages_before;
    (pages, q.regression && !pages)
}

fn time_cell(before: Option<f64>, after: Option<f64>, noise: bool) -> String {
    match (before, after) {
        (Some(b), Some(a)) if noise => format!("{} → {} (within noise)", ms(b), ms(a)),
        (Some(b), Some(a)) => format!("{} → {}", ms(b), ms(a)),
        _ => String::new(),
    }
}

fn note_line(report: &AdviseReport, n: &Note) -> String {
    match n.query {
        Some(q) => format!("{}: {}", query_label(report, q), n.message),
        None => n.message.clone(),
    }
}

/// `pgplan advise` as text.
pub fn write_text(
    out: &mut dyn Write,
    report: &AdviseReport,
    options: &TextOptions,
) -> io::Result<()> {
    let text = AdviseText {
        report,
        options,
        paint: Paint::new(options.color),
    };
    text.headline(out)?;
    text.recommended(out)?;
    text.drops(out)?;
    text.rejected(out)?;
    text.not_shortlisted(out)?;
    text.covered(out)?;
    text.unmeasured(out)?;
    super::skipped::write_text(out, &text.paint, &report.screening)?;
    text.notes(out)?;
    text.footer(out)
}

/// What every section of the advise text report shares: the report and how text looks.
struct AdviseText<'a> {
    report: &'a AdviseReport,
    options: &'a TextOptions,
    paint: Paint,
}

impl AdviseText<'_> {
    /// The headline, and whether the shortlist was ordered by estimates.
    fn headline(&self, out: &mut dyn Write) -> io::Result<()> {
        let paint = &self.paint;
        writeln!(out, "{}", paint.bold(&headline(self.report)))?;
        if self.report.shortlist_estimated {
            writeln!(
                out,
                "{}",
                paint.dim(
                    "shortlist ordered by HypoPG estimates (labelled estimated); every recommendation is measured"
                )
            )?;
        }
        writeln!(out)
    }

    /// The recommended indexes best first, or the line saying why there are none.
    fn recommended(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        if report.recommended.is_empty() {
            let line = report.coverage.no_advice_line();
            return writeln!(
                out,
                "{}",
                if report.coverage.nothing_measured() {
                    paint.bad(&line)
                } else {
                    paint.good(&line)
                }
            );
        }
        writeln!(
            out,
            "{}",
            paint.bold(&format!("Recommended ({})", report.recommended.len()))
        )?;
        for (i, r) in report.recommended.iter().enumerate() {
            self.recommendation(out, i, r)?;
        }
        Ok(())
    }

    /// One recommendation: its statement, cost, reasons, estimate, what it replaces, and the
    /// queries it serves.
    fn recommendation(&self, out: &mut dyn Write, i: usize, r: &Recommendation) -> io::Result<()> {
        let paint = &self.paint;
        writeln!(
            out,
            "{:>2}. {};",
            i + 1,
            paint.accent(&r.candidate.create_statement())
        )?;
        writeln!(out, "    {}", cost_line(r))?;
        for reason in &r.candidate.reasons {
            writeln!(out, "    {}", paint.dim(&format!("why: {reason}")))?;
        }
        if let Some(e) = &r.estimate {
            writeln!(out, "    {}", paint.dim(&estimate_line(e)))?;
        }
        for x in &r.replaces {
            writeln!(out, "    replaces {}", replaced_line(self.report, x))?;
            writeln!(out, "      then: {}", paint.accent(&x.statement))?;
        }
        self.served_queries(out, r)
    }

    /// The table of the queries a recommendation serves, before → after, regressions marked.
    fn served_queries(&self, out: &mut dyn Write, r: &Recommendation) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        let mut table = new_table(
            &["query", "calls/day", "pages", "change", "time"],
            self.options,
        );
        for q in &r.queries {
            let calls = report.queries.get(q.query).map_or(0.0, |w| w.calls_per_day);
            let pages = format!("{} → {}", count(q.pages_before), count(q.pages_after));
            let verdict = change(Some(q.pages_before), Some(q.pages_after), "fewer", "more");
            let (pages_worse, time_worse) = regression_in(q);
            let verdict = if pages_worse {
                paint.bad(&format!("{verdict} (regression)"))
            } else {
                verdict
            };
            let time = time_cell(q.ms_before, q.ms_after, q.time_within_noise);
            let time = if time_worse {
                paint.bad(&format!("{time} (slower: regression)"))
            } else {
                time
            };
            table.add_row(vec![
                query_label(report, q.query),
                count(calls),
                pages,
                verdict,
                time,
            ]);
        }
        align_numbers(&mut table, 1);
        write_table(out, &table)
    }

    /// Existing indexes to drop, each with the audit check that found it.
    fn drops(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        if report.drops.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            paint.bold(&format!(
                "Existing indexes to drop ({})",
                report.drops.len()
            ))
        )?;
        for d in &report.drops {
            writeln!(out, "  {}", paint.severity(d.severity, &d.statement))?;
            writeln!(
                out,
                "    {}",
                paint.dim(&printable(&format!("[{}] {}", d.check.as_str(), d.message)))
            )?;
        }
        Ok(())
    }

    /// Candidates measured and rejected, each with the measured reason.
    fn rejected(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        if report.rejected.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            paint.bold(&format!(
                "Considered and rejected ({})",
                report.rejected.len()
            ))
        )?;
        for r in &report.rejected {
            writeln!(out, "  {}", printable(&r.candidate.definition()))?;
            writeln!(out, "    {}", printable(&rejected_line(r)))?;
            if let Some(e) = &r.estimate {
                writeln!(out, "    {}", paint.dim(&estimate_line(e)))?;
            }
        }
        Ok(())
    }

    /// Candidates left unmeasured because the planner did not choose them with HypoPG.
    fn not_shortlisted(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        if report.not_shortlisted.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            paint.bold(&format!(
                "Not measured: the planner did not choose them with HypoPG ({}, estimated)",
                report.not_shortlisted.len()
            ))
        )?;
        for n in &report.not_shortlisted {
            writeln!(out, "  {}", printable(&n.candidate.definition()))?;
            writeln!(out, "    {}", paint.dim(&estimate_line(&n.estimate)))?;
        }
        Ok(())
    }

    /// Candidates an existing index already is.
    fn covered(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.covered.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            self.paint.bold("Already served by an existing index")
        )?;
        for c in &self.report.covered {
            writeln!(
                out,
                "  {} — {}",
                printable(&c.candidate.definition()),
                printable(&c.by_index)
            )?;
        }
        Ok(())
    }

    /// The queries that could not be measured, and why.
    fn unmeasured(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.unmeasured.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        super::skipped::write_unmeasured_text(out, &self.paint, &self.report.unmeasured)
    }

    /// The notes gathered while advising, each under its query where it has one.
    fn notes(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.report.notes.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{}", self.paint.bold("Notes"))?;
        for n in &self.report.notes {
            writeln!(out, "  {}", note_line(self.report, n))?;
        }
        Ok(())
    }

    /// What PostgreSQL did not roll back, then the time taken against the budget.
    fn footer(&self, out: &mut dyn Write) -> io::Result<()> {
        let (report, paint) = (self.report, &self.paint);
        if !report.not_rolled_back.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "Not rolled back by PostgreSQL: {}",
                    report.not_rolled_back.join("; ")
                ))
            )?;
        }
        writeln!(
            out,
            "{}",
            paint.dim(&format!(
                "advised in {} of a {} budget",
                duration(report.elapsed_ms),
                duration(report.budget_ms)
            ))
        )
    }
}

/// "850 ms", "41.3 s", "5 min", "6 min 30 s".
fn duration(ms_total: f64) -> String {
    if ms_total < 1000.0 {
        return ms(ms_total);
    }
    let seconds = ms_total / 1000.0;
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    match (whole / 60, whole % 60) {
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

fn rejected_line(r: &RejectedCandidate) -> String {
    let mut line = format!("{} · {}", r.explanation(), bytes(r.measurement.size_bytes));
    if let Some(hot) = r.hot_updates_lost_per_day
        && hot > 0.0
    {
        line.push_str(&format!(" · {} HOT updates a day lost", count(hot.round())));
    }
    line
}

pub fn write_markdown(out: &mut dyn Write, report: &AdviseReport) -> io::Result<()> {
    writeln!(out, "### {}", markdown::cell(&headline(report)))?;
    writeln!(out)?;
    if report.shortlist_estimated {
        writeln!(
            out,
            "_Shortlist ordered by HypoPG estimates (labelled estimated); every recommendation is measured._"
        )?;
        writeln!(out)?;
    }
    if report.recommended.is_empty() {
        writeln!(out, "{}", report.coverage.no_advice_line())?;
        writeln!(out)?;
    }
    for (i, r) in report.recommended.iter().enumerate() {
        writeln!(out, "#### {}. `{}`", i + 1, r.candidate.name)?;
        writeln!(out)?;
        writeln!(out, "```sql\n{};\n```", r.candidate.create_statement())?;
        writeln!(out)?;
        writeln!(out, "{}", cost_line(r))?;
        writeln!(out)?;
        for reason in &r.candidate.reasons {
            writeln!(out, "- {}", markdown::cell(reason))?;
        }
        if let Some(e) = &r.estimate {
            writeln!(out, "- _{}_", markdown::cell(&estimate_line(e)))?;
        }
        for x in &r.replaces {
            writeln!(
                out,
                "- replaces {}; then `{}`",
                markdown::cell(&replaced_line(report, x)),
                x.statement
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "| query | calls/day | pages before → after | change | time |"
        )?;
        writeln!(out, "|---|---:|---:|---|---|")?;
        for q in &r.queries {
            let calls = report.queries.get(q.query).map_or(0.0, |w| w.calls_per_day);
            let verdict = change(Some(q.pages_before), Some(q.pages_after), "fewer", "more");
            let (pages_worse, time_worse) = regression_in(q);
            writeln!(
                out,
                "| {} | {} | {} → {} | {}{} | {}{} |",
                markdown::cell(&query_label(report, q.query)),
                count(calls),
                count(q.pages_before),
                count(q.pages_after),
                verdict,
                if pages_worse { " **regression**" } else { "" },
                time_cell(q.ms_before, q.ms_after, q.time_within_noise),
                if time_worse {
                    " **slower: regression**"
                } else {
                    ""
                }
            )?;
        }
        writeln!(out)?;
    }
    if !report.drops.is_empty() {
        writeln!(out, "#### Existing indexes to drop")?;
        writeln!(out)?;
        for d in &report.drops {
            writeln!(
                out,
                "- `{}` — {}: {} ({})",
                d.statement.replace('\n', " "),
                d.check.as_str(),
                markdown::cell(&d.message),
                d.severity.as_str()
            )?;
        }
        writeln!(out)?;
    }
    if !report.rejected.is_empty() {
        writeln!(out, "#### Considered and rejected")?;
        writeln!(out)?;
        for r in &report.rejected {
            writeln!(
                out,
                "- {} — {}",
                markdown::code(&r.candidate.definition()),
                markdown::cell(&rejected_line(r))
            )?;
        }
        writeln!(out)?;
    }
    if !report.not_shortlisted.is_empty() {
        writeln!(
            out,
            "#### Not measured: the planner did not choose them with HypoPG (estimated)"
        )?;
        writeln!(out)?;
        for n in &report.not_shortlisted {
            writeln!(
                out,
                "- {} — _{}_",
                markdown::code(&n.candidate.definition()),
                markdown::cell(&estimate_line(&n.estimate))
            )?;
        }
        writeln!(out)?;
    }
    if !report.covered.is_empty() {
        writeln!(out, "#### Already served by an existing index")?;
        writeln!(out)?;
        for c in &report.covered {
            writeln!(
                out,
                "- {} — {}",
                markdown::code(&c.candidate.definition()),
                markdown::inline(&c.by_index)
            )?;
        }
        writeln!(out)?;
    }
    super::skipped::write_unmeasured_markdown(
        out,
        "#### Queries that could not be measured",
        &report.unmeasured,
    )?;
    super::skipped::write_markdown(out, &report.screening)?;
    if !report.notes.is_empty() {
        writeln!(out, "#### Notes")?;
        writeln!(out)?;
        for n in &report.notes {
            writeln!(out, "- {}", markdown::cell(&note_line(report, n)))?;
        }
        writeln!(out)?;
    }
    if !report.not_rolled_back.is_empty() {
        writeln!(
            out,
            "_Not rolled back by PostgreSQL: {}._",
            report.not_rolled_back.join("; ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Snapshots of the three renderings over a report assembled by the pure pipeline: plans
    //! recorded from PostgreSQL 17, the fixtures' catalog facts, and for the measurements a
    //! table of figures given here (the renderers' input, not something they compute).
    use super::*;
    use crate::advise::choose::{Limits, Measurement, choose};
    use crate::advise::report::{
        AdviseReport, Recommendation, ServedQuery, WorkloadQuery, sort_out,
    };
    use crate::advise::testing::{facts, fixture};
    use crate::audit::Severity;
    use crate::plan::Plan;

    const QUERIES: &[&str] = &[
        "composite_eq_sort",
        "partial_hot_constant",
        "join_key",
        "trigram_substring",
        "no_index_helps",
    ];

    /// The case's query, without its header comments.
    fn query_text(case: &str) -> String {
        let path = format!("{}/fixtures/advise/{case}.sql", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("--")).collect();
        lines.join(" ").trim().trim_end_matches(';').to_owned()
    }

    fn pages(plan: &Plan) -> f64 {
        plan.root().buffers.map_or(0.0, |b| b.pages_touched())
    }

    fn report() -> AdviseReport {
        let plans: Vec<Plan> = QUERIES
            .iter()
            .map(|q| fixture(&format!("advise/{q}"), 17))
            .collect();
        let refs: Vec<&Plan> = plans.iter().collect();
        let proposals = crate::advise::propose(&refs, &facts());
        let calls = [12_000.0, 3_000.0, 500.0, 40.0, 24.0];
        // Per candidate: size, pages saved a day, pages its writes add, used.
        let figures = |c: &Candidate| -> Measurement {
            let (size, saved, written, used) = match c.definition().as_str() {
                "ON public.tickets (account_id, created_at DESC)" => (4.5e6, 4.1e7, 2.0e3, true),
                "ON public.tickets (account_id, created_at DESC) INCLUDE (id)" => {
                    (6.1e6, 4.1e7, 2.6e3, true)
                }
                "ON public.tickets (created_at) WHERE state = 'open'::text" => {
                    (1.2e5, 1.0e7, 40.0, true)
                }
                "ON public.tickets (state, created_at)" => (4.4e6, 1.0e7, 2.0e3, true),
                "ON public.tickets (state, created_at) INCLUDE (id, priority)" => {
                    (6.0e6, 1.0e7, 5.0e4, true)
                }
                "ON public.docs USING gin (title gin_trgm_ops)" => (9.0e6, 8.0e4, 1.2e5, true),
                _ => (1e6, 0.0, 0.0, false),
            };
            Measurement {
                size_bytes: size,
                read_pages_saved_per_day: saved,
                write_pages_added_per_day: written,
                used,
            }
        };
        let first: Vec<Measurement> = proposals.candidates.iter().map(figures).collect();
        let cands = proposals.candidates.clone();
        let choice = choose(first, &Limits::default(), |chosen, open| {
            // Once every query a candidate was proposed for is served by a chosen index, it
            // saves nothing more.
            open.iter()
                .filter(|&&i| {
                    cands[i].serves.iter().all(|s| {
                        chosen
                            .iter()
                            .any(|&c| cands[c].serves.iter().any(|t| t.query == s.query))
                    })
                })
                .map(|&i| {
                    (
                        i,
                        Measurement {
                            read_pages_saved_per_day: 0.0,
                            ..figures(&cands[i])
                        },
                    )
                })
                .collect()
        });
        let (chosen, rejected) = sort_out(&proposals.candidates, &choice);
        let recommended = chosen
            .into_iter()
            .map(|(candidate, measurement)| {
                let queries = candidate
                    .serves
                    .iter()
                    .map(|s| ServedQuery {
                        query: s.query,
                        pages_before: pages(&plans[s.query]),
                        pages_after: 4.0,
                        ms_before: plans[s.query].execution_ms.map(|_| 38.2),
                        ms_after: Some(0.05),
                        time_within_noise: false,
                        regression: false,
                    })
                    .collect();
                Recommendation {
                    candidate,
                    measurement,
                    build_ms: Some(310.0),
                    queries,
                    wal_bytes_added_per_day: Some(1.5e7),
                    hot_updates_lost_per_day: Some(0.0),
                    write_estimated: true,
                    replaces: Vec::new(),
                    estimate: None,
                }
            })
            .collect();
        AdviseReport {
            server_version: "17.10".into(),
            database: "advise".into(),
            workload_source: "workload/".into(),
            queries: QUERIES
                .iter()
                .zip(calls)
                .map(|(q, c)| WorkloadQuery {
                    id: format!("{q}.sql"),
                    text: query_text(q),
                    calls_per_day: c,
                    estimated: false,
                })
                .collect(),
            shortlist_estimated: false,
            recommended,
            drops: vec![crate::advise::drops::DropSuggestion {
                schema: "public".into(),
                table: "tickets".into(),
                index: "tickets_body_idx".into(),
                check: crate::audit::Check::UnusedIndex,
                kept_index: None,
                statement: "DROP INDEX CONCURRENTLY public.tickets_body_idx;".into(),
                message: "public.tickets_body_idx has not been scanned in 12 days of counting"
                    .into(),
                severity: Severity::Warning,
            }, crate::advise::drops::DropSuggestion {
                schema: "public".into(),
                table: "tickets".into(),
                index: "tickets_state_idx1".into(),
                check: crate::audit::Check::DuplicateIndex,
                kept_index: Some("tickets_state_idx".into()),
                statement: "DROP INDEX CONCURRENTLY public.tickets_state_idx1;".into(),
                message: "index tickets_state_idx1 duplicates tickets_state_idx on public.tickets: same key columns (state); keep tickets_state_idx because it is scanned more (40 scans against 0)"
                    .into(),
                severity: Severity::Warning,
            }],
            rejected,
            not_shortlisted: Vec::new(),
            covered: proposals.covered,
            notes: proposals.notes,
            not_rolled_back: vec!["pg_stat_user_tables and pg_stat_user_indexes counters".into()],
            screening: Default::default(),
            unmeasured: Vec::new(),
            coverage: crate::advise::coverage::Coverage {
                proposed: 4,
                measured: 4,
                failed: 0,
                over_budget: 0,
            },
            elapsed_ms: 41_250.0,
            budget_ms: 300_000.0,
        }
    }

    fn render(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn settings() -> insta::Settings {
        let mut s = insta::Settings::clone_current();
        s.set_snapshot_path("../../tests/snapshots/advise_report");
        s.set_prepend_module_to_snapshot(false);
        s
    }

    #[test]
    fn the_report_in_text_markdown_and_json() {
        let report = report();
        // The greedy choice over the figures above: the partial index first (most pages saved
        // per byte), then the account top-N index, which also serves the join; the rest save
        // nothing once those serve their queries; the trigram index writes more than it saves.
        let names: Vec<&str> = report
            .recommended
            .iter()
            .map(|r| r.candidate.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "tickets_created_at_idx",
                "tickets_account_id_created_at_idx"
            ]
        );
        assert!(report.has_advice());
        settings().bind(|| {
            insta::assert_snapshot!(
                "text",
                render(|o| write_text(o, &report, &TextOptions::default()).unwrap())
            );
            insta::assert_snapshot!("markdown", render(|o| write_markdown(o, &report).unwrap()));
            insta::assert_snapshot!("json", render(|o| write_json(o, &report).unwrap()));
        });
    }

    /// With --hypothetical: the shortlist's estimates labelled on what was measured, the
    /// candidates left unmeasured, an existing index a recommendation replaces, and a note on
    /// the workload as a whole next to one on a query.
    #[test]
    fn estimates_replaced_indexes_and_notes_where_they_belong() {
        use crate::advise::report::{NotShortlisted, Replaced};
        use crate::advise::shortlist::Estimate;
        let mut report = report();
        report.shortlist_estimated = true;
        for (i, r) in report.recommended.iter_mut().enumerate() {
            r.estimate = Some(Estimate {
                cost_saved_per_day: 9.5e6 / (i + 1) as f64,
                used: true,
                size_bytes: Some(4.0e6),
            });
        }
        report.recommended[1].replaces = vec![Replaced {
            schema: "public".into(),
            index: "tickets_account_id_idx".into(),
            statement: "DROP INDEX CONCURRENTLY public.tickets_account_id_idx;".into(),
            size_bytes: Some(4.4e6),
            scans: Some(1520.0),
            evidence: "its keys (account_id) lead those of tickets_account_id_created_at_idx with the same operator classes, collations and predicate".into(),
            used_before: vec![2],
            used_after: Vec::new(),
        }];
        let left_out = report.rejected.remove(1);
        report.not_shortlisted = vec![NotShortlisted {
            candidate: left_out.candidate,
            estimate: Estimate {
                cost_saved_per_day: 0.0,
                used: false,
                size_bytes: Some(2.2e6),
            },
        }];
        report.notes.insert(
            0,
            Note {
                query: None,
                table: None,
                message: "pg_stat_statements on PostgreSQL 13 records no reset time".into(),
            },
        );
        let json = render(|o| write_json(o, &report).unwrap());
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(doc["schema_version"], 2);
        assert_eq!(doc["notes"][0]["query_id"], serde_json::Value::Null);
        assert!(doc["notes"][1]["query_id"].is_string());
        assert_eq!(
            doc["recommended"][1]["replaces"][0]["used_before"][0],
            "join_key.sql"
        );
        assert_eq!(
            doc["not_shortlisted"][0]["hypopg_estimate"]["planner_chose_it"],
            false
        );
        settings().bind(|| {
            insta::assert_snapshot!(
                "hypothetical_text",
                render(|o| write_text(o, &report, &TextOptions::default()).unwrap())
            );
            insta::assert_snapshot!(
                "hypothetical_markdown",
                render(|o| write_markdown(o, &report).unwrap())
            );
            insta::assert_snapshot!("hypothetical_json", json);
        });
    }

    /// Fewer pages but slower outside the spread is a regression in time, said there; more
    /// pages is one in pages. Never "1.5× fewer (regression)".
    #[test]
    fn a_regression_is_named_where_it_is() {
        let mut report = report();
        let served = &mut report.recommended[0].queries;
        served.truncate(1);
        served[0].pages_after = served[0].pages_before / 2.0;
        served[0].ms_before = Some(1.0);
        served[0].ms_after = Some(3.0);
        served[0].regression = true;
        let text = render(|o| write_text(o, &report, &TextOptions::default()).unwrap());
        assert!(!text.contains("fewer (regression)"), "{text}");
        assert!(text.contains("3.00 ms (slower: regression)"), "{text}");
        let md = render(|o| write_markdown(o, &report).unwrap());
        assert!(!md.contains("fewer **regression**"), "{md}");
        assert!(md.contains("**slower: regression**"), "{md}");
        let served = &mut report.recommended[0].queries;
        served[0].pages_after = served[0].pages_before * 2.0;
        let text = render(|o| write_text(o, &report, &TextOptions::default()).unwrap());
        assert!(text.contains("more (regression)"), "{text}");
        assert!(!text.contains("slower: regression"), "{text}");
    }

    /// A queryid alone says nothing to a reader: text and Markdown add the start of the query,
    /// JSON keeps the id.
    #[test]
    fn a_numeric_query_id_is_shown_with_its_text() {
        let mut report = report();
        let q = report.recommended[0].queries[0].query;
        report.queries[q].id = "-4512384791".into();
        report.queries[q].text =
            "SELECT *\n  FROM orders WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 20"
                .into();
        let label = "-4512384791 (SELECT * FROM orders WHERE customer_id…)";
        let text = render(|o| write_text(o, &report, &TextOptions::default()).unwrap());
        assert!(text.contains(label), "{text}");
        let md = render(|o| write_markdown(o, &report).unwrap());
        assert!(md.contains(label), "{md}");
        let json = render(|o| write_json(o, &report).unwrap());
        assert!(
            json.contains("\"-4512384791\"") && !json.contains(label),
            "{json}"
        );
        assert_eq!(query_label(&report, q + 100), format!("#{}", q + 101));
    }

    #[test]
    fn nothing_to_advise() {
        let mut report = report();
        report.recommended.clear();
        for d in &mut report.drops {
            d.severity = Severity::Info;
        }
        assert!(!report.has_advice(), "an untrusted drop is not advice");
        let text = render(|o| write_text(o, &report, &TextOptions::default()).unwrap());
        assert!(text.contains("No index to build"), "{text}");
    }

    #[test]
    fn a_rejected_candidate_names_the_hot_updates_it_ends() {
        let mut report = report();
        assert!(!report.rejected.is_empty());
        report.rejected[0].hot_updates_lost_per_day = Some(1_200.0);
        let text = render(|o| write_text(o, &report, &TextOptions::default()).unwrap());
        assert!(text.contains("1,200 HOT updates a day lost"), "{text}");
        let doc: serde_json::Value =
            serde_json::from_str(&render(|o| write_json(o, &report).unwrap())).unwrap();
        assert_eq!(doc["rejected"][0]["hot_updates_lost_per_day"], 1_200.0);
    }
}
