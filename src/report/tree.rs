//! The plan as an indented tree: one row per node with the figures that matter, shared by the
//! text and Markdown renderers and by the textual diff of two plans.

use crate::plan::findings::node_label;
use crate::plan::{Analysis, Node, NodeId};

use super::format::{count, printable};

/// One node's line in the tree and the detail lines under it.
#[derive(Debug, Clone)]
pub struct TreeRow {
    pub id: NodeId,
    /// Box-drawing prefix showing the node's place in the tree ("│  └─ ").
    pub prefix: String,
    /// Prefix for the node's detail lines, continuing the tree's vertical bars.
    pub detail_prefix: String,
    /// "Index Scan using events_idx on public.events".
    pub label: String,
    /// "InitPlan 1", "SubPlan 2", "CTE totals" when the node is one.
    pub subplan: Option<String>,
    /// Conditions and the figures worth a line of their own.
    pub details: Vec<String>,
    /// Numbers of the findings about this node (1-based, as listed under the plan).
    pub findings: Vec<usize>,
}

/// The rows of `analysis`'s plan in pre-order.
pub fn rows(analysis: &Analysis) -> Vec<TreeRow> {
    let plan = &analysis.plan;
    let mut rows = Vec::with_capacity(plan.nodes.len());
    // For each depth, whether the ancestor at that depth still has siblings to come (draw a bar).
    let mut open: Vec<bool> = Vec::new();
    let mut finding_numbers: Vec<Vec<usize>> = vec![Vec::new(); plan.nodes.len()];
    for (i, f) in analysis.findings.iter().enumerate() {
        if let Some(n) = f.node {
            finding_numbers[n].push(i + 1);
        }
    }
    for (id, node) in plan.nodes.iter().enumerate() {
        let last = match node.parent {
            Some(p) => plan.nodes[p].children.last() == Some(&id),
            None => true,
        };
        open.truncate(node.depth);
        let mut prefix = String::new();
        let mut detail_prefix = String::new();
        if node.depth > 0 {
            for &bar in &open[1..] {
                prefix.push_str(if bar { "│  " } else { "   " });
                detail_prefix.push_str(if bar { "│  " } else { "   " });
            }
            prefix.push_str(if last { "└─ " } else { "├─ " });
            detail_prefix.push_str(if last { "   " } else { "│  " });
        }
        open.push(!last);
        if !node.children.is_empty() {
            // Details of a node with children continue the bar down to the first child.
            detail_prefix.push_str("│ ");
        } else {
            detail_prefix.push_str("  ");
        }
        rows.push(TreeRow {
            id,
            prefix,
            detail_prefix,
            label: printable(&node_label(node)),
            subplan: subplan_name(node).map(|s| printable(&s)),
            details: details(node, analysis, id)
                .iter()
                .map(|d| printable(d))
                .collect(),
            findings: std::mem::take(&mut finding_numbers[id]),
        });
    }
    rows
}

/// The figures that matter on one line of a plan: rows against the estimate, loops, pages, rows
/// removed, heap fetches. No timings: these lines are also diffed, and timings differ every run.
pub fn figures(analysis: &Analysis, id: NodeId) -> Vec<String> {
    let node = &analysis.plan.nodes[id];
    let m = &analysis.metrics.nodes[id];
    let mut figures = Vec::new();
    if m.never_executed {
        figures.push("never executed".to_owned());
    } else if let Some(a) = node.actual {
        figures.push(format!(
            "rows {} (est {})",
            count(a.rows),
            count(node.plan_rows.unwrap_or(0.0))
        ));
        if a.loops != 1.0 {
            figures.push(format!("loops {}", count(a.loops)));
        }
    } else if let Some(est) = node.plan_rows {
        figures.push(format!("est rows {}", count(est)));
    }
    if let Some(b) = node.buffers {
        figures.push(format!("pages {}", count(b.pages_touched())));
    }
    if let Some(r) = m.rows_removed_by_filter_total.filter(|r| *r > 0.0) {
        figures.push(format!("removed {}", count(r)));
    }
    if let Some(h) = node.heap_fetches.filter(|h| *h > 0.0) {
        figures.push(format!("heap fetches {}", count(h)));
    }
    figures
}

