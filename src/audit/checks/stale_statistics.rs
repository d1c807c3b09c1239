//! stale_statistics: tables the planner sees through old statistics — never analyzed, or more
//! rows modified since the last ANALYZE than the table's own autoanalyze trigger
//! (`autovacuum_analyze_threshold + autovacuum_analyze_scale_factor × reltuples`), typical after a
//! bulk load, or a table with rows that nothing ever analyzed and autovacuum never will (its
//! modification counter is zero after a statistics reset, a crash or a restore). `reltuples`
//! far from `n_live_tup` is shown as evidence of how far off plans are.
//!
//! Modification counts and analyze times exist only on the primary.

use foldhash::{HashMap, HashMapExt, HashSet};

use crate::audit::snapshot::{NodeSnapshot, Table, TableKind};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{
    age_words, analyze_trigger, autovacuum_off_reason, count_words, latest, qualified, skip_standby,
};

/// With autoanalyze on, modifications past this multiple of the trigger mean it is behind.
pub const BEHIND_FACTOR: f64 = 2.0;
/// Fewer modified rows than this are never a finding.
pub const MIN_MODIFIED_ROWS: i64 = 1000;
/// A table with at least this many rows (`reltuples`) and no statistics at all is a finding
/// even with no modifications counted.
pub const MIN_UNANALYZED_ROWS: f64 = 1000.0;

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
    let snapshot = primary.snapshot;
    // Tables whose columns have statistics: only ANALYZE writes them, and a statistics reset
    // (which clears the counters and analyze times) leaves them in place.
    let with_column_stats: HashSet<u32> = snapshot
        .columns
        .iter()
        .filter(|c| c.avg_width.is_some())
        .map(|c| c.table_oid)
        .collect();
    let mut partitions: HashMap<u32, Vec<&Table>> = HashMap::new();
    for table in &snapshot.tables {
        if let Some(parent) = table.parent_oid {
            partitions.entry(parent).or_default().push(table);
        }
    }
    for table in &snapshot.tables {
        if table.kind == TableKind::Partitioned {
            // Autovacuum never analyzes a partitioned table itself (its partitions are judged
            // below, each on its own).
            if let Some(finding) = partitioned_never_analyzed(snapshot, table, &partitions) {
                out.findings.push(finding);
            }
            continue;
        }
        if !ctx.table_big_enough(table) {
            continue;
        }
        let s = &table.stats;
        let modified = s.n_mod_since_analyze.unwrap_or(0);
        let trigger = analyze_trigger(table, settings);
        let off = autovacuum_off_reason(table, settings);
        let factor = if off.is_some() { 1.0 } else { BEHIND_FACTOR };
        let past_trigger = s.n_mod_since_analyze.is_some()
            && modified >= MIN_MODIFIED_ROWS
            && (modified as f64) > trigger * factor;
        let name = qualified(&table.schema, &table.name);
        let last = latest(s.last_analyze, s.last_autoanalyze);
        let analyzed_ever =
            last.is_some() || s.analyze_count.unwrap_or(0) + s.autoanalyze_count.unwrap_or(0) > 0;
        // Rows in pg_class, no column statistics and no analyze on record, yet too few
        // modifications counted to trigger autoanalyze: what a VACUUM then a statistics reset,
        // a crash (15+ discards the counters) or a pg_restore (CREATE INDEX sets reltuples)
        // leave behind. Autovacuum analyzes only on counted modifications, so it never will.
        let quietly_unanalyzed = !past_trigger
            && !analyzed_ever
            && !with_column_stats.contains(&table.oid)
            && table.reltuples >= MIN_UNANALYZED_ROWS;
        if !past_trigger && !quietly_unanalyzed {
            continue;
        }
        let mut severity = Severity::Warning;
        let mut message = if quietly_unanalyzed {
            format!(
                "{name} has {} rows (reltuples) and no ANALYZE recorded, with {} rows modified \
                 since: too few for autoanalyze, which will never analyze it",
                count_words(table.reltuples.round()),
                count_words(modified as f64)
            )
        } else if analyzed_ever {
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
        // No analyze on record is not proof of none: a statistics reset clears the counters
        // and times. What survives a reset is pg_statistic, which only ANALYZE writes; a row
        // count in pg_class (reltuples >= 0 on 14+) proves nothing, as VACUUM and CREATE INDEX
        // set it too (a pg_restore leaves exactly that).
        if !analyzed_ever {
            if with_column_stats.contains(&table.oid) {
                severity = Severity::Info;
                message.push_str(
                    "; its columns have statistics (pg_stats), so it was analyzed before the \
                     statistics counters were last reset: the history is incomplete",
                );
            } else {
                message.push_str("; none of its columns has statistics: it was never analyzed");
                if !snapshot.server.superuser {
                    message.push_str(
                        " (or this role may not SELECT them: pg_stats hides such columns)",
                    );
                }
                if major >= 14 && table.reltuples >= 0.0 {
                    message.push_str(
                        "; the row count in pg_class comes from a VACUUM or CREATE INDEX, which \
                         do not collect column statistics",
                    );
                }
            }
        }
        if let Some(t) = last {
            message.push_str(&format!("; last analyzed {} ago", age_words(t.age_seconds)));
        }
        let live = s.n_live_tup.unwrap_or(0).max(0) as f64;
        // Not counted since a statistics reset: no measure of how far reltuples is off.
        let (compared_live, _) = super::live_rows(table);
        let planner_rows = table.reltuples.max(0.0);
        if (compared_live >= 1000.0 || planner_rows >= 1000.0)
            && (compared_live.max(1.0) / planner_rows.max(1.0) >= 10.0
                || planner_rows.max(1.0) / compared_live.max(1.0) >= 10.0)
        {
            message.push_str(&format!(
                "; the planner's row count (reltuples {}) is far from the live rows ({})",
                count_words(planner_rows),
                count_words(compared_live)
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

/// Live rows in every partition below `table`, as far as the audit's scope shows them.
fn partition_rows(table: &Table, partitions: &HashMap<u32, Vec<&Table>>, depth: u8) -> i64 {
    let Some(children) = partitions.get(&table.oid) else {
        return 0;
    };
    children
        .iter()
        .map(|child| {
            child.stats.n_live_tup.unwrap_or(0).max(0)
                + if depth < 32 {
                    partition_rows(child, partitions, depth + 1)
                } else {
                    0
                }
        })
        .sum()
}

/// A partitioned table with rows in its partitions that was never analyzed itself. Autovacuum
/// analyzes partitions, never the parent, so its inherited statistics (which the planner uses
/// for estimates over the whole table: joins, GROUP BY, DISTINCT on it) exist only after a
/// manual ANALYZE. Information, as many databases live without them.
fn partitioned_never_analyzed(
    snapshot: &NodeSnapshot,
    table: &Table,
    partitions: &HashMap<u32, Vec<&Table>>,
) -> Option<Finding> {
    let s = &table.stats;
    let analyzed = table.inherited_statistics == Some(true)
        || latest(s.last_analyze, s.last_autoanalyze).is_some()
        || s.analyze_count.unwrap_or(0) > 0;
    if analyzed || table.inherited_statistics.is_none() {
        return None;
    }
    let rows = partition_rows(table, partitions, 0);
    if rows < MIN_MODIFIED_ROWS {
        return None;
    }
    let name = qualified(&table.schema, &table.name);
    let mut message = format!(
        "partitioned table {name} was never analyzed itself ({} live rows in its partitions): \
         autovacuum analyzes only the partitions, so the planner has no statistics for the \
         whole table when it estimates joins, grouping or DISTINCT over it",
        count_words(rows as f64)
    );
    if !snapshot.server.superuser {
        message.push_str(" (or this role may not SELECT its columns: pg_stats hides those)");
    }
    // 18 can analyze the parent alone; before, ANALYZE of the parent also analyzes every
    // partition again.
    let fix = if snapshot.server.major() >= 18 {
        format!("ANALYZE ONLY {name};")
    } else {
        format!("-- also re-analyzes every partition\nANALYZE {name};")
    };
    Some(
        Finding::new(Check::StaleStatistics, Severity::Info, message)
            .on_table(table)
            .evidence("partition_live_tuples", rows as f64)
            .fix(fix),
    )
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
        let found: Vec<_> = findings_of(&report, Check::StaleStatistics);
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

    #[test]
    fn a_row_count_without_column_statistics_is_never_analyzed() {
        let mut p = primary();
        // pg_restore: CREATE INDEX set reltuples; nothing was analyzed, no reset on record.
        let mut restored = table(10, "restored");
        restored.stats.last_autoanalyze = None;
        restored.stats.autoanalyze_count = Some(0);
        restored.stats.n_mod_since_analyze = Some(50_000);
        // Analyzed before a statistics reset: its columns kept their statistics.
        let mut reset = restored.clone();
        reset.oid = 11;
        reset.name = "reset".into();
        p.columns = vec![int_column(&reset, 1, "id")];
        p.tables = vec![restored, reset];
        let report = audit_nodes(vec![("p", p)]);
        let restored = report
            .findings
            .iter()
            .find(|f| f.table.as_deref() == Some("restored"))
            .unwrap();
        assert_eq!(restored.severity, Severity::Warning, "{}", restored.message);
        assert!(restored.message.contains("it was never analyzed"));
        assert!(!restored.message.contains("reset"), "{}", restored.message);
        let reset = report
            .findings
            .iter()
            .find(|f| f.table.as_deref() == Some("reset"))
            .unwrap();
        assert_eq!(reset.severity, Severity::Info, "{}", reset.message);
        assert!(reset.message.contains("its columns have statistics"));
    }

    #[test]
    fn a_table_with_rows_and_no_statistics_but_no_modifications_counted() {
        let mut p = primary();
        // VACUUM then pg_stat_reset(): reltuples set, every counter zero, no pg_stats rows.
        let mut quiet = table(10, "quiet");
        quiet.stats.last_autoanalyze = None;
        quiet.stats.autoanalyze_count = Some(0);
        quiet.stats.n_mod_since_analyze = Some(0);
        quiet.stats.n_live_tup = Some(0);
        quiet.stats.last_autovacuum = None;
        // The same with column statistics: analyzed before the reset.
        let mut analyzed = quiet.clone();
        analyzed.oid = 11;
        analyzed.name = "analyzed".into();
        // Too small to matter.
        let mut small = quiet.clone();
        small.oid = 12;
        small.name = "small".into();
        small.reltuples = 999.0;
        p.columns = vec![int_column(&analyzed, 1, "id")];
        p.tables = vec![quiet, analyzed, small];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::StaleStatistics);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.table.as_deref(), Some("quiet"));
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("it was never analyzed"), "{}", f.message);
        assert!(f.message.contains("will never analyze it"), "{}", f.message);
        assert_eq!(f.fix.as_deref(), Some("ANALYZE public.quiet;"));
        // The reset zeroed n_live_tup too: that is no live-row count to compare reltuples with.
        assert!(
            !f.message.contains("far from the live rows"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_partitioned_table_never_analyzed_itself() {
        let mut p = primary();
        let mut parent = table(10, "events");
        parent.kind = TableKind::Partitioned;
        parent.relpages = 0;
        parent.reltuples = -1.0;
        parent.inherited_statistics = Some(false);
        parent.stats = Default::default();
        let mut analyzed = parent.clone();
        analyzed.oid = 20;
        analyzed.name = "analyzed".into();
        analyzed.inherited_statistics = Some(true);
        let mut part = table(11, "events_2024");
        part.parent_oid = Some(10);
        let mut other = table(21, "analyzed_2024");
        other.parent_oid = Some(20);
        p.tables = vec![parent, part, analyzed, other];
        let options = crate::audit::AuditOptions {
            min_size_bytes: 1 << 30,
            ..Default::default()
        };
        let report = run_with(vec![("p", p)], &options);
        let found: Vec<_> = findings_of(&report, Check::StaleStatistics);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].table.as_deref(), Some("events"));
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(
            found[0].evidence_value("partition_live_tuples"),
            Some(100_000.0)
        );
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .ends_with("ANALYZE public.events;")
        );
    }
}
