//! What an expert reads off a plan: each finding names the node, shows the numbers that justify
//! it, and says what to do.
//!
//! Thresholds are deliberately conservative: a finding should be worth a person's attention on a
//! production query, not a lint on every plan.

use serde::Serialize;

use super::metrics::{Direction, NodeMetrics, PlanMetrics};
use super::model::{Node, NodeId, Plan};

/// An estimate error this large (actual against estimated rows per loop) is a finding...
pub const MISESTIMATE_FACTOR: f64 = 10.0;
/// ...and this large, critical.
pub const MISESTIMATE_CRITICAL_FACTOR: f64 = 1000.0;
/// ...when the node handles at least this many rows (actual or estimated, over all loops).
pub const MISESTIMATE_MIN_ROWS: f64 = 1000.0;
/// A filter that removes at least this share of the rows a scan reads...
pub const FILTER_DISCARD_SHARE: f64 = 0.9;
/// ...and at least this many rows in all.
pub const FILTER_DISCARD_MIN_ROWS: f64 = 1000.0;
/// Heap fetches of an Index Only Scan worth a VACUUM: at least this many...
pub const HEAP_FETCHES_MIN: f64 = 1000.0;
/// ...and at least this share of the rows it returned.
pub const HEAP_FETCHES_SHARE: f64 = 0.1;
/// A run reads at least this share of its pages from outside shared buffers...
pub const COLD_READ_SHARE: f64 = 0.5;
/// ...touching at least this many pages.
pub const COLD_MIN_PAGES: f64 = 1000.0;
/// `disable_cost`: before PostgreSQL 18 a disabled node's cost carries this penalty.
pub const DISABLE_COST: f64 = 1.0e10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Estimated and actual rows differ by 10× or more.
    Misestimate,
    /// A scan's filter removes most of the rows it reads.
    FilterRemovesMostRows,
    /// A join filter removes most of the row pairs a join forms.
    JoinFilterRemovesMostRows,
    /// An Index Only Scan visits the heap for many rows.
    HeapFetches,
    /// A bitmap outgrew work_mem and went lossy.
    LossyBitmap,
    /// A sort spilled to disk.
    SortSpill,
    /// A hash join needed more than one batch.
    HashBatches,
    /// A hash aggregate spilled to disk.
    HashAggregateSpill,
    /// Most pages came from outside shared buffers.
    ColdCache,
    /// Fewer parallel workers started than were planned.
    WorkersNotLaunched,
    /// The plan holds a node whose kind the settings disabled.
    DisabledNode,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Misestimate => "misestimate",
            FindingKind::FilterRemovesMostRows => "filter_removes_most_rows",
            FindingKind::JoinFilterRemovesMostRows => "join_filter_removes_most_rows",
            FindingKind::HeapFetches => "heap_fetches",
            FindingKind::LossyBitmap => "lossy_bitmap",
            FindingKind::SortSpill => "sort_spill",
            FindingKind::HashBatches => "hash_batches",
            FindingKind::HashAggregateSpill => "hash_aggregate_spill",
            FindingKind::ColdCache => "cold_cache",
            FindingKind::WorkersNotLaunched => "workers_not_launched",
            FindingKind::DisabledNode => "disabled_node",
        }
    }
}

/// One thing worth a person's attention, with the numbers behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// The node it concerns; `None` for findings about the whole plan.
    pub node: Option<NodeId>,
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// The figures that justify it, named with their units.
    pub evidence: Vec<(&'static str, f64)>,
}

fn fmt_count(value: f64) -> String {
    crate::report::format::count(value)
}

/// A share as a percentage that never rounds 99.6% up to a misleading "100%".
fn percent(part: f64, whole: f64) -> String {
    let pct = 100.0 * part / whole;
    if pct > 99.0 && pct < 100.0 {
        format!("{:.1}%", pct.min(99.9))
    } else {
        format!("{pct:.0}%")
    }
}

