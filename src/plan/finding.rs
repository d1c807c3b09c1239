//! What a finding is: its kind, its severity, the node it concerns, its message, evidence and
//! fix. The rules live in `findings.rs`, which runs `jit.rs`'s among its own; `jit.rs` takes the
//! types from here, so the two do not import each other.

use serde::Serialize;

use super::model::NodeId;

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
    /// JIT compilation took a large share of the run (`plan::jit`).
    JitOverhead,
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
            FindingKind::JitOverhead => "jit_overhead",
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
