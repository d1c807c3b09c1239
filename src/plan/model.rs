//! The typed model of one PostgreSQL plan: nodes in pre-order with their figures as the server
//! reported them, and every key pgplan does not model kept beside them.
//!
//! Numbers are `f64` throughout: `Plan Rows` can exceed the range of a 64-bit integer (estimates
//! multiply), and from PostgreSQL 18 on `Actual Rows` carries two decimals. A figure the server
//! did not report is `None`, never zero.

use serde_json::{Map, Value};

use super::extra::Extras;

/// Index of a node in [`Plan::nodes`] (pre-order: root first, then each child's subtree in the
/// order of the `Plans` array).
pub type NodeId = usize;

/// One `EXPLAIN (FORMAT JSON)` result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Nodes in pre-order; `nodes[0]` is the root.
    pub nodes: Vec<Node>,
    /// `Planning Time` (SUMMARY, on by default with ANALYZE).
    pub planning_ms: Option<f64>,
    /// `Execution Time` (ANALYZE).
    pub execution_ms: Option<f64>,
    /// `Planning` buffers (BUFFERS, PostgreSQL 13+).
    pub planning_buffers: Option<Buffers>,
    /// `Triggers` fired by a data-modifying statement, with their time.
    pub triggers: Vec<Trigger>,
    /// `Settings` (the SETTINGS option): planner settings that differ from the built-in default.
    pub settings: Vec<(String, String)>,
    /// `Query Text`, present in auto_explain's output.
    pub query_text: Option<String>,
    /// Top-level keys pgplan does not model (`JIT`, `Serialization`, ...), in their order.
    pub extra: Map<String, Value>,
    /// Whether the plan is a subtree: a TEXT plan pasted from its middle (its first line a
    /// child's, `->  …`), so its root's parent and the statement's summary lines are missing.
    pub subtree: bool,
}

impl Plan {
    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// Whether the plan carries measured figures (EXPLAIN ANALYZE) rather than estimates only.
    pub fn is_analyzed(&self) -> bool {
        self.nodes.first().is_some_and(|n| n.actual.is_some())
    }

    /// Whether buffer counters were reported (BUFFERS, on by default with ANALYZE from 18 on).
    pub fn has_buffers(&self) -> bool {
        self.nodes.first().is_some_and(|n| n.buffers.is_some())
    }

    /// The children of `id`, in the order of its `Plans` array.
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        &self.nodes[id].children
    }
}

/// A trigger fired by the statement (`Triggers` array).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trigger {
    /// The trigger's name; `None` from a TEXT plan without VERBOSE, which names only the
    /// constraint of a constraint trigger ("Trigger for constraint orders_customer_id_fkey").
    pub name: Option<String>,
    /// The constraint a constraint trigger (a foreign key's, say) enforces.
    pub constraint: Option<String>,
    pub relation: Option<String>,
    pub time_ms: Option<f64>,
    pub calls: Option<f64>,
}

/// Measured figures of a node (EXPLAIN ANALYZE). Rows and times are per-loop averages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Actual {
    /// `Actual Startup Time`; `None` under `TIMING OFF` (or `auto_explain.log_timing = off`),
    /// which reports rows and loops but leaves the time keys out.
    pub startup_ms: Option<f64>,
    /// `Actual Total Time`; `None` under `TIMING OFF`.
    pub total_ms: Option<f64>,
    /// `Actual Rows`: average rows per loop. Rounded to a whole number before PostgreSQL 18.
    pub rows: f64,
    /// `Actual Loops`: how many times the node ran; for a parallel node, the number of
    /// processes that ran it. Zero means the node never ran ("never executed").
    pub loops: f64,
    /// Whether `Actual Rows` was written with decimals (PostgreSQL 18 on: "33266.67"), so that
    /// the JSON report writes rows as the server did, an integer before 18.
    pub rows_decimal: bool,
}

/// Buffer counters, as reported: totals over all loops, including the node's children.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Buffers {
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

impl Buffers {
    /// Shared buffers hit plus read: the pages the plan touched.
    pub fn pages_touched(&self) -> f64 {
        self.shared_hit_blocks + self.shared_read_blocks
    }

    pub fn temp_blocks(&self) -> f64 {
        self.temp_read_blocks + self.temp_written_blocks
    }

