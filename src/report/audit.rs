//! `pgplan audit` output: text for a terminal (findings grouped by severity, each with its object,
//! evidence and fix; a line per node), Markdown for a ticket or a pull request, and the
//! Prometheus text exposition format for node_exporter's textfile collector.
//!
//! A report that spans several databases names the database before every finding and skipped
//! check in text and Markdown; every Prometheus series of a database carries a `database` label
//! (always, so a series keeps its identity when a second database joins the run).

use foldhash::{HashMap, HashMapExt};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::audit::{AuditReport, Check, Finding, NodeSummary, Severity};

use super::markdown::{cell, inline};
use super::{Paint, TextOptions};
use crate::format::{bytes, count, printable};

const SEVERITIES: [Severity; 3] = [Severity::Critical, Severity::Warning, Severity::Info];

/// An evidence figure in words, by the unit its name carries.
pub fn evidence_value(name: &str, value: f64) -> String {
    if name.ends_with("_bytes") {
        bytes(value)
    } else if name.ends_with("_seconds") {
        crate::audit::checks::age_words(value)
    } else if name.ends_with("_percent") {
        format!("{value:.1}%")
    } else {
        count(value)
    }
}

fn evidence_line(f: &Finding) -> String {
    f.evidence
        .iter()
        .map(|(n, v)| format!("{n} {}", evidence_value(n, *v)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// An index's usage on each node, one line per node: "host=db1 · 0 index scans · last scan
/// 2026-11-01T00:00:00Z". Each node counts only its own scans, so the lines are what the
/// unused verdict was summed from.
fn usage_lines(f: &Finding) -> Vec<String> {
    f.usage
        .iter()
        .map(|u| {
            let mut line = format!("{} · ", u.node);
            match u.index_scans {
                Some(n) => line.push_str(&format!("{} index scans", count(n as f64))),
                None => line.push_str("index scans not reported"),
            }
            if let Some(t) = &u.last_idx_scan {
                line.push_str(&format!(" · last scan {t}"));
            }
            line
        })
        .collect()
}

/// "primary · PostgreSQL 17.4 · database app · counting since 2026-11-01T00:00:00Z (29.0 days,
/// statistics reset)".
pub fn node_line(n: &NodeSummary) -> String {
    if let Some(error) = &n.error {
        return format!("{} · unreachable: {}", n.name, error.replace('\n', " "));
    }
    let mut parts = vec![n.name.clone()];
    if let Some(role) = n.role {
        parts.push(role.as_str().to_owned());
    }
    if let Some(v) = &n.server_version {
        parts.push(format!("PostgreSQL {v}"));
    }
    if let Some(db) = &n.database {
        parts.push(format!("database {db}"));
    }
    match n.window {
        Some(w) => parts.push(format!(
            "counting since {} ({}, {}{})",
            w.since.iso(),
            crate::audit::checks::age_words(w.seconds()),
            w.source.words(),
            if w.upper_bound {
                "; an upper bound: the database may be younger"
            } else {
                ""
            }
        )),
        None => parts.push("counting window unknown".into()),
    }
    if let Some(why) = &n.excluded {
        parts.push(format!("left out: {why}"));
    }
    parts.join(" · ")
}

/// How text and Markdown name what a finding is about: its object, or its node for per-node
/// findings (sessions, slots); prefixed by the database when the report spans several.
fn finding_subject(report: &AuditReport, f: &Finding) -> String {
    let object = f.object();
    let what = if object.is_empty() {
        f.node.clone().unwrap_or_default()
    } else {
        object
    };
    if report.spans_databases() {
        format!("{}: {what}", f.database)
    } else {
        what
    }
}

/// "dead_tuples", or "dead_tuples in app" when the report spans several databases.
fn skipped_check(report: &AuditReport, s: &crate::audit::Skipped) -> String {
    if report.spans_databases() {
        format!("{} in {}", s.check.as_str(), s.database)
    } else {
        s.check.as_str().to_owned()
    }
}

fn summary_line(report: &AuditReport) -> String {
    let n = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    let mut text = format!(
        "{} critical, {} warning, {} info",
        n(Severity::Critical),
        n(Severity::Warning),
        n(Severity::Info)
    );
    if report.spans_databases() {
        let _ = write!(text, " in {} databases", report.databases.len());
    }
    let failed = report.nodes.iter().filter(|n| n.error.is_some()).count();
    if failed > 0 && failed == report.nodes.len() {
        // The exit code is then a connection error (2), not a partial audit (3).
        text.push_str("; no node could be read: nothing was audited");
    } else if failed > 0 {
        let _ = write!(
            text,
            "; {failed} node(s) could not be read: the audit is partial"
        );
    }
    text
}

fn severity_title(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "Critical",
        Severity::Warning => "Warnings",
        Severity::Info => "Info",
    }
}

/// The findings of each kind, counted by severity, with the largest objects first: what a
/// person reads first when an audit finds thousands of things. Findings are one per object
/// (see `audit::one_per_index`), so the counts are distinct objects.
struct KindSummary<'a> {
    check: Check,
    counts: [usize; 3],
    largest: Vec<&'a Finding>,
}

/// How many of the largest objects the summary names per kind.
const SUMMARY_LARGEST: usize = 3;

fn kind_summaries(report: &AuditReport) -> Vec<KindSummary<'_>> {
    let mut kinds: Vec<KindSummary> = Vec::new();
    for f in &report.findings {
        let kind = match kinds.iter_mut().position(|k| k.check == f.check) {
            Some(i) => &mut kinds[i],
            None => {
                kinds.push(KindSummary {
                    check: f.check,
                    counts: [0; 3],
                    largest: Vec::new(),
                });
                kinds.last_mut().expect("just pushed")
            }
        };
        let slot = SEVERITIES
            .iter()
            .position(|s| *s == f.severity)
            .unwrap_or(2);
        kind.counts[slot] += 1;
        kind.largest.push(f);
    }
    for kind in &mut kinds {
        // Stable: equal sizes keep the report's order.
        kind.largest
            .sort_by_key(|f| std::cmp::Reverse(f.object_size_bytes.unwrap_or(-1)));
        kind.largest.truncate(SUMMARY_LARGEST);
    }
    // The kinds with the most severe findings first, then the most numerous.
    kinds.sort_by(|a, b| b.counts.cmp(&a.counts).then(a.check.cmp(&b.check)));
    kinds
}

