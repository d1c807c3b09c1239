//! What an expert reads off a plan: each finding names the node, shows the numbers that justify
//! it, and says what to do.
//!
//! Thresholds are deliberately conservative: a finding should be worth a person's attention on a
//! production query, not a lint on every plan.

use std::borrow::Cow;

use super::extra::{Extra, Extras};
use super::hash_mem::{Multiplier, show as show_multiplier, work_mem_setting};
use super::metrics::{Direction, NodeMetrics, PlanMetrics};
use super::model::{Node, NodeId, Plan};

pub use super::finding::{Finding, FindingKind, Severity};

/// An estimate error this large (actual against estimated rows per loop) is a finding...
pub const MISESTIMATE_FACTOR: f64 = 10.0;
/// ...and this large, critical.
pub const MISESTIMATE_CRITICAL_FACTOR: f64 = 1000.0;
/// ...when the node actually handles at least this many rows over all loops (returned, or read
/// and removed by its own filters): an estimate error on a node that saw a handful of rows cost
/// nothing, however large the estimate was.
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
/// Rows removed by a bitmap heap scan's index recheck worth a finding: at least this many...
pub const RECHECK_MIN_ROWS: f64 = 1000.0;
/// ...and at least this share of the rows the recheck saw (kept plus removed).
pub const RECHECK_SHARE: f64 = 0.5;

fn fmt_count(value: f64) -> String {
    crate::format::count(value)
}

/// Conditions longer than this many characters are quoted in a hint by their start only.
const QUOTED_CONDITION_MAX_CHARS: usize = 1_000;
/// How much of a longer condition a hint quotes.
const QUOTED_CONDITION_START_CHARS: usize = 200;

