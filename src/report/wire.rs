//! The JSON contract: wire types for every command's `--format json`, built from the core's
//! values. Field names carry their units; figures the server did not report are `null`, never 0.
//! Changing a field's meaning or removing one bumps [`SCHEMA_VERSION`]; adding one does not.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::plan::diff::{ChangeKind, Pair};
use crate::plan::{Analysis, Buffers, Comparison, Extras, Finding, Node, NodeId};

/// The version of the JSON documents pgplan writes (`audit`, `info`; the plan documents have
/// [`PLAN_SCHEMA_VERSION`]).
/// 2: counts (rows, loops, blocks, sizes in kB, workers, ...) are JSON integers, as PostgreSQL
/// reports them, not `1.0`; rows stay decimal where the server wrote decimals (18's per-loop
/// `Actual Rows`).
pub const SCHEMA_VERSION: u32 = 2;

/// The version of `explain`'s and `diff`'s JSON (and of the plans and diffs `compare` embeds).
/// 2: as [`SCHEMA_VERSION`] 2.
/// 3: each figure once: a plan's `totals` keep only what no node reports (`pages_touched`,
/// `temp_blocks`, `io_ms`, `planning_pages_touched`); the root's buffers, cost and rows are
/// `nodes[0]`'s, and `pages_read` (the same number as `shared_read_blocks`) is gone. A diff's
/// `totals` of before, after and ratio became `ratios` (after ÷ before): before and after are
/// the `before` and `after` documents' own figures.
pub const PLAN_SCHEMA_VERSION: u32 = 3;

/// Writes a count as a JSON integer. PostgreSQL reports counters (blocks, loops, rows before 18,
/// workers, kB) as integers and row estimates rounded to whole numbers, so a typed reader (Go's
/// `int64`, serde's `u64`) can take them as they are. A whole number beyond 2^64 (a row
/// estimate may reach 1e100) has no integer type to go to and is written in exponent form, as is
/// a fraction (none is expected).
pub fn count<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    let v = *value;
    if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
        s.serialize_u64(v as u64)
    } else {
        s.serialize_f64(v)
    }
}

/// [`count`] of a figure that may be missing (null).
pub fn count_opt<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => count(v, s),
        None => s.serialize_none(),
    }
}

/// A row figure, written as the server wrote the node's `Actual Rows`: an integer before
/// PostgreSQL 18, a decimal from 18 on, where rows per loop carry two decimals (and totals
/// derived from them may be fractional too).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rows {
    pub value: Option<f64>,
    /// The server wrote the rows with decimals.
    pub decimal: bool,
}

impl Serialize for Rows {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.value {
            None => s.serialize_none(),
            Some(v) if self.decimal => s.serialize_f64(v),
            Some(v) => count(&v, s),
        }
    }
}

/// `pgplan explain --format json`.
#[derive(Debug, Serialize)]
pub struct ExplainDoc<'a> {
    pub schema_version: u32,
    #[serde(flatten)]
    pub plan: PlanDoc<'a>,
}

/// One analysed plan, as `explain` writes it and as `diff` and `compare` embed it.
#[derive(Debug, Serialize)]
pub struct PlanDoc<'a> {
    /// Whether the plan has measured figures (EXPLAIN ANALYZE) or estimates only.
    pub analyzed: bool,
    /// Whether buffer counters were reported.
    pub buffers: bool,
    /// `true` when the plan is a subtree (a TEXT plan pasted from its middle: its first line a
    /// child's `->`); left out otherwise, so that every other plan's document is unchanged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub subtree: bool,
    pub planning_ms: Option<f64>,
    pub execution_ms: Option<f64>,
    pub totals: TotalsDoc,
    /// The `Planning` buffer counters (BUFFERS, PostgreSQL 13+), or null.
    pub planning_buffers: Option<BuffersDoc>,
    /// `Query Text`, when the plan came from auto_explain.
    pub query_text: Option<&'a str>,
    /// `Settings` (EXPLAIN's SETTINGS option), an object of strings in the server's order.
    pub settings: SettingsDoc<'a>,
    pub triggers: Vec<TriggerDoc<'a>>,
    /// Every node, each made as it is written: a large plan's nodes are never all held twice.
    pub nodes: NodesDoc<'a>,
    pub findings: Vec<FindingDoc>,
    /// Top-level keys of the EXPLAIN output that pgplan does not model (JIT, Serialization...).
    pub other: &'a Map<String, Value>,
}