/// How EXPLAIN's text format names a node: "Seq Scan on public.orders o",
/// "Index Scan using orders_pkey on public.orders", "Bitmap Index Scan on orders_pkey",
/// "CTE Scan on totals t", "Function Scan on pg_catalog.generate_series a".
pub fn node_label(node: &Node) -> String {
    let mut label = node.display_type();
    let with_alias = |label: &mut String, name: &str| {
        if let Some(alias) = &node.alias
            && alias != name
        {
            label.push(' ');
            label.push_str(alias);
        }
    };
    if node.node_type == "Bitmap Index Scan" {
        if let Some(index) = &node.index_name {
            label.push_str(" on ");
            label.push_str(index);
        }
        return label;
    }
    if let Some(index) = &node.index_name {
        label.push_str(" using ");
        label.push_str(index);
    }
    if let Some(rel) = node.qualified_relation() {
        label.push_str(" on ");
        label.push_str(&rel);
        with_alias(
            &mut label,
            node.relation_name.as_deref().unwrap_or_default(),
        );
    } else if let Some(cte) = &node.cte_name {
        label.push_str(" on ");
        label.push_str(cte);
        with_alias(&mut label, cte);
    } else if let Some(function) = &node.function_name {
        label.push_str(" on ");
        if let Some(schema) = &node.schema {
            label.push_str(schema);
            label.push('.');
        }
        label.push_str(function);
        with_alias(&mut label, function);
    }
    label
}

/// Every finding in the plan, most severe first, then in plan order.
pub fn find(plan: &Plan, metrics: &PlanMetrics) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (id, node) in plan.nodes.iter().enumerate() {
        let m = &metrics.nodes[id];
        if m.never_executed {
            continue;
        }
        misestimate(&mut findings, id, node, metrics);
        filter(&mut findings, id, node, metrics);
        heap_fetches(&mut findings, id, node, metrics);
        lossy_bitmap(&mut findings, id, node, metrics);
        spills(&mut findings, id, node, metrics);
        workers(&mut findings, id, node);
        disabled(&mut findings, id, node);
    }
    cold_cache(&mut findings, metrics);
    // Stable: plan order within a severity.
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}

/// Whether a node's estimate error is worth a finding: 10× or more, on a node handling enough
/// rows to matter, and not an overestimate the node's consumer explains by stopping early.
pub fn significant_misestimate(metrics: &NodeMetrics) -> bool {
    let Some(mis) = metrics.misestimate else {
        return false;
    };
    let rows = metrics
        .actual_rows_total
        .unwrap_or(0.0)
        .max(metrics.estimated_rows_total.unwrap_or(0.0));
    let expected = mis.direction == Direction::Over && metrics.may_stop_early;
    mis.factor >= MISESTIMATE_FACTOR && rows >= MISESTIMATE_MIN_ROWS && !expected
}

fn misestimate(findings: &mut Vec<Finding>, id: NodeId, node: &Node, metrics: &PlanMetrics) {
    let m = &metrics.nodes[id];
    let Some(mis) = m.misestimate else { return };
    if !significant_misestimate(m) {
        return;
    }
    let (Some(actual), Some(estimated)) = (node.actual, node.plan_rows) else {
        return;
    };
    let way = match mis.direction {
        Direction::Under => "underestimated",
        Direction::Over => "overestimated",
    };
    let table = node
        .qualified_relation()
        .unwrap_or_else(|| "the tables below this node".into());
    let condition = node
        .filter
        .as_deref()
        .or(node.index_cond.as_deref())
        .or(node.hash_cond.as_deref())
        .or(node.join_filter.as_deref());
    let mut hint = format!(
        "Refresh statistics with ANALYZE on {table}; if they are fresh and the estimate is still off, \
         the columns in the condition are probably correlated: CREATE STATISTICS (dependencies, mcv) on them"
    );
    if let Some(cond) = condition {
        hint.push_str(&format!(" (condition: {cond})"));
    }
    findings.push(Finding {
        kind: FindingKind::Misestimate,
        // An underestimate is what drives nested loops over huge inputs; an overestimate wastes
        // less (a hash join or seq scan where an index would have done), so it stays a warning.
        severity: if mis.factor >= MISESTIMATE_CRITICAL_FACTOR && mis.direction == Direction::Under
        {
            Severity::Critical
        } else {
            Severity::Warning
        },
        node: Some(id),
        message: format!(
            "{}: rows {way} {:.0}×: {} estimated, {} actual per loop{}",
            node_label(node),
            mis.factor,
            fmt_count(estimated),
            fmt_count(actual.rows),
            if actual.loops > 1.0 {
                format!(" over {} loops", fmt_count(actual.loops))
            } else {
                String::new()
            }
        ),
        hint,
        evidence: vec![
            ("estimated_rows", estimated),
            ("actual_rows", actual.rows),
            ("loops", actual.loops),
            ("misestimate_factor", mis.factor),
        ],
    });
}

