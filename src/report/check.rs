//! `pgplan check` as text (for a terminal or a CI log) and JSON (the documented, versioned
//! contract). Estimated checks are labelled ESTIMATED in both.

use std::io::{self, Write};

use serde::Serialize;

use crate::check::{
    CheckMode, CheckReport, QueryCheck, QueryStatus, RegressionClass, SettingChange,
};

use super::format::count;
use super::{Paint, TextOptions};

/// The version of `pgplan check --format json`.
pub const CHECK_SCHEMA_VERSION: u32 = 1;

/// `pgplan check --format json`.
#[derive(Debug, Serialize)]
pub struct CheckDoc<'a> {
    pub schema_version: u32,
    /// "measured" (pages touched) or "estimated" (planner costs, nothing run).
    pub mode: CheckMode,
    pub estimated: bool,
    /// "regressed" or "passed": the exit code's reason.
    pub result: &'static str,
    pub server_version: String,
    pub baseline_file: &'a str,
    pub baseline_server_major: u32,
    pub max_regression_percent: f64,
    pub summary: SummaryDoc,
    /// Sorted by id.
    pub queries: &'a [QueryCheck],
    pub settings_changed: &'a [SettingChange],
    pub warnings: &'a [String],
}

#[derive(Debug, Serialize)]
pub struct SummaryDoc {
    pub queries: usize,
    pub regressed: usize,
    pub improved: usize,
    pub unchanged: usize,
    pub new: usize,
    pub removed: usize,
    pub text_changed: usize,
}

impl<'a> CheckDoc<'a> {
    pub fn new(report: &'a CheckReport) -> Self {
        CheckDoc {
            schema_version: CHECK_SCHEMA_VERSION,
            mode: report.mode,
            estimated: report.mode == CheckMode::Estimated,
            result: if report.regressed() {
                "regressed"
            } else {
                "passed"
            },
            server_version: report.server_version.clone(),
            baseline_file: &report.baseline_file,
            baseline_server_major: report.baseline_server_major,
            max_regression_percent: report.max_regression_percent,
            summary: summary(report),
            queries: &report.queries,
            settings_changed: &report.settings_changed,
            warnings: &report.warnings,
        }
    }
}

pub fn summary(report: &CheckReport) -> SummaryDoc {
    SummaryDoc {
        queries: report.queries.len(),
        regressed: report.count(QueryStatus::Regressed),
        improved: report.count(QueryStatus::Improved),
        unchanged: report.count(QueryStatus::Unchanged),
        new: report.count(QueryStatus::New),
        removed: report.count(QueryStatus::Removed),
        text_changed: report.queries.iter().filter(|q| q.text_changed).count(),
    }
}

/// The figure a query is judged on, before → after: pages, or (estimated) the planner's cost.
pub fn figure_text(report: &CheckReport, q: &QueryCheck) -> String {
    let (pair, unit) = match report.mode {
        CheckMode::Measured => (q.pages, "pages"),
        CheckMode::Estimated => (q.cost, "cost (ESTIMATED)"),
    };
    let show = |v: Option<f64>| v.map(count).unwrap_or_else(|| "–".into());
    let ratio = pair
        .ratio()
        .map(|r| format!(" ({:+.0}%)", (r - 1.0) * 100.0))
        .unwrap_or_default();
    format!("{} → {} {unit}{ratio}", show(pair.baseline), show(pair.now))
}

/// One line on the whole check.
pub fn headline(report: &CheckReport) -> String {
    let s = summary(report);
    format!(
        "{} regressed, {} improved, {} unchanged, {} new, {} removed",
        s.regressed, s.improved, s.unchanged, s.new, s.removed
    )
}

pub fn class_title(class: RegressionClass) -> &'static str {
    match class {
        RegressionClass::QueryFailed => "query fails",
        RegressionClass::PagesRegression => "more pages",
        RegressionClass::CostRegression => "higher estimated cost",
        RegressionClass::NewSeqScan => "new sequential scan",
        RegressionClass::NewSpill => "new spill to disk",
        RegressionClass::NewEstimateError => "new estimate error",
    }
}

pub fn write_text(
    out: &mut dyn Write,
    report: &CheckReport,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    writeln!(
        out,
        "{} · PostgreSQL {} · baseline {}{}",
        paint.bold("pgplan check"),
        report.server_version,
        report.baseline_file,
        if report.mode == CheckMode::Estimated {
            " · ESTIMATED (planner costs and plan shapes, nothing run)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "a query regresses beyond +{}% and the measured spread",
        report.max_regression_percent
    )?;
    writeln!(out)?;
    for q in report.ranked() {
        let status = match q.status {
            QueryStatus::Regressed => paint.bad("REGRESSED"),
            QueryStatus::Improved => paint.good("improved"),
            QueryStatus::Unchanged => "unchanged".to_owned(),
            QueryStatus::New => paint.accent("new"),
            QueryStatus::Removed => paint.dim("removed"),
        };
        let changed = if q.text_changed {
            " · text changed"
        } else {
            ""
        };
        writeln!(
            out,
            "{status}  {}  {}{changed}",
            q.id,
            figure_text(report, q)
        )?;
        for r in &q.regressions {
            writeln!(
                out,
                "    {} [{}] {}",
                paint.bad("✗"),
                r.class.as_str(),
                r.message
            )?;
        }
        for i in &q.improvements {
            writeln!(out, "    {} {i}", paint.good("✓"))?;
        }
        for n in &q.notes {
            writeln!(out, "    note: {n}")?;
        }
        if let Some(diff) = &q.sql_diff {
            for line in diff.lines() {
                writeln!(out, "    {line}")?;
            }
        }
    }
    for s in &report.settings_changed {
        writeln!(
            out,
            "setting {} differs: {} in the baseline, {} now",
            s.name,
            s.baseline.as_deref().unwrap_or("unset"),
            s.now.as_deref().unwrap_or("unset")
        )?;
    }
    for w in &report.warnings {
        writeln!(out, "{} {w}", paint.warn("warning:"))?;
    }
    writeln!(out)?;
    let verdict = if report.regressed() {
        paint.bad("FAILED")
    } else {
        paint.good("passed")
    };
    writeln!(out, "{verdict}: {}", headline(report))
}
