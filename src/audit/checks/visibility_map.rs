//! visibility_map: index-only scans that are not. An index-only scan skips the heap only for
//! pages the visibility map marks all-visible; on a table whose map covers little of it
//! (`relallvisible` against `relpages`, set by VACUUM and ANALYZE), every such scan fetches from
//! the heap again. Only VACUUM sets the bits, and before 13 autovacuum never vacuums an
//! insert-only table for that (13+ has the insert trigger).
//!
//! `pg_class` is replicated, and index scans are summed over every node, so this check also works
//! on a standby, where read traffic often goes.

use crate::audit::snapshot::TableKind;
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{count_words, counted, insert_trigger, qualified};

/// Tables smaller than this many pages are not worth it (8 MB with 8 kB pages).
pub const MIN_PAGES: i64 = 1000;
/// Less than this share of the pages all-visible is a finding.
pub const MIN_ALL_VISIBLE_SHARE: f64 = 0.5;
/// Access methods that support index-only scans.
const INDEX_ONLY_METHODS: &[&str] = &["btree", "gist", "spgist"];

pub fn run(ctx: &Context, out: &mut Output) {
    // The finding needs index scans to have happened, which only the counters show.
    if super::skip_without_counters(out, Check::VisibilityMap, &ctx.nodes) {
        return;
    }
    for table in &ctx.reference.snapshot.tables {
        if table.kind != TableKind::Table
            || table.relpages < MIN_PAGES
            || !ctx.table_big_enough(table)
        {
            continue;
        }
        let share = table.relallvisible.max(0) as f64 / table.relpages as f64;
        if share >= MIN_ALL_VISIBLE_SHARE {
            continue;
        }
        let indexes = ctx
            .indexes_by_table
            .get(&table.oid)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let scanned: Vec<_> = indexes
            .iter()
            .filter(|i| {
                i.valid
                    && INDEX_ONLY_METHODS.contains(&i.access_method.as_str())
                    && ctx.total_scans(i) > 0
            })
            .collect();
        if scanned.is_empty() {
            continue;
        }
        let scans: i64 = scanned.iter().map(|i| ctx.total_scans(i)).sum();
        let covering: Vec<&str> = scanned
            .iter()
            .filter(|i| !i.include_columns().is_empty())
            .map(|i| i.name.as_str())
            .collect();
        let name = qualified(&table.schema, &table.name);
        let mut message = format!(
            "only {:.0}% of the {} pages of {name} are all-visible, so index-only scans on it fetch \
             from the heap anyway ({} on its indexes)",
            share * 100.0,
            count_words(table.relpages as f64),
            counted(scans as f64, "index scan", "index scans")
        );
        if !covering.is_empty() {
            message.push_str(&format!(
                "; covering index(es) {} exist precisely for index-only scans",
                covering.join(", ")
            ));
        }
        let mut fix = format!("VACUUM (VERBOSE) {name};");
        let settings = &ctx.reference.snapshot.settings;
        let stats = ctx.primary_row(table).map(|t| &t.stats);
        let inserted = stats.and_then(|s| s.n_ins_since_vacuum);
        // 13+ vacuums a table after enough inserts, which is what sets the bits on an
        // insert-mostly table; a lower scale factor helps only while that trigger is on.
        let insert_trigger = insert_trigger(table, settings);
        if settings.autovacuum_vacuum_insert_threshold.is_some() {
            match insert_trigger {
                Some(_) => fix.push_str(&format!(
                    "\n-- an insert-mostly table: let autovacuum set the bits sooner\nALTER TABLE \
                     {name} SET (autovacuum_vacuum_insert_scale_factor = 0.05);"
                )),
                None if table
                    .reloption_f64("autovacuum_vacuum_insert_threshold")
                    .is_some_and(|t| t < 0.0) =>
                {
                    message.push_str(
                        "; inserts never trigger autovacuum on it \
                         (autovacuum_vacuum_insert_threshold = -1 on the table)",
                    );
                    fix.push_str(&format!(
                        "\n-- let inserts trigger autovacuum again, which sets the bits\nALTER \
                         TABLE {name} RESET (autovacuum_vacuum_insert_threshold);"
                    ));
                }
                None => message.push_str(
                    "; inserts never trigger autovacuum (autovacuum_vacuum_insert_threshold = -1 \
                     on the server), so only vacuums for dead rows set the bits",
                ),
            }
        }
        let mut finding = Finding::new(Check::VisibilityMap, Severity::Warning, message)
            .on_table(table)
            .evidence("table_pages", table.relpages as f64)
            .evidence("all_visible_pages", table.relallvisible.max(0) as f64)
            .evidence("all_visible_percent", share * 100.0)
            .evidence("index_scans", scans as f64)
            .fix(fix);
        if let Some(n) = inserted {
            finding = finding.evidence("inserts_since_vacuum", n as f64);
        }
        if let Some(t) = insert_trigger {
            finding = finding.evidence("insert_trigger_tuples", t);
        }
        out.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn low_visibility_with_index_scans() {
        let mut p = primary();
        let mut t = table(10, "events");
        t.relpages = 5000;
        t.relallvisible = 100;
        let mut vacuumed = table(11, "vacuumed");
        vacuumed.relpages = 5000;
        vacuumed.relallvisible = 4990;
        let i = index(100, &t, "events_ts", vec![col(1, "ts")]);
        let j = index(101, &vacuumed, "vacuumed_ts", vec![col(1, "ts")]);
        p.indexes = vec![i, j];
        p.tables = vec![t, vacuumed];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::VisibilityMap);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].table.as_deref(), Some("events"));
        assert_eq!(found[0].evidence_value("all_visible_percent"), Some(2.0));
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .starts_with("VACUUM (VERBOSE) public.events;")
        );
    }

    #[test]
    fn no_scale_factor_advice_when_inserts_never_trigger_autovacuum() {
        let mut p = primary();
        let mut t = table(10, "events");
        t.relpages = 5000;
        t.relallvisible = 100;
        t.reloptions = vec!["autovacuum_vacuum_insert_threshold=-1".into()];
        t.stats.n_ins_since_vacuum = Some(400_000);
        p.indexes = vec![index(100, &t, "events_ts", vec![col(1, "ts")])];
        p.tables = vec![t];
        let report = audit_nodes(vec![("p", p)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::VisibilityMap)
            .unwrap();
        let fix = f.fix.as_deref().unwrap();
        assert!(!fix.contains("insert_scale_factor"), "{fix}");
        assert!(
            fix.contains("RESET (autovacuum_vacuum_insert_threshold)"),
            "{fix}"
        );
        assert!(f.message.contains("inserts never trigger autovacuum"));
        assert_eq!(f.evidence_value("inserts_since_vacuum"), Some(400_000.0));
        assert_eq!(f.evidence_value("insert_trigger_tuples"), None);
    }
}