    /// Component-wise `self - other`, floored at zero.
    pub fn saturating_sub(&self, other: &Buffers) -> Buffers {
        let sub = |a: f64, b: f64| (a - b).max(0.0);
        Buffers {
            shared_hit_blocks: sub(self.shared_hit_blocks, other.shared_hit_blocks),
            shared_read_blocks: sub(self.shared_read_blocks, other.shared_read_blocks),
            shared_dirtied_blocks: sub(self.shared_dirtied_blocks, other.shared_dirtied_blocks),
            shared_written_blocks: sub(self.shared_written_blocks, other.shared_written_blocks),
            local_hit_blocks: sub(self.local_hit_blocks, other.local_hit_blocks),
            local_read_blocks: sub(self.local_read_blocks, other.local_read_blocks),
            local_dirtied_blocks: sub(self.local_dirtied_blocks, other.local_dirtied_blocks),
            local_written_blocks: sub(self.local_written_blocks, other.local_written_blocks),
            temp_read_blocks: sub(self.temp_read_blocks, other.temp_read_blocks),
            temp_written_blocks: sub(self.temp_written_blocks, other.temp_written_blocks),
        }
    }

    pub fn add(&mut self, other: &Buffers) {
        self.shared_hit_blocks += other.shared_hit_blocks;
        self.shared_read_blocks += other.shared_read_blocks;
        self.shared_dirtied_blocks += other.shared_dirtied_blocks;
        self.shared_written_blocks += other.shared_written_blocks;
        self.local_hit_blocks += other.local_hit_blocks;
        self.local_read_blocks += other.local_read_blocks;
        self.local_dirtied_blocks += other.local_dirtied_blocks;
        self.local_written_blocks += other.local_written_blocks;
        self.temp_read_blocks += other.temp_read_blocks;
        self.temp_written_blocks += other.temp_written_blocks;
    }
}

/// I/O timings (`track_io_timing`), in milliseconds. Before PostgreSQL 17 the shared figures were
/// called `I/O Read Time`/`I/O Write Time`; 17 renamed them and added local timings; temp timings
/// exist from 15 on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IoTimes {
    pub shared_read_ms: Option<f64>,
    pub shared_write_ms: Option<f64>,
    pub local_read_ms: Option<f64>,
    pub local_write_ms: Option<f64>,
    pub temp_read_ms: Option<f64>,
    pub temp_write_ms: Option<f64>,
}

impl IoTimes {
    /// All reported I/O time, or `None` when none was reported.
    pub fn total_ms(&self) -> Option<f64> {
        let parts = [
            self.shared_read_ms,
            self.shared_write_ms,
            self.local_read_ms,
            self.local_write_ms,
            self.temp_read_ms,
            self.temp_write_ms,
        ];
        parts.iter().flatten().copied().reduce(|a, b| a + b)
    }
}

/// WAL generated by the node (the WAL option).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Wal {
    pub records: Option<f64>,
    pub full_page_images: Option<f64>,
    pub bytes: Option<f64>,
}