/// `Settings` as a JSON object of strings.
#[derive(Debug)]
pub struct SettingsDoc<'a>(&'a [(String, String)]);

impl Serialize for SettingsDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// The plan's nodes in pre-order, each turned into its [`NodeDoc`] while it is serialized.
#[derive(Debug)]
pub struct NodesDoc<'a>(&'a Analysis);

impl Serialize for NodesDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let analysis = self.0;
        s.collect_seq(
            analysis
                .plan
                .nodes
                .iter()
                .enumerate()
                .map(|(id, node)| node_doc(id, node, analysis)),
        )
    }
}

/// A set of buffer counters, as EXPLAIN reports them.
#[derive(Debug, Serialize)]
pub struct BuffersDoc {
    #[serde(serialize_with = "count")]
    pub shared_hit_blocks: f64,
    #[serde(serialize_with = "count")]
    pub shared_read_blocks: f64,
    #[serde(serialize_with = "count")]
    pub shared_dirtied_blocks: f64,
    #[serde(serialize_with = "count")]
    pub shared_written_blocks: f64,
    #[serde(serialize_with = "count")]
    pub local_hit_blocks: f64,
    #[serde(serialize_with = "count")]
    pub local_read_blocks: f64,
    #[serde(serialize_with = "count")]
    pub local_dirtied_blocks: f64,
    #[serde(serialize_with = "count")]
    pub local_written_blocks: f64,
    #[serde(serialize_with = "count")]
    pub temp_read_blocks: f64,
    #[serde(serialize_with = "count")]
    pub temp_written_blocks: f64,
}

impl From<&Buffers> for BuffersDoc {
    fn from(b: &Buffers) -> Self {
        BuffersDoc {
            shared_hit_blocks: b.shared_hit_blocks,
            shared_read_blocks: b.shared_read_blocks,
            shared_dirtied_blocks: b.shared_dirtied_blocks,
            shared_written_blocks: b.shared_written_blocks,
            local_hit_blocks: b.local_hit_blocks,
            local_read_blocks: b.local_read_blocks,
            local_dirtied_blocks: b.local_dirtied_blocks,
            local_written_blocks: b.local_written_blocks,
            temp_read_blocks: b.temp_read_blocks,
            temp_written_blocks: b.temp_written_blocks,
        }
    }
}

