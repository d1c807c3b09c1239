//! The JSON contract: wire types for every command's `--format json`, built from the core's
//! values. Field names carry their units; figures the server did not report are `null`, never 0.
//! Changing a field's meaning or removing one bumps [`SCHEMA_VERSION`]; adding one does not.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::plan::diff::Pair;
use crate::plan::{Analysis, Buffers, Comparison, Finding, Node, NodeId};

/// The version of the JSON documents pgplan writes.
pub const SCHEMA_VERSION: u32 = 1;

/// `pgplan explain --format json`.
#[derive(Debug, Serialize)]
pub struct ExplainDoc {
    pub schema_version: u32,
    #[serde(flatten)]
    pub plan: PlanDoc,
}

/// One analysed plan, as `explain` writes it and as `diff` and `compare` embed it.
#[derive(Debug, Serialize)]
pub struct PlanDoc {
    /// Whether the plan has measured figures (EXPLAIN ANALYZE) or estimates only.
    pub analyzed: bool,
    /// Whether buffer counters were reported.
    pub buffers: bool,
    pub planning_ms: Option<f64>,
    pub execution_ms: Option<f64>,
    pub totals: TotalsDoc,
    /// The `Planning` buffer counters (BUFFERS, PostgreSQL 13+), or null.
    pub planning_buffers: Option<BuffersDoc>,
    /// `Query Text`, when the plan came from auto_explain.
    pub query_text: Option<String>,
    /// `Settings` (EXPLAIN's SETTINGS option).
    pub settings: Map<String, Value>,
    pub triggers: Vec<TriggerDoc>,
    pub nodes: Vec<NodeDoc>,
    pub findings: Vec<FindingDoc>,
    /// Top-level keys of the EXPLAIN output that pgplan does not model (JIT, Serialization...).
    pub other: Map<String, Value>,
}