fn filter(findings: &mut Vec<Finding>, id: NodeId, node: &Node, metrics: &PlanMetrics) {
    let m = &metrics.nodes[id];
    let returned = m.actual_rows_total.unwrap_or(0.0);
    if let Some(removed) = m.rows_removed_by_filter_total
        && node.relation_name.is_some()
    {
        let read = removed + returned;
        if removed >= FILTER_DISCARD_MIN_ROWS
            && read > 0.0
            && removed / read >= FILTER_DISCARD_SHARE
        {
            let filter = node.filter.as_deref().unwrap_or("the filter");
            let table = node.qualified_relation().unwrap_or_default();
            let hint = if node.node_type.contains("Index") {
                format!(
                    "The index finds rows the filter then discards: an index whose columns cover {filter} \
                     would read only the rows kept (or a partial index, CREATE INDEX ... ON {table} ... WHERE {filter}, \
                     when the predicate is a fixed hot value)"
                )
            } else {
                format!(
                    "An index on the filtered columns of {table} would read only the rows kept; when the \
                     predicate is a fixed hot value, a partial index (CREATE INDEX ... ON {table} ... WHERE {filter}) \
                     stays small. Try it with pgplan compare"
                )
            };
            findings.push(Finding {
                kind: FindingKind::FilterRemovesMostRows,
                severity: Severity::Warning,
                node: Some(id),
                message: format!(
                    "{}: the filter removes {} of the rows read ({} removed, {} kept)",
                    node_label(node),
                    percent(removed, read),
                    fmt_count(removed),
                    fmt_count(returned)
                ),
                hint,
                evidence: vec![
                    ("rows_removed_by_filter_total", removed),
                    ("actual_rows_total", returned),
                ],
            });
        }
    }
    if let Some(removed) = m.rows_removed_by_join_filter_total {
        let formed = removed + returned;
        if removed >= FILTER_DISCARD_MIN_ROWS
            && formed > 0.0
            && removed / formed >= FILTER_DISCARD_SHARE
        {
            findings.push(Finding {
                kind: FindingKind::JoinFilterRemovesMostRows,
                severity: Severity::Warning,
                node: Some(id),
                message: format!(
                    "{}: the join filter removes {} of the row pairs formed ({} removed, {} kept)",
                    node_label(node),
                    percent(removed, formed),
                    fmt_count(removed),
                    fmt_count(returned)
                ),
                hint: format!(
                    "The join condition {} is checked after rows are paired; an index or a rewritten \
                     condition the join can use as a key would avoid forming the pairs",
                    node.join_filter.as_deref().unwrap_or("")
                ),
                evidence: vec![
                    ("rows_removed_by_join_filter_total", removed),
                    ("actual_rows_total", returned),
                ],
            });
        }
    }
}