/// The plan's figures that no node reports as such. The root's own counters (its buffers, cost
/// and estimated rows, which include every node below it) are in `nodes[0]`, once.
#[derive(Debug, Serialize)]
pub struct TotalsDoc {
    /// Shared buffers hit plus read, over the whole plan (the root's counters).
    #[serde(serialize_with = "count_opt")]
    pub pages_touched: Option<f64>,
    /// Temp blocks read plus written, over the whole plan.
    #[serde(serialize_with = "count_opt")]
    pub temp_blocks: Option<f64>,
    /// Every I/O time the root reports, added up.
    pub io_ms: Option<f64>,
    /// Planning's shared buffers hit plus read.
    #[serde(serialize_with = "count_opt")]
    pub planning_pages_touched: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct TriggerDoc<'a> {
    /// Null when a TEXT plan without VERBOSE named only the constraint.
    pub name: Option<&'a str>,
    /// The constraint a constraint trigger enforces (a foreign key's).
    pub constraint: Option<&'a str>,
    pub relation: Option<&'a str>,
    pub time_ms: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub calls: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct NodeDoc<'a> {
    pub id: NodeId,
    pub parent: Option<NodeId>,
    pub node_type: &'a str,
    /// The name EXPLAIN's text format uses ("Parallel Seq Scan", "HashAggregate").
    pub display_type: String,
    pub parent_relationship: Option<&'a str>,
    pub subplan_name: Option<&'a str>,
    pub relation: Option<&'a str>,
    pub schema: Option<&'a str>,
    pub alias: Option<&'a str>,
    pub index: Option<&'a str>,
    pub cte_name: Option<&'a str>,
    pub function_name: Option<&'a str>,
    pub join_type: Option<&'a str>,
    /// Aggregate or SetOp `Strategy` (Plain, Sorted, Hashed, Mixed).
    pub strategy: Option<&'a str>,
    pub partial_mode: Option<&'a str>,
    pub scan_direction: Option<&'a str>,
    /// ModifyTable `Operation`.
    pub operation: Option<&'a str>,
    pub parallel_aware: bool,
    pub async_capable: Option<bool>,
    pub startup_cost: Option<f64>,
    pub total_cost: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub plan_width: Option<f64>,
    /// `Plan Rows`: estimated rows per loop.
    #[serde(serialize_with = "count_opt")]
    pub estimated_rows: Option<f64>,
    /// `Actual Rows`: rows per loop, as reported (two decimals from PostgreSQL 18 on).
    pub actual_rows: Rows,
    #[serde(serialize_with = "count_opt")]
    pub loops: Option<f64>,
    pub never_executed: bool,
    /// Per loop, as reported; null under TIMING OFF and for a node that never ran.
    pub actual_startup_ms: Option<f64>,
    pub actual_total_ms: Option<f64>,
    /// Null under TIMING OFF and for a node that never ran (not run is not fast).
    pub inclusive_ms: Option<f64>,
    pub exclusive_ms: Option<f64>,
    pub actual_rows_total: Rows,
    #[serde(serialize_with = "count_opt")]
    pub estimated_rows_total: Option<f64>,
    /// Rows the node handled over all loops: returned, plus removed by its own filters.
    pub rows_handled: Rows,
    #[serde(serialize_with = "count_opt")]
    pub rows_removed_by_filter_total: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub rows_removed_by_join_filter_total: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub rows_removed_by_index_recheck_total: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub heap_fetches: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub exact_heap_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub lossy_heap_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub index_searches: Option<f64>,
    /// Buffer counters as reported: totals over all loops, including children.
    #[serde(serialize_with = "count_opt")]
    pub shared_hit_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub shared_read_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub shared_dirtied_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub shared_written_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub local_hit_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub local_read_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub local_dirtied_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub local_written_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub temp_read_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub temp_written_blocks: Option<f64>,
    /// The same counters for this node alone (its children's subtracted).
    #[serde(serialize_with = "count_opt")]
    pub exclusive_shared_hit_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub exclusive_shared_read_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub exclusive_shared_dirtied_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub exclusive_shared_written_blocks: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub exclusive_temp_blocks: Option<f64>,
    /// Shared I/O timings (`I/O Read/Write Time`, `Shared I/O Read/Write Time` from 17).
    pub io_read_ms: Option<f64>,
    pub io_write_ms: Option<f64>,
    /// Local I/O timings (PostgreSQL 17+).
    pub local_io_read_ms: Option<f64>,
    pub local_io_write_ms: Option<f64>,
    /// Temp I/O timings (PostgreSQL 15+).
    pub temp_io_read_ms: Option<f64>,
    pub temp_io_write_ms: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub wal_records: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub wal_full_page_images: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub wal_bytes: Option<f64>,
    /// Actual against estimated rows per loop, ≥ 1; null when the node did not run.
    pub misestimate_factor: Option<f64>,
    /// "under" (more rows than estimated) or "over"; null when actual rows equal the estimate.
    pub misestimate_direction: Option<&'static str>,
    pub disabled: Option<bool>,
    #[serde(serialize_with = "count_opt")]
    pub workers_planned: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub workers_launched: Option<f64>,
    pub sort_method: Option<&'a str>,
    #[serde(serialize_with = "count_opt")]
    pub sort_space_used_kb: Option<f64>,
    pub sort_space_type: Option<&'a str>,
    #[serde(serialize_with = "count_opt")]
    pub hash_buckets: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub original_hash_buckets: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub hash_batches: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub original_hash_batches: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub peak_memory_usage_kb: Option<f64>,
    /// A hash aggregate's `HashAgg Batches` and `Disk Usage` (PostgreSQL 13+).
    #[serde(serialize_with = "count_opt")]
    pub hashagg_batches: Option<f64>,
    #[serde(serialize_with = "count_opt")]
    pub disk_usage_kb: Option<f64>,
    pub filter: Option<&'a str>,
    pub join_filter: Option<&'a str>,
    pub index_cond: Option<&'a str>,
    pub recheck_cond: Option<&'a str>,
    pub hash_cond: Option<&'a str>,
    pub merge_cond: Option<&'a str>,
    pub output: &'a [String],
    /// Every key of the node that pgplan does not model, as the server sent it.
    pub other: &'a Extras,
}