/// A set of buffer counters, as EXPLAIN reports them.
#[derive(Debug, Serialize)]
pub struct BuffersDoc {
    pub shared_hit_blocks: f64,
    pub shared_read_blocks: f64,
    pub shared_dirtied_blocks: f64,
    pub shared_written_blocks: f64,
    pub local_hit_blocks: f64,
    pub local_read_blocks: f64,
    pub local_dirtied_blocks: f64,
    pub local_written_blocks: f64,
    pub temp_read_blocks: f64,
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

#[derive(Debug, Serialize)]
pub struct TotalsDoc {
    pub pages_touched: Option<f64>,
    /// Pages read from outside shared buffers (shared read blocks).
    pub pages_read: Option<f64>,
    pub shared_hit_blocks: Option<f64>,
    pub shared_read_blocks: Option<f64>,
    pub shared_dirtied_blocks: Option<f64>,
    pub shared_written_blocks: Option<f64>,
    pub temp_blocks: Option<f64>,
    pub io_ms: Option<f64>,
    pub planning_pages_touched: Option<f64>,
    /// The root's estimated cost and rows.
    pub total_cost: Option<f64>,
    pub estimated_rows: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct TriggerDoc {
    pub name: String,
    pub relation: Option<String>,
    pub time_ms: Option<f64>,
    pub calls: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct NodeDoc {
    pub id: NodeId,
    pub parent: Option<NodeId>,
    pub node_type: String,
    /// The name EXPLAIN's text format uses ("Parallel Seq Scan", "HashAggregate").
    pub display_type: String,
    pub parent_relationship: Option<String>,
    pub subplan_name: Option<String>,
    pub relation: Option<String>,
    pub schema: Option<String>,
    pub alias: Option<String>,
    pub index: Option<String>,
    pub cte_name: Option<String>,
    pub function_name: Option<String>,
    pub join_type: Option<String>,
    /// Aggregate or SetOp `Strategy` (Plain, Sorted, Hashed, Mixed).
    pub strategy: Option<String>,
    pub partial_mode: Option<String>,
    pub scan_direction: Option<String>,
    /// ModifyTable `Operation`.
    pub operation: Option<String>,
    pub parallel_aware: bool,
    pub async_capable: Option<bool>,
    pub startup_cost: Option<f64>,
    pub total_cost: Option<f64>,
    pub plan_width: Option<f64>,
    /// `Plan Rows`: estimated rows per loop.
    pub estimated_rows: Option<f64>,
    /// `Actual Rows`: rows per loop, as reported (two decimals from PostgreSQL 18 on).
    pub actual_rows: Option<f64>,
    pub loops: Option<f64>,
    pub never_executed: bool,
    /// Per loop, as reported; null under TIMING OFF and for a node that never ran.
    pub actual_startup_ms: Option<f64>,
    pub actual_total_ms: Option<f64>,
    /// Null under TIMING OFF and for a node that never ran (not run is not fast).
    pub inclusive_ms: Option<f64>,
    pub exclusive_ms: Option<f64>,
    pub actual_rows_total: Option<f64>,
    pub estimated_rows_total: Option<f64>,
    /// Rows the node handled over all loops: returned, plus removed by its own filters.
    pub rows_handled: Option<f64>,
    pub rows_removed_by_filter_total: Option<f64>,
    pub rows_removed_by_join_filter_total: Option<f64>,
    pub rows_removed_by_index_recheck_total: Option<f64>,
    pub heap_fetches: Option<f64>,
    pub exact_heap_blocks: Option<f64>,
    pub lossy_heap_blocks: Option<f64>,
    pub index_searches: Option<f64>,
    /// Buffer counters as reported: totals over all loops, including children.
    pub shared_hit_blocks: Option<f64>,
    pub shared_read_blocks: Option<f64>,
    pub shared_dirtied_blocks: Option<f64>,
    pub shared_written_blocks: Option<f64>,
    pub local_hit_blocks: Option<f64>,
    pub local_read_blocks: Option<f64>,
    pub local_dirtied_blocks: Option<f64>,
    pub local_written_blocks: Option<f64>,
    pub temp_read_blocks: Option<f64>,
    pub temp_written_blocks: Option<f64>,
    /// The same counters for this node alone (its children's subtracted).
    pub exclusive_shared_hit_blocks: Option<f64>,
    pub exclusive_shared_read_blocks: Option<f64>,
    pub exclusive_shared_dirtied_blocks: Option<f64>,
    pub exclusive_shared_written_blocks: Option<f64>,
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
    pub wal_records: Option<f64>,
    pub wal_full_page_images: Option<f64>,
    pub wal_bytes: Option<f64>,
    /// Actual against estimated rows per loop, ≥ 1; null when the node did not run.
    pub misestimate_factor: Option<f64>,
    /// "under" (more rows than estimated) or "over"; null when actual rows equal the estimate.
    pub misestimate_direction: Option<&'static str>,
    pub disabled: Option<bool>,
    pub workers_planned: Option<f64>,
    pub workers_launched: Option<f64>,
    pub sort_method: Option<String>,
    pub sort_space_used_kb: Option<f64>,
    pub sort_space_type: Option<String>,
    pub hash_buckets: Option<f64>,
    pub original_hash_buckets: Option<f64>,
    pub hash_batches: Option<f64>,
    pub original_hash_batches: Option<f64>,
    pub peak_memory_usage_kb: Option<f64>,
    /// A hash aggregate's `HashAgg Batches` and `Disk Usage` (PostgreSQL 13+).
    pub hashagg_batches: Option<f64>,
    pub disk_usage_kb: Option<f64>,
    pub filter: Option<String>,
    pub join_filter: Option<String>,
    pub index_cond: Option<String>,
    pub recheck_cond: Option<String>,
    pub hash_cond: Option<String>,
    pub merge_cond: Option<String>,
    pub output: Vec<String>,
    /// Every key of the node that pgplan does not model, as the server sent it.
    pub other: Map<String, Value>,
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

/// Named figures as a JSON object; a value that is not a finite number becomes null.
pub fn evidence_map(evidence: &[(&'static str, f64)]) -> Map<String, Value> {
    evidence
        .iter()
        .map(|(k, v)| ((*k).to_owned(), number(*v)))
        .collect()
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn node_doc(id: NodeId, node: &Node, analysis: &Analysis) -> NodeDoc {
    let m = &analysis.metrics.nodes[id];
    let b = node.buffers;
    let xb = m.exclusive_buffers;
    let ran = node.actual.filter(|a| a.loops > 0.0);
    NodeDoc {
        id,
        parent: node.parent,
        node_type: node.node_type.clone(),
        display_type: node.display_type(),
        parent_relationship: node.parent_relationship.clone(),
        subplan_name: node.subplan_name.clone(),
        relation: node.relation_name.clone(),
        schema: node.schema.clone(),
        alias: node.alias.clone(),
        index: node.index_name.clone(),
        cte_name: node.cte_name.clone(),
        function_name: node.function_name.clone(),
        join_type: node.join_type.clone(),
        strategy: node.strategy.clone(),
        partial_mode: node.partial_mode.clone(),
        scan_direction: node.scan_direction.clone(),
        operation: node.operation.clone(),
        parallel_aware: node.parallel_aware,
        async_capable: node.async_capable,
        startup_cost: node.startup_cost,
        total_cost: node.total_cost,
        plan_width: node.plan_width,
        estimated_rows: node.plan_rows,
        actual_rows: node.actual.map(|a| a.rows),
        loops: node.actual.map(|a| a.loops),
        never_executed: m.never_executed,
        // A node that never ran reports zeros: not a measurement.
        actual_startup_ms: ran.and_then(|a| a.startup_ms),
        actual_total_ms: ran.and_then(|a| a.total_ms),
        inclusive_ms: m.inclusive_ms,
        exclusive_ms: m.exclusive_ms,
        actual_rows_total: m.actual_rows_total,
        estimated_rows_total: m.estimated_rows_total,
        rows_handled: m.rows_handled,
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
        sort_method: node.sort_method.clone(),
        sort_space_used_kb: node.sort_space_used_kb,
        sort_space_type: node.sort_space_type.clone(),
        hash_buckets: node.hash_buckets,
        original_hash_buckets: node.original_hash_buckets,
        hash_batches: node.hash_batches,
        original_hash_batches: node.original_hash_batches,
        peak_memory_usage_kb: node.peak_memory_usage_kb,
        hashagg_batches: node.hashagg_batches,
        disk_usage_kb: node.disk_usage_kb,
        filter: node.filter.clone(),
        join_filter: node.join_filter.clone(),
        index_cond: node.index_cond.clone(),
        recheck_cond: node.recheck_cond.clone(),
        hash_cond: node.hash_cond.clone(),
        merge_cond: node.merge_cond.clone(),
        output: node.output.clone(),
        other: node.extra.clone(),
    }
}

impl PlanDoc {
    pub fn new(analysis: &Analysis) -> Self {
        let plan = &analysis.plan;
        let t = &analysis.metrics.totals;
        PlanDoc {
            analyzed: plan.is_analyzed(),
            buffers: plan.has_buffers(),
            planning_ms: plan.planning_ms,
            execution_ms: plan.execution_ms,
            planning_buffers: plan.planning_buffers.as_ref().map(BuffersDoc::from),
            totals: TotalsDoc {
                pages_touched: t.pages_touched,
                pages_read: t.pages_read,
                shared_hit_blocks: t.shared_hit_blocks,
                shared_read_blocks: t.shared_read_blocks,
                shared_dirtied_blocks: t.shared_dirtied_blocks,
                shared_written_blocks: t.shared_written_blocks,
                temp_blocks: t.temp_blocks,
                io_ms: t.io_ms,
                planning_pages_touched: t.planning_pages_touched,
                total_cost: t.total_cost,
                estimated_rows: t.estimated_rows,
            },
            query_text: plan.query_text.clone(),
            settings: plan
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
            triggers: plan
                .triggers
                .iter()
                .map(|t| TriggerDoc {
                    name: t.name.clone(),
                    relation: t.relation.clone(),
                    time_ms: t.time_ms,
                    calls: t.calls,
                })
                .collect(),
            nodes: plan
                .nodes
                .iter()
                .enumerate()
                .map(|(id, n)| node_doc(id, n, analysis))
                .collect(),
            findings: analysis.findings.iter().map(FindingDoc::from).collect(),
            other: plan.extra.clone(),
        }
    }
}

impl ExplainDoc {
    pub fn new(analysis: &Analysis) -> Self {
        ExplainDoc {
            schema_version: SCHEMA_VERSION,
            plan: PlanDoc::new(analysis),
        }
    }
}

/// A figure before and after, with after / before.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PairDoc {
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub ratio: Option<f64>,
}

impl From<Pair> for PairDoc {
    fn from(p: Pair) -> Self {
        PairDoc {
            before: p.before,
            after: p.after,
            ratio: p.ratio(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct DiffTotalsDoc {
    pub execution_ms: PairDoc,
    pub planning_ms: PairDoc,
    pub pages_touched: PairDoc,
    pub shared_hit_blocks: PairDoc,
    pub shared_read_blocks: PairDoc,
    pub temp_blocks: PairDoc,
    pub io_ms: PairDoc,
    /// The root's estimated cost and rows.
    pub total_cost: PairDoc,
    pub estimated_rows: PairDoc,
}

#[derive(Debug, Serialize)]
pub struct ChangeDoc {
    pub kind: &'static str,
    pub before_node: Option<NodeId>,
    pub after_node: Option<NodeId>,
    pub relation: Option<String>,
    pub message: String,
    /// The figure that changed, when the change is about a figure.
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// `pgplan diff --format json`; `compare` embeds it whole as each candidate's `diff`.
#[derive(Debug, Serialize)]
pub struct DiffDoc {
    pub schema_version: u32,
    pub before: PlanDoc,
    pub after: PlanDoc,
    pub totals: DiffTotalsDoc,
    pub changes: Vec<ChangeDoc>,
}

impl DiffDoc {
    pub fn new(comparison: &Comparison) -> Self {
        let t = &comparison.diff.totals;
        DiffDoc {
            schema_version: SCHEMA_VERSION,
            before: PlanDoc::new(&comparison.before),
            after: PlanDoc::new(&comparison.after),
            totals: DiffTotalsDoc {
                execution_ms: t.execution_ms.into(),
                planning_ms: t.planning_ms.into(),
                pages_touched: t.pages_touched.into(),
                shared_hit_blocks: t.shared_hit_blocks.into(),
                shared_read_blocks: t.shared_read_blocks.into(),
                temp_blocks: t.temp_blocks.into(),
                io_ms: t.io_ms.into(),
                total_cost: t.total_cost.into(),
                estimated_rows: t.estimated_rows.into(),
            },
            changes: comparison
                .diff
                .changes
                .iter()
                .map(|c| ChangeDoc {
                    kind: c.kind.as_str(),
                    before_node: c.before_node,
                    after_node: c.after_node,
                    relation: c.relation.clone(),
                    message: c.message.clone(),
                    before: c.figure.and_then(|f| f.before),
                    after: c.figure.and_then(|f| f.after),
                })
                .collect(),
        }
    }
}