fn heap_fetches(findings: &mut Vec<Finding>, id: NodeId, node: &Node, metrics: &PlanMetrics) {
    if node.node_type != "Index Only Scan" {
        return;
    }
    let Some(fetches) = node.heap_fetches else {
        return;
    };
    let returned = metrics.nodes[id].actual_rows_total.unwrap_or(0.0);
    if fetches < HEAP_FETCHES_MIN || fetches < HEAP_FETCHES_SHARE * returned {
        return;
    }
    let table = node.qualified_relation().unwrap_or_default();
    findings.push(Finding {
        kind: FindingKind::HeapFetches,
        severity: Severity::Warning,
        node: Some(id),
        message: format!(
            "{}: {} heap fetches for {} rows returned; the index-only scan is visiting the table",
            node_label(node),
            fmt_count(fetches),
            fmt_count(returned)
        ),
        hint: format!(
            "The visibility map does not cover the pages these rows live on (recent writes not yet \
             vacuumed): VACUUM {table}, and check that autovacuum keeps up with the table's writes"
        ),
        evidence: vec![("heap_fetches", fetches), ("actual_rows_total", returned)],
    });
}

fn lossy_bitmap(findings: &mut Vec<Finding>, id: NodeId, node: &Node, metrics: &PlanMetrics) {
    let lossy = node.lossy_heap_blocks.unwrap_or(0.0);
    if lossy <= 0.0 {
        return;
    }
    let exact = node.exact_heap_blocks.unwrap_or(0.0);
    let rechecked = metrics.nodes[id]
        .rows_removed_by_index_recheck_total
        .unwrap_or(0.0);
    findings.push(Finding {
        kind: FindingKind::LossyBitmap,
        severity: Severity::Warning,
        node: Some(id),
        message: format!(
            "{}: the bitmap outgrew work_mem: {} of {} heap blocks lossy, {} rows removed by recheck",
            node_label(node),
            fmt_count(lossy),
            fmt_count(lossy + exact),
            fmt_count(rechecked)
        ),
        hint: "A lossy bitmap remembers pages, not rows, so every row on those pages is rechecked. \
               Raise work_mem for this query (SET LOCAL work_mem = ...) until Lossy Heap Blocks is 0, \
               or make the condition more selective"
            .into(),
        evidence: vec![
            ("lossy_heap_blocks", lossy),
            ("exact_heap_blocks", exact),
            ("rows_removed_by_index_recheck_total", rechecked),
        ],
    });
}

fn temp_blocks(id: NodeId, metrics: &PlanMetrics) -> f64 {
    metrics.nodes[id]
        .exclusive_buffers
        .map(|b| b.temp_blocks())
        .unwrap_or(0.0)
}

fn spills(findings: &mut Vec<Finding>, id: NodeId, node: &Node, metrics: &PlanMetrics) {
    let disk_sort = node
        .sort_method
        .as_deref()
        .is_some_and(|m| m.starts_with("external"))
        || node.sort_space_type.as_deref() == Some("Disk");
    if disk_sort {
        let used = node.sort_space_used_kb.unwrap_or(0.0);
        findings.push(Finding {
            kind: FindingKind::SortSpill,
            severity: Severity::Warning,
            node: Some(id),
            message: format!(
                "{}: the sort spilled to disk ({}, {} kB on disk, {} temp blocks)",
                node_label(node),
                node.sort_method.as_deref().unwrap_or("external"),
                fmt_count(used),
                fmt_count(temp_blocks(id, metrics))
            ),
            hint: format!(
                "Raise work_mem for this query above about {} kB (an in-memory sort needs more than the \
                 on-disk size), or give it an index that returns rows already in order",
                fmt_count((used * 2.0).ceil())
            ),
            evidence: vec![
                ("sort_space_used_kb", used),
                ("temp_blocks", temp_blocks(id, metrics)),
            ],
        });
    }
    let batches = node
        .hash_batches
        .unwrap_or(1.0)
        .max(node.original_hash_batches.unwrap_or(1.0));
    if node.node_type == "Hash" && batches > 1.0 {
        let peak = node.peak_memory_usage_kb.unwrap_or(0.0);
        findings.push(Finding {
            kind: FindingKind::HashBatches,
            severity: Severity::Warning,
            node: Some(id),
            message: format!(
                "{}: the hash table was split into {} batches (peak memory {} kB), spilling to temp files",
                node_label(node),
                fmt_count(batches),
                fmt_count(peak)
            ),
            hint: format!(
                "The hashed side did not fit in work_mem × hash_mem_multiplier; raise work_mem for this \
                 query to roughly {} kB so the join runs in one batch",
                fmt_count((peak * batches).ceil())
            ),
            evidence: vec![
                ("hash_batches", batches),
                ("peak_memory_usage_kb", peak),
                ("temp_blocks", temp_blocks(id, metrics)),
            ],
        });
    }
    let agg_batches = node.hashagg_batches.unwrap_or(0.0);
    let disk = node.disk_usage_kb.unwrap_or(0.0);
    if node.node_type == "Aggregate" && (agg_batches > 1.0 || disk > 0.0) {
        findings.push(Finding {
            kind: FindingKind::HashAggregateSpill,
            severity: Severity::Warning,
            node: Some(id),
            message: format!(
                "{}: the hash aggregate spilled to disk ({} batches, {} kB on disk)",
                node_label(node),
                fmt_count(agg_batches),
                fmt_count(disk)
            ),
            hint:
                "Raise work_mem (or hash_mem_multiplier) for this query so the groups fit in memory"
                    .into(),
            evidence: vec![("hashagg_batches", agg_batches), ("disk_usage_kb", disk)],
        });
    }
}