#[derive(Debug, Serialize)]
pub struct FindingDoc {
    pub kind: &'static str,
    pub severity: &'static str,
    pub node: Option<NodeId>,
    pub message: String,
    pub hint: String,
    pub evidence: Map<String, Value>,
}

impl From<&Finding> for FindingDoc {
    fn from(f: &Finding) -> Self {
        FindingDoc {
            kind: f.kind.as_str(),
            severity: f.severity.as_str(),
            node: f.node,
            message: f.message.clone(),
            hint: f.hint.clone(),
            evidence: evidence_map(&f.evidence),
        }
    }
}

/// Named figures as a JSON object: a whole number as an integer (most evidence is counts:
/// rows, loops, pages), a fraction as a decimal; a value that is not a finite number becomes
/// null.
pub fn evidence_map(evidence: &[(&'static str, f64)]) -> Map<String, Value> {
    evidence
        .iter()
        .map(|(k, v)| ((*k).to_owned(), number(*v)))
        .collect()
}

fn number(v: f64) -> Value {
    if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
        return Value::from(v as u64);
    }
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn node_doc<'a>(id: NodeId, node: &'a Node, analysis: &'a Analysis) -> NodeDoc<'a> {
    let m = &analysis.metrics.nodes[id];
    let b = node.buffers;
    let xb = m.exclusive_buffers;
    let ran = node.actual.filter(|a| a.loops > 0.0);
    let decimal = node.actual.is_some_and(|a| a.rows_decimal);
    let rows = |value| Rows { value, decimal };
    NodeDoc {
        id,
        parent: node.parent,
        node_type: &node.node_type,
        display_type: node.display_type(),
        parent_relationship: node.parent_relationship.as_deref(),
        subplan_name: node.subplan_name.as_deref(),
        relation: node.relation_name.as_deref(),
        schema: node.schema.as_deref(),
        alias: node.alias.as_deref(),
        index: node.index_name.as_deref(),
        cte_name: node.cte_name.as_deref(),
        function_name: node.function_name.as_deref(),
        join_type: node.join_type.as_deref(),
        strategy: node.strategy.as_deref(),
        partial_mode: node.partial_mode.as_deref(),
        scan_direction: node.scan_direction.as_deref(),
        operation: node.operation.as_deref(),
        parallel_aware: node.parallel_aware,
        async_capable: node.async_capable,
        startup_cost: node.startup_cost,
        total_cost: node.total_cost,
        plan_width: node.plan_width,
        estimated_rows: node.plan_rows,
        actual_rows: rows(node.actual.map(|a| a.rows)),
        loops: node.actual.map(|a| a.loops),
        never_executed: m.never_executed,
        // A node that never ran reports zeros: not a measurement.
        actual_startup_ms: ran.and_then(|a| a.startup_ms),
        actual_total_ms: ran.and_then(|a| a.total_ms),
        inclusive_ms: m.inclusive_ms,
        exclusive_ms: m.exclusive_ms,
        actual_rows_total: rows(m.actual_rows_total),
        estimated_rows_total: m.estimated_rows_total,
        rows_handled: rows(m.rows_handled),
        rows_removed_by_filter_total: m.rows_removed_by_filter_total,
        rows_removed_by_join_filter_total: m.rows_removed_by_join_filter_total,
        rows_removed_by_index_recheck_total: m.rows_removed_by_index_recheck_total,
        heap_fetches: node.heap_fetches,
        exact_heap_blocks: node.exact_heap_blocks,
        lossy_heap_blocks: node.lossy_heap_blocks,
        index_searches: node.index_searches,
        shared_hit_blocks: b.map(|b| b.shared_hit_blocks),
        shared_read_blocks: b.map(|b| b.shared_read_blocks),
        shared_dirtied_blocks: b.map(|b| b.shared_dirtied_blocks),
        shared_written_blocks: b.map(|b| b.shared_written_blocks),
        local_hit_blocks: b.map(|b| b.local_hit_blocks),
        local_read_blocks: b.map(|b| b.local_read_blocks),
        local_dirtied_blocks: b.map(|b| b.local_dirtied_blocks),
        local_written_blocks: b.map(|b| b.local_written_blocks),
        temp_read_blocks: b.map(|b| b.temp_read_blocks),
        temp_written_blocks: b.map(|b| b.temp_written_blocks),
        exclusive_shared_hit_blocks: xb.map(|b| b.shared_hit_blocks),
        exclusive_shared_read_blocks: xb.map(|b| b.shared_read_blocks),
        exclusive_shared_dirtied_blocks: xb.map(|b| b.shared_dirtied_blocks),
        exclusive_shared_written_blocks: xb.map(|b| b.shared_written_blocks),
        exclusive_temp_blocks: xb.map(|b| b.temp_blocks()),
        io_read_ms: node.io.shared_read_ms,
        io_write_ms: node.io.shared_write_ms,
        local_io_read_ms: node.io.local_read_ms,
        local_io_write_ms: node.io.local_write_ms,
        temp_io_read_ms: node.io.temp_read_ms,
        temp_io_write_ms: node.io.temp_write_ms,
        wal_records: node.wal.and_then(|w| w.records),
        wal_full_page_images: node.wal.and_then(|w| w.full_page_images),
        wal_bytes: node.wal.and_then(|w| w.bytes),
        misestimate_factor: m.misestimate.map(|e| e.factor),
        misestimate_direction: m.misestimate.and_then(|e| e.direction).map(|d| match d {
            crate::plan::metrics::Direction::Under => "under",
            crate::plan::metrics::Direction::Over => "over",
        }),
        disabled: node.disabled,
        workers_planned: node.workers_planned,
        workers_launched: node.workers_launched,
        sort_method: node.sort_method.as_deref(),
        sort_space_used_kb: node.sort_space_used_kb,
        sort_space_type: node.sort_space_type.as_deref(),
        hash_buckets: node.hash_buckets,
        original_hash_buckets: node.original_hash_buckets,
        hash_batches: node.hash_batches,
        original_hash_batches: node.original_hash_batches,
        peak_memory_usage_kb: node.peak_memory_usage_kb,
        hashagg_batches: node.hashagg_batches,
        disk_usage_kb: node.disk_usage_kb,
        filter: node.filter.as_deref(),
        join_filter: node.join_filter.as_deref(),
        index_cond: node.index_cond.as_deref(),
        recheck_cond: node.recheck_cond.as_deref(),
        hash_cond: node.hash_cond.as_deref(),
        merge_cond: node.merge_cond.as_deref(),
        output: &node.output,
        other: &node.extra,
    }
}

impl<'a> PlanDoc<'a> {
    pub fn new(analysis: &'a Analysis) -> Self {
        let plan = &analysis.plan;
        let t = &analysis.metrics.totals;
        PlanDoc {
            analyzed: plan.is_analyzed(),
            buffers: plan.has_buffers(),
            subtree: plan.subtree,
            planning_ms: plan.planning_ms,
            execution_ms: plan.execution_ms,
            planning_buffers: plan.planning_buffers.as_ref().map(BuffersDoc::from),
            totals: TotalsDoc {
                pages_touched: t.pages_touched,
                temp_blocks: t.temp_blocks,
                io_ms: t.io_ms,
                planning_pages_touched: t.planning_pages_touched,
            },
            query_text: plan.query_text.as_deref(),
            settings: SettingsDoc(&plan.settings),
            triggers: plan
                .triggers
                .iter()
                .map(|t| TriggerDoc {
                    name: t.name.as_deref(),
                    constraint: t.constraint.as_deref(),
                    relation: t.relation.as_deref(),
                    time_ms: t.time_ms,
                    calls: t.calls,
                })
                .collect(),
            nodes: NodesDoc(analysis),
            findings: analysis.findings.iter().map(FindingDoc::from).collect(),
            other: &plan.extra,
        }
    }
}

impl<'a> ExplainDoc<'a> {
    pub fn new(analysis: &'a Analysis) -> Self {
        ExplainDoc {
            schema_version: PLAN_SCHEMA_VERSION,
            plan: PlanDoc::new(analysis),
        }
    }
}

/// A figure before and after, with after / before.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PairDoc {
    #[serde(serialize_with = "figure")]
    pub before: (Option<f64>, bool),
    #[serde(serialize_with = "figure")]
    pub after: (Option<f64>, bool),
    pub ratio: Option<f64>,
}

/// A figure that is a count (an integer) or a measurement (a decimal).
fn figure<S: Serializer>(value: &(Option<f64>, bool), s: S) -> Result<S::Ok, S::Error> {
    match value {
        (v, true) => count_opt(v, s),
        (v, false) => v.serialize(s),
    }
}

impl PairDoc {
    /// A pair of counts (pages, blocks, rows): integers, as PostgreSQL reports them.
    pub fn count(p: Pair) -> Self {
        PairDoc {
            before: (p.before, true),
            after: (p.after, true),
            ratio: p.ratio(),
        }
    }
}

/// A pair of measurements (milliseconds, costs).
impl From<Pair> for PairDoc {
    fn from(p: Pair) -> Self {
        PairDoc {
            before: (p.before, false),
            after: (p.after, false),
            ratio: p.ratio(),
        }
    }
}

/// After ÷ before for the figures a diff is judged by; null when either is missing or before
/// is zero. The figures themselves are in the `before` and `after` documents (`execution_ms`,
/// `planning_ms`, `totals`, and the root, `nodes[0]`, for its buffers, cost and rows).
#[derive(Debug, Serialize)]
pub struct DiffRatiosDoc {
    pub execution_ms: Option<f64>,
    pub planning_ms: Option<f64>,
    pub pages_touched: Option<f64>,
    pub shared_hit_blocks: Option<f64>,
    pub shared_read_blocks: Option<f64>,
    pub temp_blocks: Option<f64>,
    pub io_ms: Option<f64>,
    /// The root's estimated cost and rows.
    pub total_cost: Option<f64>,
    pub estimated_rows: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct ChangeDoc<'a> {
    pub kind: &'static str,
    pub before_node: Option<NodeId>,
    pub after_node: Option<NodeId>,
    pub relation: Option<&'a str>,
    pub message: &'a str,
    /// The figure that changed, when the change is about a figure: a count (integer), or for
    /// an estimate error the factor (decimal).
    #[serde(serialize_with = "figure")]
    pub before: (Option<f64>, bool),
    #[serde(serialize_with = "figure")]
    pub after: (Option<f64>, bool),
}

/// `pgplan diff --format json`; `compare` embeds it whole as each candidate's `diff`.
#[derive(Debug, Serialize)]
pub struct DiffDoc<'a> {
    pub schema_version: u32,
    pub before: PlanDoc<'a>,
    pub after: PlanDoc<'a>,
    pub ratios: DiffRatiosDoc,
    pub changes: Vec<ChangeDoc<'a>>,
}