fn largest_words(report: &AuditReport, kind: &KindSummary) -> String {
    let total: usize = kind.counts.iter().sum();
    let mut parts: Vec<String> = kind
        .largest
        .iter()
        .map(|f| match f.object_size_bytes {
            // Catalog names may hold control characters: escaped like every other name printed.
            Some(size) => format!(
                "{} {}",
                printable(&finding_subject(report, f)),
                bytes(size as f64)
            ),
            None => printable(&finding_subject(report, f)),
        })
        .collect();
    if total > kind.largest.len() {
        parts.push(format!(
            "{} more",
            count((total - kind.largest.len()) as f64)
        ));
    }
    parts.join(" · ")
}

fn write_kind_summary(out: &mut dyn Write, report: &AuditReport, paint: &Paint) -> io::Result<()> {
    let kinds = kind_summaries(report);
    if kinds.is_empty() {
        return Ok(());
    }
    writeln!(out, "{}", paint.bold("By kind (objects, largest first)"))?;
    let rows: Vec<[String; 6]> = kinds
        .iter()
        .map(|k| {
            let total: usize = k.counts.iter().sum();
            [
                k.check.as_str().to_owned(),
                count(total as f64),
                count(k.counts[0] as f64),
                count(k.counts[1] as f64),
                count(k.counts[2] as f64),
                largest_words(report, k),
            ]
        })
        .collect();
    let header = ["kind", "objects", "critical", "warning", "info", "largest"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    let line = |cells: [&str; 6]| {
        format!(
            "  {:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        )
    };
    writeln!(out, "{}", paint.dim(&line(header)))?;
    for r in &rows {
        writeln!(
            out,
            "{}",
            line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]).trim_end()
        )?;
    }
    writeln!(out)
}

/// "3,000 info findings not shown (--min-severity warning; --format json has every one)".
fn hidden_line(report: &AuditReport, min_severity: Severity) -> Option<String> {
    let hidden: Vec<String> = SEVERITIES
        .iter()
        .filter(|s| **s < min_severity)
        .filter_map(|s| {
            let n = report.findings.iter().filter(|f| f.severity == *s).count();
            (n > 0).then(|| format!("{} {}", count(n as f64), s.as_str()))
        })
        .collect();
    if hidden.is_empty() {
        return None;
    }
    Some(format!(
        "{} finding(s) not listed (--min-severity {}); they are in the summary above, and \
         --format json has every one",
        hidden.join(" and "),
        min_severity.as_str()
    ))
}

/// `pgplan audit` as text, every finding listed.
pub fn write_audit_text(
    out: &mut dyn Write,
    report: &AuditReport,
    options: &TextOptions,
) -> io::Result<()> {
    write_audit_text_from(out, report, options, Severity::Info)
}

/// `pgplan audit` as text, listing the findings at least `min_severity` (`--min-severity`);
/// the summary by kind and the counts still cover every finding.
pub fn write_audit_text_from(
    out: &mut dyn Write,
    report: &AuditReport,
    options: &TextOptions,
    min_severity: Severity,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    writeln!(out, "{}", paint.bold("Nodes"))?;
    for n in &report.nodes {
        let line = printable(&node_line(n));
        if n.error.is_some() {
            writeln!(out, "  {}", paint.bad(&line))?;
        } else {
            writeln!(out, "  {line}")?;
        }
    }
    for note in &report.notes {
        writeln!(out, "  {} {}", paint.dim("note:"), printable(note))?;
    }
    writeln!(out)?;
    if report.findings.is_empty() {
        writeln!(out, "{}", paint.good("No findings."))?;
    }
    for severity in SEVERITIES.into_iter().filter(|s| *s >= min_severity) {
        let group: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .collect();
        if group.is_empty() {
            continue;
        }
        writeln!(
            out,
            "{}",
            paint.severity(
                severity,
                &format!(
                    "{} ({})",
                    severity_title(severity),
                    count(group.len() as f64)
                )
            )
        )?;
        for f in group {
            writeln!(
                out,
                "  {} {}",
                paint.accent(&format!("[{}]", f.check.as_str())),
                paint.bold(&printable(&finding_subject(report, f)))
            )?;
            writeln!(out, "    {}", printable(&f.message))?;
            if !f.evidence.is_empty() {
                writeln!(out, "    {} {}", paint.dim("evidence:"), evidence_line(f))?;
            }
            for (i, line) in usage_lines(f).iter().map(|l| printable(l)).enumerate() {
                if i == 0 {
                    writeln!(out, "    {} {line}", paint.dim("usage:"))?;
                } else {
                    writeln!(out, "           {line}")?;
                }
            }
            if let Some(c) = &f.confidence
                && !c.reasons.is_empty()
            {
                writeln!(
                    out,
                    "    {} {} — {}",
                    paint.dim("confidence:"),
                    c.level,
                    printable(&c.reasons.join("; "))
                )?;
            }
            if let Some(fix) = &f.fix {
                let mut lines = fix.lines().map(printable);
                if let Some(first) = lines.next() {
                    writeln!(out, "    {} {first}", paint.dim("fix:"))?;
                }
                for line in lines {
                    writeln!(out, "         {line}")?;
                }
            }
            for reason in &f.also {
                writeln!(
                    out,
                    "    {} [{}, {}] {}",
                    paint.dim("also:"),
                    reason.check.as_str(),
                    reason.severity.as_str(),
                    printable(&reason.message)
                )?;
            }
        }
        writeln!(out)?;
    }
    if !report.skipped.is_empty() {
        writeln!(out, "{}", paint.bold("Skipped"))?;
        for s in &report.skipped {
            writeln!(
                out,
                "  {}: {}",
                printable(&skipped_check(report, s)),
                printable(&s.reason)
            )?;
        }
        writeln!(out)?;
    }
    let gaps: Vec<_> = report
        .nodes
        .iter()
        .flat_map(|n| n.privileges_missing.iter().map(move |g| (n, g)))
        .collect();
    if !gaps.is_empty() {
        writeln!(out, "{}", paint.bold("Privileges missing"))?;
        for (n, g) in gaps {
            writeln!(
                out,
                "  {} · {}: {}",
                printable(&n.name),
                g.check,
                printable(&g.lost)
            )?;
        }
        writeln!(out)?;
    }
    write_kind_summary(out, report, &paint)?;
    if let Some(line) = hidden_line(report, min_severity) {
        writeln!(out, "{}", paint.dim(&line))?;
    }
    writeln!(out, "{}", summary_line(report))
}