/// "├─ [InitPlan 1] Index Scan using ... on ..." : the tree prefix, the subplan name and label.
pub fn labelled(row: &TreeRow) -> String {
    match &row.subplan {
        Some(sub) => format!("{}[{sub}] {}", row.prefix, row.label),
        None => format!("{}{}", row.prefix, row.label),
    }
}

fn subplan_name(node: &Node) -> Option<String> {
    let name = node.subplan_name.as_deref()?;
    // Before PostgreSQL 17, init plans were named "InitPlan 1 (returns $0)"; 17 dropped the
    // parameter list. Show both the same way.
    Some(match name.find(" (returns") {
        Some(at) => name[..at].to_owned(),
        None => name.to_owned(),
    })
}

fn details(node: &Node, analysis: &Analysis, id: NodeId) -> Vec<String> {
    let m = &analysis.metrics.nodes[id];
    let mut out = Vec::new();
    for (name, value) in [
        ("Index Cond", &node.index_cond),
        ("Recheck Cond", &node.recheck_cond),
        ("Hash Cond", &node.hash_cond),
        ("Merge Cond", &node.merge_cond),
        ("Join Filter", &node.join_filter),
        ("Filter", &node.filter),
    ] {
        if let Some(v) = value {
            out.push(format!("{name}: {v}"));
        }
    }
    if let Some(removed) = m.rows_removed_by_filter_total.filter(|r| *r > 0.0) {
        out.push(format!("Rows Removed by Filter: {} in all", count(removed)));
    }
    if let Some(removed) = m.rows_removed_by_join_filter_total.filter(|r| *r > 0.0) {
        out.push(format!(
            "Rows Removed by Join Filter: {} in all",
            count(removed)
        ));
    }
    if let Some(removed) = m.rows_removed_by_index_recheck_total.filter(|r| *r > 0.0) {
        out.push(format!(
            "Rows Removed by Index Recheck: {} in all",
            count(removed)
        ));
    }
    if let Some(fetches) = node.heap_fetches {
        out.push(format!("Heap Fetches: {}", count(fetches)));
    }
    if node.exact_heap_blocks.is_some() || node.lossy_heap_blocks.is_some() {
        out.push(format!(
            "Heap Blocks: exact {}, lossy {}",
            count(node.exact_heap_blocks.unwrap_or(0.0)),
            count(node.lossy_heap_blocks.unwrap_or(0.0))
        ));
    }
    if let Some(searches) = node.index_searches {
        out.push(format!("Index Searches: {}", count(searches)));
    }
    if let Some(method) = &node.sort_method {
        let space = match (node.sort_space_used_kb, node.sort_space_type.as_deref()) {
            (Some(kb), Some(kind)) => format!(", {} kB {}", count(kb), kind.to_lowercase()),
            _ => String::new(),
        };
        out.push(format!("Sort: {method}{space}"));
    }
    if let Some(batches) = node.hash_batches {
        out.push(format!(
            "Hash: {} buckets, {} batch{}, peak {} kB",
            count(node.hash_buckets.unwrap_or(0.0)),
            count(batches),
            if batches == 1.0 { "" } else { "es" },
            count(node.peak_memory_usage_kb.unwrap_or(0.0))
        ));
    }
    if let Some(batches) = node.hashagg_batches.filter(|b| *b > 1.0) {
        out.push(format!(
            "HashAgg: {} batches, {} kB on disk",
            count(batches),
            count(node.disk_usage_kb.unwrap_or(0.0))
        ));
    }
    // Without ANALYZE the plan only says how many workers were planned: nothing was launched.
    if let Some(planned) = node.workers_planned {
        out.push(match node.workers_launched {
            Some(launched) => format!(
                "Workers: {} launched of {} planned",
                count(launched),
                count(planned)
            ),
            None => format!("Workers: {} planned", count(planned)),
        });
    }
    if let Some(temp) = m
        .exclusive_buffers
        .map(|b| b.temp_blocks())
        .filter(|t| *t > 0.0)
    {
        out.push(format!("Temp: {} blocks", count(temp)));
    }
    if node.disabled == Some(true) {
        out.push("Disabled: the settings disabled this kind of node".into());
    }
    out
}
