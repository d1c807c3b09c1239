//! The plan tree in HTML (each node's exclusive pages and time as bars scaled to the plan's
//! total, estimate errors and spills marked, findings linked to their nodes, details on demand)
//! and two plans side by side, matched nodes on one row.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{bar, bar_of, element, escape, page, severity_class};
use crate::format::{change, count, ms};
use crate::plan::findings::{node_label, significant_misestimate, spills};
use crate::plan::metrics::Direction;
use crate::plan::{Analysis, Comparison, NodeId};
use crate::report::tree::{condition_lines, sort_line, totals_parts};

/// `pgplan explain --format html`.
pub fn write_explain(out: &mut dyn Write, title: &str, analysis: &Analysis) -> io::Result<()> {
    write_explain_with_notes(out, title, analysis, &[])
}

/// `pgplan explain -d --format html`: the plan, and what the run left that a rollback does not
/// undo.
pub fn write_explain_with_notes(
    out: &mut dyn Write,
    title: &str,
    analysis: &Analysis,
    notes: &[String],
) -> io::Result<()> {
    let mut html = String::new();
    let _ = writeln!(html, "<h1>Plan {}</h1>", escape(title));
    plan_summary(&mut html, analysis);
    plan_section(&mut html, analysis, "");
    if !notes.is_empty() {
        html.push_str("<h3>Notes</h3>\n<ul>\n");
        for note in notes {
            element(&mut html, "li", "", note);
        }
        html.push_str("</ul>\n");
    }
    page(out, &format!("pgplan explain · {title}"), &html)
}

/// The body of one plan: its tree and its findings, anchors prefixed with `prefix`.
pub(crate) fn plan_section(html: &mut String, analysis: &Analysis, prefix: &str) {
    tree_table(html, analysis, prefix);
    findings_list(html, analysis, prefix);
}

pub(crate) fn plan_summary(html: &mut String, analysis: &Analysis) {
    let t = &analysis.metrics.totals;
    let mut parts = vec![
        if analysis.plan.is_analyzed() {
            if analysis.plan.has_buffers() {
                "measured (ANALYZE, BUFFERS)"
            } else {
                "measured (ANALYZE)"
            }
        } else {
            "estimates only (no ANALYZE)"
        }
        .to_owned(),
    ];
    if analysis.plan.subtree {
        parts.push("subtree (pasted from the middle of a larger plan)".to_owned());
    }
    parts.extend(totals_parts(analysis));
    if !analysis.plan.is_analyzed()
        && let Some(cost) = t.total_cost
    {
        parts.push(format!("estimated cost {}", count(cost)));
    }
    let _ = writeln!(html, "<p class=\"meta\">{}</p>", escape(&parts.join(" · ")));
    if let Some(q) = &analysis.plan.query_text {
        let _ = writeln!(html, "<pre class=\"query\">{}</pre>", escape(q));
    }
}

/// Nodes in plan order (depth first), with their depth.
pub(crate) fn preorder(analysis: &Analysis) -> Vec<NodeId> {
    let mut order = Vec::with_capacity(analysis.plan.nodes.len());
    let mut stack = vec![0];
    if analysis.plan.nodes.is_empty() {
        return order;
    }
    while let Some(id) = stack.pop() {
        order.push(id);
        for &child in analysis.plan.children(id).iter().rev() {
            stack.push(child);
        }
    }
    order
}

/// The totals the bars are scaled to: the plan's pages and the root's time (exclusive figures
/// add up to both).
fn bar_totals(analysis: &Analysis) -> (Option<f64>, Option<f64>) {
    let pages = analysis.metrics.totals.pages_touched;
    let time = analysis
        .metrics
        .nodes
        .first()
        .and_then(|m| m.inclusive_ms)
        .or(analysis.metrics.totals.execution_ms);
    (pages, time)
}

pub(crate) fn exclusive_pages(analysis: &Analysis, id: NodeId) -> Option<f64> {
    analysis.metrics.nodes[id]
        .exclusive_buffers
        .as_ref()
        .map(|b| b.pages_touched())
}