/// `condition` as a hint quotes it: whole when it is short enough to copy into a statement, else
/// its start and its length. The node carries the whole condition already, in every report; a
/// generated `IN`/`OR` list of millions of characters quoted again in the hint (twice, for an
/// index scan's) made the report several times the plan's size.
fn quoted(condition: &str) -> Cow<'_, str> {
    if condition.chars().nth(QUOTED_CONDITION_MAX_CHARS).is_none() {
        return Cow::Borrowed(condition);
    }
    let start = condition
        .char_indices()
        .nth(QUOTED_CONDITION_START_CHARS)
        .map_or(condition.len(), |(at, _)| at);
    Cow::Owned(format!(
        "{} … [{} characters in all: the node's condition]",
        &condition[..start],
        fmt_count(condition.chars().count() as f64)
    ))
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
/// Every finding on `plan`; `server_major` is the major version of the server that made it, when
/// known (a saved plan does not say), for the defaults that changed between versions.
pub fn find(plan: &Plan, metrics: &PlanMetrics, server_major: Option<u32>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let hash_mem = HashMem {
        multiplier: Multiplier::of(plan, server_major),
        work_mem: work_mem_setting(plan),
    };
    for (id, node) in plan.nodes.iter().enumerate() {
        let m = &metrics.nodes[id];
        if m.never_executed {
            continue;
        }
        misestimate(&mut findings, id, node, metrics);
        filter(&mut findings, id, node, metrics);
        heap_fetches(&mut findings, id, node, metrics);
        lossy_bitmap(&mut findings, id, plan, metrics);
        spill_findings(&mut findings, id, node, metrics, &hash_mem);
        workers(&mut findings, id, node);
        disabled(&mut findings, id, plan);
    }
    cold_cache(&mut findings, metrics);
    findings.extend(super::jit::jit_overhead(plan));
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
    // Rows the node really handled, never the estimate: "1,010× overestimated" on a join that
    // saw no rows at all is no finding.
    let rows = metrics.rows_handled.unwrap_or(0.0);
    let expected = mis.direction == Some(Direction::Over) && metrics.may_stop_early;
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
        Some(Direction::Over) => "overestimated",
        // A significant error has a direction: the factor is at least 10.
        _ => "underestimated",
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
        hint.push_str(&format!(" (condition: {})", quoted(cond)));
    }
    findings.push(Finding {
        kind: FindingKind::Misestimate,
        // An underestimate is what drives nested loops over huge inputs; an overestimate wastes
        // less (a hash join or seq scan where an index would have done), so it stays a warning.
        severity: if mis.factor >= MISESTIMATE_CRITICAL_FACTOR
            && mis.direction == Some(Direction::Under)
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
            let filter = quoted(node.filter.as_deref().unwrap_or("the filter"));
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
                    quoted(node.join_filter.as_deref().unwrap_or(""))
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

/// The index a bitmap heap scan's bitmap came from, when one Bitmap Index Scan built it.
fn bitmap_index(plan: &Plan, id: NodeId) -> Option<&str> {
    let mut node = &plan.nodes[id];
    // BitmapAnd/BitmapOr combine several indexes: no single index to name.
    while let [child] = node.children.as_slice() {
        node = &plan.nodes[*child];
        if node.node_type == "Bitmap Index Scan" {
            return node.index_name.as_deref();
        }
    }
    None
}

/// Whether the bitmap came from a BRIN index. EXPLAIN does not report an index's access method,
/// so the index name is all there is to go on: BRIN indexes are conventionally named so.
fn is_brin(index: Option<&str>) -> bool {
    index.is_some_and(|i| i.to_ascii_lowercase().contains("brin"))
}

fn lossy_bitmap(findings: &mut Vec<Finding>, id: NodeId, plan: &Plan, metrics: &PlanMetrics) {
    let node = &plan.nodes[id];
    if node.node_type != "Bitmap Heap Scan" {
        return;
    }
    let lossy = node.lossy_heap_blocks.unwrap_or(0.0);
    let exact = node.exact_heap_blocks.unwrap_or(0.0);
    let m = &metrics.nodes[id];
    let rechecked = m.rows_removed_by_index_recheck_total.unwrap_or(0.0);
    let kept = m.actual_rows_total.unwrap_or(0.0);
    let many_rechecked =
        rechecked >= RECHECK_MIN_ROWS && rechecked >= RECHECK_SHARE * (rechecked + kept);
    if lossy <= 0.0 && !many_rechecked {
        return;
    }
    let index = bitmap_index(plan, id);
    let label = node_label(node);
    let figures = format!(
        "{} of {} heap blocks lossy, {} rows removed by recheck, {} kept",
        fmt_count(lossy),
        fmt_count(lossy + exact),
        fmt_count(rechecked),
        fmt_count(kept)
    );
    // A bitmap that outgrows work_mem turns its densest pages lossy first (tidbitmap.c), so
    // exact blocks remain; a bitmap with no exact block at all comes from an index that is lossy
    // by design (BRIN stores page ranges, not rows), which work_mem does not change. Without
    // lossy blocks, the recheck removes rows because the index's operator is lossy (GiST,
    // GIN, a BRIN range) or its condition only approximates the query's.
    let (message, hint) = if is_brin(index) || (lossy > 0.0 && exact <= 0.0) {
        let what = if is_brin(index) {
            "the BRIN index is lossy by design"
        } else {
            "every heap block is lossy"
        };
        (
            format!("{label}: {what}: {figures}"),
            "A BRIN index returns whole page ranges, so every row on them is rechecked; it pays \
             only while the column follows the table's physical order. If the recheck removes \
             most rows, a smaller pages_per_range, a CLUSTER on the column, or a btree index \
             reads fewer rows. (A btree or GIN bitmap with no exact block outgrew work_mem \
             entirely: raise work_mem for this query.)"
                .to_owned(),
        )
    } else if lossy > 0.0 {
        (
            format!("{label}: the bitmap outgrew work_mem: {figures}"),
            "A lossy bitmap remembers pages, not rows, so every row on those pages is rechecked. \
             Raise work_mem for this query (SET LOCAL work_mem = ...) until Lossy Heap Blocks is 0, \
             or make the condition more selective"
                .to_owned(),
        )
    } else {
        (
            format!("{label}: the index recheck removes most rows: {figures}"),
            "The bitmap is exact (work_mem is enough), but the index condition matches more rows \
             than the query keeps: the operator is lossy for this index (GiST, GIN, BRIN) or the \
             condition only approximates the query's. An index whose operator answers the \
             condition exactly, or a more selective condition, reads fewer rows"
                .to_owned(),
        )
    };
    findings.push(Finding {
        kind: FindingKind::LossyBitmap,
        severity: Severity::Warning,
        node: Some(id),
        message,
        hint,
        evidence: vec![
            ("lossy_heap_blocks", lossy),
            ("exact_heap_blocks", exact),
            ("rows_removed_by_index_recheck_total", rechecked),
            ("actual_rows_total", kept),
        ],
    });
}

fn temp_blocks(id: NodeId, metrics: &PlanMetrics) -> f64 {
    metrics.nodes[id]
        .exclusive_buffers
        .map(|b| b.temp_blocks())
        .unwrap_or(0.0)
}

/// Temp blocks the node wrote itself (its children's subtracted): a sort, hash or aggregate
/// that wrote temp files spilled, whatever else it reports.
fn own_temp_written(m: &NodeMetrics) -> f64 {
    m.exclusive_buffers
        .map(|b| b.temp_written_blocks)
        .unwrap_or(0.0)
}

/// The per-process entries of a node in a parallel section (VERBOSE's `Workers` array): each
/// worker's own sort method, batches and disk usage, which the node's own keys (the leader's)
/// do not include.
fn worker_entries(node: &Node) -> impl Iterator<Item = &Extras> {
    node.extra
        .get("Workers")
        .and_then(Extra::as_array)
        .into_iter()
        .flatten()
        .filter_map(Extra::as_object)
}

fn is_external(method: &str) -> bool {
    method.starts_with("external")
}

/// An Incremental Sort's group summaries (`Full-sort Groups`, `Pre-sorted Groups`, PostgreSQL
/// 13+): the sort methods used and, when any group went to disk, `Sort Space Disk`. Returns
/// the external method seen and the peak disk space in kB.
fn group_spill(entry: &Extras) -> Option<(Option<String>, Option<f64>)> {
    let mut found = None;
    for key in ["Full-sort Groups", "Pre-sorted Groups"] {
        let Some(groups) = entry.get(key).and_then(Extra::as_object) else {
            continue;
        };
        let method = groups
            .get("Sort Methods Used")
            .and_then(Extra::as_array)
            .into_iter()
            .flatten()
            .filter_map(Extra::as_str)
            .find(|m| is_external(m))
            .map(str::to_owned);
        let disk = groups
            .get("Sort Space Disk")
            .and_then(|d| d.get("Peak Sort Space Used"))
            .and_then(Extra::as_f64);
        if method.is_some() || disk.is_some() {
            let (m0, d0): (Option<String>, Option<f64>) = found.unwrap_or((None, None));
            found = Some((
                m0.or(method),
                match (d0, disk) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                },
            ));
        }
    }
    found
}

/// How a sort spilled to disk, from everything EXPLAIN reports about it.
#[derive(Debug, Clone, PartialEq)]
pub struct SortSpill {
    /// The external method named ("external merge", "external sort"), if any was.
    pub method: Option<String>,
    /// The largest on-disk size reported, in kB.
    pub disk_kb: Option<f64>,
    /// Parallel workers whose own entry says they spilled.
    pub workers: usize,
}

/// Whether a Sort or Incremental Sort went to disk: its own `Sort Method`/`Sort Space Type`
/// (the leader's, for a parallel sort), each worker's entry (the only evidence when the leader
/// did not take part), an Incremental Sort's group summaries, or temp blocks it wrote itself.
pub fn sort_spill(node: &Node, m: &NodeMetrics) -> Option<SortSpill> {
    if !matches!(node.node_type.as_str(), "Sort" | "Incremental Sort") {
        return None;
    }
    let mut spill = SortSpill {
        method: None,
        disk_kb: None,
        workers: 0,
    };
    let mut any = false;
    let mut note = |spill: &mut SortSpill, method: Option<String>, kb: Option<f64>| {
        any = true;
        spill.method = spill.method.take().or(method);
        spill.disk_kb = match (spill.disk_kb, kb) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    };
    let own_method = node.sort_method.as_deref().filter(|m| is_external(m));
    if own_method.is_some() || node.sort_space_type.as_deref() == Some("Disk") {
        let kb = node
            .sort_space_used_kb
            .filter(|_| node.sort_space_type.as_deref() == Some("Disk"));
        note(&mut spill, own_method.map(str::to_owned), kb);
    }
    if let Some((method, kb)) = group_spill(&node.extra) {
        note(&mut spill, method, kb);
    }
    for worker in worker_entries(node) {
        let method = worker
            .get("Sort Method")
            .and_then(Extra::as_str)
            .filter(|m| is_external(m));
        let disk = worker.get("Sort Space Type").and_then(Extra::as_str) == Some("Disk");
        let groups = group_spill(worker);
        if method.is_some() || disk || groups.is_some() {
            spill.workers += 1;
            let kb = worker
                .get("Sort Space Used")
                .and_then(Extra::as_f64)
                .filter(|_| disk);
            note(&mut spill, method.map(str::to_owned), kb);
            if let Some((method, kb)) = groups {
                note(&mut spill, method, kb);
            }
        }
    }
    if own_temp_written(m) > 0.0 {
        any = true;
    }
    any.then_some(spill)
}

/// The batches of a Hash node: the most it reported, planned or grown to.
fn hash_batches(node: &Node) -> f64 {
    node.hash_batches
        .unwrap_or(1.0)
        .max(node.original_hash_batches.unwrap_or(1.0))
}

/// How a hash aggregate spilled (PostgreSQL 13+ lets it): the most batches and disk usage that
/// the node or any worker reported. `None` when it did not spill.
pub fn hash_aggregate_spill(node: &Node, m: &NodeMetrics) -> Option<(f64, f64)> {
    if node.node_type != "Aggregate"
        || !matches!(node.strategy.as_deref(), Some("Hashed" | "Mixed"))
    {
        return None;
    }
    let mut batches = node.hashagg_batches.unwrap_or(0.0);
    let mut disk = node.disk_usage_kb.unwrap_or(0.0);
    for worker in worker_entries(node) {
        let get = |k: &str| worker.get(k).and_then(Extra::as_f64).unwrap_or(0.0);
        batches = batches.max(get("HashAgg Batches"));
        disk = disk.max(get("Disk Usage"));
    }
    (batches > 1.0 || disk > 0.0 || own_temp_written(m) > 0.0).then_some((batches, disk))
}

/// Whether a sort or hash spilled to disk: the test both the findings and the diff use.
pub fn spills(node: &Node, m: &NodeMetrics) -> bool {
    sort_spill(node, m).is_some()
        || (node.node_type == "Hash" && (hash_batches(node) > 1.0 || own_temp_written(m) > 0.0))
        || hash_aggregate_spill(node, m).is_some()
}

/// What the plan says about the memory a hash table may use.
struct HashMem<'a> {
    multiplier: Multiplier,
    /// `work_mem` from the plan's `Settings`.
    work_mem: Option<&'a str>,
}