/// `pgplan audit --format markdown`, every finding listed.
pub fn write_audit_markdown(out: &mut dyn Write, report: &AuditReport) -> io::Result<()> {
    write_audit_markdown_from(out, report, Severity::Info)
}

/// `pgplan audit --format markdown`, listing the findings at least `min_severity`; the summary
/// by kind still covers every finding.
pub fn write_audit_markdown_from(
    out: &mut dyn Write,
    report: &AuditReport,
    min_severity: Severity,
) -> io::Result<()> {
    writeln!(out, "## pgplan audit")?;
    writeln!(out)?;
    // The database column only when it tells nodes apart: one database's table stays as it was.
    let many = report.spans_databases();
    if many {
        writeln!(
            out,
            "| node | database | role | version | counting since | status |"
        )?;
        writeln!(out, "|---|---|---|---|---|---|")?;
    } else {
        writeln!(out, "| node | role | version | counting since | status |")?;
        writeln!(out, "|---|---|---|---|---|")?;
    }
    for n in &report.nodes {
        let status = match (&n.error, &n.excluded) {
            (Some(e), _) => format!("unreachable: {e}"),
            (None, Some(x)) => format!("left out: {x}"),
            _ => "read".into(),
        };
        let database = if many {
            format!(" {} |", cell(n.database.as_deref().unwrap_or("")))
        } else {
            String::new()
        };
        writeln!(
            out,
            "| {} |{database} {} | {} | {} | {} |",
            cell(&n.name),
            n.role.map(|r| r.as_str()).unwrap_or(""),
            cell(n.server_version.as_deref().unwrap_or("")),
            n.window
                .map(|w| format!("{} ({})", w.since.iso(), w.source.words()))
                .unwrap_or_default(),
            cell(&status)
        )?;
    }
    writeln!(out)?;
    for note in &report.notes {
        writeln!(out, "> {}", inline(&note.replace('\n', " ")))?;
    }
    if !report.notes.is_empty() {
        writeln!(out)?;
    }
    writeln!(out, "**{}**", summary_line(report))?;
    writeln!(out)?;
    let kinds = kind_summaries(report);
    if !kinds.is_empty() {
        writeln!(
            out,
            "| kind | objects | critical | warning | info | largest |"
        )?;
        writeln!(out, "|---|---:|---:|---:|---:|---|")?;
        for k in &kinds {
            writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} |",
                k.check.as_str(),
                count(k.counts.iter().sum::<usize>() as f64),
                count(k.counts[0] as f64),
                count(k.counts[1] as f64),
                count(k.counts[2] as f64),
                cell(&largest_words(report, k))
            )?;
        }
        writeln!(out)?;
    }
    if let Some(line) = hidden_line(report, min_severity) {
        writeln!(out, "> {line}")?;
        writeln!(out)?;
    }
    for severity in SEVERITIES.into_iter().filter(|s| *s >= min_severity) {
        let group: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .collect();
        if group.is_empty() {
            continue;
        }
        writeln!(out, "### {} ({})", severity_title(severity), group.len())?;
        writeln!(out)?;
        for f in group {
            let subject = finding_subject(report, f);
            write!(out, "- `{}`", f.check.as_str())?;
            if !subject.is_empty() {
                write!(out, " **{}**", inline(&subject.replace('*', "\\*")))?;
            }
            writeln!(out, ": {}", inline(&f.message.replace('\n', " ")))?;
            if !f.evidence.is_empty() {
                writeln!(out, "  <br>evidence: {}", inline(&evidence_line(f)))?;
            }
            for line in usage_lines(f) {
                writeln!(out, "  <br>usage on {}", inline(&line.replace('\n', " ")))?;
            }
            if let Some(c) = &f.confidence {
                writeln!(
                    out,
                    "  <br>confidence: {} {}",
                    c.level,
                    inline(&c.reasons.join("; "))
                )?;
            }
            for reason in &f.also {
                writeln!(
                    out,
                    "  <br>also `{}` ({}): {}",
                    reason.check.as_str(),
                    reason.severity.as_str(),
                    inline(&reason.message.replace('\n', " "))
                )?;
            }
            if let Some(fix) = &f.fix {
                writeln!(out)?;
                writeln!(out, "  ```sql")?;
                for line in fix.lines() {
                    writeln!(out, "  {}", printable(line))?;
                }
                writeln!(out, "  ```")?;
            }
        }
        writeln!(out)?;
    }
    if !report.skipped.is_empty() {
        writeln!(out, "### Skipped")?;
        writeln!(out)?;
        for s in &report.skipped {
            if report.spans_databases() {
                writeln!(
                    out,
                    "- `{}` in {}: {}",
                    s.check.as_str(),
                    inline(&s.database),
                    inline(&s.reason)
                )?;
            } else {
                writeln!(out, "- `{}`: {}", s.check.as_str(), inline(&s.reason))?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Escapes a label value for the text exposition format: backslash, double quote and newline
/// as the format requires (`\\`, `\"`, `\n`). The format has no escape for other control
/// characters and takes them raw, so a name holding ESC or BEL would reach whoever reads the
/// file on a terminal: those are written as the text report shows them (`\u{1b}`), their
/// backslash escaped like any other.
pub fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_label_value(&mut out, text);
    out
}

fn push_label_value(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                for e in c.escape_default() {
                    if e == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(e);
                    }
                }
            }
            c => out.push(c),
        }
    }
}

/// A sample value as the exposition format writes it.
fn push_sample(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{value}");
    }
}

/// Metric families in order, each with its HELP and TYPE once. Samples are written straight
/// into one buffer per family: an audit of many databases has tens of thousands of them.
struct Exposition {
    families: BTreeMap<&'static str, (&'static str, &'static str, String)>,
    order: Vec<&'static str>,
}

impl Exposition {
    fn new() -> Self {
        Self {
            families: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    fn add(&mut self, name: &'static str, help: &'static str, labels: &[(&str, &str)], value: f64) {
        self.sample("gauge", name, help, labels, value);
    }

    /// A counter the server keeps (cumulative since its last statistics reset): `rate()` and
    /// `increase()` apply, and they handle the reset as Prometheus handles any counter reset.
    fn add_counter(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        self.sample("counter", name, help, labels, value);
    }

    fn sample(
        &mut self,
        kind: &'static str,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let (_, _, text) = self.families.entry(name).or_insert_with(|| {
            self.order.push(name);
            (help, kind, String::new())
        });
        text.push_str(name);
        if !labels.is_empty() {
            text.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(key);
                text.push_str("=\"");
                push_label_value(text, value);
                text.push('"');
            }
            text.push('}');
        }
        text.push(' ');
        push_sample(text, value);
        text.push('\n');
    }

    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        for name in &self.order {
            let (help, kind, samples) = &self.families[name];
            writeln!(out, "# HELP {name} {help}")?;
            writeln!(out, "# TYPE {name} {kind}")?;
            out.write_all(samples.as_bytes())?;
        }
        Ok(())
    }
}