/// The node's label cell: indented by depth, the label with its marks (never executed, an
/// estimate error, a spill, links to its findings), and its details in a `<details>`.
fn node_cell(html: &mut String, analysis: &Analysis, id: NodeId, prefix: &str) {
    let node = &analysis.plan.nodes[id];
    let m = &analysis.metrics.nodes[id];
    let _ = write!(
        html,
        "<td class=\"node-label\" style=\"padding-left:{}px\"><details class=\"node\" id=\"{prefix}node-{id}\"><summary>",
        8 + node.depth * 18
    );
    if let Some(name) = &node.subplan_name {
        element(html, "span", "muted", &format!("{name}: "));
    }
    element(html, "span", "label", &node_label(node));
    if m.never_executed {
        element(html, "span", "badge never", "never executed");
    }
    if significant_misestimate(m)
        && let Some(e) = &m.misestimate
    {
        let word = match e.direction {
            Some(Direction::Under) => "under",
            Some(Direction::Over) => "over",
            None => "",
        };
        let _ = write!(
            html,
            "<span class=\"badge est\" title=\"estimated rows {}, actual {}\">rows {}× {}estimated</span>",
            m.estimated_rows_total.map(count).unwrap_or_default(),
            m.actual_rows_total.map(count).unwrap_or_default(),
            count((e.factor * 10.0).round() / 10.0),
            word
        );
    }
    if spills(node, m) {
        element(html, "span", "badge spill", "spilled to disk");
    }
    for (i, f) in analysis.findings.iter().enumerate() {
        if f.node == Some(id) {
            let _ = write!(
                html,
                "<a class=\"badge {}\" href=\"#{prefix}finding-{}\">{}</a>",
                severity_class(f.severity),
                i + 1,
                escape(f.kind.as_str())
            );
        }
    }
    html.push_str("</summary><div class=\"more\">");
    let details = node_details(analysis, id);
    if details.is_empty() {
        html.push_str("no conditions or output reported");
    }
    for line in details {
        element(html, "div", "", &line);
    }
    html.push_str("</div></details></td>");
}

/// What EXPLAIN says about a node beyond its figures, one line each.
fn node_details(analysis: &Analysis, id: NodeId) -> Vec<String> {
    let node = &analysis.plan.nodes[id];
    let m = &analysis.metrics.nodes[id];
    let mut lines: Vec<String> = condition_lines(node).collect();
    for (name, value) in [
        ("Rows Removed by Filter", m.rows_removed_by_filter_total),
        (
            "Rows Removed by Join Filter",
            m.rows_removed_by_join_filter_total,
        ),
        (
            "Rows Removed by Index Recheck",
            m.rows_removed_by_index_recheck_total,
        ),
        ("Heap Fetches", node.heap_fetches),
        ("Lossy Heap Blocks", node.lossy_heap_blocks),
    ] {
        if let Some(v) = value.filter(|&v| v > 0.0) {
            lines.push(format!("{name}: {} in all", count(v)));
        }
    }
    lines.extend(sort_line(node));
    if let Some(batches) = node.hash_batches {
        lines.push(format!(
            "Hash: {} buckets, {} batches{}",
            count(node.hash_buckets.unwrap_or(0.0)),
            count(batches),
            node.peak_memory_usage_kb
                .map(|kb| format!(", {} kB memory", count(kb)))
                .unwrap_or_default()
        ));
    }
    if let (Some(planned), Some(launched)) = (node.workers_planned, node.workers_launched) {
        lines.push(format!(
            "Workers: {} launched of {} planned",
            count(launched),
            count(planned)
        ));
    }
    if let Some(cost) = node.total_cost {
        lines.push(format!(
            "Cost: {}..{} (estimated rows {})",
            node.startup_cost.map(count).unwrap_or_default(),
            count(cost),
            node.plan_rows.map(count).unwrap_or_default()
        ));
    }
    if !node.output.is_empty() {
        lines.push(format!("Output: {}", node.output.join(", ")));
    }
    lines
}

fn num_cell(html: &mut String, value: Option<String>, class: &str) {
    let _ = write!(
        html,
        "<td class=\"num{}{class}\">{}</td>",
        if class.is_empty() { "" } else { " " },
        escape(&value.unwrap_or_default())
    );
}

