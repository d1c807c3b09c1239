//! `pgplan check` as text (for a terminal or a CI log) and JSON (the documented, versioned
//! contract). Estimated checks are labelled ESTIMATED in both.

use std::io::{self, Write};

use serde::Serialize;

use crate::check::{
    CheckMode, CheckReport, QueryCheck, QueryStatus, RegressionClass, SettingChange,
};

use super::{Paint, TextOptions};
use crate::format::count;

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
    /// What the runs left on the server that no rollback undoes, each with the command that
    /// removes it; not empty exits 4, whatever `result` says.
    pub left_behind: &'a [String],
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
            left_behind: &report.left_behind,
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
    for left in &report.left_behind {
        writeln!(
            out,
            "{} {}",
            paint.bad("error:"),
            crate::format::printable(left)
        )?;
    }
    writeln!(out)?;
    let verdict = if report.regressed() {
        paint.bad("FAILED")
    } else if !report.left_behind.is_empty() {
        paint.bad("LEFT BEHIND")
    } else {
        paint.good("passed")
    };
    let left = match report.left_behind.len() {
        0 => String::new(),
        n => format!(
            "; the runs left {n} thing{} on the server that no rollback undoes (above, with how \
             to remove {})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    writeln!(out, "{verdict}: {}{left}", headline(report))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::check::baseline::{Baseline, BaselineQuery, BaselineSample, sql_sha256};
    use crate::check::rules::testing::{node, sample};
    use crate::check::{CheckOptions, Location, check};

    fn query(id: &str, sql: &str, samples: Vec<BaselineSample>) -> BaselineQuery {
        BaselineQuery {
            id: id.into(),
            sql_sha256: sql_sha256(sql),
            sql: sql.into(),
            calls_per_day: 1.0,
            samples,
        }
    }

    fn indexed(pages: f64) -> BaselineSample {
        let mut scan = node(None, "Index Scan", Some("public.t"));
        scan.index = Some("t_a_idx".into());
        sample(Some((pages, pages, pages)), vec![scan])
    }

    fn sequential(pages: f64) -> BaselineSample {
        sample(
            Some((pages, pages, pages)),
            vec![node(None, "Seq Scan", Some("public.t"))],
        )
    }

    /// A check with one query of each status: regressed (a dropped index), improved, changed
    /// text, new and removed.
    pub(crate) fn report() -> CheckReport {
        let b = |qs| Baseline::new(CheckMode::Measured, 17, BTreeMap::new(), qs);
        let baseline = b(vec![
            query("lookup.sql", "SELECT 1", vec![indexed(4.0)]),
            query("totals.sql", "SELECT 2", vec![sequential(500.0)]),
            query("edited.sql", "SELECT a\nFROM t", vec![indexed(4.0)]),
            query("gone.sql", "SELECT 3", vec![indexed(4.0)]),
        ]);
        let now = b(vec![
            query("lookup.sql", "SELECT 1", vec![sequential(500.0)]),
            query("totals.sql", "SELECT 2", vec![indexed(4.0)]),
            query("edited.sql", "SELECT a, b\nFROM t", vec![indexed(4.0)]),
            query("new.sql", "SELECT 4 | 5", vec![indexed(4.0)]),
        ]);
        let locations = BTreeMap::from([(
            "lookup.sql".to_owned(),
            Location {
                file: "./queries/lookup.sql".into(),
                line: 3,
            },
        )]);
        let (queries, settings_changed, warnings) = check(
            &baseline,
            &now,
            CheckOptions {
                max_regression_percent: 10.0,
            },
            &locations,
        );
        CheckReport {
            mode: CheckMode::Measured,
            max_regression_percent: 10.0,
            baseline_file: "pgplan-baseline.json".into(),
            server_version: "17.10".into(),
            baseline_server_major: 17,
            queries,
            settings_changed,
            warnings,
            left_behind: Vec::new(),
        }
    }

    /// What the runs left on the server is in every format, apart from the warnings, and a
    /// check with no regression says so in its verdict instead of "passed".
    #[test]
    fn what_the_runs_left_is_in_every_format() {
        let left = "left behind: advisory lock 4242 (ExclusiveLock) is held by pgplan's session \
                    after its rollback; SELECT pg_advisory_unlock_all()";
        let mut report = report();
        report.left_behind = vec![left.into()];
        let mut text = Vec::new();
        write_text(&mut text, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains(&format!("error: {left}")), "{text}");
        assert!(text.contains("left 1 thing on the server"), "{text}");
        let doc = serde_json::to_value(CheckDoc::new(&report)).unwrap();
        assert_eq!(doc["left_behind"], serde_json::json!([left]));
        let sarif = super::super::check_sarif::sarif(&report);
        let notification = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
        assert_eq!(notification["level"], "error");
        assert_eq!(notification["message"]["text"], left);
        let mut junit = Vec::new();
        super::super::check_junit::write_junit(&mut junit, &report).unwrap();
        let junit = String::from_utf8(junit).unwrap();
        assert!(
            junit.contains(r#"<testcase name="the server after the runs""#),
            "{junit}"
        );
        assert!(junit.contains(r#"<failure type="left-behind""#), "{junit}");
        assert!(junit.contains(r#"tests="6" failures="2""#), "{junit}");
        let mut markdown = Vec::new();
        super::super::check_markdown::write_markdown(&mut markdown, &report).unwrap();
        let markdown = String::from_utf8(markdown).unwrap();
        assert!(markdown.contains("### Left on the server"), "{markdown}");

        // Without a regression the verdict is the lasting state's, never "passed".
        report
            .queries
            .retain(|q| q.status != QueryStatus::Regressed);
        let mut text = Vec::new();
        write_text(&mut text, &report, &TextOptions::default()).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("LEFT BEHIND: 0 regressed"), "{text}");
        assert!(!text.contains("passed"), "{text}");
    }

    #[test]
    fn text_names_every_reason_and_the_verdict() {
        let mut out = Vec::new();
        write_text(&mut out, &report(), &TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("REGRESSED  lookup.sql  4 → 500 pages (+12400%)"),
            "{text}"
        );
        assert!(
            text.contains("[new_seq_scan] Seq Scan on public.t, where the baseline had Index Scan using t_a_idx on public.t"),
            "{text}"
        );
        assert!(text.contains("    -SELECT a\n    +SELECT a, b\n"), "{text}");
        assert!(
            text.ends_with("FAILED: 1 regressed, 1 improved, 1 unchanged, 1 new, 1 removed\n"),
            "{text}"
        );
    }

    #[test]
    fn json_is_versioned_and_says_the_result() {
        let report = report();
        let doc = serde_json::to_value(CheckDoc::new(&report)).unwrap();
        assert_eq!(doc["schema_version"], CHECK_SCHEMA_VERSION);
        assert_eq!(doc["result"], "regressed");
        assert_eq!(doc["estimated"], false);
        assert_eq!(doc["summary"]["regressed"], 1);
        let lookup = &doc["queries"][2];
        assert_eq!(lookup["id"], "lookup.sql");
        assert_eq!(lookup["regressions"][0]["class"], "pages_regression");
        assert_eq!(lookup["location"]["line"], 3);
        assert_eq!(lookup["pages"]["baseline"], 4.0);
    }

    #[test]
    fn markdown_puts_the_worst_first_with_its_reason() {
        let mut out = Vec::new();
        crate::report::check_markdown::write_markdown(&mut out, &report()).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.starts_with("## pgplan check: ❌ failed\n"), "{md}");
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert!(
            rows[1].starts_with(
                "| ❌ regressed | `lookup.sql` | 4 → 500 pages (+12400%) | **more pages**"
            ),
            "{md}"
        );
        assert!(rows[2].starts_with("| ✅ improved | `totals.sql`"), "{md}");
        assert!(md.contains("```diff\n--- baseline/edited.sql"), "{md}");
    }

    #[test]
    fn sarif_has_one_result_per_regressed_query_at_its_line() {
        let doc = crate::report::check_sarif::sarif(&report());
        assert_eq!(doc["version"], "2.1.0");
        let results = doc["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!(r["ruleId"], "pages_regression");
        let rules = doc["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(
            rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"],
            r["ruleId"]
        );
        let location = &r["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "queries/lookup.sql");
        assert_eq!(location["region"]["startLine"], 3);
        assert!(
            r["message"]["text"]
                .as_str()
                .unwrap()
                .contains("[new_seq_scan]")
        );
    }

    #[test]
    fn junit_parses_back_with_a_failure_per_regression() {
        let mut out = Vec::new();
        crate::report::check_junit::write_junit(&mut out, &report()).unwrap();
        let xml = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("tests"), Some("5"));
        assert_eq!(suite.attribute("failures"), Some("1"));
        assert_eq!(suite.attribute("skipped"), Some("1"));
        let lookup = suite
            .children()
            .find(|n| n.attribute("name") == Some("lookup.sql"))
            .unwrap();
        let failures: Vec<&str> = lookup
            .children()
            .filter(|n| n.has_tag_name("failure"))
            .filter_map(|n| n.attribute("type"))
            .collect();
        assert_eq!(failures, vec!["pages_regression", "new_seq_scan"]);
        assert_eq!(lookup.attribute("line"), Some("3"));
    }
}
