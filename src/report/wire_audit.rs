//! The JSON contract of `pgplan audit --format json`: nodes, findings (database, check, severity,
//! object, message, evidence, fix), skipped checks and notes. Figures the server did not report
//! are `null`, never 0; evidence names carry their units. `database` on findings and skipped
//! checks came with multi-database runs: an addition, which did not change `schema_version`.

use std::io;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::audit::snapshot::PrivilegeGap;
use crate::audit::{AuditReport, Confidence, Finding, NodeSummary, NodeUsage, Severity};

use super::wire::SCHEMA_VERSION;

#[derive(Debug, Serialize)]
pub struct AuditDoc {
    pub schema_version: u32,
    pub nodes: Vec<AuditNodeDoc>,
    pub findings: Vec<AuditFindingDoc>,
    pub skipped: Vec<SkippedDoc>,
    /// Facts about combining the nodes (clusters that differ, standbys not audited).
    pub notes: Vec<String>,
    pub summary: SummaryDoc,
}

#[derive(Debug, Serialize)]
pub struct AuditNodeDoc {
    /// The redacted conninfo.
    pub name: String,
    /// "primary" or "standby"; null when the node could not be read.
    pub role: Option<&'static str>,
    pub server_version: Option<String>,
    /// The database the node was read from, or, when it could not be read, the one it was
    /// asked for.
    pub database: Option<String>,
    /// Since when its counters have been counting (ISO 8601), on the best evidence available.
    pub stats_since: Option<String>,
    /// Where `stats_since` comes from: database_reset (15+), database_counters_started (before
    /// 15: a reset or the counters' creation), statistics_discarded, database_created,
    /// server_start.
    pub stats_since_source: Option<&'static str>,
    pub counting_window_seconds: Option<f64>,
    /// True when the database may be younger than the window (15+, no reset recorded, creation
    /// time not readable by the role): unused-index findings then stay informational.
    pub counting_window_upper_bound: Option<bool>,
    /// Why the node could not be read.
    pub error: Option<String>,
    /// Why its figures were left out (a different cluster or database).
    pub excluded: Option<String>,
    pub privileges_missing: Vec<PrivilegeGap>,
}

#[derive(Debug, Serialize)]
pub struct AuditFindingDoc {
    /// The database whose audit found it.
    pub database: String,
    /// unused_index, invalid_index, duplicate_index, redundant_index, missing_fk_index,
    /// dead_tuples, stale_statistics, visibility_map, index_bloat, table_bloat, xmin_horizon,
    /// replication_slot, xid_wraparound.
    pub check: &'static str,
    pub severity: &'static str,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub index: Option<String>,
    pub message: String,
    pub evidence: Map<String, Value>,
    /// The SQL that fixes it; null when nothing should be run.
    pub fix: Option<String>,
    /// The node the finding is about (sessions, slots); null for cluster-wide objects.
    pub node: Option<String>,
    /// Per-node index usage (unused_index).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<NodeUsage>,
    /// How far an estimate can be trusted (bloat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// The other checks' reasons for the same index (one finding per index, the strongest
    /// reason first): `check`, `severity`, `message`, `fix`.
    pub also: Vec<ReasonDoc>,
    /// The object's size (index or table from `relpages`, a slot's retained WAL), which orders
    /// findings of a kind; null when not known.
    pub object_size_bytes: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct ReasonDoc {
    pub check: &'static str,
    pub severity: &'static str,
    pub message: String,
    pub fix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SkippedDoc {
    /// The database whose audit skipped it.
    pub database: String,
    pub check: &'static str,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct SummaryDoc {
    pub critical: usize,
    pub warning: usize,
    pub info: usize,
    pub nodes_failed: usize,
    /// Nodes read but left out of the combined audit (another cluster's system identifier).
    pub nodes_excluded: usize,
}

fn node_doc(n: &NodeSummary) -> AuditNodeDoc {
    AuditNodeDoc {
        name: n.name.clone(),
        role: n.role.map(|r| r.as_str()),
        server_version: n.server_version.clone(),
        database: n.database.clone(),
        stats_since: n.window.map(|w| w.since.iso()),
        stats_since_source: n.window.map(|w| w.source.as_str()),
        counting_window_seconds: n.window.map(|w| w.seconds()),
        counting_window_upper_bound: n.window.map(|w| w.upper_bound),
        error: n.error.clone(),
        excluded: n.excluded.clone(),
        privileges_missing: n.privileges_missing.clone(),
    }
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn finding_doc(f: &Finding) -> AuditFindingDoc {
    AuditFindingDoc {
        database: f.database.clone(),
        check: f.check.as_str(),
        severity: f.severity.as_str(),
        schema: f.schema.clone(),
        table: f.table.clone(),
        index: f.index.clone(),
        message: f.message.clone(),
        evidence: f
            .evidence
            .iter()
            .map(|(k, v)| (k.clone(), number(*v)))
            .collect(),
        fix: f.fix.clone(),
        node: f.node.clone(),
        usage: f.usage.clone(),
        confidence: f.confidence.clone(),
        also: f
            .also
            .iter()
            .map(|r| ReasonDoc {
                check: r.check.as_str(),
                severity: r.severity.as_str(),
                message: r.message.clone(),
                fix: r.fix.clone(),
            })
            .collect(),
        object_size_bytes: f.object_size_bytes,
    }
}

/// The report as its JSON document.
pub fn audit_doc(report: &AuditReport) -> AuditDoc {
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    AuditDoc {
        schema_version: SCHEMA_VERSION,
        nodes: report.nodes.iter().map(node_doc).collect(),
        findings: report.findings.iter().map(finding_doc).collect(),
        skipped: report
            .skipped
            .iter()
            .map(|s| SkippedDoc {
                database: s.database.clone(),
                check: s.check.as_str(),
                reason: s.reason.clone(),
            })
            .collect(),
        notes: report.notes.clone(),
        summary: SummaryDoc {
            critical: count(Severity::Critical),
            warning: count(Severity::Warning),
            info: count(Severity::Info),
            nodes_failed: report.nodes.iter().filter(|n| n.error.is_some()).count(),
            nodes_excluded: report.nodes.iter().filter(|n| n.excluded.is_some()).count(),
        },
    }
}

/// `pgplan audit --format json`.
pub fn write_audit_json(out: &mut dyn io::Write, report: &AuditReport) -> io::Result<()> {
    super::write_json(out, &audit_doc(report))
}