fn tree_table(html: &mut String, analysis: &Analysis, prefix: &str) {
    let (pages_total, time_total) = bar_totals(analysis);
    let timed = analysis
        .metrics
        .nodes
        .iter()
        .any(|m| m.exclusive_ms.is_some());
    html.push_str(
        "<p class=\"legend\">Bars: each node's own work (its children's subtracted) as a share of the plan's total \
         <i style=\"background:var(--pages)\"></i>pages touched <i style=\"background:var(--time)\"></i>time. \
         Click a node for its conditions and output.</p>\n",
    );
    html.push_str(
        "<table class=\"plan\"><thead><tr><th>node</th><th class=\"num\">rows</th><th class=\"num\">est rows</th>\
         <th class=\"num\">loops</th><th class=\"num\">pages (own)</th><th class=\"num\">read</th>",
    );
    if timed {
        html.push_str("<th class=\"num\">time (own)</th>");
    }
    html.push_str("</tr></thead><tbody>\n");
    for id in preorder(analysis) {
        let m = &analysis.metrics.nodes[id];
        html.push_str("<tr>");
        node_cell(html, analysis, id, prefix);
        num_cell(html, m.actual_rows_total.map(count), "");
        num_cell(html, m.estimated_rows_total.map(count), "");
        num_cell(html, m.loops.map(count), "");
        let pages = exclusive_pages(analysis, id);
        let _ = write!(
            html,
            "<td class=\"num\">{}{}</td>",
            pages.map(count).unwrap_or_default(),
            bar("pages", pages, pages_total)
        );
        num_cell(
            html,
            m.exclusive_buffers
                .as_ref()
                .map(|b| count(b.shared_read_blocks)),
            "",
        );
        if timed {
            let _ = write!(
                html,
                "<td class=\"num time\">{}{}</td>",
                m.exclusive_ms.map(ms).unwrap_or_default(),
                bar("time", m.exclusive_ms, time_total)
            );
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");
}

fn findings_list(html: &mut String, analysis: &Analysis, prefix: &str) {
    if analysis.findings.is_empty() {
        html.push_str("<p class=\"muted\">No findings.</p>\n");
        return;
    }
    html.push_str("<h3>Findings</h3>\n");
    for (i, f) in analysis.findings.iter().enumerate() {
        let class = severity_class(f.severity);
        let _ = write!(
            html,
            "<div class=\"finding {class}-border\" id=\"{prefix}finding-{}\"><h4><span class=\"badge {class}\">{}</span> {}",
            i + 1,
            f.severity.as_str(),
            escape(f.kind.as_str())
        );
        if let Some(node) = f.node {
            let _ = write!(
                html,
                " · <a href=\"#{prefix}node-{node}\">{}</a>",
                escape(&node_label(&analysis.plan.nodes[node]))
            );
        }
        html.push_str("</h4>");
        element(html, "p", "", &f.message);
        if !f.evidence.is_empty() {
            html.push_str("<dl class=\"evidence\">");
            for (name, value) in &f.evidence {
                let _ = write!(html, "<dt>{}</dt><dd>{}</dd>", escape(name), count(*value));
            }
            html.push_str("</dl>");
        }
        if !f.hint.is_empty() {
            let _ = write!(html, "<p><b>fix:</b> {}</p>", escape(&f.hint));
        }
        html.push_str("</div>\n");
    }
}

/// `pgplan diff --format html`.
pub fn write_diff(
    out: &mut dyn Write,
    titles: (&str, &str),
    comparison: &Comparison,
) -> io::Result<()> {
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<h1>Plan diff</h1>\n<p class=\"meta\">before {} · after {}</p>",
        escape(titles.0),
        escape(titles.1)
    );
    comparison_body(&mut html, comparison, "");
    page(
        out,
        &format!("pgplan diff · {} → {}", titles.0, titles.1),
        &html,
    )
}

/// The verdict, the totals, the changes and the trees side by side; anchors prefixed with
/// `prefix` (a page can hold several comparisons).
pub(crate) fn comparison_body(html: &mut String, comparison: &Comparison, prefix: &str) {
    verdict(html, comparison, prefix);
    totals_table(html, comparison);
    changes_list(html, comparison, prefix);
    html.push_str("<h3>Before and after, matched nodes side by side</h3>\n");
    side_by_side(html, comparison, prefix);
    html.push_str("<h3>After plan: findings</h3>\n");
    findings_list(html, &comparison.after, &format!("{prefix}after-"));
}

fn verdict(html: &mut String, comparison: &Comparison, prefix: &str) {
    let t = &comparison.diff.totals;
    let (name, pair) = if t.pages_touched.before.is_some() && t.pages_touched.after.is_some() {
        ("pages touched", t.pages_touched)
    } else if t.execution_ms.before.is_some() && t.execution_ms.after.is_some() {
        ("execution time", t.execution_ms)
    } else {
        ("estimated cost", t.total_cost)
    };
    let (class, words) = match (pair.before, pair.after) {
        (Some(b), Some(a)) if a < b => ("good", change(pair.before, pair.after, "fewer", "more")),
        (Some(b), Some(a)) if a > b => ("bad", change(pair.before, pair.after, "fewer", "more")),
        (Some(_), Some(_)) => ("neutral", "same".to_owned()),
        _ => ("neutral", "not comparable".to_owned()),
    };
    let fmt = |v: Option<f64>| match name {
        "execution time" => v.map(ms).unwrap_or_default(),
        _ => v.map(count).unwrap_or_default(),
    };
    let _ = writeln!(
        html,
        "<div class=\"verdict {class}\" id=\"{prefix}verdict\"><b>{}</b> {} → {} <b>({})</b></div>",
        escape(name),
        escape(&fmt(pair.before)),
        escape(&fmt(pair.after)),
        escape(&words)
    );
}

fn totals_table(html: &mut String, comparison: &Comparison) {
    let t = &comparison.diff.totals;
    html.push_str(
        "<table class=\"totals\"><thead><tr><th></th><th class=\"num\">before</th><th class=\"num\">after</th><th class=\"num\">change</th></tr></thead><tbody>\n",
    );
    let rows: [(&str, _, bool, &str, &str); 6] = [
        ("execution time", t.execution_ms, true, "faster", "slower"),
        ("planning time", t.planning_ms, true, "faster", "slower"),
        ("pages touched", t.pages_touched, false, "fewer", "more"),
        ("shared hit", t.shared_hit_blocks, false, "fewer", "more"),
        ("shared read", t.shared_read_blocks, false, "fewer", "more"),
        ("temp blocks", t.temp_blocks, false, "fewer", "more"),
    ];
    for (name, pair, time, fewer, more) in rows {
        if pair.before.is_none() && pair.after.is_none() {
            continue;
        }
        let show = |v: Option<f64>| {
            v.map(|v| if time { ms(v) } else { count(v) })
                .unwrap_or_default()
        };
        let class = match (pair.before, pair.after) {
            (Some(b), Some(a)) if a < b => "changed-better",
            (Some(b), Some(a)) if a > b => "changed-worse",
            _ => "",
        };
        let class = if time {
            format!("time {class}")
        } else {
            class.to_owned()
        };
        let _ = writeln!(
            html,
            "<tr class=\"{class}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num delta\">{}</td></tr>",
            escape(name),
            escape(&show(pair.before)),
            escape(&show(pair.after)),
            escape(&change(pair.before, pair.after, fewer, more))
        );
    }
    html.push_str("</tbody></table>\n");
}

fn changes_list(html: &mut String, comparison: &Comparison, prefix: &str) {
    if comparison.diff.changes.is_empty() {
        html.push_str("<p class=\"muted\">No node changed.</p>\n");
        return;
    }
    html.push_str("<h3>Changes</h3>\n<ul class=\"changes\">\n");
    for c in &comparison.diff.changes {
        let _ = write!(html, "<li><code>{}</code> ", escape(c.kind.as_str()));
        let target = c
            .after_node
            .map(|n| format!("{prefix}after-node-{n}"))
            .or(c.before_node.map(|n| format!("{prefix}before-node-{n}")));
        match target {
            Some(anchor) => {
                let _ = write!(html, "<a href=\"#{anchor}\">{}</a>", escape(&c.message));
            }
            None => html.push_str(&escape(&c.message)),
        }
        html.push_str("</li>\n");
    }
    html.push_str("</ul>\n");
}

/// Rows of the side-by-side table: matched nodes together, the others on a row of their own, in
/// the order of both trees.
pub(crate) fn aligned_rows(comparison: &Comparison) -> Vec<(Option<NodeId>, Option<NodeId>)> {
    let before = preorder(&comparison.before);
    let after = preorder(&comparison.after);
    let b2a = &comparison.diff.before_to_after;
    let a2b = &comparison.diff.after_to_before;
    let mut rows = Vec::new();
    let mut done_before: HashSet<NodeId> = HashSet::new();
    let mut done_after: HashSet<NodeId> = HashSet::new();
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < after.len() {
        let b = before.get(i).copied();
        let a = after.get(j).copied();
        if let Some(b) = b
            && done_before.contains(&b)
        {
            i += 1;
            continue;
        }
        if let Some(a) = a
            && done_after.contains(&a)
        {
            j += 1;
            continue;
        }
        match (b, a) {
            (Some(b), Some(a)) if b2a.get(b).copied().flatten() == Some(a) => {
                rows.push((Some(b), Some(a)));
                i += 1;
                j += 1;
            }
            (Some(b), _) if b2a.get(b).copied().flatten().is_none() => {
                rows.push((Some(b), None));
                i += 1;
            }
            (_, Some(a)) if a2b.get(a).copied().flatten().is_none() => {
                rows.push((None, Some(a)));
                j += 1;
            }
            (Some(b), _) => {
                // Matched to an after node further down (the tree was reordered): both on one
                // row now, the after node skipped when its turn comes.
                let a = b2a[b].expect("matched");
                rows.push((Some(b), Some(a)));
                done_after.insert(a);
                i += 1;
            }
            (None, Some(a)) => {
                let b = a2b[a].expect("matched");
                rows.push((Some(b), Some(a)));
                done_before.insert(b);
                j += 1;
            }
            (None, None) => break,
        }
    }
    rows
}

/// "better", "worse" or "" for a figure that went from `before` to `after` (smaller is better),
/// changed by at least 10% and by at least `floor` (a share of the plan: 0.007 ms becoming
/// 0.006 ms is noise, not a change to point at).
fn judged(before: Option<f64>, after: Option<f64>, floor: f64) -> &'static str {
    match (before, after) {
        (Some(b), Some(a)) if (a - b).abs() < floor.max(1e-9) => "",
        (Some(b), Some(a)) if a < b * 0.9 => "better",
        (Some(b), Some(a)) if a > b * 1.1 => "worse",
        _ => "",
    }
}