/// The label that tells apart findings of a kind that can come several to an object and node
/// (several foreign keys of a table, both ids of a table, several holders or slots on a node):
/// without it two findings would share a series.
fn subject_label(check: Check) -> Option<&'static str> {
    match check {
        Check::MissingFkIndex => Some("constraint"),
        Check::XidWraparound => Some("kind"),
        Check::XminHorizon => Some("holder"),
        Check::ReplicationSlot => Some("slot"),
        Check::AdvisoryLock | Check::IdleInTransaction => Some("session"),
        Check::LockQueue => Some("holder"),
        Check::ConnectionPressure => Some("kind"),
        Check::PreparedTransaction => Some("holder"),
        _ => None,
    }
}

/// The metric of one finding kind: `pgplan_audit_<check>`.
fn finding_metric(check: Check) -> (&'static str, &'static str) {
    match check {
        Check::UnusedIndex => (
            "pgplan_audit_unused_index",
            "An index no audited node has scanned (1 per index).",
        ),
        Check::InvalidIndex => (
            "pgplan_audit_invalid_index",
            "An invalid index, or one still being built (1 per index).",
        ),
        Check::DuplicateIndex => (
            "pgplan_audit_duplicate_index",
            "An index with the same keys as another (1 per index to drop).",
        ),
        Check::RedundantIndex => (
            "pgplan_audit_redundant_index",
            "An index covered by another (1 per index to drop).",
        ),
        Check::MissingFkIndex => (
            "pgplan_audit_missing_fk_index",
            "A foreign key without an index on its columns (1 per table).",
        ),
        Check::DeadTuples => (
            "pgplan_audit_dead_tuples",
            "A table whose dead rows autovacuum is losing to (1 per table).",
        ),
        Check::StaleStatistics => (
            "pgplan_audit_stale_statistics",
            "A table with statistics past its autoanalyze trigger (1 per table).",
        ),
        Check::VisibilityMap => (
            "pgplan_audit_visibility_map",
            "A table whose visibility map covers little of it (1 per table).",
        ),
        Check::IndexBloat => (
            "pgplan_audit_index_bloat",
            "A btree index estimated to be mostly bloat (1 per index).",
        ),
        Check::TableBloat => (
            "pgplan_audit_table_bloat",
            "A table estimated to be mostly bloat (1 per table).",
        ),
        Check::XminHorizon => (
            "pgplan_audit_xmin_horizon",
            "Something holding back the xmin horizon (1 per holder).",
        ),
        Check::ReplicationSlot => (
            "pgplan_audit_replication_slot",
            "An inactive replication slot (1 per slot).",
        ),
        Check::XidWraparound => (
            "pgplan_audit_xid_wraparound",
            "A table past its freeze limit (1 per table and kind).",
        ),
        Check::AdvisoryLock => (
            "pgplan_audit_advisory_lock",
            "A session idle outside a transaction holding session-level advisory locks (1 per session).",
        ),
        Check::IdleInTransaction => (
            "pgplan_audit_idle_in_transaction",
            "A session idle in a transaction past the threshold (1 per session).",
        ),
        Check::LockQueue => (
            "pgplan_audit_lock_queue",
            "Sessions waiting for a lock behind one holder (1 per holder).",
        ),
        Check::ConnectionPressure => (
            "pgplan_audit_connection_pressure",
            "Connection slots nearly taken, or many idle sessions from one client without a pooler (1 per kind).",
        ),
        Check::PreparedTransaction => (
            "pgplan_audit_prepared_transaction",
            "A prepared transaction left unfinished (1 per transaction).",
        ),
        Check::RecoveryConflict => (
            "pgplan_audit_recovery_conflict",
            "A standby that cancelled queries for recovery conflicts (1 per standby).",
        ),
    }
}

/// Every metric family `pgplan audit --format prometheus` can write (those of findings only when
/// there are some), for what reads them (alerting rules, dashboards) to be checked against.
pub fn prometheus_metric_names() -> Vec<&'static str> {
    let mut names = vec![
        "pgplan_audit_node_up",
        "pgplan_audit_stats_window_seconds",
        "pgplan_audit_findings",
        "pgplan_audit_skipped",
        "pgplan_audit_table_size_bytes",
        "pgplan_audit_table_size_stale",
        "pgplan_audit_table_live_tuples",
        "pgplan_audit_table_dead_tuples",
        "pgplan_audit_table_mods_since_analyze",
        "pgplan_audit_table_last_vacuum_age_seconds",
        "pgplan_audit_table_last_analyze_age_seconds",
        "pgplan_audit_index_size_bytes",
        "pgplan_audit_index_scans_total",
        "pgplan_audit_idle_in_transaction_max_seconds",
        "pgplan_audit_idle_advisory_locks",
        "pgplan_audit_lock_wait_max_seconds",
        "pgplan_audit_lock_waiters",
        "pgplan_audit_client_sessions",
        "pgplan_audit_connection_slots",
        "pgplan_audit_timestamp_seconds",
        "pgplan_audit_duration_seconds",
    ];
    names.extend(Check::ALL.iter().map(|&c| finding_metric(c).0));
    names
}

/// The run itself, after the report's metrics: when the audit finished (Unix time) and how long
/// it took, so an alert can tell a stale audit (a CronJob that stopped running) from a clean one.
pub fn write_audit_run_prometheus(
    out: &mut dyn Write,
    finished_unix_seconds: f64,
    duration_seconds: f64,
) -> io::Result<()> {
    let mut x = Exposition::new();
    x.add(
        "pgplan_audit_timestamp_seconds",
        "When this audit finished, in seconds since the Unix epoch.",
        &[],
        finished_unix_seconds,
    );
    x.add(
        "pgplan_audit_duration_seconds",
        "How long this audit took, from start to the report.",
        &[],
        duration_seconds,
    );
    x.write(out)
}

