//! The JSON contract of `pgplan audit --format json`: nodes, findings (database, check, severity,
//! object, message, evidence, fix), skipped checks and notes. Figures the server did not report
//! are `null`, never 0; evidence names carry their units. `database` on findings and skipped
//! checks came with multi-database runs, and the session checks (advisory_lock,
//! idle_in_transaction, lock_queue, connection_pressure, prepared_transaction, recovery_conflict)
//! came later: additions, which did not change `schema_version`.

use std::io;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::audit::snapshot::PrivilegeGap;
use crate::audit::{AuditReport, Confidence, Finding, NodeSummary, NodeUsage, Reason, Severity};

use super::wire::SCHEMA_VERSION;

/// The document borrows from the report it describes: at fleet scale (50,000 findings) a copy
/// of every string would double the memory and the time the output takes.
#[derive(Debug, Serialize)]
pub struct AuditDoc<'a> {
    pub schema_version: u32,
    pub nodes: Vec<AuditNodeDoc<'a>>,
    pub findings: FindingsDoc<'a>,
    pub skipped: Vec<SkippedDoc<'a>>,
    /// Facts about combining the nodes (clusters that differ, standbys not audited).
    pub notes: &'a [String],
    pub summary: SummaryDoc,
}

#[derive(Debug, Serialize)]
pub struct AuditNodeDoc<'a> {
    /// The redacted conninfo.
    pub name: &'a str,
    /// "primary" or "standby"; null when the node could not be read.
    pub role: Option<&'static str>,
    pub server_version: Option<&'a str>,
    /// The database the node was read from, or, when it could not be read, the one it was
    /// asked for.
    pub database: Option<&'a str>,
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
    pub error: Option<&'a str>,
    /// Why its figures were left out (a different cluster or database).
    pub excluded: Option<&'a str>,
    pub privileges_missing: &'a [PrivilegeGap],
}

#[derive(Debug, Serialize)]
pub struct AuditFindingDoc<'a> {
    /// The database whose audit found it.
    pub database: &'a str,
    /// unused_index, invalid_index, duplicate_index, redundant_index, missing_fk_index,
    /// dead_tuples, stale_statistics, visibility_map, index_bloat, table_bloat, xmin_horizon,
    /// replication_slot, xid_wraparound, advisory_lock, idle_in_transaction, lock_queue,
    /// connection_pressure, prepared_transaction, recovery_conflict.
    pub check: &'static str,
    pub severity: &'static str,
    pub schema: Option<&'a str>,
    pub table: Option<&'a str>,
    pub index: Option<&'a str>,
    pub message: &'a str,
    pub evidence: EvidenceDoc<'a>,
    /// The SQL that fixes it; null when nothing should be run.
    pub fix: Option<&'a str>,
    /// duplicate_index and redundant_index: the index that stays in this one's place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_index: Option<&'a str>,
    /// The node the finding is about (sessions, slots); null for cluster-wide objects.
    pub node: Option<&'a str>,
    /// Per-node index usage (unused_index).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub usage: &'a [NodeUsage],
    /// How far an estimate can be trusted (bloat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<&'a Confidence>,
    /// The other checks' reasons for the same index (one finding per index, the strongest
    /// reason first): `check`, `severity`, `message`, `fix`.
    pub also: ReasonsDoc<'a>,
    /// The object's size (index or table from `relpages`, a slot's retained WAL), which orders
    /// findings of a kind; null when not known.
    pub object_size_bytes: Option<i64>,
}

/// A finding's named figures as a JSON object, in their order: a whole number as an integer
/// (most evidence is counts: rows, scans, bytes), a fraction as a decimal, and a figure that is
/// not a finite number as `null`. A name given twice keeps its first place and its last value,
/// as a map would.
#[derive(Debug)]
pub struct EvidenceDoc<'a>(&'a [(&'static str, f64)]);

impl Serialize for EvidenceDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (i, (name, _)) in self.0.iter().enumerate() {
            if self.0[..i].iter().any(|(earlier, _)| earlier == name) {
                continue;
            }
            let value = self
                .0
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v);
            match value.filter(|v| v.is_finite()) {
                Some(v) if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) => {
                    map.serialize_entry(name, &(v as u64))?
                }
                figure => map.serialize_entry(name, &figure)?,
            }
        }
        map.end()
    }
}

