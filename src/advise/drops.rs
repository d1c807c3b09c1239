//! Existing indexes the workload does not need, as `DROP INDEX CONCURRENTLY` suggestions: the
//! findings of audit's `unused_index` check (its counters summed over the nodes read, its
//! refusal to offer constraint and replica-identity indexes, its counting-window honesty) on
//! the tables the workload reads. Advise never judges usage itself.

use crate::audit::{AuditReport, Check, Severity};

use super::TableRef;

/// One suggestion to drop an index.
#[derive(Debug, Clone, PartialEq)]
pub struct DropSuggestion {
    pub schema: String,
    pub table: String,
    pub index: String,
    /// The statement (or, when a node could not be read, the check to run first), as audit
    /// writes it.
    pub statement: String,
    /// Audit's message: how long the counters have been counting, on which nodes.
    pub message: String,
    /// Warning when the counters counted long enough to trust; info when they did not.
    pub severity: Severity,
}

/// The unused-index findings of `report` on the tables in `tables`, most severe first.
pub fn unused_indexes(report: &AuditReport, tables: &[TableRef]) -> Vec<DropSuggestion> {
    report
        .findings
        .iter()
        .filter(|f| f.check == Check::UnusedIndex)
        .filter_map(|f| {
            let schema = f.schema.clone()?;
            let table = f.table.clone()?;
            tables
                .iter()
                .any(|t| t.schema == schema && t.name == table)
                .then(|| DropSuggestion {
                    schema,
                    table,
                    index: f.index.clone().unwrap_or_default(),
                    statement: f.fix.clone().unwrap_or_default(),
                    message: f.message.clone(),
                    severity: f.severity,
                })
        })
        .collect()
}
