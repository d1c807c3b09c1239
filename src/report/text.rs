//! Text output for a terminal: the plan as a tree with its figures, findings with their evidence
//! and hints, and the diff of two plans as totals, classified changes and a unified tree diff.

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use unicode_width::UnicodeWidthStr;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};

use crate::plan::{Analysis, Comparison, Finding, NodeId};

use super::tree::{
    TreeRow, figures_line, totals_parts, tree_rows, unified_diff, write_unified_diff,
};
use super::{Paint, TextOptions};
use crate::format::{change, count, ms, printable};

/// The compare and advise reports' tables, wrapped to the terminal if there is one (comfy-table:
/// a few rows whose cells may need wrapping). Plan trees and before/after tables are [`Grid`]s.
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

/// Right-aligns columns `from..` (the numeric ones) of a [`new_table`].
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

/// How a piece of a table's text is coloured: decided with the text, applied when the table is
/// written, after the layout has measured the plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Bold,
    Dim,
    Good,
    Bad,
    Warn,
    Accent,
}

impl Tone {
    fn style(self) -> Option<Style> {
        Some(match self {
            Tone::Plain => return None,
            Tone::Bold => Style::new().bold(),
            Tone::Dim => Style::new().dimmed(),
            Tone::Good => AnsiColor::Green.on_default(),
            Tone::Bad => AnsiColor::Red.on_default(),
            Tone::Warn => AnsiColor::Yellow.on_default(),
            Tone::Accent => AnsiColor::Cyan.on_default(),
        })
    }
}

/// One line of a cell: pieces of plain text, each with its tone.
pub type Line = Vec<(Tone, String)>;

/// A cell of one line in one tone.
pub fn cell(tone: Tone, text: impl Into<String>) -> Vec<Line> {
    vec![vec![(tone, text.into())]]
}

/// A table with pgplan's look (no borders, a bold header, each column padded by a space on
/// either side, the numeric columns right-aligned), laid out here on plain text: widths are
/// measured once per cell, in display columns and without limit, then the colours are written
/// around the pieces. (A general table crate measured colour codes it had to strip again, on
/// every cell, and kept widths in 16 bits.) Lines are built in one buffer and end trimmed.
pub struct Grid {
    /// The header first.
    rows: Vec<Vec<Vec<Line>>>,
    /// Columns from this one on are right-aligned.
    right_from: usize,
}

impl Grid {
    pub fn new(headers: &[&str], right_from: usize) -> Grid {
        Grid {
            rows: vec![headers.iter().map(|h| cell(Tone::Bold, *h)).collect()],
            right_from,
        }
    }

    pub fn push(&mut self, cells: Vec<Vec<Line>>) {
        self.rows.push(cells);
    }

    pub fn write(&self, out: &mut dyn Write, color: bool) -> io::Result<()> {
        let mut layout = Layout::new(self.right_from);
        for row in &self.rows {
            layout.fit(row);
        }
        for row in &self.rows {
            layout.write_row(out, row, color)?;
        }
        Ok(())
    }
}

/// The columns `text` takes on a terminal. Printable ASCII, most of a plan's text, is one column
/// a byte: counted without looking each character up in the Unicode width tables.
fn text_width(text: &str) -> usize {
    if text.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        text.len()
    } else {
        text.width()
    }
}

/// The column widths and alignment of a [`Grid`]: every row is measured first, then each is
/// written to those widths. A plan tree of many rows uses it directly, building each row twice
/// (once to measure, once to write) rather than holding them all: held, the rows of a large plan
/// took more memory than the plan itself.
pub struct Layout {
    widths: Vec<usize>,
    /// Columns from this one on are right-aligned.
    right_from: usize,
    buffer: String,
}

impl Layout {
    pub fn new(right_from: usize) -> Layout {
        Layout {
            widths: Vec::new(),
            right_from,
            buffer: String::new(),
        }
    }

    fn line_width(line: &Line) -> usize {
        line.iter().map(|(_, text)| text_width(text)).sum()
    }

