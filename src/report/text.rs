//! Text output for a terminal: the plan as a tree with its figures, findings with their evidence
//! and hints, and the diff of two plans as totals, classified changes and a unified tree diff.

use std::io::{self, Write};

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};

use crate::plan::{Analysis, Comparison, Finding};

use super::format::{change, count, ms};
use super::tree::{TreeRow, figures, labelled, rows};
use super::{Paint, TextOptions};

/// A table with pgplan's look: no borders, a bold header, wrapped to the terminal if there is one.
pub fn new_table(headers: &[&str], options: &TextOptions) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    match options.width {
        Some(width) => {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(width);
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    let paint = Paint::new(options.color);
    table.set_header(headers.iter().map(|h| Cell::new(paint.bold(h))));
    table
}

/// Right-aligns columns `from..` (the numeric ones).
pub fn align_numbers(table: &mut Table, from: usize) {
    for index in from..table.column_count() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// Writes the table, trimming the padding comfy-table leaves at the end of each line.
pub fn write_table(out: &mut dyn Write, table: &Table) -> io::Result<()> {
    for line in table.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn plan_kind(analysis: &Analysis) -> &'static str {
    match (analysis.plan.is_analyzed(), analysis.plan.has_buffers()) {
        (true, true) => "measured (ANALYZE, BUFFERS)",
        (true, false) => "measured (ANALYZE, no BUFFERS: pages unknown)",
        (false, _) => "estimates only (no ANALYZE)",
    }
}

/// The one-line summary of a plan's totals.
pub fn totals_line(analysis: &Analysis) -> String {
    let t = &analysis.metrics.totals;
    let mut parts = Vec::new();
    if let Some(v) = t.execution_ms {
        parts.push(format!("execution {}", ms(v)));
    }
    if let Some(v) = t.planning_ms {
        parts.push(format!("planning {}", ms(v)));
    }
    if let Some(v) = t.pages_touched {
        parts.push(format!(
            "pages touched {} ({} hit, {} read)",
            count(v),
            count(t.shared_hit_blocks.unwrap_or(0.0)),
            count(t.shared_read_blocks.unwrap_or(0.0))
        ));
    }
    if let Some(v) = t.temp_blocks.filter(|v| *v > 0.0) {
        parts.push(format!("temp blocks {}", count(v)));
    }
    if let Some(v) = t.io_ms.filter(|v| *v > 0.0) {
        parts.push(format!("I/O {}", ms(v)));
    }
    if parts.is_empty() {
        "no measured figures".into()
    } else {
        parts.join(" · ")
    }
}

fn node_cell(row: &TreeRow, paint: &Paint) -> String {
    let mut label = row.label.clone();
    if let Some(sub) = &row.subplan {
        label = format!("{} {label}", paint.accent(&format!("[{sub}]")));
    }
    if !row.findings.is_empty() {
        let marks: Vec<String> = row.findings.iter().map(|n| format!("[{n}]")).collect();
        label.push(' ');
        label.push_str(&paint.warn(&marks.join("")));
    }
    let mut cell = format!("{}{}", paint.dim(&row.prefix), label);
    for detail in &row.details {
        cell.push('\n');
        cell.push_str(&paint.dim(&row.detail_prefix));
        cell.push_str(&paint.dim(detail));
    }
    cell
}

/// Writes the plan tree as a table of figures.
pub fn write_tree(
    out: &mut dyn Write,
    analysis: &Analysis,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    let analyzed = analysis.plan.is_analyzed();
    let buffers = analysis.plan.has_buffers();
    let mut headers = vec!["node"];
    if analyzed {
        headers.extend(["rows", "est rows", "loops"]);
        if buffers {
            headers.extend(["pages", "read"]);
        }
        headers.push("self time");
    } else {
        headers.extend(["est rows", "cost"]);
    }
    let mut table = new_table(&headers, options);
    for row in rows(analysis) {
        let node = &analysis.plan.nodes[row.id];
        let m = &analysis.metrics.nodes[row.id];
        let mut cells = vec![Cell::new(node_cell(&row, &paint))];
        let est = node.plan_rows.map(count).unwrap_or_default();
        if analyzed {
            if m.never_executed {
                cells.push(Cell::new(paint.dim("never executed")));
                cells.push(Cell::new(est));
                cells.push(Cell::new("0"));
                if buffers {
                    cells.push(Cell::new(""));
                    cells.push(Cell::new(""));
                }
                cells.push(Cell::new(""));
            } else {
                let rows_text = node.actual.map(|a| count(a.rows)).unwrap_or_default();
                let rows_text = if crate::plan::findings::significant_misestimate(m) {
                    paint.warn(&rows_text)
                } else {
                    rows_text
                };
                cells.push(Cell::new(rows_text));
                cells.push(Cell::new(est));
                cells.push(Cell::new(m.loops.map(count).unwrap_or_default()));
                if buffers {
                    let b = node.buffers;
                    cells.push(Cell::new(
                        b.map(|b| count(b.pages_touched())).unwrap_or_default(),
                    ));
                    cells.push(Cell::new(
                        b.map(|b| count(b.shared_read_blocks)).unwrap_or_default(),
                    ));
                }
                cells.push(Cell::new(m.exclusive_ms.map(ms).unwrap_or_default()));
            }
        } else {
            cells.push(Cell::new(est));
            cells.push(Cell::new(node.total_cost.map(cost).unwrap_or_default()));
        }
        table.add_row(cells);
    }
    align_numbers(&mut table, 1);
    write_table(out, &table)
}

/// Writes numbered findings with their hints.
pub fn write_findings(
    out: &mut dyn Write,
    findings: &[Finding],
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    if findings.is_empty() {
        writeln!(out, "{}", paint.good("No findings."))?;
        return Ok(());
    }
    writeln!(out, "{}", paint.bold("Findings"))?;
    for (i, f) in findings.iter().enumerate() {
        writeln!(
            out,
            "[{}] {} {}",
            i + 1,
            paint.severity(f.severity, f.severity.as_str()),
            f.message
        )?;
        writeln!(out, "    {} {}", paint.dim("fix:"), f.hint)?;
    }
    Ok(())
}

/// `pgplan explain`: the plan's source, totals, tree and findings.
pub fn write_explain(
    out: &mut dyn Write,
    title: &str,
    analysis: &Analysis,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    writeln!(out, "{} {}", paint.bold("Plan"), title)?;
    writeln!(out, "  {}", plan_kind(analysis))?;
    writeln!(out, "  {}", totals_line(analysis))?;
    if let Some(q) = &analysis.plan.query_text {
        writeln!(out, "  query: {}", one_line(q))?;
    }
    writeln!(out)?;
    write_tree(out, analysis, options)?;
    writeln!(out)?;
    write_findings(out, &analysis.findings, options)
}

/// A planner cost: two decimals as EXPLAIN prints them, scientific beyond 1e15.
fn cost(value: f64) -> String {
    if value.abs() >= 1e15 {
        format!("{value:.2e}")
    } else {
        format!("{value:.2}")
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The plan as plain lines for the textual diff: structure and the figures that matter, without
/// timings (which differ on every run and would make every line a change).
pub fn diff_lines(analysis: &Analysis) -> Vec<String> {
    rows(analysis)
        .into_iter()
        .map(|row| {
            let mut line = labelled(&row);
            let figures = figures(analysis, row.id);
            if !figures.is_empty() {
                line.push_str("  ");
                line.push_str(&figures.join(", "));
            }
            line
        })
        .collect()
}

/// A unified diff of the two plans' trees (structure and figures, no timings).
pub fn unified_tree_diff(comparison: &Comparison) -> String {
    let before = diff_lines(&comparison.before).join("\n") + "\n";
    let after = diff_lines(&comparison.after).join("\n") + "\n";
    similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(1000)
        .header("before", "after")
        .to_string()
}

/// The headline of a comparison: what happened to pages touched, the figure that decides.
pub fn headline(comparison: &Comparison) -> String {
    let t = &comparison.diff.totals;
    match (t.pages_touched.before, t.pages_touched.after) {
        (Some(b), Some(a)) => format!(
            "pages touched {} → {} ({})",
            count(b),
            count(a),
            change(Some(b), Some(a), "fewer", "more")
        ),
        _ => match (t.execution_ms.before, t.execution_ms.after) {
            (Some(b), Some(a)) => format!(
                "execution {} → {} ({}); no buffer counts, so pages touched are unknown",
                ms(b),
                ms(a),
                change(Some(b), Some(a), "faster", "slower")
            ),
            _ => "estimates only: neither plan was measured (EXPLAIN without ANALYZE)".into(),
        },
    }
}

/// How a figure in a before/after table is shown and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Milliseconds; less is faster.
    Time,
    /// A count of pages or rows; less is fewer.
    Count,
    /// A planner cost; less is cheaper.
    Cost,
}

impl Figure {
    fn show(self, value: Option<f64>) -> String {
        match (self, value) {
            (_, None) => "—".into(),
            (Figure::Time, Some(v)) => ms(v),
            (Figure::Count, Some(v)) => count(v),
            (Figure::Cost, Some(v)) => format!("{v:.2}"),
        }
    }

    fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::Time => ("faster", "slower"),
            Figure::Count => ("fewer", "more"),
            Figure::Cost => ("cheaper", "dearer"),
        }
    }
}

/// A before/after/change table; rows with neither figure are left out. The change is green
/// when the figure fell and red when it rose.
pub fn write_pairs_table(
    out: &mut dyn Write,
    rows: &[(&str, crate::plan::Pair, Figure)],
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    let mut table = new_table(&["", "before", "after", "change"], options);
    for (name, pair, figure) in rows {
        if pair.before.is_none() && pair.after.is_none() {
            continue;
        }
        let (fewer, more) = figure.words();
        let text = change(pair.before, pair.after, fewer, more);
        let text = match (pair.before, pair.after) {
            (Some(b), Some(a)) if a < b => paint.good(&text),
            (Some(b), Some(a)) if a > b => paint.bad(&text),
            _ => text,
        };
        table.add_row(vec![
            Cell::new(*name),
            Cell::new(figure.show(pair.before)),
            Cell::new(figure.show(pair.after)),
            Cell::new(text),
        ]);
    }
    align_numbers(&mut table, 1);
    write_table(out, &table)
}

/// The totals table of a comparison.
pub fn write_totals_table(
    out: &mut dyn Write,
    comparison: &Comparison,
    options: &TextOptions,
) -> io::Result<()> {
    let t = &comparison.diff.totals;
    write_pairs_table(
        out,
        &[
            ("execution time", t.execution_ms, Figure::Time),
            ("planning time", t.planning_ms, Figure::Time),
            ("pages touched", t.pages_touched, Figure::Count),
            ("  shared hit", t.shared_hit_blocks, Figure::Count),
            ("  shared read", t.shared_read_blocks, Figure::Count),
            ("temp blocks", t.temp_blocks, Figure::Count),
        ],
        options,
    )
}

/// The classified changes, one per line.
pub fn write_changes(
    out: &mut dyn Write,
    comparison: &Comparison,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    if comparison.diff.changes.is_empty() {
        writeln!(
            out,
            "{}",
            paint.dim("The plans do the same work the same way.")
        )?;
        return Ok(());
    }
    writeln!(out, "{}", paint.bold("Changes"))?;
    let width = comparison
        .diff
        .changes
        .iter()
        .map(|c| c.kind.as_str().len())
        .max()
        .unwrap_or(0);
    for c in &comparison.diff.changes {
        writeln!(
            out,
            "  {} {}",
            paint.accent(&format!("{:width$}", c.kind.as_str())),
            c.message
        )?;
    }
    Ok(())
}

/// `pgplan diff`: headline, totals, changes, the after plan's findings and the tree diff.
pub fn write_diff(
    out: &mut dyn Write,
    titles: (&str, &str),
    comparison: &Comparison,
    options: &TextOptions,
) -> io::Result<()> {
    let paint = Paint::new(options.color);
    writeln!(out, "{} {}", paint.bold("Before"), titles.0)?;
    writeln!(out, "  {}", plan_kind(&comparison.before))?;
    writeln!(out, "{} {}", paint.bold("After"), titles.1)?;
    writeln!(out, "  {}", plan_kind(&comparison.after))?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold(&headline(comparison)))?;
    writeln!(out)?;
    write_totals_table(out, comparison, options)?;
    writeln!(out)?;
    write_changes(out, comparison, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("After plan"))?;
    write_tree(out, &comparison.after, options)?;
    writeln!(out)?;
    write_findings(out, &comparison.after.findings, options)?;
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Plan trees, before → after"))?;
    for line in unified_tree_diff(comparison).lines() {
        let line = if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") {
            paint.dim(line)
        } else if line.starts_with('-') {
            paint.bad(line)
        } else if line.starts_with('+') {
            paint.good(line)
        } else {
            line.to_owned()
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}
