//! stale_statistics: tables the planner sees through old statistics — never analyzed, or more
//! rows modified since the last ANALYZE than the table's own autoanalyze trigger
//! (`autovacuum_analyze_threshold + autovacuum_analyze_scale_factor × reltuples`), typical after a
//! bulk load. `reltuples` far from `n_live_tup` is shown as evidence of how far off plans are.
//!
//! Modification counts and analyze times exist only on the primary.

use crate::audit::snapshot::TableKind;
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{
    age_words, analyze_trigger, autovacuum_off_reason, count_words, latest, qualified, skip_standby,
};

/// With autoanalyze on, modifications past this multiple of the trigger mean it is behind.
pub const BEHIND_FACTOR: f64 = 2.0;
/// Fewer modified rows than this are never a finding.
pub const MIN_MODIFIED_ROWS: i64 = 1000;

pub fn run(ctx: &Context, out: &mut Output) {
    let Some(primary) = ctx.primary else {
        skip_standby(out, Check::StaleStatistics);
        return;
    };
    if super::skip_without_counters(out, Check::StaleStatistics, [&primary]) {
        return;
    }
    let settings = &primary.snapshot.settings;
    let major = primary.snapshot.server.major();
    for table in &primary.snapshot.tables {
        // Autovacuum never analyzes a partitioned table itself; its partitions are judged here.
        if table.kind == TableKind::Partitioned || !ctx.table_big_enough(table) {
            continue;
        }
        let s = &table.stats;
        let Some(modified) = s.n_mod_since_analyze else {
            continue;
        };
        if modified < MIN_MODIFIED_ROWS {
            continue;
        }
        let trigger = analyze_trigger(table, settings);
        let off = autovacuum_off_reason(table, settings);
        let factor = if off.is_some() { 1.0 } else { BEHIND_FACTOR };
        if (modified as f64) <= trigger * factor {
            continue;
        }
        let name = qualified(&table.schema, &table.name);
        let last = latest(s.last_analyze, s.last_autoanalyze);
        let analyzed_ever =
            last.is_some() || s.analyze_count.unwrap_or(0) + s.autoanalyze_count.unwrap_or(0) > 0;
        let mut severity = Severity::Warning;
        let mut message = if analyzed_ever {
            format!(
                "{name} has had {} rows modified since its last ANALYZE, {:.1}× its autoanalyze \
                 trigger of {}",
                count_words(modified as f64),
                modified as f64 / trigger.max(1.0),
                count_words(trigger.round())
            )
        } else {
            format!(
                "{name} has no ANALYZE recorded, and {} rows modified",
                count_words(modified as f64)
            )
        };
        // 14+: reltuples is -1 until the first VACUUM or ANALYZE, and pg_class survives a
        // statistics reset; a table with reltuples >= 0 but no analyze on record was analyzed
        // (or vacuumed) before the counters were last reset.
        if !analyzed_ever && major >= 14 && table.reltuples >= 0.0 {
            severity = Severity::Info;
            message.push_str(
                "; pg_class shows it was vacuumed or analyzed before the statistics were last \
                 reset, so the history is incomplete",
            );
        }
        if let Some(t) = last {
            message.push_str(&format!("; last analyzed {} ago", age_words(t.age_seconds)));
        }
        let live = s.n_live_tup.unwrap_or(0).max(0) as f64;
        let planner_rows = table.reltuples.max(0.0);
        if (live >= 1000.0 || planner_rows >= 1000.0)
            && (live.max(1.0) / planner_rows.max(1.0) >= 10.0
                || planner_rows.max(1.0) / live.max(1.0) >= 10.0)
        {
            message.push_str(&format!(
                "; the planner's row count (reltuples {}) is far from the live rows ({})",
                count_words(planner_rows),
                count_words(live)
            ));
        }
        let mut fix = format!("ANALYZE {name};");
        if let Some(reason) = off {
            message.push_str(&format!("; {reason}"));
            if table.autovacuum_disabled_by_reloption() {
                fix.push_str(&format!("\nALTER TABLE {name} RESET (autovacuum_enabled);"));
            }
        }
        let mut finding = Finding::new(Check::StaleStatistics, severity, message)
            .on_table(table)
            .evidence("rows_modified_since_analyze", modified as f64)
            .evidence("autoanalyze_trigger_rows", trigger)
            .evidence("reltuples", table.reltuples)
            .evidence("live_tuples", live)
            .fix(fix);
        if let Some(t) = last {
            finding = finding.evidence("last_analyze_age_seconds", t.age_seconds);
        }
        out.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn a_bulk_load_after_analyze_with_autovacuum_off() {
        let mut p = primary();
        let mut loaded = table(10, "loaded");
        loaded.reltuples = 1000.0;
        loaded.reloptions = vec!["autovacuum_enabled=off".into()];
        loaded.stats.n_live_tup = Some(101_000);
        loaded.stats.n_mod_since_analyze = Some(100_000);
        loaded.stats.last_analyze = Some(ts(60.0));
        let mut fresh = table(11, "fresh");
        fresh.stats.n_mod_since_analyze = Some(5_000);
        p.tables = vec![loaded, fresh];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::StaleStatistics)
            .collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.table.as_deref(), Some("loaded"));
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence_value("autoanalyze_trigger_rows"), Some(150.0));
        assert!(f.message.contains("far from the live rows"));
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .starts_with("ANALYZE public.loaded;")
        );
    }

    #[test]
    fn never_analyzed() {
        let mut p = primary();
        let mut t = table(10, "never");
        t.reltuples = -1.0;
        t.stats.last_autoanalyze = None;
        t.stats.autoanalyze_count = Some(0);
        t.stats.n_mod_since_analyze = Some(50_000);
        t.reloptions = vec!["autovacuum_enabled=false".into()];
        p.tables = vec![t];
        let report = audit_nodes(vec![("p", p)]);
        let f = &report.findings[0];
        assert_eq!(f.check, Check::StaleStatistics);
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("no ANALYZE recorded"));
    }
}