/// The fix for a hash join that needed `total_kb` in several batches: work_mem such that work_mem
/// × hash_mem_multiplier holds it, with the multiplier's source said; and that work_mem when
/// the multiplier is known.
fn hash_batches_hint(total_kb: f64, hash_mem: &HashMem) -> (String, Option<f64>) {
    let round = |kb: f64| fmt_count(kb.ceil());
    let now = match hash_mem.work_mem {
        Some(w) => format!(" (the plan's Settings have work_mem {w})"),
        None => String::new(),
    };
    let (clause, needed) = match hash_mem.multiplier {
        Multiplier::FromSettings(m) => (
            format!(
                "with hash_mem_multiplier {} from the plan's Settings",
                show_multiplier(m)
            ),
            total_kb / m,
        ),
        Multiplier::VersionDefault {
            major,
            value,
            settings_listed,
        } => (
            format!(
                "with hash_mem_multiplier at PostgreSQL {major}'s default of {}{}",
                show_multiplier(value),
                if settings_listed {
                    " (the plan's Settings do not change it)"
                } else {
                    " (the plan lists no Settings, so the default is assumed)"
                }
            ),
            total_kb / value,
        ),
        Multiplier::Unknown => {
            return (
                format!(
                    "A hash table may grow to work_mem × hash_mem_multiplier before it splits into \
                     batches, and this one needed about {} kB in all. The plan says neither its \
                     hash_mem_multiplier nor its server version: at the default of 2 (PostgreSQL \
                     15 on) raise work_mem for this query to roughly {} kB, at 1 (13 and 14) to \
                     roughly {} kB, so the join runs in one batch{now}",
                    round(total_kb),
                    round(total_kb / 2.0),
                    round(total_kb),
                ),
                None,
            );
        }
    };
    (
        format!(
            "A hash table may grow to work_mem × hash_mem_multiplier before it splits into batches, \
             and this one needed about {} kB in all; {clause}, raise work_mem for this query to \
             roughly {} kB so the join runs in one batch{now}",
            round(total_kb),
            round(needed),
        ),
        Some(needed),
    )
}