/// `pgplan audit --format prometheus`: the text exposition format, for node_exporter's textfile
/// collector. Metric names are stable; every sample is a gauge but the index scan counters.
pub fn write_audit_prometheus(out: &mut dyn Write, report: &AuditReport) -> io::Result<()> {
    let mut x = Exposition::new();
    add_node_metrics(&mut x, report);
    add_session_metrics(&mut x, report);
    add_finding_counts(&mut x, report);
    add_skipped_checks(&mut x, report);
    add_finding_series(&mut x, report);
    add_table_metrics(&mut x, report);
    add_index_metrics(&mut x, report);
    x.write(out)
}

/// Whether each node could be read, and how long its statistics have been counting.
fn add_node_metrics(x: &mut Exposition, report: &AuditReport) {
    for n in &report.nodes {
        let role = n.role.map(|r| r.as_str()).unwrap_or("unknown");
        x.add(
            "pgplan_audit_node_up",
            "Whether the node could be read (1) or not (0).",
            &[
                ("database", n.database.as_deref().unwrap_or("")),
                ("node", &n.name),
                ("role", role),
            ],
            if n.error.is_none() { 1.0 } else { 0.0 },
        );
    }
    for n in &report.nodes {
        if let Some(w) = n.window {
            x.add(
                "pgplan_audit_stats_window_seconds",
                "How long the node's statistics counters have been counting.",
                &[
                    ("database", n.database.as_deref().unwrap_or("")),
                    ("node", &n.name),
                ],
                w.seconds(),
            );
        }
    }
}

/// Each database's sessions: idle in a transaction, advisory locks, lock queues, connection slots.
fn add_session_metrics(x: &mut Exposition, report: &AuditReport) {
    for s in &report.sessions {
        let labels = [("database", s.database.as_str()), ("node", s.node.as_str())];
        x.add(
            "pgplan_audit_idle_in_transaction_max_seconds",
            "The longest a session of the database has been idle in a transaction (0 if none).",
            &labels,
            s.longest_idle_in_transaction_seconds,
        );
        x.add(
            "pgplan_audit_idle_advisory_locks",
            "Advisory locks held by sessions of the database idle outside a transaction.",
            &labels,
            s.idle_advisory_locks as f64,
        );
        x.add(
            "pgplan_audit_lock_wait_max_seconds",
            "The longest a session of the database has waited for a lock (0 if none).",
            &labels,
            s.longest_lock_wait_seconds,
        );
        x.add(
            "pgplan_audit_lock_waiters",
            "Sessions of the database waiting for a lock (the length of the lock queues).",
            &labels,
            s.lock_waiters as f64,
        );
        x.add(
            "pgplan_audit_client_sessions",
            "Client backends of the whole server, the audit's own included.",
            &labels,
            s.client_sessions as f64,
        );
        x.add(
            "pgplan_audit_connection_slots",
            "Connection slots ordinary roles may take: max_connections less the reserved ones.",
            &labels,
            s.connection_slots,
        );
    }
}

/// Findings counted by database, check and severity, zeros included, so every series exists.
fn add_finding_counts(x: &mut Exposition, report: &AuditReport) {
    let mut counts: HashMap<(&str, Check, Severity), usize> = HashMap::new();
    for f in &report.findings {
        *counts
            .entry((f.database.as_str(), f.check, f.severity))
            .or_default() += 1;
    }
    for database in &report.databases {
        for check in Check::ALL {
            for severity in SEVERITIES {
                let count = counts
                    .get(&(database.as_str(), check, severity))
                    .copied()
                    .unwrap_or(0);
                x.add(
                    "pgplan_audit_findings",
                    "Findings by database, check and severity: distinct objects, each under its strongest reason.",
                    &[
                        ("database", database),
                        ("check", check.as_str()),
                        ("severity", severity.as_str()),
                    ],
                    count as f64,
                );
            }
        }
    }
}

/// Whether each check was skipped in each database.
fn add_skipped_checks(x: &mut Exposition, report: &AuditReport) {
    for database in &report.databases {
        for check in Check::ALL {
            let skipped = report
                .skipped
                .iter()
                .any(|s| &s.database == database && s.check == check);
            x.add(
                "pgplan_audit_skipped",
                "Whether the check was skipped, in whole or in part (1) or not (0).",
                &[("database", database), ("check", check.as_str())],
                if skipped { 1.0 } else { 0.0 },
            );
        }
    }
}

/// One series per finding, in its check's own metric family.
fn add_finding_series(x: &mut Exposition, report: &AuditReport) {
    for f in &report.findings {
        let (name, help) = finding_metric(f.check);
        let mut labels = vec![
            ("database", f.database.as_str()),
            ("severity", f.severity.as_str()),
            ("schema", f.schema.as_deref().unwrap_or("")),
            ("table", f.table.as_deref().unwrap_or("")),
            ("index", f.index.as_deref().unwrap_or("")),
            ("node", f.node.as_deref().unwrap_or("")),
        ];
        if let Some(label) = subject_label(f.check) {
            labels.push((label, f.subject.as_deref().unwrap_or("")));
        }
        x.add(name, help, &labels, 1.0);
        // An index that is one finding under its strongest reason still has a series for every
        // kind it is (an exact duplicate is also unused), so each kind's gauge is complete;
        // pgplan_audit_findings counts it once, under its strongest reason.
        for reason in &f.also {
            let (name, help) = finding_metric(reason.check);
            labels[1] = ("severity", reason.severity.as_str());
            x.add(name, help, &labels, 1.0);
        }
    }
}