    /// Widens the columns to hold `row`.
    pub fn fit(&mut self, row: &[Vec<Line>]) {
        for (column, lines) in row.iter().enumerate() {
            self.fit_cell(column, lines);
        }
    }

    /// Widens `column` to hold a cell of `lines`.
    pub fn fit_cell(&mut self, column: usize, lines: &[Line]) {
        for line in lines {
            self.fit_width(column, Self::line_width(line));
        }
    }

    /// Widens `column` to hold a cell of one line of `text`, without making the cell.
    pub fn fit_text(&mut self, column: usize, text: &str) {
        self.fit_width(column, text_width(text));
    }

    fn fit_width(&mut self, column: usize, width: usize) {
        if self.widths.len() <= column {
            self.widths.resize(column + 1, 0);
        }
        self.widths[column] = self.widths[column].max(width);
    }

    /// Writes `row` (measured with [`Layout::fit`]) in as many lines as its tallest cell.
    pub fn write_row(
        &mut self,
        out: &mut dyn Write,
        row: &[Vec<Line>],
        color: bool,
    ) -> io::Result<()> {
        let height = row.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let buffer = &mut self.buffer;
        for index in 0..height {
            buffer.clear();
            for (column, width) in self.widths.iter().enumerate() {
                let line = row.get(column).and_then(|lines| lines.get(index));
                // A detail line may run past its column (see DETAIL_WIDTH_CAP).
                let padding = width.saturating_sub(line.map(Self::line_width).unwrap_or(0));
                let right = column >= self.right_from;
                buffer.push(' ');
                if right {
                    buffer.extend(std::iter::repeat_n(' ', padding));
                }
                for (tone, text) in line.into_iter().flatten() {
                    match tone.style().filter(|_| color && !text.is_empty()) {
                        Some(style) => {
                            use std::fmt::Write as _;
                            let _ = write!(buffer, "{}", style.render());
                            push_text(buffer, out, text)?;
                            let _ = write!(buffer, "{}", style.render_reset());
                        }
                        None => push_text(buffer, out, text)?,
                    }
                }
                if !right {
                    buffer.extend(std::iter::repeat_n(' ', padding));
                }
                buffer.push(' ');
            }
            let trimmed = buffer.trim_end();
            out.write_all(trimmed.as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// Pieces of a line at least this long are written straight out rather than copied into the
/// line's buffer first.
const DIRECT_WRITE_BYTES: usize = 8 * 1024;

/// Appends `text` to the line being built in `buffer`; a long piece (a condition of millions of
/// characters) goes straight to `out` after what the buffer holds, so the line is never held a
/// second time. Its trailing white space stays in the buffer, where the line's end is trimmed.
fn push_text(buffer: &mut String, out: &mut dyn Write, text: &str) -> io::Result<()> {
    if text.len() < DIRECT_WRITE_BYTES {
        buffer.push_str(text);
        return Ok(());
    }
    let kept = text.trim_end();
    if !kept.is_empty() {
        out.write_all(buffer.as_bytes())?;
        buffer.clear();
        out.write_all(kept.as_bytes())?;
    }
    buffer.push_str(&text[kept.len()..]);
    Ok(())
}

fn plan_kind(analysis: &Analysis) -> &'static str {
    let timed = has_node_times(analysis);
    match (
        analysis.plan.is_analyzed(),
        analysis.plan.has_buffers(),
        timed,
    ) {
        (true, true, true) => "measured (ANALYZE, BUFFERS)",
        (true, true, false) => "measured (ANALYZE, BUFFERS, TIMING OFF: node times unknown)",
        (true, false, true) => "measured (ANALYZE, no BUFFERS: pages unknown)",
        (true, false, false) => {
            "measured (ANALYZE, no BUFFERS, TIMING OFF: pages and node times unknown)"
        }
        (false, _, _) => "estimates only (no ANALYZE)",
    }
}

/// Whether any node reports its time: EXPLAIN (ANALYZE, TIMING OFF) and auto_explain with
/// `log_timing = off` measure rows and loops but leave every node's time out.
fn has_node_times(analysis: &Analysis) -> bool {
    analysis
        .plan
        .nodes
        .iter()
        .any(|n| n.actual.is_some_and(|a| a.total_ms.is_some()))
}

/// What a plan pasted from its middle lacks, when it is one.
pub fn subtree_line(analysis: &Analysis) -> Option<&'static str> {
    analysis.plan.subtree.then_some(
        "subtree: the plan starts at a child node (->), pasted from the middle of a larger \
         plan; the nodes above it and the summary lines are not in it",
    )
}

/// The one-line summary of a plan's totals.
pub fn totals_line(analysis: &Analysis) -> String {
    let t = &analysis.metrics.totals;
    let mut parts = totals_parts(analysis);
    if let Some(v) = t.io_ms.filter(|v| *v > 0.0) {
        parts.push(format!("I/O {}", ms(v)));
    }
    if !parts.is_empty() {
        return parts.join(" · ");
    }
    let plan = &analysis.plan;
    let Some(actual) = plan.nodes.first().and_then(|root| root.actual) else {
        return "no measured figures".into();
    };
    // Measured nodes without an Execution Time: EXPLAIN (ANALYZE, SUMMARY OFF), or a subtree
    // pasted without the plan's summary lines.
    let why = if plan.subtree {
        "a subtree"
    } else {
        "SUMMARY OFF"
    };
    match actual.total_ms {
        Some(total) if actual.loops == 1.0 => {
            format!("no Execution Time ({why}): the root node ran {}", ms(total))
        }
        Some(_) => format!("no Execution Time ({why}): node times below"),
        None => format!("no Execution Time ({why}): node rows and loops below"),
    }
}

/// The narrowest the node column is wrapped to, however narrow the terminal: below this a
/// plan tree is unreadable anyway, and the terminal's own wrapping is the lesser evil.
const MIN_NODE_WIDTH: usize = 24;

/// Splits `text` into lines of at most `first` characters for the first and `rest` for the
/// others, breaking at a space where there is one in the second half of the line (the space
/// is the line break), else cutting the word, which goes on at the start of the next line. So
/// the text is never changed: the lines joined back, with a space where a space was, are it.
fn wrap(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut left: &[char] = &text.chars().collect::<Vec<char>>();
    let mut width = first.max(1);
    while left.len() > width {
        let space = left[width / 2..=width]
            .iter()
            .rposition(|c| *c == ' ')
            .map(|at| width / 2 + at);
        let (cut, skip) = match space {
            // A line ending in the break's space would show it as trailing blank.
            Some(at) if at > 0 => (at, 1),
            _ => (width, 0),
        };
        pieces.push(left[..cut].iter().collect());
        left = &left[cut + skip..];
        width = rest.max(1);
    }
    pieces.push(left.iter().collect());
    pieces
}

/// How wide a detail line (a condition, an output list) may make the node column when it is not
/// wrapped (output to a file or a pipe). A longer one runs on over the figure columns, with which
/// it shares no line, instead of pushing every row's figures that far right: one Filter of
/// 16,000 characters padded every row of the table to 16,000 characters, a 1,000-node plan's
/// report to 16 MB of spaces.
const DETAIL_WIDTH_CAP: usize = 120;

/// The node column's lines for one row: the node's line and its detail lines, each wrapped to
/// `width` characters (when given) with the tree's bars repeated on every continuation line,
/// so that a long condition never breaks the tree apart. Also how many of the lines are the
/// node's own (the first of them carries the row's figures), the rest being its details.
fn node_cell(row: TreeRow, width: Option<usize>) -> (Vec<Line>, usize) {
    let tag = row.subplan.as_ref().map(|sub| format!("[{sub}]"));
    let marks: String = row.findings.iter().map(|n| format!("[{n}]")).collect();
    let mut label_text = String::new();
    if let Some(tag) = &tag {
        label_text.push_str(tag);
        label_text.push(' ');
    }
    label_text.push_str(&row.label);
    if !marks.is_empty() {
        label_text.push(' ');
        label_text.push_str(&marks);
    }
    let continuation = format!("{}  ", row.detail_prefix);
    // Unwrapped, a text is its one line, moved rather than copied (a condition may be
    // megabytes long).
    let fit = |prefix: &str, text: String| -> Vec<String> {
        match width {
            Some(w) => {
                // However deep the node, a few characters of text per line.
                let first = w.saturating_sub(prefix.chars().count()).max(12);
                let rest = w.saturating_sub(continuation.chars().count()).max(12);
                wrap(&text, first, rest)
            }
            None => vec![text],
        }
    };
    let mut lines = Vec::new();
    for (i, piece) in fit(&row.prefix, label_text).into_iter().enumerate() {
        let prefix = if i == 0 { &row.prefix } else { &continuation };
        let mut line = vec![(Tone::Dim, prefix.clone())];
        label_pieces(piece, tag.as_deref(), &marks, &mut line);
        lines.push(line);
    }
    let label_lines = lines.len();
    for detail in row.details {
        for (i, piece) in fit(&row.detail_prefix, detail).into_iter().enumerate() {
            let prefix = if i == 0 {
                &row.detail_prefix
            } else {
                &continuation
            };
            lines.push(vec![(Tone::Dim, prefix.clone()), (Tone::Dim, piece)]);
        }
    }
    (lines, label_lines)
}

/// The widths [`node_cell`] would give its lines when they are not wrapped (one line for the
/// node, one per detail), each with whether it is the node's own line: what the layout's
/// measuring pass needs, without building the lines twice.
fn unwrapped_node_widths(row: &TreeRow) -> impl Iterator<Item = (usize, bool)> + '_ {
    let mut label = text_width(&row.label);
    if let Some(sub) = &row.subplan {
        // "[sub] ": the brackets and the space.
        label += text_width(sub) + 3;
    }
    if !row.findings.is_empty() {
        // " [1][2]".
        label += 1 + row
            .findings
            .iter()
            .map(|n| n.checked_ilog10().unwrap_or(0) as usize + 3)
            .sum::<usize>();
    }
    let detail_prefix = text_width(&row.detail_prefix);
    std::iter::once((text_width(&row.prefix) + label, true)).chain(
        row.details
            .iter()
            .map(move |d| (detail_prefix + text_width(d), false)),
    )
}

/// The pieces of a node's line: the subplan tag and the finding marks in their colours.
fn label_pieces(piece: String, tag: Option<&str>, marks: &str, line: &mut Line) {
    let mut rest = piece.as_str();
    if let Some(tag) = tag.filter(|tag| rest.starts_with(tag)) {
        line.push((Tone::Accent, tag.to_owned()));
        rest = &rest[tag.len()..];
    }
    match rest.strip_suffix(marks).filter(|_| !marks.is_empty()) {
        Some(head) => {
            line.push((Tone::Plain, head.to_owned()));
            line.push((Tone::Warn, marks.to_owned()));
        }
        None => line.push((Tone::Plain, rest.to_owned())),
    }
}

/// Writes the plan tree as a table of figures. On a terminal the node column is wrapped here,
/// to what the figure columns leave of its width, with the tree's bars on every line.
pub fn write_tree(
    out: &mut dyn Write,
    analysis: &Analysis,
    options: &TextOptions,
) -> io::Result<()> {
    let analyzed = analysis.plan.is_analyzed();
    let buffers = analysis.plan.has_buffers();
    let timed = has_node_times(analysis);
    let mut headers = vec!["node"];
    if analyzed {
        headers.extend(["rows", "est rows", "loops"]);
        if buffers {
            headers.extend(["pages", "read"]);
        }
        if timed {
            headers.push("self time");
        }
    } else {
        headers.extend(["est rows", "cost"]);
    }
    // The figure cells, unpainted: on a terminal, measured first to know how wide the node
    // column can be.
    let figure_cells = |id: NodeId| -> Vec<(String, bool)> {
        let node = &analysis.plan.nodes[id];
        let m = &analysis.metrics.nodes[id];
        let est = node.plan_rows.map(count).unwrap_or_default();
        let mut cells: Vec<(String, bool)> = Vec::new();
        if analyzed {
            if m.never_executed {
                cells.push(("never executed".into(), false));
                cells.push((est, false));
                cells.push(("0".into(), false));
                if buffers {
                    cells.push((String::new(), false));
                    cells.push((String::new(), false));
                }
                if timed {
                    cells.push((String::new(), false));
                }
            } else {
                let rows_text = node.actual.map(|a| count(a.rows)).unwrap_or_default();
                let warn = crate::plan::findings::significant_misestimate(m);
                cells.push((rows_text, warn));
                cells.push((est, false));
                cells.push((m.loops.map(count).unwrap_or_default(), false));
                if buffers {
                    let b = node.buffers;
                    cells.push((
                        b.map(|b| count(b.pages_touched())).unwrap_or_default(),
                        false,
                    ));
                    cells.push((
                        b.map(|b| count(b.shared_read_blocks)).unwrap_or_default(),
                        false,
                    ));
                }
                if timed {
                    cells.push((m.exclusive_ms.map(ms).unwrap_or_default(), false));
                }
            }
        } else {
            cells.push((est, false));
            cells.push((node.total_cost.map(cost).unwrap_or_default(), false));
        }
        cells
    };
    let node_width = options.width.map(|total| {
        let mut widest: Vec<usize> = headers[1..].iter().map(|h| h.chars().count()).collect();
        for id in 0..analysis.plan.nodes.len() {
            for (column, (text, _)) in figure_cells(id).iter().enumerate() {
                widest[column] = widest[column].max(text.chars().count());
            }
        }
        // Each column is padded by a space on either side.
        let figures: usize = widest.iter().map(|w| w + 2).sum();
        usize::from(total)
            .saturating_sub(figures + 2)
            .max(MIN_NODE_WIDTH)
    });
    let cells = |row: TreeRow| -> Vec<Vec<Line>> {
        let id = row.id;
        let mut cells = vec![node_cell(row, node_width).0];
        for (i, (text, warn)) in figure_cells(id).into_iter().enumerate() {
            let tone = if warn {
                Tone::Warn
            } else if analyzed && i == 0 && text == "never executed" {
                Tone::Dim
            } else {
                Tone::Plain
            };
            cells.push(cell(tone, text));
        }
        cells
    };
    let header: Vec<Vec<Line>> = headers.iter().map(|h| cell(Tone::Bold, *h)).collect();
    let mut layout = Layout::new(1);
    layout.fit(&header);
    for row in tree_rows(analysis, true) {
        let id = row.id;
        let widths: Vec<(usize, bool)> = match node_width {
            None => unwrapped_node_widths(&row).collect(),
            Some(_) => {
                let (lines, label_lines) = node_cell(row, node_width);
                lines
                    .iter()
                    .enumerate()
                    .map(|(i, line)| (Layout::line_width(line), i < label_lines))
                    .collect()
            }
        };
        for (width, label) in widths {
            layout.fit_width(
                0,
                if label {
                    width
                } else {
                    width.min(DETAIL_WIDTH_CAP)
                },
            );
        }
        for (column, (text, _)) in figure_cells(id).iter().enumerate() {
            layout.fit_text(column + 1, text);
        }
    }
    layout.write_row(out, &header, options.color)?;
    for row in tree_rows(analysis, true) {
        layout.write_row(out, &cells(row), options.color)?;
    }
    Ok(())
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
            printable(&f.message)
        )?;
        writeln!(out, "    {} {}", paint.dim("fix:"), printable(&f.hint))?;
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
    if let Some(line) = subtree_line(analysis) {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "  {}", totals_line(analysis))?;
    if let Some(q) = &analysis.plan.query_text {
        writeln!(out, "  query: {}", printable(&one_line(q)))?;
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
    tree_rows(analysis, false)
        .map(|row| figures_line(analysis, &row))
        .collect()
}

/// A unified diff of the two plans' trees (structure and figures, no timings).
pub fn unified_tree_diff(comparison: &Comparison) -> String {
    unified_diff(
        &diff_lines(&comparison.before),
        &diff_lines(&comparison.after),
        &comparison.diff.before_to_after,
    )
}

/// The headline of a comparison: what happened to pages touched, the figure that decides; the
/// estimated cost when a plan was not measured.
pub fn headline(comparison: &Comparison) -> String {
    let t = &comparison.diff.totals;
    let measured = (
        comparison.before.plan.is_analyzed(),
        comparison.after.plan.is_analyzed(),
    );
    let estimated = || match (t.total_cost.before, t.total_cost.after) {
        (Some(b), Some(a)) => format!(
            "estimated cost {} → {} ({})",
            cost(b),
            cost(a),
            change(Some(b), Some(a), "cheaper", "dearer")
        ),
        _ => "no estimated cost to compare".into(),
    };
    match measured {
        (false, false) => {
            return format!(
                "estimates only: neither plan was measured (EXPLAIN without ANALYZE); {}",
                estimated()
            );
        }
        (true, false) => {
            return format!(
                "only the before plan was measured; the after plan has estimates only (EXPLAIN \
                 without ANALYZE), so only estimates compare: {}",
                estimated()
            );
        }
        (false, true) => {
            return format!(
                "only the after plan was measured; the before plan has estimates only (EXPLAIN \
                 without ANALYZE), so only estimates compare: {}",
                estimated()
            );
        }
        (true, true) => {}
    }
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
            _ => "no measured figure is in both plans".into(),
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
    pub fn show(self, value: Option<f64>) -> String {
        match (self, value) {
            (_, None) => "—".into(),
            (Figure::Time, Some(v)) => ms(v),
            (Figure::Count, Some(v)) => count(v),
            (Figure::Cost, Some(v)) => cost(v),
        }
    }

    pub fn words(self) -> (&'static str, &'static str) {
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
    let mut grid = Grid::new(&["", "before", "after", "change"], 1);
    for (name, pair, figure) in rows {
        if pair.before.is_none() && pair.after.is_none() {
            continue;
        }
        let (fewer, more) = figure.words();
        let text = change(pair.before, pair.after, fewer, more);
        let tone = match (pair.before, pair.after) {
            (Some(b), Some(a)) if a < b => Tone::Good,
            (Some(b), Some(a)) if a > b => Tone::Bad,
            _ => Tone::Plain,
        };
        grid.push(vec![
            cell(Tone::Plain, *name),
            cell(Tone::Plain, figure.show(pair.before)),
            cell(Tone::Plain, figure.show(pair.after)),
            cell(tone, text),
        ]);
    }
    grid.write(out, options.color)
}

/// The totals table of a comparison.
pub fn write_totals_table(
    out: &mut dyn Write,
    comparison: &Comparison,
    options: &TextOptions,
) -> io::Result<()> {
    let t = &comparison.diff.totals;
    let mut rows = vec![
        ("execution time", t.execution_ms, Figure::Time),
        ("planning time", t.planning_ms, Figure::Time),
        ("pages touched", t.pages_touched, Figure::Count),
        ("  shared hit", t.shared_hit_blocks, Figure::Count),
        ("  shared read", t.shared_read_blocks, Figure::Count),
        ("temp blocks", t.temp_blocks, Figure::Count),
    ];
    if !both_measured(comparison) {
        rows.extend(estimate_rows(comparison));
    }
    write_pairs_table(out, &rows, options)
}

/// Whether both plans were measured (EXPLAIN ANALYZE): otherwise the estimates are the only
/// figures both have, and the totals show them.
pub fn both_measured(comparison: &Comparison) -> bool {
    comparison.before.plan.is_analyzed() && comparison.after.plan.is_analyzed()
}

/// The estimated totals of a comparison: the root's cost and rows.
pub fn estimate_rows(comparison: &Comparison) -> [(&'static str, crate::plan::Pair, Figure); 2] {
    let t = &comparison.diff.totals;
    [
        ("estimated cost", t.total_cost, Figure::Cost),
        ("estimated rows", t.estimated_rows, Figure::Count),
    ]
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
            printable(&c.message)
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
    // Written as it is made: for two large plans the diff is as long as both trees.
    let before = diff_lines(&comparison.before);
    let after = diff_lines(&comparison.after);
    write_unified_diff(
        &before,
        &after,
        &comparison.diff.before_to_after,
        &mut |line| {
            if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") {
                writeln!(out, "{}", paint.dim(line))
            } else if line.starts_with('-') {
                writeln!(out, "{}", paint.bad(line))
            } else if line.starts_with('+') {
                writeln!(out, "{}", paint.good(line))
            } else {
                writeln!(out, "{line}")
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    fn text_plan(text: &str) -> Analysis {
        Analysis::of(crate::plan::read_plan(text, None).unwrap().plan)
    }

    const COST: &str = "(cost=0.00..1.00 rows=1 width=4)";

    #[test]
    fn the_header_of_a_measured_plan_without_its_summary_says_what_is_measured() {
        // EXPLAIN (ANALYZE, SUMMARY OFF): rows and times per node, no Execution Time.
        let analysis = text_plan(&format!(
            "Seq Scan on t  {COST} (actual time=0.010..0.250 rows=1 loops=1)\n"
        ));
        assert_eq!(
            totals_line(&analysis),
            "no Execution Time (SUMMARY OFF): the root node ran 0.250 ms"
        );
        // TIMING OFF as well: rows and loops only.
        let analysis = text_plan(&format!("Seq Scan on t  {COST} (actual rows=1 loops=1)\n"));
        assert_eq!(
            totals_line(&analysis),
            "no Execution Time (SUMMARY OFF): node rows and loops below"
        );
        // A root that ran several times has no one time of its own.
        let analysis = text_plan(&format!(
            "->  Seq Scan on t  {COST} (actual time=0.010..0.250 rows=1 loops=4)\n"
        ));
        assert_eq!(
            totals_line(&analysis),
            "no Execution Time (a subtree): node times below"
        );
        // Estimates only.
        let analysis = text_plan(&format!("Seq Scan on t  {COST}\n"));
        assert_eq!(totals_line(&analysis), "no measured figures");
    }

    #[test]
    fn the_header_of_a_subtree_says_it_is_one() {
        let mut out = Vec::new();
        let options = TextOptions {
            color: false,
            width: Some(100),
        };
        let analysis = text_plan(&format!("   ->  Seq Scan on t  {COST}\n"));
        write_explain(&mut out, "p.txt", &analysis, &options).unwrap();
        let text = String::from_utf8(out).unwrap();
        let header: Vec<&str> = text.lines().take(4).collect();
        assert_eq!(
            header,
            [
                "Plan p.txt",
                "  estimates only (no ANALYZE)",
                "  subtree: the plan starts at a child node (->), pasted from the middle of a \
                 larger plan; the nodes above it and the summary lines are not in it",
                "  no measured figures",
            ]
        );
        let mut out = Vec::new();
        write_explain(
            &mut out,
            "p.txt",
            &text_plan(&format!("Seq Scan on t  {COST}\n")),
            &options,
        )
        .unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("subtree"));
    }

    fn fixture(path: &str) -> Analysis {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        Analysis::of(parse_plan(&std::fs::read_to_string(path).unwrap()).unwrap())
    }

    /// On a terminal of 80 or 100 columns the tree fits, and every line of the node column,
    /// wrapped ones included, starts with the tree's bars, so the tree stays readable.
    #[test]
    fn the_tree_fits_a_terminal_with_its_bars_on_every_line() {
        for width in [80u16, 100] {
            let analysis = fixture("fixtures/story/before.pg16.json");
            let options = TextOptions {
                color: false,
                width: Some(width),
            };
            let mut out = Vec::new();
            write_tree(&mut out, &analysis, &options).unwrap();
            let text = String::from_utf8(out).unwrap();
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(width),
                    "{width}: {line:?}"
                );
            }
            // The scan's filter is deepest: each of its lines carries the bars above it.
            let filter: Vec<&str> = text
                .lines()
                .skip_while(|l| !l.contains("Filter:"))
                .take_while(|l| !l.contains("Rows Removed"))
                .collect();
            assert!(!filter.is_empty(), "{text}");
            for line in &filter {
                assert!(
                    line.starts_with("            "),
                    "{width}: {line:?}\n{text}"
                );
            }
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[1].starts_with(" Limit"), "{text}");
            assert!(
                lines.iter().any(|l| l.contains("└─ Parallel Seq Scan")),
                "{text}"
            );
        }
    }

    /// Not on a terminal, a long condition runs on over the figure columns on its own line: the
    /// node column, and so every row, stays as wide as the nodes' own lines (or
    /// DETAIL_WIDTH_CAP), and the report grows with the condition once, not once per row.
    #[test]
    fn a_long_condition_does_not_widen_every_row() {
        let options = TextOptions {
            color: false,
            width: None,
        };
        let mut analysis = fixture("fixtures/story/before.pg16.json");
        let rows = |analysis: &Analysis| {
            let mut out = Vec::new();
            write_tree(&mut out, analysis, &options).unwrap();
            String::from_utf8(out).unwrap()
        };
        let short = rows(&analysis);
        let id = (0..analysis.plan.nodes.len())
            .find(|&id| analysis.plan.nodes[id].filter.is_some())
            .expect("the story's scan has a filter");
        let long = format!("({})", vec!["(v = 1)"; 20_000].join(" OR "));
        analysis.plan.nodes[id].filter = Some(long.clone());
        let text = rows(&analysis);
        let header = |text: &str| text.lines().next().unwrap().len();
        assert!(
            header(&text) <= header(&short) + DETAIL_WIDTH_CAP,
            "{}",
            &text[..2000]
        );
        for line in text.lines() {
            assert!(
                line.len() <= header(&short) + DETAIL_WIDTH_CAP
                    || line.trim_start().starts_with("Filter: ((v = 1)"),
                "{line:.200}"
            );
        }
        // Once, not once per row (the story's plan has a dozen).
        assert!(
            text.len() < short.len() + 2 * long.len(),
            "{} bytes",
            text.len()
        );
    }

    /// A name cut because it is wider than the column goes on at the start of the next line,
    /// with no space put into it.
    #[test]
    fn a_cut_word_goes_on_unchanged_on_the_next_line() {
        let name = "events_pending_created_at_idx";
        for width in 50u16..=100 {
            let analysis = fixture("fixtures/story/partial_index.pg16.json");
            let options = TextOptions {
                color: false,
                width: Some(width),
            };
            let mut out = Vec::new();
            write_tree(&mut out, &analysis, &options).unwrap();
            let text = String::from_utf8(out).unwrap();
            // The node column of each line: its text up to the figures.
            let column: Vec<&str> = text
                .lines()
                .map(|l| {
                    let l = l.trim_start_matches([' ', '│', '├', '└', '─']);
                    l.split("  ").next().unwrap_or_default()
                })
                .collect();
            let whole = column.iter().any(|l| l.contains(name))
                || column
                    .windows(2)
                    .any(|w| format!("{}{}", w[0], w[1]).contains(name));
            assert!(whole, "{width}:\n{text}");
        }
        let pieces = wrap("using events_pending_created_at_idx on t", 12, 10);
        assert_eq!(
            pieces,
            ["using events", "_pending_c", "reated_at_", "idx on t"]
        );
    }

    #[test]
    fn wrap_breaks_at_spaces() {
        assert_eq!(wrap("Filter: (a = 1)", 100, 100), ["Filter: (a = 1)"]);
        assert_eq!(wrap("aaaa bbbb cccc", 9, 9), ["aaaa bbbb", "cccc"]);
        assert_eq!(wrap("abcdefghij", 4, 4), ["abcd", "efgh", "ij"]);
    }
}