fn workers(findings: &mut Vec<Finding>, id: NodeId, node: &Node) {
    let (Some(planned), Some(launched)) = (node.workers_planned, node.workers_launched) else {
        return;
    };
    if launched >= planned {
        return;
    }
    findings.push(Finding {
        kind: FindingKind::WorkersNotLaunched,
        severity: Severity::Info,
        node: Some(id),
        message: format!(
            "{}: {} of {} planned parallel workers started",
            node_label(node),
            fmt_count(launched),
            fmt_count(planned)
        ),
        hint: "Other queries held the worker slots: max_parallel_workers and max_worker_processes \
               cap them server-wide, so this run did more of its work in the leader"
            .into(),
        evidence: vec![("workers_planned", planned), ("workers_launched", launched)],
    });
}

fn disabled(findings: &mut Vec<Finding>, id: NodeId, node: &Node) {
    // PostgreSQL 18 says so; before 18 the only trace is disable_cost added to the node's cost,
    // and it shows on every ancestor too, so only the deepest such node is reported.
    let flagged = node.disabled == Some(true);
    let penalised = node.disabled.is_none()
        && node.total_cost.is_some_and(|c| c >= DISABLE_COST)
        && node.children.is_empty();
    if !(flagged || penalised) {
        return;
    }
    findings.push(Finding {
        kind: FindingKind::DisabledNode,
        severity: Severity::Info,
        node: Some(id),
        message: format!(
            "{}: chosen although its kind is disabled (an enable_* setting is off) because no other \
             plan was possible",
            node_label(node)
        ),
        hint: "Check the session's enable_* settings (EXPLAIN's SETTINGS option lists them); the \
               plan the planner prefers may differ"
            .into(),
        evidence: vec![("total_cost", node.total_cost.unwrap_or(0.0))],
    });
}

fn cold_cache(findings: &mut Vec<Finding>, metrics: &PlanMetrics) {
    let totals = &metrics.totals;
    let (Some(touched), Some(read)) = (totals.pages_touched, totals.pages_read) else {
        return;
    };
    if touched < COLD_MIN_PAGES || read < COLD_READ_SHARE * touched {
        return;
    }
    findings.push(Finding {
        kind: FindingKind::ColdCache,
        severity: Severity::Info,
        node: None,
        message: format!(
            "{} of {} pages ({}) were read from outside shared buffers",
            fmt_count(read),
            fmt_count(touched),
            percent(read, touched)
        ),
        hint:
            "A cold run, or a working set larger than shared_buffers: run it again to see the warm \
               figures, and compare pages touched rather than time"
                .into(),
        evidence: vec![("shared_read_blocks", read), ("pages_touched", touched)],
    });
}