/// Each table's size, row counts and maintenance ages.
fn add_table_metrics(x: &mut Exposition, report: &AuditReport) {
    for t in &report.objects.tables {
        let labels = [
            ("database", t.database.as_str()),
            ("schema", t.schema.as_str()),
            ("table", t.table.as_str()),
        ];
        // A size pg_class is known to be behind on (a table bulk-loaded since its last VACUUM
        // or ANALYZE reads as a few pages) is not exported as if it were the table's: the
        // staleness gauge says so instead.
        if let Some(v) = t.size_bytes.filter(|_| !t.size_stale) {
            x.add(
                "pgplan_audit_table_size_bytes",
                "Table size: heap and TOAST, relpages x block size as of the table's last VACUUM, ANALYZE or CREATE INDEX; absent while pgplan_audit_table_size_stale is 1.",
                &labels,
                v as f64,
            );
        }
        x.add(
            "pgplan_audit_table_size_stale",
            "1 when pg_class has not measured the table or the counters show more than twice the rows it recorded (pgplan_audit_table_size_bytes is then not exported), else 0.",
            &labels,
            if t.size_stale { 1.0 } else { 0.0 },
        );
        if let Some(v) = t.live_tuples {
            x.add(
                "pgplan_audit_table_live_tuples",
                "Live rows on the primary (n_live_tup).",
                &labels,
                v as f64,
            );
        }
        if let Some(v) = t.dead_tuples {
            x.add(
                "pgplan_audit_table_dead_tuples",
                "Dead rows on the primary (n_dead_tup).",
                &labels,
                v as f64,
            );
        }
        if let Some(v) = t.mods_since_analyze {
            x.add(
                "pgplan_audit_table_mods_since_analyze",
                "Rows modified since the last ANALYZE, on the primary.",
                &labels,
                v as f64,
            );
        }
        if let Some(v) = t.last_vacuum_age_seconds {
            x.add(
                "pgplan_audit_table_last_vacuum_age_seconds",
                "Seconds since the last vacuum (manual or auto).",
                &labels,
                v,
            );
        }
        if let Some(v) = t.last_analyze_age_seconds {
            x.add(
                "pgplan_audit_table_last_analyze_age_seconds",
                "Seconds since the last analyze (manual or auto).",
                &labels,
                v,
            );
        }
    }
}