fn side_by_side(html: &mut String, comparison: &Comparison, anchor: &str) {
    let sides = [&comparison.before, &comparison.after];
    // One scale for both plans, the larger one's total: the bars show how much work went.
    let (bp, bt) = bar_totals(sides[0]);
    let (ap, at) = bar_totals(sides[1]);
    let larger = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    let (pages_total, time_total) = (larger(bp, ap), larger(bt, at));
    html.push_str(
        "<table class=\"side-by-side\"><thead><tr><th colspan=\"4\">before</th><th colspan=\"4\">after</th></tr>\
         <tr><th>node</th><th class=\"num\">rows</th><th class=\"num\">pages (own)</th><th class=\"num\">time (own)</th>\
         <th>node</th><th class=\"num\">rows</th><th class=\"num\">pages (own)</th><th class=\"num\">time (own)</th></tr></thead><tbody>\n",
    );
    for (b, a) in aligned_rows(comparison) {
        let figures = |side: usize, id: Option<NodeId>| {
            id.map(|id| {
                let analysis = sides[side];
                let m = &analysis.metrics.nodes[id];
                (
                    m.actual_rows_total,
                    exclusive_pages(analysis, id),
                    m.exclusive_ms,
                )
            })
        };
        let fb = figures(0, b);
        let fa = figures(1, a);
        html.push_str(if b.is_some() && a.is_some() {
            "<tr class=\"matched\">"
        } else {
            "<tr class=\"unmatched\">"
        });
        for (side, id, mine, other) in [(0, b, fb, fa), (1, a, fa, fb)] {
            let Some(id) = id else {
                html.push_str(if side == 0 {
                    "<td class=\"empty\" colspan=\"4\"></td>"
                } else {
                    "<td class=\"empty after-first\" colspan=\"4\"></td>"
                });
                continue;
            };
            let prefix = if side == 0 {
                "before-node-"
            } else {
                "after-node-"
            };
            let prefix = format!("{anchor}{prefix}");
            let analysis = sides[side];
            let node = &analysis.plan.nodes[id];
            let _ = write!(
                html,
                "<td class=\"node-label{}\" id=\"{prefix}{id}\" style=\"padding-left:{}px\">",
                if side == 1 { " after-first" } else { "" },
                8 + node.depth * 14
            );
            element(html, "span", "label", &node_label(node));
            if side == 1 {
                for (i, f) in analysis.findings.iter().enumerate() {
                    if f.node == Some(id) {
                        let _ = write!(
                            html,
                            "<a class=\"badge {}\" href=\"#{anchor}after-finding-{}\">{}</a>",
                            severity_class(f.severity),
                            i + 1,
                            escape(f.kind.as_str())
                        );
                    }
                }
            }
            html.push_str("</td>");
            let (rows, pages, time) = mine.expect("present");
            // Only the after side is judged against the before side.
            let mark = |x: Option<f64>, y: Option<f64>, total: Option<f64>| {
                if side == 1 && other.is_some() {
                    judged(y, x, total.unwrap_or(0.0) * 0.01)
                } else {
                    ""
                }
            };
            let other = other.unwrap_or((None, None, None));
            let _ = write!(
                html,
                "<td class=\"num {}\">{}</td>",
                if side == 1 && b.is_some() && rows != other.0 {
                    "changed"
                } else {
                    ""
                },
                escape(&rows.map(count).unwrap_or_default())
            );
            let _ = write!(
                html,
                "<td class=\"num {}\">{}{}</td>",
                mark(pages, other.1, pages_total),
                escape(&pages.map(count).unwrap_or_default()),
                bar_of("pages", pages, pages_total, "the larger plan")
            );
            let _ = write!(
                html,
                "<td class=\"num time {}\">{}{}</td>",
                mark(time, other.2, time_total),
                escape(&time.map(ms).unwrap_or_default()),
                bar_of("time", time, time_total, "the larger plan")
            );
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");
}
