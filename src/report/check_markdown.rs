//! `pgplan check --format markdown`: a pull-request comment. A table of the queries, best and
//! worst first (regressions, largest growth first; then improvements), each regression with its
//! node-level reason, then the changed queries' SQL diffs.

use std::io::{self, Write};

use crate::check::{CheckMode, CheckReport, QueryStatus};

use super::check::{class_title, figure_text, headline};
use super::markdown::cell;

fn mark(status: QueryStatus) -> &'static str {
    match status {
        QueryStatus::Regressed => "❌ regressed",
        QueryStatus::Improved => "✅ improved",
        QueryStatus::Unchanged => "unchanged",
        QueryStatus::New => "🆕 new",
        QueryStatus::Removed => "removed",
    }
}

/// The longest run of backticks in `text` plus one, so a fence never ends inside it.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

pub fn write_markdown(out: &mut dyn Write, report: &CheckReport) -> io::Result<()> {
    let verdict = if report.regressed() {
        "❌ failed"
    } else {
        "✅ passed"
    };
    writeln!(out, "## pgplan check: {verdict}")?;
    writeln!(out)?;
    writeln!(
        out,
        "{}. PostgreSQL {}, baseline `{}`; a query regresses beyond +{}% {}.",
        headline(report),
        report.server_version,
        cell(&report.baseline_file),
        report.max_regression_percent,
        match report.mode {
            CheckMode::Measured => "pages touched and the measured spread",
            CheckMode::Estimated =>
                "planner cost (**ESTIMATED**: plan shapes and costs, nothing run)",
        }
    )?;
    writeln!(out)?;
    let unit = match report.mode {
        CheckMode::Measured => "pages, baseline → now",
        CheckMode::Estimated => "cost, baseline → now (ESTIMATED)",
    };
    writeln!(out, "| | query | {unit} | reason |")?;
    writeln!(out, "|---|---|---|---|")?;
    for q in report.ranked() {
        let mut reasons: Vec<String> = q
            .regressions
            .iter()
            .map(|r| format!("**{}**: {}", class_title(r.class), cell(&r.message)))
            .collect();
        reasons.extend(q.improvements.iter().map(|i| cell(i)));
        if q.text_changed {
            reasons.push("query text changed (diff below)".into());
        }
        writeln!(
            out,
            "| {} | `{}` | {} | {} |",
            mark(q.status),
            cell(&q.id),
            cell(&figure_text(report, q)),
            reasons.join("<br>")
        )?;
    }
    let changed: Vec<_> = report
        .ranked()
        .into_iter()
        .filter(|q| q.sql_diff.is_some())
        .collect();
    if !changed.is_empty() {
        writeln!(out)?;
        writeln!(out, "### Changed queries")?;
        for q in changed {
            let diff = q.sql_diff.as_deref().unwrap_or_default();
            let f = fence(diff);
            writeln!(out)?;
            writeln!(out, "`{}`", cell(&q.id))?;
            writeln!(out)?;
            writeln!(out, "{f}diff\n{}\n{f}", diff.trim_end())?;
        }
    }
    if !report.left_behind.is_empty() {
        writeln!(out)?;
        writeln!(out, "### Left on the server")?;
        writeln!(out)?;
        for left in &report.left_behind {
            writeln!(out, "- ❌ {}", cell(left))?;
        }
    }
    if !report.settings_changed.is_empty() || !report.warnings.is_empty() {
        writeln!(out)?;
        for s in &report.settings_changed {
            writeln!(
                out,
                "- setting `{}` differs: `{}` in the baseline, `{}` now",
                s.name,
                cell(s.baseline.as_deref().unwrap_or("unset")),
                cell(s.now.as_deref().unwrap_or("unset"))
            )?;
        }
        for w in &report.warnings {
            writeln!(out, "- ⚠️ {}", cell(w))?;
        }
    }
    Ok(())
}