/// Each index's size and its scans on each node.
fn add_index_metrics(x: &mut Exposition, report: &AuditReport) {
    for i in &report.objects.indexes {
        let labels = [
            ("database", i.database.as_str()),
            ("schema", i.schema.as_str()),
            ("table", i.table.as_str()),
            ("index", i.index.as_str()),
        ];
        if let Some(v) = i.size_bytes {
            x.add(
                "pgplan_audit_index_size_bytes",
                "Index size, from relpages (as of the last VACUUM, ANALYZE or CREATE INDEX).",
                &labels,
                v as f64,
            );
        }
        for (node, scans) in &i.scans {
            if let Some(v) = scans {
                x.add_counter(
                    "pgplan_audit_index_scans_total",
                    "Index scans counted on the node (idx_scan; each node counts only its own).",
                    &[
                        ("database", i.database.as_str()),
                        ("node", node.as_str()),
                        ("schema", i.schema.as_str()),
                        ("table", i.table.as_str()),
                        ("index", i.index.as_str()),
                    ],
                    *v as f64,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::{NodeResult, audit};

    fn report() -> AuditReport {
        let mut p = primary();
        let mut t = table(10, "or\"ders");
        t.reltuples = 10_000.0;
        t.reloptions = vec!["autovacuum_enabled=false".into()];
        t.stats.n_dead_tup = Some(15_000);
        t.stats.n_live_tup = Some(10_000);
        let mut i = index(100, &t, "orders_note", vec![col(3, "note")]);
        i.scans = Some(0);
        p.indexes = vec![i];
        p.tables = vec![t];
        let mut report = audit(
            &[NodeResult {
                name: "host=db1 dbname=app".into(),
                outcome: Ok(p),
            }],
            &Default::default(),
        );
        // A second node that could not be read, added after the audit: the renderers show it
        // as given, while the findings stay those of a complete audit (a failed node would make
        // the unused index only informational).
        report.nodes.push(crate::audit::NodeSummary {
            name: "host=db2 dbname=app".into(),
            role: None,
            server_version: None,
            database: Some("app".into()),
            window: None,
            error: Some("connection refused".into()),
            excluded: None,
            privileges_missing: Vec::new(),
        });
        report
    }

    /// One database's primary with every kind of finding that can come several to an object
    /// or a node: two sessions and two slots holding the horizon, two inactive slots, two
    /// foreign keys without an index on one table, a table past both freeze limits, and a
    /// duplicate index.
    fn busy_primary(database: &str) -> crate::audit::NodeSnapshot {
        use crate::audit::snapshot::{ForeignKey, ReplicationSlot, Session};
        let mut p = primary();
        p.server.database = database.into();
        let parent = table(1, "parent");
        let mut child = table(10, "child");
        child.relpages = 5000;
        child.frozen_xid_age = Some(1_200_000_000);
        child.multixact_age = Some(900_000_000);
        let fk = |name: &str, attnum: i16, column: &str| ForeignKey {
            name: name.into(),
            table_oid: 10,
            schema: "public".into(),
            table: "child".into(),
            referenced_table_oid: 1,
            referenced_schema: "public".into(),
            referenced_table: "parent".into(),
            attnums: vec![attnum],
            column_names: vec![column.into()],
            referenced_index_oid: 0,
            inherited: false,
        };
        p.foreign_keys = vec![fk("child_a_fk", 2, "a"), fk("child_b_fk", 3, "b")];
        p.indexes = vec![
            index(100, &child, "child_c", vec![col(4, "c")]),
            index(101, &child, "child_c_again", vec![col(4, "c")]),
        ];
        p.tables = vec![parent, child];
        p.sessions = [4711, 4712]
            .into_iter()
            .map(|pid| Session {
                pid,
                state: Some("idle in transaction".into()),
                xact_age_seconds: Some(900.0),
                xid_age_xids: Some(5000),
                ..Default::default()
            })
            .collect();
        let slot = |name: &str, xmin: Option<i64>| ReplicationSlot {
            name: name.into(),
            slot_type: "physical".into(),
            xmin_age_xids: xmin,
            retained_wal_bytes: Some(1e9),
            ..Default::default()
        };
        p.replication_slots = vec![
            slot("held1", Some(2_000_000)),
            slot("held2", Some(3_000_000)),
            slot("idle1", None),
            slot("idle2", None),
        ];
        p
    }

    /// Two databases whose nodes, tables and indexes have the same names.
    fn two_databases() -> AuditReport {
        use crate::audit::{DatabaseNodes, audit_databases};
        let group = |database: &str| DatabaseNodes {
            database: database.into(),
            nodes: vec![
                NodeResult {
                    name: "primary".into(),
                    outcome: Ok(busy_primary(database)),
                },
                NodeResult {
                    name: "standby".into(),
                    outcome: Err("connection refused".into()),
                },
            ],
        };
        audit_databases(&[group("app"), group("billing")], &Default::default())
    }

    #[test]
    fn prometheus_series_are_unique_across_databases() {
        let report = two_databases();
        for check in [
            Check::XminHorizon,
            Check::ReplicationSlot,
            Check::MissingFkIndex,
            Check::XidWraparound,
            Check::DuplicateIndex,
        ] {
            for database in ["app", "billing"] {
                let n = report
                    .findings
                    .iter()
                    .filter(|f| f.check == check && f.database == database)
                    .count();
                let want = if check == Check::DuplicateIndex { 1 } else { 2 };
                assert!(n >= want, "{} in {database}: {n}", check.as_str());
            }
        }
        let mut out = Vec::new();
        write_audit_prometheus(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut samples = 0;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, _value) = line.rsplit_once(' ').unwrap();
            assert!(seen.insert(series), "two samples of {series}\n{text}");
            samples += 1;
        }
        assert!(samples > 100, "{text}");
        let has = |name: &str, labels: &[(&str, &str)], value: &str| {
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            let sample = format!("{name}{{{}}} {value}", labels.join(","));
            assert!(text.lines().any(|l| l == sample), "no {sample}:\n{text}");
        };
        for database in ["app", "billing"] {
            // The labels of a per-finding series, before its kind's own label.
            let finding = |severity: &'static str, schema: &'static str, table, node| {
                vec![
                    ("database", database),
                    ("severity", severity),
                    ("schema", schema),
                    ("table", table),
                    ("index", ""),
                    ("node", node),
                ]
            };
            for pid in ["4711", "4712"] {
                let mut labels = finding("warning", "", "", "primary");
                let holder = format!("session pid {pid}");
                labels.push(("holder", &holder));
                has("pgplan_audit_xmin_horizon", &labels, "1");
            }
            for slot in ["idle1", "idle2"] {
                let mut labels = finding("warning", "", "", "primary");
                labels.push(("slot", slot));
                has("pgplan_audit_replication_slot", &labels, "1");
            }
            for fk in ["child_a_fk", "child_b_fk"] {
                let mut labels = finding("info", "public", "child", "");
                labels.push(("constraint", fk));
                has("pgplan_audit_missing_fk_index", &labels, "1");
            }
            has(
                "pgplan_audit_findings",
                &[
                    ("database", database),
                    ("check", "duplicate_index"),
                    ("severity", "warning"),
                ],
                "1",
            );
            has(
                "pgplan_audit_node_up",
                &[
                    ("database", database),
                    ("node", "standby"),
                    ("role", "unknown"),
                ],
                "0",
            );
        }
        for kind in ["xid", "multixact"] {
            assert!(
                text.contains(&format!(
                    "table=\"child\",index=\"\",node=\"\",kind=\"{kind}\"}} 1"
                )),
                "{text}"
            );
        }
    }

    #[test]
    fn text_markdown_and_json_name_the_database_when_there_are_several() {
        let report = two_databases();
        let mut out = Vec::new();
        write_audit_text(&mut out, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        for database in ["app", "billing"] {
            assert!(
                text.contains(&format!(
                    "[duplicate_index] {database}: public.child index child_c_again"
                )),
                "{text}"
            );
            assert!(
                text.contains(&format!("[xmin_horizon] {database}: primary")),
                "{text}"
            );
        }
        assert!(
            text.contains(" in 2 databases; 2 node(s) could not be read"),
            "{text}"
        );

        let mut out = Vec::new();
        write_audit_markdown(&mut out, &report).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("| node | database | role | version |"), "{md}");
        assert!(
            md.contains("| standby | billing |  |  |  | unreachable: connection refused |"),
            "{md}"
        );
        assert!(
            md.contains("- `duplicate_index` **billing: public.child index child_c_again**"),
            "{md}"
        );

        let doc = serde_json::to_value(super::super::wire_audit::audit_doc(&report)).unwrap();
        assert_eq!(doc["schema_version"], super::super::wire::SCHEMA_VERSION);
        let databases: std::collections::BTreeSet<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["database"].as_str().unwrap())
            .collect();
        assert_eq!(
            databases.into_iter().collect::<Vec<_>>(),
            ["app", "billing"]
        );
        assert!(
            doc["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["database"].is_string())
        );
        assert_eq!(doc["nodes"][3]["database"], "billing");
        assert!(doc["nodes"][3]["error"].is_string());
    }

    #[test]
    fn one_database_is_not_prefixed() {
        let mut out = Vec::new();
        write_audit_text(&mut out, &report(), &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("[unused_index] public.or\"ders index orders_note"));
        assert!(!text.contains("databases"), "{text}");
        let doc = serde_json::to_value(super::super::wire_audit::audit_doc(&report())).unwrap();
        assert!(
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["database"] == "app")
        );
    }

    #[test]
    fn text_groups_by_severity_with_evidence_and_fix() {
        let mut out = Vec::new();
        write_audit_text(&mut out, &report(), &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("host=db1 dbname=app · primary · PostgreSQL 17.4 · database app"));
        assert!(text.contains("host=db2 dbname=app · unreachable: connection refused"));
        assert!(text.contains("Warnings (2)"), "{text}");
        assert!(text.contains("[unused_index] public.or\"ders index orders_note"));
        assert!(text.contains("fix: DROP INDEX CONCURRENTLY public.orders_note;"));
        assert!(text.contains("evidence: dead_tuples 15,000"));
        assert!(
            text.contains("         ALTER TABLE public.\"or\"\"ders\" RESET (autovacuum_enabled);")
        );
        assert!(text.contains("the audit is partial"));
        assert!(
            text.contains("    usage: host=db1 dbname=app · 0 index scans\n"),
            "{text}"
        );
    }

    #[test]
    fn usage_is_one_line_per_node() {
        let mut report = report();
        let f = report
            .findings
            .iter_mut()
            .find(|f| f.check == Check::UnusedIndex)
            .unwrap();
        f.usage = vec![
            crate::audit::NodeUsage {
                node: "primary".into(),
                index_scans: Some(0),
                last_idx_scan: None,
            },
            crate::audit::NodeUsage {
                node: "standby".into(),
                index_scans: Some(1200),
                last_idx_scan: Some("2026-11-01T00:00:00Z".into()),
            },
        ];
        let mut out = Vec::new();
        write_audit_text(&mut out, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "    usage: primary · 0 index scans\n           standby · 1,200 index scans · \
                 last scan 2026-11-01T00:00:00Z\n"
            ),
            "{text}"
        );
        let mut out = Vec::new();
        write_audit_markdown(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "  <br>usage on primary · 0 index scans\n  <br>usage on standby · 1,200 index \
                 scans · last scan 2026-11-01T00:00:00Z\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn no_node_read_is_not_called_partial() {
        let report = audit(
            &[NodeResult {
                name: "host=db1".into(),
                outcome: Err("connection refused".into()),
            }],
            &Default::default(),
        );
        assert_eq!(report.exit_code(Severity::Warning), crate::exit::ERROR);
        let mut out = Vec::new();
        write_audit_text(&mut out, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("no node could be read"), "{text}");
        assert!(!text.contains("partial"), "{text}");
    }

    #[test]
    fn markdown_has_a_node_table_and_sql_blocks() {
        let mut out = Vec::new();
        write_audit_markdown(&mut out, &report()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| host=db1 dbname=app | primary | 17.4 |"));
        assert!(text.contains("### Warnings (2)"));
        assert!(text.contains("  ```sql\n  DROP INDEX CONCURRENTLY public.orders_note;\n  ```"));
        assert!(
            text.contains("  <br>usage on host=db1 dbname=app · 0 index scans\n"),
            "{text}"
        );
    }

    #[test]
    fn prometheus_escapes_labels_and_keeps_names_stable() {
        let mut out = Vec::new();
        write_audit_prometheus(&mut out, &report()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(
            "pgplan_audit_node_up{database=\"app\",node=\"host=db2 dbname=app\",role=\"unknown\"} 0"
        ));
        assert!(text.contains(
            "pgplan_audit_findings{database=\"app\",check=\"dead_tuples\",severity=\"warning\"} 1"
        ));
        assert!(text.contains(
            "pgplan_audit_table_dead_tuples{database=\"app\",schema=\"public\",table=\"or\\\"ders\"} 15000"
        ));
        assert!(text.contains(
            "pgplan_audit_unused_index{database=\"app\",severity=\"warning\",schema=\"public\",table=\"or\\\"ders\",index=\"orders_note\",node=\"\"} 1"
        ));
        // HELP and TYPE once per family.
        assert_eq!(
            text.matches("# TYPE pgplan_audit_findings gauge").count(),
            1
        );
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(
            label_value("bad\u{1b}[31m\u{7}"),
            "bad\\\\u{1b}[31m\\\\u{7}"
        );
    }

    #[test]
    fn json_follows_the_contract() {
        let doc = serde_json::to_value(super::super::wire_audit::audit_doc(&report())).unwrap();
        assert_eq!(doc["schema_version"], super::super::wire::SCHEMA_VERSION);
        assert_eq!(doc["nodes"][0]["role"], "primary");
        assert!(doc["nodes"][0]["stats_since"].is_string());
        assert_eq!(doc["nodes"][1]["error"], "connection refused");
        assert!(doc["nodes"][1]["role"].is_null());
        let f = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "unused_index")
            .unwrap();
        assert_eq!(f["severity"], "warning");
        assert_eq!(f["schema"], "public");
        assert_eq!(f["index"], "orders_note");
        assert_eq!(f["evidence"]["index_scans"], 0.0);
        assert_eq!(f["fix"], "DROP INDEX CONCURRENTLY public.orders_note;");
        assert_eq!(doc["summary"]["nodes_failed"], 1);
    }

    #[test]
    fn exit_codes() {
        let r = report();
        assert_eq!(r.exit_code(Severity::Warning), crate::exit::PARTIAL);
        let mut whole = r.clone();
        whole.nodes.retain(|n| n.error.is_none());
        assert_eq!(whole.exit_code(Severity::Warning), crate::exit::FINDINGS);
        assert_eq!(whole.exit_code(Severity::Critical), crate::exit::SUCCESS);
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::{NodeResult, audit};

    /// A fleet-sized audit in miniature: 40 tables, each with an unused index of its own size
    /// (so they rank), every tenth also with an exact duplicate nobody scans, and one table
    /// autovacuum is losing to.
    fn fleet() -> AuditReport {
        let mut p = primary();
        for n in 0..40u32 {
            let mut t = table(1000 + n, &format!("t{n:02}"));
            t.table_bytes = Some(i64::from(n + 1) * 8192 * 100);
            let mut unused = index(
                10_000 + n,
                &t,
                &format!("t{n:02}_note"),
                vec![col(3, "note")],
            );
            unused.scans = Some(0);
            unused.size_bytes = Some(i64::from(n + 1) * 8192 * 10);
            if n % 10 == 0 {
                let mut again = unused.clone();
                again.oid = 20_000 + n;
                again.name = format!("t{n:02}_note_again");
                p.indexes.push(again);
            }
            p.indexes.push(unused);
            if n == 7 {
                t.reltuples = 10_000.0;
                t.reloptions = vec!["autovacuum_enabled=false".into()];
                t.stats.n_dead_tup = Some(15_000);
                t.stats.n_live_tup = Some(10_000);
            }
            p.tables.push(t);
        }
        // A window shorter than the minimum statistics age: unused indexes are info.
        p.database.shared_stats_reset = Some(ts(86_400.0));
        p.database.created = None;
        p.database.stats_reset = Some(ts(86_400.0));
        audit(
            &[NodeResult {
                name: "host=db1 dbname=app".into(),
                outcome: Ok(p),
            }],
            &Default::default(),
        )
    }

    fn summary_part(text: &str) -> String {
        let from = text.find("By kind").expect("a summary by kind");
        text[from..].to_owned()
    }

    #[test]
    fn the_text_summary_groups_kinds_with_distinct_objects_largest_first() {
        let report = fleet();
        let mut out = Vec::new();
        write_audit_text(&mut out, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        insta::assert_snapshot!("audit_text_summary_by_kind", summary_part(&text));
        // 40 unused indexes and 4 duplicates are 44 objects, not 48 findings.
        assert!(text.ends_with("0 critical, 5 warning, 40 info\n"), "{text}");
    }

    #[test]
    fn min_severity_lists_less_and_summarises_everything() {
        let report = fleet();
        let mut out = Vec::new();
        write_audit_text_from(
            &mut out,
            &report,
            &TextOptions::default(),
            Severity::Warning,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("\nInfo ("), "{text}");
        assert!(text.contains("\nWarnings (5)"), "{text}");
        insta::assert_snapshot!("audit_text_summary_min_warning", summary_part(&text));
        let mut out = Vec::new();
        write_audit_markdown_from(&mut out, &report, Severity::Warning).unwrap();
        let markdown = String::from_utf8(out).unwrap();
        assert!(!markdown.contains("### Info"), "{markdown}");
        let from = markdown.find("| kind |").unwrap();
        let to = markdown[from..].find("\n\n").unwrap() + from;
        insta::assert_snapshot!("audit_markdown_summary_by_kind", &markdown[from..to]);
    }
}
