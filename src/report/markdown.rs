//! Markdown output, for a pull-request comment or a ticket: tables GitHub renders, the plan tree
//! in a code block, and the tree diff in a collapsible `diff` block.

use std::io::{self, Write};

use crate::plan::{Analysis, Comparison, Finding};

use super::text::{
    both_measured, estimate_rows, headline, subtree_line, totals_line, unified_tree_diff,
};
use super::tree::{figures_line, tree_rows};
use crate::format::{change, count, ms, printable};

/// Escapes text for a Markdown table cell; control characters (a newline in a condition
/// included) are shown escaped, as in the text output.
pub fn cell(text: &str) -> String {
    inline(&text.replace('\\', "\\\\").replace('|', "\\|"))
}

/// Text for a line of Markdown outside a code span: control characters escaped as in the text
/// output, and HTML's three markup characters as entities, because GitHub and most renderers
/// pass raw HTML in Markdown through (a table named `<script>` must stay text).
pub fn inline(text: &str) -> String {
    let text = printable(text);
    if !text.contains(['<', '>', '&']) {
        return text;
    }
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text as an inline code span: escaped like [`inline`] for control characters, between enough
/// backticks that a backtick in the text cannot end the span early (CommonMark's rule: a run of
/// backticks longer than any inside, and a space either side when the text touches one). Inside
/// a code span HTML is shown as written, not rendered.
pub fn code(text: &str) -> String {
    let text = printable(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// The plan tree in a fenced code block, one line per node with its main figures.
pub fn write_tree_block(out: &mut dyn Write, analysis: &Analysis) -> io::Result<()> {
    writeln!(out, "```text")?;
    for row in tree_rows(analysis, true) {
        let mut line = figures_line(analysis, &row);
        if !row.findings.is_empty() {
            let marks: Vec<String> = row.findings.iter().map(|n| format!("[{n}]")).collect();
            line.push(' ');
            line.push_str(&marks.join(""));
        }
        writeln!(out, "{line}")?;
        for detail in &row.details {
            writeln!(out, "{}{detail}", row.detail_prefix)?;
        }
    }
    writeln!(out, "```")
}

pub fn write_findings(out: &mut dyn Write, findings: &[Finding]) -> io::Result<()> {
    if findings.is_empty() {
        writeln!(out, "No findings.")?;
        return Ok(());
    }
    writeln!(out, "| # | severity | finding | fix |")?;
    writeln!(out, "|---|---|---|---|")?;
    for (i, f) in findings.iter().enumerate() {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            i + 1,
            f.severity.as_str(),
            cell(&f.message),
            cell(&f.hint)
        )?;
    }
    Ok(())
}

/// `pgplan explain --format markdown`.
pub fn write_explain(out: &mut dyn Write, title: &str, analysis: &Analysis) -> io::Result<()> {
    writeln!(out, "### Plan `{}`", title.replace('`', "'"))?;
    writeln!(out)?;
    if let Some(line) = subtree_line(analysis) {
        writeln!(out, "{line}")?;
        writeln!(out)?;
    }
    writeln!(out, "{}", totals_line(analysis))?;
    writeln!(out)?;
    write_tree_block(out, analysis)?;
    writeln!(out)?;
    write_findings(out, &analysis.findings)
}

/// The totals of a comparison as a Markdown table.
pub fn write_totals(out: &mut dyn Write, comparison: &Comparison) -> io::Result<()> {
    write_totals_rows(out, comparison, false)
}

/// The totals table, with the planning time when `planning` (as the text diff shows it).
fn write_totals_rows(
    out: &mut dyn Write,
    comparison: &Comparison,
    planning: bool,
) -> io::Result<()> {
    let t = &comparison.diff.totals;
    writeln!(out, "| | before | after | change |")?;
    writeln!(out, "|---|---:|---:|---|")?;
    let planning_ms = if planning {
        t.planning_ms
    } else {
        crate::plan::Pair::default()
    };
    let rows: [(&str, crate::plan::Pair, bool, (&str, &str)); 6] = [
        ("execution time", t.execution_ms, true, ("faster", "slower")),
        ("planning time", planning_ms, true, ("faster", "slower")),
        ("pages touched", t.pages_touched, false, ("fewer", "more")),
        ("shared hit", t.shared_hit_blocks, false, ("fewer", "more")),
        (
            "shared read",
            t.shared_read_blocks,
            false,
            ("fewer", "more"),
        ),
        ("temp blocks", t.temp_blocks, false, ("fewer", "more")),
    ];
    for (name, pair, is_time, (fewer, more)) in rows {
        if pair.before.is_none() && pair.after.is_none() {
            continue;
        }
        let show = |v: Option<f64>| match v {
            Some(v) if is_time => ms(v),
            Some(v) => count(v),
            None => "—".into(),
        };
        writeln!(
            out,
            "| {name} | {} | {} | {} |",
            show(pair.before),
            show(pair.after),
            change(pair.before, pair.after, fewer, more)
        )?;
    }
    if !both_measured(comparison) {
        for (name, pair, figure) in estimate_rows(comparison) {
            if pair.before.is_none() && pair.after.is_none() {
                continue;
            }
            let (fewer, more) = figure.words();
            writeln!(
                out,
                "| {name} | {} | {} | {} |",
                figure.show(pair.before),
                figure.show(pair.after),
                change(pair.before, pair.after, fewer, more)
            )?;
        }
    }
    Ok(())
}

pub fn write_changes(out: &mut dyn Write, comparison: &Comparison) -> io::Result<()> {
    if comparison.diff.changes.is_empty() {
        return writeln!(out, "The plans do the same work the same way.");
    }
    for c in &comparison.diff.changes {
        writeln!(
            out,
            "- **{}** {}",
            c.kind.as_str(),
            printable(&c.message).replace('*', "\\*")
        )?;
    }
    Ok(())
}

/// `pgplan diff --format markdown`.
pub fn write_diff(
    out: &mut dyn Write,
    titles: (&str, &str),
    comparison: &Comparison,
) -> io::Result<()> {
    writeln!(
        out,
        "### Plan diff: `{}` → `{}`",
        titles.0.replace('`', "'"),
        titles.1.replace('`', "'")
    )?;
    writeln!(out)?;
    writeln!(out, "**{}**", headline(comparison))?;
    writeln!(out)?;
    write_totals_rows(out, comparison, true)?;
    writeln!(out)?;
    write_changes(out, comparison)?;
    writeln!(out)?;
    writeln!(out, "#### After plan")?;
    writeln!(out)?;
    write_tree_block(out, &comparison.after)?;
    writeln!(out)?;
    write_findings(out, &comparison.after.findings)?;
    writeln!(out)?;
    writeln!(
        out,
        "<details><summary>Plan trees, before → after</summary>"
    )?;
    writeln!(out)?;
    writeln!(out, "```diff")?;
    write!(out, "{}", unified_tree_diff(comparison))?;
    writeln!(out, "```")?;
    writeln!(out)?;
    writeln!(out, "</details>")
}

#[cfg(test)]
mod escaping_tests {
    use super::{cell, code, inline};

    #[test]
    fn names_become_text_not_markup() {
        assert_eq!(
            inline("a<script>&b\u{1b}[31m"),
            "a&lt;script&gt;&amp;b\\u{1b}[31m"
        );
        assert_eq!(cell("x|<b>\n"), "x\\|&lt;b&gt;\\n");
        assert_eq!(inline("plain"), "plain");
    }

    #[test]
    fn a_backtick_cannot_end_a_code_span_early() {
        assert_eq!(code("t"), "`t`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("a``b\n"), "``` a``b\\n ```");
    }
}