impl<'a> DiffDoc<'a> {
    pub fn new(comparison: &'a Comparison) -> Self {
        let t = &comparison.diff.totals;
        DiffDoc {
            schema_version: PLAN_SCHEMA_VERSION,
            before: PlanDoc::new(&comparison.before),
            after: PlanDoc::new(&comparison.after),
            ratios: DiffRatiosDoc {
                execution_ms: t.execution_ms.ratio(),
                planning_ms: t.planning_ms.ratio(),
                pages_touched: t.pages_touched.ratio(),
                shared_hit_blocks: t.shared_hit_blocks.ratio(),
                shared_read_blocks: t.shared_read_blocks.ratio(),
                temp_blocks: t.temp_blocks.ratio(),
                io_ms: t.io_ms.ratio(),
                total_cost: t.total_cost.ratio(),
                estimated_rows: t.estimated_rows.ratio(),
            },
            changes: comparison
                .diff
                .changes
                .iter()
                .map(|c| {
                    let is_count = !matches!(
                        c.kind,
                        ChangeKind::EstimateErrorAppeared | ChangeKind::EstimateErrorVanished
                    );
                    ChangeDoc {
                        kind: c.kind.as_str(),
                        before_node: c.before_node,
                        after_node: c.after_node,
                        relation: c.relation.as_deref(),
                        message: &c.message,
                        before: (c.figure.and_then(|f| f.before), is_count),
                        after: (c.figure.and_then(|f| f.after), is_count),
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;

    /// Every field that holds a count, as PostgreSQL reports it: an integer.
    const NODE_COUNTS: &[&str] = &[
        "plan_width",
        "estimated_rows",
        "loops",
        "estimated_rows_total",
        "rows_removed_by_filter_total",
        "rows_removed_by_join_filter_total",
        "rows_removed_by_index_recheck_total",
        "heap_fetches",
        "exact_heap_blocks",
        "lossy_heap_blocks",
        "index_searches",
        "shared_hit_blocks",
        "shared_read_blocks",
        "shared_dirtied_blocks",
        "shared_written_blocks",
        "local_hit_blocks",
        "local_read_blocks",
        "local_dirtied_blocks",
        "local_written_blocks",
        "temp_read_blocks",
        "temp_written_blocks",
        "exclusive_shared_hit_blocks",
        "exclusive_shared_read_blocks",
        "exclusive_shared_dirtied_blocks",
        "exclusive_shared_written_blocks",
        "exclusive_temp_blocks",
        "wal_records",
        "wal_full_page_images",
        "wal_bytes",
        "workers_planned",
        "workers_launched",
        "sort_space_used_kb",
        "hash_buckets",
        "original_hash_buckets",
        "hash_batches",
        "original_hash_batches",
        "peak_memory_usage_kb",
        "hashagg_batches",
        "disk_usage_kb",
    ];
    const TOTAL_COUNTS: &[&str] = &["pages_touched", "temp_blocks", "planning_pages_touched"];
    /// Rows: integers before PostgreSQL 18, decimals from 18 on, where the server writes
    /// `Actual Rows` with two decimals.
    const ROWS: &[&str] = &["actual_rows", "actual_rows_total", "rows_handled"];

    fn fixtures() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut out = Vec::new();
        for dir in ["plans", "story", "advise"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".json") {
                    out.push((name, std::fs::read_to_string(&path).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    /// An integer, or a whole number beyond 2^64 (a huge row estimate), which JSON's integer
    /// types cannot hold and is written in exponent form.
    fn is_integer(value: &Value) -> bool {
        value.is_null()
            || value.is_u64()
            || value
                .as_f64()
                .is_some_and(|v| v >= 18_446_744_073_709_551_616.0 && v.fract() == 0.0)
    }

    /// Whether each node's `Actual Rows` was written with decimals, in pre-order.
    fn collect_rows(node: &Value, out: &mut Vec<bool>) {
        if let Some(rows) = node.get("Actual Rows") {
            out.push(rows.is_f64());
        }
        for child in node["Plans"].as_array().into_iter().flatten() {
            collect_rows(child, out);
        }
    }

    #[test]
    fn a_subtree_says_so_and_a_whole_plan_is_unchanged() {
        let doc = |text: &str| {
            let plan = crate::plan::read_plan(text, None).unwrap().plan;
            serde_json::to_value(ExplainDoc::new(&Analysis::of(plan))).unwrap()
        };
        let cost = "(cost=0.00..1.00 rows=1 width=4)";
        assert_eq!(
            doc(&format!("->  Seq Scan on t  {cost}\n"))["subtree"],
            true
        );
        assert!(
            doc(&format!("Seq Scan on t  {cost}\n"))
                .get("subtree")
                .is_none()
        );
    }

    #[test]
    fn counts_are_integers_and_18s_rows_stay_decimal() {
        let mut fractional_rows_seen = 0;
        let fixtures = fixtures();
        assert!(fixtures.len() > 100, "{} fixtures", fixtures.len());
        for (name, json) in &fixtures {
            let analysis = Analysis::of(parse_plan(json).unwrap());
            let doc = serde_json::to_value(ExplainDoc::new(&analysis)).unwrap();
            assert_eq!(doc["schema_version"], PLAN_SCHEMA_VERSION);
            for key in TOTAL_COUNTS {
                assert!(is_integer(&doc["totals"][key]), "{name}: totals.{key}");
            }
            if let Some(planning) = doc["planning_buffers"].as_object() {
                for (key, value) in planning {
                    assert!(value.is_u64(), "{name}: planning_buffers.{key} = {value}");
                }
            }
            for trigger in doc["triggers"].as_array().unwrap() {
                assert!(is_integer(&trigger["calls"]), "{name}: {trigger}");
            }
            let from_18 = name.contains(".pg18.");
            // How the server wrote each node's Actual Rows, in pre-order: with decimals or not.
            let source: Option<Value> = serde_json::from_str(json).ok();
            let mut written_decimal = Vec::new();
            if let Some(source) = &source {
                let root = source.get(0).unwrap_or(source);
                collect_rows(&root["Plan"], &mut written_decimal);
            }
            for (i, node) in doc["nodes"].as_array().unwrap().iter().enumerate() {
                for key in NODE_COUNTS {
                    assert!(
                        is_integer(&node[key]),
                        "{name}: node {} {key} = {}",
                        node["id"],
                        node[key]
                    );
                }
                for key in ROWS {
                    let value = &node[key];
                    if value.is_null() {
                        continue;
                    }
                    // Before 18, always an integer; from 18 on, as the server wrote it (a node
                    // that never ran has "Actual Rows": 0).
                    let decimal = from_18 && written_decimal.get(i).copied().unwrap_or(true);
                    if from_18 && source.is_some() {
                        assert!(written_decimal.len() > i, "{name}: node {i}");
                    }
                    assert_eq!(
                        value.is_f64(),
                        decimal,
                        "{name}: node {} {key} = {value}",
                        node["id"]
                    );
                    if *key == "actual_rows" && value.as_f64().unwrap().fract() != 0.0 {
                        fractional_rows_seen += 1;
                    }
                }
            }
        }
        assert!(fractional_rows_seen > 0, "no 18 plan with fractional rows");
    }

    /// The serialized text itself: `"loops": 1`, not `1.0`; 18's `33266.67` as it was.
    #[test]
    fn counts_are_written_without_a_fraction() {
        let (_, json) = fixtures()
            .into_iter()
            .find(|(name, _)| name == "parallel_seq_scan_gather.pg18.json")
            .unwrap();
        let analysis = Analysis::of(parse_plan(&json).unwrap());
        let text = serde_json::to_string(&ExplainDoc::new(&analysis)).unwrap();
        assert!(text.contains(r#""loops":1,"#), "{text}");
        assert!(!text.contains(r#""loops":1.0"#), "{text}");
        assert!(!text.contains("_blocks\":0.0"), "{text}");
        let fraction = parse_plan(&json)
            .unwrap()
            .nodes
            .iter()
            .find_map(|n| n.actual.filter(|a| a.rows.fract() != 0.0).map(|a| a.rows));
        let rows = fraction.expect("a node with fractional rows");
        assert!(
            text.contains(&format!("\"actual_rows\":{rows}")),
            "{rows}: {text}"
        );
    }

    #[test]
    fn a_count_beyond_64_bits_is_still_a_number() {
        let mut out = Vec::new();
        count(&1e30, &mut serde_json::Serializer::new(&mut out)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "1e+30");
        let mut out = Vec::new();
        count(&9205.0, &mut serde_json::Serializer::new(&mut out)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "9205");
    }
}
