//! The statements of pg_stat_statements a workload set aside (`advise`, `compare --workload`):
//! each with its queryid, its text and why it could not be run, and the share of the
//! workload's time they account for, as text, Markdown and JSON; and the queries that were
//! read but could not be measured, in Markdown.

use std::io::{self, Write};

use serde::Serialize;

use crate::compare::workload::statements::{Screening, SkippedStatement};
use crate::compare::workload::unmeasured::Unmeasured;
use crate::sql::shorten;

use super::{Paint, markdown};
use crate::format::{ms, printable};

/// The JSON of the statements set aside.
#[derive(Debug, Serialize)]
pub struct SkippedDoc {
    /// Each statement set aside, in the view's order (most time first).
    pub statements: Vec<SkippedStatement>,
    /// Their share of the execution time of the statements read, 0 to 1; null when nothing
    /// came from pg_stat_statements.
    pub exec_time_share: Option<f64>,
    /// pgplan's own statements found in the view and left out of the workload.
    pub own_statements_left_out: usize,
}

impl SkippedDoc {
    pub fn new(screening: &Screening) -> Self {
        SkippedDoc {
            statements: screening.skipped.clone(),
            exec_time_share: screening.skipped_share(),
            own_statements_left_out: screening.own_left_out,
        }
    }
}

/// "2 statements (31% of the workload's time)".
fn headline(screening: &Screening) -> String {
    let n = screening.skipped.len();
    let what = if n == 1 { "statement" } else { "statements" };
    match screening.skipped_share() {
        Some(share) => format!(
            "{n} {what} of pg_stat_statements not run ({} of the workload's time)",
            percent(share)
        ),
        None => format!("{n} {what} of pg_stat_statements not run"),
    }
}

/// A share as a percentage; a share above zero never reads "0%".
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p > 0.0 && p < 1.0 {
        "under 1%".into()
    } else {
        format!("{p:.0}%")
    }
}

fn time_of(s: &SkippedStatement) -> String {
    s.total_exec_ms
        .map(|t| format!(", {} in all", ms(t)))
        .unwrap_or_default()
}

/// The text section, nothing when no statement was set aside.
pub fn write_text(out: &mut dyn Write, paint: &Paint, screening: &Screening) -> io::Result<()> {
    if screening.skipped.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}", paint.bold(&headline(screening)))?;
    for s in &screening.skipped {
        writeln!(out, "  {}{}: {}", s.id, time_of(s), printable(&s.reason))?;
        writeln!(out, "      {}", printable(&shorten(&s.text)))?;
    }
    Ok(())
}

/// The Markdown section, nothing when no statement was set aside.
pub fn write_markdown(out: &mut dyn Write, screening: &Screening) -> io::Result<()> {
    if screening.skipped.is_empty() {
        return Ok(());
    }
    writeln!(out, "**{}**", headline(screening))?;
    writeln!(out)?;
    writeln!(out, "| queryid | time | text | why not run |")?;
    writeln!(out, "|---|---:|---|---|")?;
    for s in &screening.skipped {
        writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            markdown::cell(&s.id),
            s.total_exec_ms.map(ms).unwrap_or_default(),
            markdown::cell(&shorten(&s.text)),
            markdown::cell(&s.reason)
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The queries that could not be measured, each with where it failed and the server's error
/// (a line per line of it), under a heading; nothing when every query was measured.
pub fn write_unmeasured_text(
    out: &mut dyn Write,
    paint: &Paint,
    unmeasured: &[Unmeasured],
) -> io::Result<()> {
    if unmeasured.is_empty() {
        return Ok(());
    }
    writeln!(out, "{}", paint.bad("Queries that could not be measured"))?;
    for u in unmeasured {
        writeln!(out, "  {} ({}):", paint.bold(&u.query), u.during)?;
        for line in u.error.lines() {
            writeln!(out, "    {}", printable(line))?;
        }
    }
    Ok(())
}

/// The queries that could not be measured, under `heading` (a Markdown heading line of the
/// report's own level), each with where it failed and the error on one line.
pub fn write_unmeasured_markdown(
    out: &mut dyn Write,
    heading: &str,
    unmeasured: &[Unmeasured],
) -> io::Result<()> {
    if unmeasured.is_empty() {
        return Ok(());
    }
    writeln!(out, "{heading}")?;
    writeln!(out)?;
    for u in unmeasured {
        writeln!(
            out,
            "- {} ({}): {}",
            markdown::code(&u.query),
            markdown::cell(&u.during),
            markdown::cell(&u.error.replace('\n', "; "))
        )?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screening() -> Screening {
        Screening {
            skipped: vec![SkippedStatement {
                id: "-7149179159898393985".into(),
                text: "SELECT count(*) FROM gone WHERE a = $1".into(),
                reason: "planning it: ERROR: relation \"gone\" does not exist".into(),
                calls: Some(3.0),
                total_exec_ms: Some(30.0),
            }],
            read: vec![("-7149179159898393985".into(), 30.0), ("2".into(), 90.0)],
            own_left_out: 4,
            control_left_out: 0,
        }
    }

    #[test]
    fn every_format_names_the_statement_its_reason_and_share() {
        let s = screening();
        let mut text = Vec::new();
        write_text(&mut text, &Paint::new(false), &s).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("1 statement of pg_stat_statements not run (25% of the workload's time)"),
            "{text}"
        );
        assert!(text.contains("-7149179159898393985"), "{text}");
        assert!(text.contains("does not exist"), "{text}");
        assert!(text.contains("FROM gone WHERE a = $1"), "{text}");
        let mut md = Vec::new();
        write_markdown(&mut md, &s).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(md.contains("| `-7149179159898393985` |"), "{md}");
        assert!(md.contains("does not exist"), "{md}");
        let doc = serde_json::to_value(SkippedDoc::new(&s)).unwrap();
        assert_eq!(doc["exec_time_share"], 0.25);
        assert_eq!(doc["own_statements_left_out"], 4);
        assert_eq!(doc["statements"][0]["reason"], s.skipped[0].reason);
        assert_eq!(doc["statements"][0]["total_exec_ms"], 30.0);
    }

    #[test]
    fn nothing_skipped_writes_nothing() {
        let mut out = Vec::new();
        write_text(&mut out, &Paint::new(false), &Screening::default()).unwrap();
        write_markdown(&mut out, &Screening::default()).unwrap();
        assert!(out.is_empty());
        assert_eq!(percent(0.001), "under 1%");
    }
}
