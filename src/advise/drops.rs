//! Existing indexes to drop, as `DROP INDEX CONCURRENTLY` suggestions: audit's own findings on
//! the tables the workload reads, from its `unused_index` check (its counters summed over the
//! nodes read, its refusal to offer constraint and replica-identity indexes, its
//! counting-window honesty) and its `duplicate_index` and `redundant_index` checks (which of
//! a group stays, decided once for the group). Advise never judges usage or redundancy
//! itself: `pgplan audit` on the same counters names the same index to drop and the same one
//! to keep.

use crate::audit::{AuditReport, Check, Finding, Severity};

use super::TableRef;

/// One suggestion to drop an index.
#[derive(Debug, Clone, PartialEq)]
pub struct DropSuggestion {
    pub schema: String,
    pub table: String,
    pub index: String,
    /// The audit check whose finding this is: unused_index, duplicate_index or
    /// redundant_index.
    pub check: Check,
    /// For a duplicate or redundant index, the index audit keeps in its place.
    pub kept_index: Option<String>,
    /// The statement (or, when a node could not be read, the check to run first), as audit
    /// writes it.
    pub statement: String,
    /// Audit's message: how long the counters have been counting, on which nodes; which index
    /// stays, and why.
    pub message: String,
    /// Audit's severity: warning when it is worth doing (an unused index's counters counted
    /// long enough to trust), info when it is not yet sure.
    pub severity: Severity,
}

/// The checks whose findings are drops.
fn is_drop(check: Check) -> bool {
    matches!(
        check,
        Check::UnusedIndex | Check::DuplicateIndex | Check::RedundantIndex
    )
}

/// One reason of a finding, its own or one of its others.
struct DropReason<'f> {
    check: Check,
    severity: Severity,
    message: &'f str,
    fix: Option<&'f String>,
    kept_index: Option<&'f String>,
}

/// The drop a finding proposes: its own reason when that is one of the drop checks, else the
/// first such reason among its others (an index is one finding, under its strongest reason,
/// which may be its bloat). A reason with no statement (two protected duplicates, which stay)
/// proposes nothing.
fn drop_of(f: &Finding) -> Option<DropReason<'_>> {
    let own = DropReason {
        check: f.check,
        severity: f.severity,
        message: &f.message,
        fix: f.fix.as_ref(),
        kept_index: f.kept_index.as_ref(),
    };
    let others = f.also.iter().map(|r| DropReason {
        check: r.check,
        severity: r.severity,
        message: &r.message,
        fix: r.fix.as_ref(),
        kept_index: r.kept_index.as_ref(),
    });
    std::iter::once(own)
        .chain(others)
        .find(|r| is_drop(r.check) && r.fix.is_some())
}

/// The drops audit's `report` proposes on the tables in `tables`, in its order.
pub fn drops(report: &AuditReport, tables: &[TableRef]) -> Vec<DropSuggestion> {
    report
        .findings
        .iter()
        .filter_map(|f| {
            let schema = f.schema.clone()?;
            let table = f.table.clone()?;
            let index = f.index.clone()?;
            if !tables.iter().any(|t| t.schema == schema && t.name == table) {
                return None;
            }
            let r = drop_of(f)?;
            Some(DropSuggestion {
                schema,
                table,
                index,
                check: r.check,
                kept_index: r.kept_index.cloned(),
                statement: r.fix.cloned().unwrap_or_default(),
                message: r.message.to_owned(),
                severity: r.severity,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    fn on_t() -> Vec<TableRef> {
        vec![TableRef {
            schema: "public".into(),
            name: "t".into(),
        }]
    }

    /// (index dropped, check, index kept) of every drop.
    fn decided(report: &AuditReport) -> Vec<(String, Check, Option<String>)> {
        drops(report, &on_t())
            .into_iter()
            .map(|d| (d.index, d.check, d.kept_index))
            .collect()
    }

    #[test]
    fn a_duplicate_is_dropped_and_the_index_audit_keeps_is_named() {
        // t_a and t_a_again are duplicates, neither scanned: audit keeps the older one and
        // offers both as unused. The duplicate is its own drop, under its strongest reason.
        let mut p = primary();
        let t = table(10, "t");
        let mut a = index(100, &t, "t_a", vec![col(2, "a")]);
        let mut a_again = index(101, &t, "t_a_again", vec![col(2, "a")]);
        a.scans = Some(0);
        a_again.scans = Some(0);
        p.indexes = vec![a, a_again];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let found = decided(&report);
        assert!(
            found.contains(&(
                "t_a_again".into(),
                Check::DuplicateIndex,
                Some("t_a".into())
            )),
            "{found:?}"
        );
        // Every duplicate finding audit makes, advise makes with the same keeper.
        for f in &report.findings {
            if f.check == Check::DuplicateIndex {
                let index = f.index.clone().unwrap();
                assert!(
                    found
                        .iter()
                        .any(|(i, _, k)| *i == index && *k == f.kept_index),
                    "{index}: {found:?}"
                );
            }
        }
        // The keeper is never dropped as a duplicate of the one that goes.
        assert!(
            !found
                .iter()
                .any(|(i, c, _)| i == "t_a" && *c != Check::UnusedIndex),
            "{found:?}"
        );
    }

    #[test]
    fn the_scanned_one_of_a_pair_stays_and_only_the_workloads_tables_count() {
        let mut p = primary();
        let t = table(10, "t");
        let other = table(11, "other");
        let a = index(100, &t, "t_a", vec![col(2, "a")]);
        let mut a_again = index(101, &t, "t_a_again", vec![col(2, "a")]);
        a_again.scans = Some(40);
        let o = index(102, &other, "other_b", vec![col(2, "b")]);
        p.indexes = vec![a, a_again, o];
        p.tables.extend([t, other]);
        let report = audit_nodes(vec![("p", p)]);
        let found = decided(&report);
        assert_eq!(
            found,
            [(
                "t_a".to_owned(),
                Check::DuplicateIndex,
                Some("t_a_again".to_owned())
            )],
            "t_a_again is scanned: it stays; other is not the workload's"
        );
    }

    #[test]
    fn an_index_covered_by_a_wider_one_names_what_stays() {
        let mut p = primary();
        let t = table(10, "t");
        let mut a = index(100, &t, "t_a", vec![col(2, "a")]);
        a.scans = Some(5);
        let mut a_b = index(101, &t, "t_a_b", vec![col(2, "a"), col(3, "b")]);
        a_b.scans = Some(5);
        p.indexes = vec![a, a_b];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let found = decided(&report);
        assert_eq!(
            found,
            [(
                "t_a".to_owned(),
                Check::RedundantIndex,
                Some("t_a_b".to_owned())
            )]
        );
    }
}
