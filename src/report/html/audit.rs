//! `pgplan audit --format html`: the nodes read, then findings grouped by severity, each with its
//! object, message, evidence and the SQL that fixes it; skipped checks and notes last.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::{element, escape, page, severity_class};
use crate::audit::{AuditReport, Finding};
use crate::plan::Severity;
use crate::report::audit::evidence_value;

/// The body of the audit report, for a page of its own or the demo's.
pub fn audit_body(report: &AuditReport) -> String {
    let mut html = String::new();
    html.push_str("<h1>pgplan audit</h1>\n");
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    let (critical, warning, info) = (
        count(Severity::Critical),
        count(Severity::Warning),
        count(Severity::Info),
    );
    let class = if critical > 0 {
        "bad"
    } else if warning > 0 {
        "neutral"
    } else {
        "good"
    };
    let _ = writeln!(
        html,
        "<div class=\"verdict {class}\" id=\"verdict\"><b>{critical} critical, {warning} warning, {info} info</b>{}</div>",
        if report.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " · {} check(s) skipped, see below: their silence is not a clean bill",
                report.skipped.len()
            )
        }
    );
    html.push_str(
        "<h2>Nodes</h2>\n<table class=\"nodes\"><thead><tr><th>node</th><th>role</th><th>version</th><th>database</th><th>counting for</th><th>status</th></tr></thead><tbody>\n",
    );
    for n in &report.nodes {
        let status = match (&n.error, &n.excluded) {
            (Some(e), _) => format!("not read: {e}"),
            (None, Some(why)) => format!("left out: {why}"),
            (None, None) => "read".to_owned(),
        };
        html.push_str("<tr>");
        element(&mut html, "td", "", &n.name);
        element(
            &mut html,
            "td",
            "",
            n.role.map(|r| r.as_str()).unwrap_or("unknown"),
        );
        element(
            &mut html,
            "td",
            "",
            n.server_version.as_deref().unwrap_or(""),
        );
        element(&mut html, "td", "", n.database.as_deref().unwrap_or(""));
        element(
            &mut html,
            "td",
            "",
            &n.window
                .map(|w| format!("{} s", crate::format::count(w.seconds().round())))
                .unwrap_or_default(),
        );
        element(
            &mut html,
            "td",
            if n.error.is_some() { "critical" } else { "" },
            &status,
        );
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");

    for (severity, title) in [
        (Severity::Critical, "Critical"),
        (Severity::Warning, "Warning"),
        (Severity::Info, "Info"),
    ] {
        let findings: Vec<(usize, &Finding)> = report
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| f.severity == severity)
            .collect();
        if findings.is_empty() {
            continue;
        }
        let _ = writeln!(
            html,
            "<h2 class=\"{}\" id=\"{}\">{title} ({})</h2>",
            severity_class(severity),
            severity_class(severity),
            findings.len()
        );
        for (i, f) in findings {
            finding(&mut html, i, f);
        }
    }
    if report.findings.is_empty() {
        html.push_str("<p class=\"muted\">No findings.</p>\n");
    }
    if !report.skipped.is_empty() {
        html.push_str("<h2>Skipped checks</h2>\n<ul class=\"skipped\">\n");
        for s in &report.skipped {
            let _ = writeln!(
                html,
                "<li><code>{}</code> ({}): {}</li>",
                escape(s.check.as_str()),
                escape(&s.database),
                escape(&s.reason)
            );
        }
        html.push_str("</ul>\n");
    }
    if !report.notes.is_empty() {
        html.push_str("<h2>Notes</h2>\n<ul>\n");
        for note in &report.notes {
            element(&mut html, "li", "", note);
        }
        html.push_str("</ul>\n");
    }
    html
}

fn finding(html: &mut String, i: usize, f: &Finding) {
    let class = severity_class(f.severity);
    let object: Vec<String> = [
        Some(f.database.clone()).filter(|d| !d.is_empty()),
        match (&f.schema, &f.table) {
            (Some(s), Some(t)) => Some(format!("{s}.{t}")),
            (None, Some(t)) => Some(t.clone()),
            _ => None,
        },
        f.index.as_ref().map(|i| format!("index {i}")),
        f.subject.clone(),
        f.node.as_ref().map(|n| format!("on {n}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let _ = write!(
        html,
        "<div class=\"finding\" id=\"finding-{}\"><h4><span class=\"badge {class}\">{}</span> <code>{}</code> {}</h4>",
        i + 1,
        f.severity.as_str(),
        escape(f.check.as_str()),
        escape(&object.join(" · "))
    );
    element(html, "p", "", &f.message);
    if !f.evidence.is_empty() {
        html.push_str("<dl class=\"evidence\">");
        for (name, value) in &f.evidence {
            let _ = write!(
                html,
                "<dt>{}</dt><dd>{}</dd>",
                escape(name),
                escape(&evidence_value(name, *value))
            );
        }
        html.push_str("</dl>");
    }
    if !f.usage.is_empty() {
        html.push_str("<details><summary>usage on each node</summary><ul>");
        for u in &f.usage {
            let scans = u
                .index_scans
                .map_or("index scans not read".to_owned(), |n| {
                    format!("{n} index scans")
                });
            let last = u
                .last_idx_scan
                .as_ref()
                .map(|t| format!(", last {t}"))
                .unwrap_or_default();
            element(html, "li", "", &format!("{}: {scans}{last}", u.node));
        }
        html.push_str("</ul></details>");
    }
    match &f.fix {
        Some(fix) => {
            html.push_str("<div><b>fix</b></div>");
            element(html, "pre", "fix", fix);
        }
        None => html.push_str("<p class=\"muted\">nothing to run</p>"),
    }
    html.push_str("</div>\n");
}

/// `pgplan audit --format html`.
pub fn write_audit(out: &mut dyn Write, report: &AuditReport) -> io::Result<()> {
    page(out, "pgplan audit", &audit_body(report))
}