fn spill_findings(
    findings: &mut Vec<Finding>,
    id: NodeId,
    node: &Node,
    metrics: &PlanMetrics,
    hash_mem: &HashMem,
) {
    let m = &metrics.nodes[id];
    if let Some(spill) = sort_spill(node, m) {
        let used = spill.disk_kb.unwrap_or(0.0);
        let temp = temp_blocks(id, metrics);
        let method = spill.method.as_deref().unwrap_or("external");
        let place = match worker_entries(node).count() {
            0 => String::new(),
            all if spill.workers > 0 => format!(" in {} of {all} workers", spill.workers),
            _ => String::new(),
        };
        let size = match spill.disk_kb {
            Some(kb) => format!("{} kB on disk", fmt_count(kb)),
            None => "size on disk not reported".to_owned(),
        };
        findings.push(Finding {
            kind: FindingKind::SortSpill,
            severity: Severity::Warning,
            node: Some(id),
            message: format!(
                "{}: the sort spilled to disk ({method}{place}, {size}, {} temp blocks)",
                node_label(node),
                fmt_count(temp)
            ),
            hint: if used > 0.0 {
                format!(
                    "Raise work_mem for this query above about {} kB (an in-memory sort needs more than the \
                     on-disk size), or give it an index that returns rows already in order",
                    fmt_count((used * 2.0).ceil())
                )
            } else {
                "Raise work_mem for this query, or give it an index that returns rows already in order"
                    .to_owned()
            },
            evidence: vec![
                ("sort_space_used_kb", used),
                ("temp_blocks", temp),
                ("workers_spilled", spill.workers as f64),
            ],
        });
    }
    let batches = hash_batches(node);
    if node.node_type == "Hash" && (batches > 1.0 || own_temp_written(m) > 0.0) {
        let peak = node.peak_memory_usage_kb.unwrap_or(0.0);
        let (hint, work_mem_kb) = hash_batches_hint(peak * batches, hash_mem);
        let mut evidence = vec![
            ("hash_batches", batches),
            ("peak_memory_usage_kb", peak),
            ("temp_blocks", temp_blocks(id, metrics)),
        ];
        if let Some(m) = hash_mem.multiplier.value() {
            evidence.push(("hash_mem_multiplier", m));
        }
        if let Some(kb) = work_mem_kb {
            evidence.push(("work_mem_needed_kb", kb.ceil()));
        }
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
            hint,
            evidence,
        });
    }
    if let Some((agg_batches, disk)) = hash_aggregate_spill(node, m) {
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
            evidence: vec![
                ("hashagg_batches", agg_batches),
                ("disk_usage_kb", disk),
                ("temp_blocks", temp_blocks(id, metrics)),
            ],
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

/// The part of a node's cost that no work explains: its total minus what its children cost it
/// (a Nested Loop pays its inner side once per outer row, the outer side's estimated rows),
/// minus a generous bound on its own work, one cost unit per row it handles × log2 of them (the
/// default per-row costs are 0.01 and less; a sort's comparisons grow as n log n). What is
/// left is the disable_cost penalty, when there is one: an aggregate over 1e30 estimated rows
/// legitimately costs far more than 1e10 of its own.
fn unexplained_cost(plan: &Plan, id: NodeId) -> Option<f64> {
    let node = &plan.nodes[id];
    let total = node.total_cost?;
    let mut children = 0.0;
    let mut rows = node.plan_rows.unwrap_or(0.0);
    let outer_rows = node
        .children
        .iter()
        .map(|&c| &plan.nodes[c])
        .find(|c| c.parent_relationship.as_deref() == Some("Outer"))
        .and_then(|c| c.plan_rows)
        .unwrap_or(1.0)
        .max(1.0);
    for &c in &node.children {
        let child = &plan.nodes[c];
        let cost = child.total_cost.unwrap_or(0.0);
        match child.parent_relationship.as_deref() {
            // Run per row of the parent: how many times is not reported. Its penalty is the
            // child's, never the parent's own.
            Some("SubPlan") if cost >= DISABLE_COST => return Some(0.0),
            Some("Inner") if node.node_type == "Nested Loop" => {
                children += cost * outer_rows;
                rows += child.plan_rows.unwrap_or(0.0) * outer_rows;
            }
            _ => {
                children += cost;
                rows += child.plan_rows.unwrap_or(0.0);
            }
        }
    }
    let work = rows * rows.max(2.0).log2();
    Some(total - children - work)
}

fn disabled(findings: &mut Vec<Finding>, id: NodeId, plan: &Plan) {
    let node = &plan.nodes[id];
    // PostgreSQL 18 says so. Before 18 the only trace is disable_cost added to the node's cost,
    // which every ancestor's cost then includes: the node to report is the one whose own cost
    // (its total minus its children's) carries the penalty, a leaf (a Seq Scan) or a node with
    // children (a Sort forced by ORDER BY while enable_sort is off).
    let flagged = node.disabled == Some(true);
    // A leaf's cost is all its own. For a node with children, half the penalty is enough: a
    // join's children are charged their full cost per outer row, more than a cheap rescan
    // really costs.
    let penalised = node.disabled.is_none()
        && if node.children.is_empty() {
            node.total_cost.is_some_and(|c| c >= DISABLE_COST)
        } else {
            unexplained_cost(plan, id).is_some_and(|c| c >= DISABLE_COST / 2.0)
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{measure, parse_plan};

    fn findings(json: &str) -> Vec<Finding> {
        findings_on(json, None)
    }

    fn findings_on(json: &str, major: Option<u32>) -> Vec<Finding> {
        let plan = parse_plan(json).unwrap();
        find(&plan, &measure(&plan), major)
    }

    #[test]
    fn a_hint_quotes_a_short_condition_whole_and_a_long_one_by_its_start() {
        let short = "(t.a = 1) AND (t.b = ANY ('{1,2,3}'::integer[]))";
        assert_eq!(quoted(short), short);
        // Exactly at the limit, counted in characters: still whole.
        let at_limit = "é".repeat(QUOTED_CONDITION_MAX_CHARS);
        assert_eq!(quoted(&at_limit), at_limit.as_str());

        let long: String = (0..10_000).map(|i| format!("(t.id = {i}) OR ")).collect();
        let q = quoted(&long);
        assert!(q.starts_with("(t.id = 0) OR (t.id = 1) OR "), "{q}");
        assert!(
            q.ends_with(&format!(
                " … [{} characters in all: the node's condition]",
                fmt_count(long.len() as f64)
            )),
            "{q}"
        );
        assert!(q.chars().count() < 300, "{}", q.len());
        // Cut on a character boundary in text of multi-byte characters.
        let wide = "é".repeat(5_000);
        assert!(quoted(&wide).starts_with(&"é".repeat(200)));
    }

    #[test]
    fn a_long_filter_is_quoted_short_in_the_hint() {
        let filter: String = (0..20_000)
            .map(|i| format!("(t.id = {i})"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let json = format!(
            r#"[{{"Plan": {{"Node Type": "Index Scan", "Relation Name": "t", "Schema": "public",
            "Alias": "t", "Index Name": "t_pkey", "Plan Rows": 10, "Actual Rows": 10,
            "Actual Loops": 1, "Filter": "{filter}", "Rows Removed by Filter": 99990}}}}]"#
        );
        let found = findings(&json);
        let f = found
            .iter()
            .find(|f| f.kind == FindingKind::FilterRemovesMostRows)
            .expect("the filter finding");
        assert!(f.hint.len() < 1_500, "{}", f.hint.len());
        assert_eq!(f.hint.matches("characters in all").count(), 2, "{}", f.hint);
    }

    /// The work_mem advice for a hash join in batches divides the memory it needed by
    /// hash_mem_multiplier: the plan's own setting, else the version's default, and says which.
    #[test]
    fn hash_batch_advice_divides_by_hash_mem_multiplier() {
        let plan = |settings: &str| {
            format!(
                r#"{{"Plan": {{"Node Type": "Hash Join", "Join Type": "Inner", "Plan Rows": 10,
                "Actual Startup Time": 1, "Actual Total Time": 9, "Actual Rows": 10, "Actual Loops": 1,
                "Plans": [
                  {{"Node Type": "Seq Scan", "Relation Name": "a", "Plan Rows": 10,
                    "Actual Startup Time": 1, "Actual Total Time": 2, "Actual Rows": 10, "Actual Loops": 1}},
                  {{"Node Type": "Hash", "Plan Rows": 10, "Actual Startup Time": 1,
                    "Actual Total Time": 2, "Actual Rows": 10, "Actual Loops": 1,
                    "Hash Buckets": 1024, "Original Hash Buckets": 1024, "Hash Batches": 8,
                    "Original Hash Batches": 8, "Peak Memory Usage": 100,
                    "Plans": [{{"Node Type": "Seq Scan", "Relation Name": "b", "Plan Rows": 10,
                      "Actual Startup Time": 1, "Actual Total Time": 2, "Actual Rows": 10,
                      "Actual Loops": 1}}]}}]}},
                "Settings": {{{settings}}}}}"#
            )
        };
        let hash = |json: &str, major| {
            findings_on(json, major)
                .into_iter()
                .find(|f| f.kind == FindingKind::HashBatches)
                .unwrap()
        };
        let evidence =
            |f: &Finding, key: &str| f.evidence.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        // 100 kB peak × 8 batches = 800 kB; at the plan's multiplier of 4, work_mem 200 kB.
        let f = hash(
            &plan(r#""hash_mem_multiplier": "4", "work_mem": "64kB""#),
            Some(16),
        );
        assert!(
            f.hint.contains(
                "needed about 800 kB in all; with hash_mem_multiplier 4 from the plan's Settings, \
                 raise work_mem for this query to roughly 200 kB so the join runs in one batch \
                 (the plan's Settings have work_mem 64kB)"
            ),
            "{}",
            f.hint
        );
        assert_eq!(evidence(&f, "hash_mem_multiplier"), Some(4.0));
        assert_eq!(evidence(&f, "work_mem_needed_kb"), Some(200.0));
        // Settings listed without the multiplier: the version's default, 2 on 15+, 1 on 13-14.
        let f = hash(&plan(r#""work_mem": "64kB""#), Some(15));
        assert!(
            f.hint.contains(
                "with hash_mem_multiplier at PostgreSQL 15's default of 2 (the plan's Settings do \
                 not change it), raise work_mem for this query to roughly 400 kB"
            ),
            "{}",
            f.hint
        );
        let f = hash(&plan(""), Some(14));
        assert!(
            f.hint.contains(
                "with hash_mem_multiplier at PostgreSQL 14's default of 1 (the plan lists no \
                 Settings, so the default is assumed), raise work_mem for this query to roughly \
                 800 kB"
            ),
            "{}",
            f.hint
        );
        // A saved plan from an unknown server: both defaults, neither figure claimed as the one.
        let f = hash(&plan(""), None);
        assert!(
            f.hint.contains(
                "at the default of 2 (PostgreSQL 15 on) raise work_mem for this query to roughly \
                 400 kB, at 1 (13 and 14) to roughly 800 kB"
            ),
            "{}",
            f.hint
        );
        assert_eq!(evidence(&f, "hash_mem_multiplier"), None);
    }

    #[test]
    fn an_exact_bitmap_whose_recheck_removes_most_rows_is_a_finding() {
        let plan = |removed: u32| {
            format!(
                r#"{{"Plan": {{"Node Type": "Bitmap Heap Scan", "Relation Name": "docs",
                "Plan Rows": 100, "Actual Startup Time": 1, "Actual Total Time": 9,
                "Actual Rows": 100, "Actual Loops": 1, "Exact Heap Blocks": 500,
                "Lossy Heap Blocks": 0, "Rows Removed by Index Recheck": {removed},
                "Plans": [{{"Node Type": "Bitmap Index Scan", "Index Name": "docs_body_gin",
                "Plan Rows": 100, "Actual Startup Time": 1, "Actual Total Time": 1,
                "Actual Rows": 5000, "Actual Loops": 1}}]}}}}"#
            )
        };
        let found = findings(&plan(4900));
        let f = found
            .iter()
            .find(|f| f.kind == FindingKind::LossyBitmap)
            .unwrap();
        assert!(
            f.message.contains("the index recheck removes most rows"),
            "{}",
            f.message
        );
        assert!(!f.hint.contains("Raise work_mem"), "{}", f.hint);
        // A few rows rechecked away is no finding.
        assert!(
            !findings(&plan(20))
                .iter()
                .any(|f| f.kind == FindingKind::LossyBitmap)
        );
    }

    #[test]
    fn a_hash_aggregate_that_spilled_in_a_worker_is_a_finding() {
        let found = findings(
            r#"{"Plan": {"Node Type": "Aggregate", "Strategy": "Hashed", "Plan Rows": 10,
            "Actual Startup Time": 1, "Actual Total Time": 9, "Actual Rows": 10, "Actual Loops": 3,
            "HashAgg Batches": 1, "Workers": [{"Worker Number": 0, "HashAgg Batches": 5,
            "Disk Usage": 1024}]}}"#,
        );
        let f = found
            .iter()
            .find(|f| f.kind == FindingKind::HashAggregateSpill)
            .unwrap();
        assert!(
            f.message.contains("5 batches, 1,024 kB on disk"),
            "{}",
            f.message
        );
    }
}