/// One plan node with the figures the server reported for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    /// Distance from the root (root = 0).
    pub depth: usize,

    pub node_type: String,
    /// `Parent Relationship`: Outer, Inner, Member, Subquery, InitPlan, SubPlan.
    pub parent_relationship: Option<String>,
    /// `Subplan Name`, e.g. "InitPlan 1 (returns $0)" (before 17) or "InitPlan 1" (17+).
    pub subplan_name: Option<String>,
    pub parallel_aware: bool,
    pub async_capable: Option<bool>,
    pub relation_name: Option<String>,
    pub schema: Option<String>,
    pub alias: Option<String>,
    pub index_name: Option<String>,
    pub cte_name: Option<String>,
    pub function_name: Option<String>,
    pub join_type: Option<String>,
    /// Aggregate `Strategy` (Plain, Sorted, Hashed, Mixed) or SetOp strategy.
    pub strategy: Option<String>,
    pub partial_mode: Option<String>,
    pub scan_direction: Option<String>,
    /// ModifyTable `Operation` (Insert, Update, Delete, Merge).
    pub operation: Option<String>,

    pub startup_cost: Option<f64>,
    pub total_cost: Option<f64>,
    /// `Plan Rows`: estimated rows per loop.
    pub plan_rows: Option<f64>,
    pub plan_width: Option<f64>,
    /// `Disabled` (PostgreSQL 18+): the planner chose the node although its kind was disabled.
    pub disabled: Option<bool>,

    pub actual: Option<Actual>,
    /// Per-loop average, rounded to a whole number by the server.
    pub rows_removed_by_filter: Option<f64>,
    /// Per-loop average, rounded to a whole number by the server.
    pub rows_removed_by_join_filter: Option<f64>,
    /// Per-loop average, rounded to a whole number by the server.
    pub rows_removed_by_index_recheck: Option<f64>,
    /// Total over all loops.
    pub heap_fetches: Option<f64>,
    /// Total over all loops.
    pub exact_heap_blocks: Option<f64>,
    /// Total over all loops.
    pub lossy_heap_blocks: Option<f64>,
    /// `Index Searches` (PostgreSQL 18+), total over all loops.
    pub index_searches: Option<f64>,

    pub buffers: Option<Buffers>,
    pub io: IoTimes,
    pub wal: Option<Wal>,

    pub sort_method: Option<String>,
    pub sort_space_used_kb: Option<f64>,
    pub sort_space_type: Option<String>,
    pub hash_buckets: Option<f64>,
    pub original_hash_buckets: Option<f64>,
    pub hash_batches: Option<f64>,
    pub original_hash_batches: Option<f64>,
    pub peak_memory_usage_kb: Option<f64>,
    /// `HashAgg Batches` (PostgreSQL 13+: hash aggregation can spill).
    pub hashagg_batches: Option<f64>,
    /// `Disk Usage` of a spilled hash aggregate, in kB.
    pub disk_usage_kb: Option<f64>,
    pub workers_planned: Option<f64>,
    pub workers_launched: Option<f64>,

    pub filter: Option<String>,
    pub join_filter: Option<String>,
    pub index_cond: Option<String>,
    pub recheck_cond: Option<String>,
    pub hash_cond: Option<String>,
    pub merge_cond: Option<String>,
    pub output: Vec<String>,

    /// Keys pgplan does not model, kept in their order (`Sort Key`, `Workers`, `Cache Hits`, ...).
    pub extra: Extras,
}

impl Node {
    /// "Parallel Seq Scan", "HashAggregate", "Hash Left Join", ...: the name EXPLAIN's text
    /// format gives the node.
    pub fn display_type(&self) -> String {
        let join = self.join_type.as_deref().filter(|j| *j != "Inner");
        // Pieces joined in one allocation: every label and diff line starts here.
        let [a, b, c] = match (self.node_type.as_str(), self.strategy.as_deref(), join) {
            ("Aggregate", Some("Hashed"), _) => ["HashAggregate", "", ""],
            ("Aggregate", Some("Sorted"), _) => ["GroupAggregate", "", ""],
            ("Aggregate", Some("Mixed"), _) => ["MixedAggregate", "", ""],
            ("SetOp", Some("Hashed"), _) => ["HashSetOp", "", ""],
            ("ModifyTable", _, _) if self.operation.is_some() => {
                [self.operation.as_deref().unwrap_or_default(), "", ""]
            }
            ("Hash Join", _, Some(join)) => ["Hash ", join, " Join"],
            ("Merge Join", _, Some(join)) => ["Merge ", join, " Join"],
            ("Nested Loop", _, Some(join)) => ["Nested Loop ", join, " Join"],
            (other, _, _) => [other, "", ""],
        };
        let prefix = if self.parallel_aware { "Parallel " } else { "" };
        [prefix, a, b, c].concat()
    }

    /// The relation this node reads, schema-qualified when the schema is known.
    pub fn qualified_relation(&self) -> Option<String> {
        let rel = self.relation_name.as_deref()?;
        Some(match &self.schema {
            Some(schema) => format!("{schema}.{rel}"),
            None => rel.to_owned(),
        })
    }

    /// Whether the node ran at all. `None` for estimate-only plans.
    pub fn executed(&self) -> Option<bool> {
        self.actual.map(|a| a.loops > 0.0)
    }

    /// A scan of a table, index or other relation (anything with a `Relation Name`, plus the
    /// scans that read an index without naming the table).
    pub fn is_scan(&self) -> bool {
        self.relation_name.is_some() || self.node_type.ends_with("Scan")
    }

    pub fn is_join(&self) -> bool {
        matches!(
            self.node_type.as_str(),
            "Nested Loop" | "Hash Join" | "Merge Join"
        )
    }
}
