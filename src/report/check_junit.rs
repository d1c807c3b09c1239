//! `pgplan check --format junit`: JUnit XML for GitLab, Jenkins and other CI. One test case per
//! query, a `<failure>` per regression (its `type` the regression class); a removed query is
//! skipped, the rest pass.

use std::io::{self, Write};

use crate::check::{CheckReport, QueryStatus};

use super::check::figure_text;

/// Text for an XML attribute or element: the five special characters escaped, and the
/// characters XML 1.0 cannot hold at all (controls other than tab, newline and return)
/// replaced with U+FFFD.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

pub fn write_junit(out: &mut dyn Write, report: &CheckReport) -> io::Result<()> {
    let left = !report.left_behind.is_empty();
    let tests = report.queries.len() + usize::from(left);
    let failures: usize = report
        .queries
        .iter()
        .filter(|q| q.status == QueryStatus::Regressed)
        .count()
        + usize::from(left);
    let skipped = report.count(QueryStatus::Removed);
    let name = if report.mode == crate::check::CheckMode::Estimated {
        "pgplan check (estimated)"
    } else {
        "pgplan check"
    };
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="{name}" tests="{tests}" failures="{failures}" errors="0">"#
    )?;
    writeln!(
        out,
        r#"  <testsuite name="{name}" tests="{tests}" failures="{failures}" errors="0" skipped="{skipped}">"#
    )?;
    for q in &report.queries {
        let location = q
            .location
            .as_ref()
            .map(|l| format!(r#" file="{}" line="{}""#, xml_escape(&l.file), l.line))
            .unwrap_or_default();
        writeln!(
            out,
            r#"    <testcase name="{}" classname="pgplan.check"{location}>"#,
            xml_escape(&q.id)
        )?;
        for r in &q.regressions {
            writeln!(
                out,
                r#"      <failure type="{}" message="{}">{}</failure>"#,
                r.class.as_str(),
                xml_escape(&r.message),
                xml_escape(&format!("sample {}: {}", r.sample, r.message))
            )?;
        }
        if q.status == QueryStatus::Removed {
            writeln!(
                out,
                r#"      <skipped message="in the baseline, no longer in the workload"/>"#
            )?;
        }
        let mut said = vec![format!(
            "{} ({})",
            figure_text(report, q),
            q.status.as_str()
        )];
        said.extend(q.improvements.iter().cloned());
        said.extend(q.notes.iter().cloned());
        if let Some(diff) = &q.sql_diff {
            said.push(diff.clone());
        }
        writeln!(
            out,
            "      <system-out>{}</system-out>",
            xml_escape(&said.join("\n"))
        )?;
        writeln!(out, "    </testcase>")?;
    }
    if left {
        write_left_behind(out, &report.left_behind)?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

/// One failing test case for what the runs left on the server, a `<failure>` per item: a CI
/// test report shows it beside the queries.
fn write_left_behind(out: &mut dyn Write, left_behind: &[String]) -> io::Result<()> {
    writeln!(
        out,
        r#"    <testcase name="the server after the runs" classname="pgplan.check">"#
    )?;
    for left in left_behind {
        let escaped = xml_escape(left);
        writeln!(
            out,
            r#"      <failure type="left-behind" message="{escaped}">{escaped}</failure>"#
        )?;
    }
    writeln!(out, "    </testcase>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            xml_escape("a<b & \"c\" 'd'>\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\u{FFFD}"
        );
    }
}