/// The findings, each turned into its document as it is written: at fleet scale a vector of
/// 40,000 documents would add 10 MB at the command's peak, when the report is all there is.
#[derive(Debug)]
pub struct FindingsDoc<'a>(&'a [Finding]);

impl Serialize for FindingsDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(finding_doc))
    }
}

/// A finding's other reasons, the same way.
#[derive(Debug)]
pub struct ReasonsDoc<'a>(&'a [Reason]);

impl Serialize for ReasonsDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|r| ReasonDoc {
            check: r.check.as_str(),
            severity: r.severity.as_str(),
            message: &r.message,
            fix: r.fix.as_deref(),
            kept_index: r.kept_index.as_deref(),
        }))
    }
}

#[derive(Debug, Serialize)]
pub struct ReasonDoc<'a> {
    pub check: &'static str,
    pub severity: &'static str,
    pub message: &'a str,
    pub fix: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_index: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub struct SkippedDoc<'a> {
    /// The database whose audit skipped it.
    pub database: &'a str,
    pub check: &'static str,
    pub reason: &'a str,
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

fn node_doc(n: &NodeSummary) -> AuditNodeDoc<'_> {
    AuditNodeDoc {
        name: &n.name,
        role: n.role.map(|r| r.as_str()),
        server_version: n.server_version.as_deref(),
        database: n.database.as_deref(),
        stats_since: n.window.map(|w| w.since.iso()),
        stats_since_source: n.window.map(|w| w.source.as_str()),
        counting_window_seconds: n.window.map(|w| w.seconds()),
        counting_window_upper_bound: n.window.map(|w| w.upper_bound),
        error: n.error.as_deref(),
        excluded: n.excluded.as_deref(),
        privileges_missing: &n.privileges_missing,
    }
}

fn finding_doc(f: &Finding) -> AuditFindingDoc<'_> {
    AuditFindingDoc {
        database: &f.database,
        check: f.check.as_str(),
        severity: f.severity.as_str(),
        schema: f.schema.as_deref(),
        table: f.table.as_deref(),
        index: f.index.as_deref(),
        message: &f.message,
        evidence: EvidenceDoc(&f.evidence),
        fix: f.fix.as_deref(),
        kept_index: f.kept_index.as_deref(),
        node: f.node.as_deref(),
        usage: &f.usage,
        confidence: f.confidence.as_deref(),
        also: ReasonsDoc(&f.also),
        object_size_bytes: f.object_size_bytes,
    }
}

/// The report as its JSON document.
pub fn audit_doc(report: &AuditReport) -> AuditDoc<'_> {
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    AuditDoc {
        schema_version: SCHEMA_VERSION,
        nodes: report.nodes.iter().map(node_doc).collect(),
        findings: FindingsDoc(&report.findings),
        skipped: report
            .skipped
            .iter()
            .map(|s| SkippedDoc {
                database: &s.database,
                check: s.check.as_str(),
                reason: &s.reason,
            })
            .collect(),
        notes: &report.notes,
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

#[cfg(test)]
mod tests {
    use super::EvidenceDoc;

    #[test]
    fn evidence_writes_whole_numbers_as_integers() {
        let evidence = [
            ("index_size_bytes", 16384.0),
            ("counting_window_seconds", 102.5),
            ("index_scans", 0.0),
            ("ratio", f64::NAN),
            ("delta", -3.0),
            ("index_scans", 2.0),
        ];
        let json = serde_json::to_string(&EvidenceDoc(&evidence)).unwrap();
        assert_eq!(
            json,
            r#"{"index_size_bytes":16384,"counting_window_seconds":102.5,"index_scans":2,"ratio":null,"delta":-3.0}"#
        );
    }
}
