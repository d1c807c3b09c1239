//! dead_tuples: tables whose dead rows autovacuum is losing to. Each table is measured against
//! its own autovacuum trigger (`autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor ×
//! reltuples`, storage options first), and the finding says why: autovacuum off, a vacuum long
//! ago, or something holding the xmin horizon so vacuum runs but cannot remove anything.
//!
//! Dead tuple counts exist only on the primary; a standby reads zeros.

use crate::audit::snapshot::{Settings, Table, TableKind, Timestamp, ToastTable};
use crate::audit::{Check, Context, Finding, Output, Severity, WindowSource};

use super::xmin_horizon::{Holder, holders, oldest_holders};
use super::{
    age_words, autovacuum_off_reason, count_words, insert_trigger, latest, qualified, skip_standby,
    vacuum_trigger,
};

/// Fewer dead rows than this are never a finding (small tables churn harmlessly).
pub const MIN_DEAD_TUPLES: i64 = 1000;
/// With autovacuum on, dead rows past this multiple of the trigger mean it is not keeping up
/// (one multiple is just "due").
pub const BEHIND_FACTOR: f64 = 2.0;
/// Past this multiple of the trigger, with at least this share of the rows dead, it is critical.
pub const CRITICAL_FACTOR: f64 = 20.0;
pub const CRITICAL_DEAD_SHARE: f64 = 0.2;

pub fn run(ctx: &Context, out: &mut Output) {
    let Some(primary) = ctx.primary else {
        skip_standby(out, Check::DeadTuples);
        return;
    };
    if super::skip_without_counters(out, Check::DeadTuples, [&primary]) {
        return;
    }
    let settings = &primary.snapshot.settings;
    let holders = Holders {
        past_thresholds: holders(ctx),
        oldest: oldest_holders(ctx, false),
        oldest_for_catalogs: oldest_holders(ctx, true),
    };
    for table in &primary.snapshot.tables {
        if table.kind == TableKind::Partitioned {
            continue;
        }
        if ctx.table_big_enough(table)
            && let Some(finding) = judge(ctx, table, None, &holders)
        {
            out.findings.push(finding);
        }
        // Autovacuum processes a TOAST table as a table of its own, with its own counters and
        // trigger: its dead rows never show in the owner's n_dead_tup.
        if let Some(toast) = &table.toast {
            let toast_table = toast_as_table(table, toast, settings);
            if toast_big_enough(ctx, &toast_table)
                && let Some(finding) = judge(ctx, &toast_table, Some(table), &holders)
            {
                out.findings.push(finding);
            }
        }
    }
}

/// The holders of the xmin horizon: those old enough to be findings of their own, and whatever
/// holds the oldest xmin now, however young: for ordinary tables, and for user catalog tables,
/// which a logical slot's `catalog_xmin` holds back too.
struct Holders {
    past_thresholds: Vec<Holder>,
    oldest: Vec<Holder>,
    oldest_for_catalogs: Vec<Holder>,
}

/// A user catalog table (`user_catalog_table` storage option): logical decoding reads it like a
/// system catalog, so a slot's `catalog_xmin` holds its dead rows back (heapam_visibility.c,
/// RelationIsAccessibleInLogicalDecoding). The TOAST table follows its owner.
fn is_user_catalog(table: &Table, owner: Option<&Table>) -> bool {
    owner
        .unwrap_or(table)
        .reloption("user_catalog_table")
        .and_then(crate::audit::snapshot::parse_bool)
        == Some(true)
}

/// The TOAST table as autovacuum sees it: its own figures and counters, and its own storage
/// options (`toast.autovacuum_*` set on the owner land there) or, when it has none at all, the
/// owner's (autovacuum.c takes the owner's whole set then, not option by option).
fn toast_as_table(owner: &Table, toast: &ToastTable, settings: &Settings) -> Table {
    let reloptions = if toast.reloptions.is_empty() {
        owner.reloptions.clone()
    } else {
        toast.reloptions.clone()
    };
    let bytes = toast.relpages.max(0) * settings.block_size_bytes as i64;
    Table {
        oid: toast.oid,
        schema: "pg_toast".into(),
        name: toast.name.clone(),
        kind: TableKind::Table,
        unlogged: owner.unlogged,
        relpages: toast.relpages,
        reltuples: toast.reltuples,
        relallvisible: 0,
        reloptions,
        heap_bytes: Some(bytes),
        table_bytes: Some(bytes),
        frozen_xid_age: None,
        multixact_age: None,
        stats: toast.stats.clone(),
        parent_oid: None,
        inherited_statistics: None,
        toast: None,
    }
}

/// `--min-size` for a TOAST table: never left out while `pg_class` has not measured it.
fn toast_big_enough(ctx: &Context, toast: &Table) -> bool {
    let rows = toast.stats.n_live_tup.unwrap_or(0) + toast.stats.n_dead_tup.unwrap_or(0);
    toast.reltuples < 0.0 || (toast.relpages <= 0 && rows > 0) || ctx.big_enough(toast.table_bytes)
}

/// The finding for one table (or the TOAST table of `owner`), if autovacuum is losing to it.
fn judge(
    ctx: &Context,
    table: &Table,
    owner: Option<&Table>,
    holders: &Holders,
) -> Option<Finding> {
    let settings = &ctx.primary?.snapshot.settings;
    let major = ctx.primary?.snapshot.server.major();
    let s = &table.stats;
    let dead = s.n_dead_tup?;
    if dead < MIN_DEAD_TUPLES {
        return None;
    }
    let trigger = vacuum_trigger(table, settings);
    let off = autovacuum_off_reason(table, settings);
    let factor = if off.is_some() { 1.0 } else { BEHIND_FACTOR };
    if (dead as f64) <= trigger * factor {
        return None;
    }
    let live = s.n_live_tup.unwrap_or(0).max(0);
    let (live_rows, from_pg_class) = super::live_rows(table);
    let share = dead as f64 / (dead as f64 + live_rows).max(1.0);
    let severity = if dead as f64 > trigger * CRITICAL_FACTOR && share >= CRITICAL_DEAD_SHARE {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let name = qualified(&table.schema, &table.name);
    let owner_name = owner.map(|o| qualified(&o.schema, &o.name));
    let what = match &owner_name {
        Some(o) => format!("TOAST table {name} of {o}"),
        None => name.clone(),
    };
    // n_live_tup and reltuples are written at different moments (a VACUUM sets both, then
    // statistics flushed from backends that ran before it land on top), so a share of rows from
    // the counters alone can be far off: when pg_class disagrees by more than a quarter, both
    // shares are quoted.
    let share_words = share_words(table, dead, share, live_rows, from_pg_class);
    let mut message = format!(
        "{what} has {} dead rows ({share_words}), {:.1}× its autovacuum trigger of {}",
        count_words(dead as f64),
        dead as f64 / trigger.max(1.0),
        count_words(trigger.round()),
    );
    let last_vacuum = latest(s.last_vacuum, s.last_autovacuum);
    // VACUUM of the owner processes its TOAST table too; 16+ can skip the owner's heap.
    let mut fix = match &owner_name {
        None => format!("VACUUM (VERBOSE, ANALYZE) {name};"),
        Some(o) if major >= 16 => format!("VACUUM (VERBOSE, PROCESS_MAIN FALSE) {o};"),
        Some(o) => format!("VACUUM (VERBOSE) {o};"),
    };
    if let Some(reason) = off {
        autovacuum_off_words(table, owner, &name, reason, &mut message, &mut fix);
    }
    match last_vacuum {
        Some(t) => message.push_str(&format!("; last vacuumed {} ago", age_words(t.age_seconds))),
        None => message.push_str(&no_vacuum_words(ctx)),
    }
    let mut finding = Finding::new(Check::DeadTuples, severity, message);
    finding = match owner {
        Some(_) => finding.on_table(table).subject("toast"),
        None => finding.on_table(table),
    };
    // A slot's catalog_xmin holds back catalogs only: never the reason for an ordinary table.
    let catalog = is_user_catalog(table, owner);
    let (mut finding, past_count) = with_horizon(finding, catalog, holders, last_vacuum);
    finding = finding
        .evidence("dead_tuples", dead as f64)
        .evidence("live_tuples", live as f64)
        .evidence("reltuples", table.reltuples)
        .evidence("autovacuum_trigger_tuples", trigger)
        .evidence("horizon_holders", past_count as f64)
        .fix(fix);
    if let Some(t) = last_vacuum {
        finding = finding.evidence("last_vacuum_age_seconds", t.age_seconds);
    }
    // 13+: inserts also trigger a vacuum (it sets visibility and freezes, and removes dead rows
    // on the way); show how close that trigger is, or that it is disabled.
    if let Some(inserted) = s.n_ins_since_vacuum {
        finding = finding.evidence("inserts_since_vacuum", inserted as f64);
        if let Some(insert_trigger) = insert_trigger(table, settings) {
            finding = finding.evidence("insert_trigger_tuples", insert_trigger);
        }
    }
    Some(finding)
}

/// How large a share of the table's rows `dead` is: by the statistics counters, by pg_class's
/// row count, or by both when they disagree.
fn share_words(
    table: &Table,
    dead: i64,
    share: f64,
    live_rows: f64,
    from_pg_class: bool,
) -> String {
    if from_pg_class {
        format!(
            "{:.0}% of its rows by pg_class's row count: live rows are not counted again until a \
             vacuum or analyze after the statistics reset",
            share * 100.0
        )
    } else if table.reltuples > 0.0
        && (live_rows - table.reltuples).abs() > 0.25 * live_rows.max(table.reltuples)
    {
        let by_class = dead as f64 / (dead as f64 + table.reltuples).max(1.0);
        format!(
            "{:.0}% of its rows by the statistics counters ({} live), {:.0}% by pg_class's row \
             count ({}): the two disagree",
            share * 100.0,
            count_words(live_rows),
            by_class * 100.0,
            count_words(table.reltuples.round())
        )
    } else {
        format!("{:.0}% of its rows", share * 100.0)
    }
}

/// Says why autovacuum does not run on the table (`reason`) and, when a reloption turned it off,
/// adds the statement that turns it back on to `fix`.
fn autovacuum_off_words(
    table: &Table,
    owner: Option<&Table>,
    name: &str,
    reason: &str,
    message: &mut String,
    fix: &mut String,
) {
    match owner {
        Some(o) => {
            let o_name = qualified(&o.schema, &o.name);
            if table.autovacuum_disabled_by_reloption() {
                // Set on the TOAST table itself (toast.autovacuum_enabled on the owner), or
                // taken from the owner's options when the TOAST table has none.
                let own = o.toast.as_ref().is_some_and(|t| !t.reloptions.is_empty());
                let option = if own {
                    "toast.autovacuum_enabled"
                } else {
                    "autovacuum_enabled"
                };
                message.push_str(&format!(
                    "; autovacuum is disabled on it ({option} = false on {o_name})"
                ));
                fix.push_str(&format!("\nALTER TABLE {o_name} RESET ({option});"));
            } else {
                message.push_str(&format!("; {reason}"));
            }
        }
        _ => {
            message.push_str(&format!("; {reason}"));
            if table.autovacuum_disabled_by_reloption() {
                fix.push_str(&format!("\nALTER TABLE {name} RESET (autovacuum_enabled);"));
            }
        }
    }
}

/// Adds to the finding what holds the xmin horizon back: the holders past their thresholds, else
/// the oldest ones when they held it since before the last vacuum. Also the number of holders
/// past their thresholds.
fn with_horizon(
    mut finding: Finding,
    catalog: bool,
    holders: &Holders,
    last_vacuum: Option<Timestamp>,
) -> (Finding, usize) {
    let past: Vec<&Holder> = holders
        .past_thresholds
        .iter()
        .filter(|h| catalog || !h.catalogs_only)
        .collect();
    let oldest = if catalog {
        &holders.oldest_for_catalogs
    } else {
        &holders.oldest
    };
    if !past.is_empty() {
        // A vacuum that ran while the horizon was held could not remove these rows.
        let names: Vec<String> = past.iter().take(3).map(|h| h.summary()).collect();
        finding.message.push_str(&format!(
            "; the xmin horizon is held back by {}{}, so vacuum cannot remove rows that died \
             after that",
            names.join("; "),
            if past.len() > 3 {
                format!(" and {} more", past.len() - 3)
            } else {
                String::new()
            }
        ));
    } else {
        // Nothing is old enough to be a finding of its own, yet the oldest xmin is what the
        // last vacuum could not clean past when it was already held then (or when no vacuum is
        // on record to tell).
        let before_vacuum: Vec<&Holder> = oldest
            .iter()
            .filter(|h| match (h.age_seconds, last_vacuum) {
                (Some(held), Some(vacuum)) => held >= vacuum.age_seconds,
                _ => true,
            })
            .collect();
        if let Some(first) = before_vacuum.first() {
            let names: Vec<String> = before_vacuum.iter().map(|h| h.summary()).collect();
            finding.message.push_str(&format!(
                "; the oldest xmin is held by {}{}",
                names.join("; "),
                if last_vacuum.is_some() {
                    ", since before the last vacuum, which could not remove rows that died after it"
                } else {
                    ""
                }
            ));
            if let Some(x) = first.age_xids {
                finding = finding.evidence("oldest_xmin_age_xids", x as f64);
            }
        }
    }
    (finding, past.len())
}

/// "No vacuum on record", said as far as the evidence goes: since an explicit reset or a
/// discard of the statistics when one is recorded, else without claiming a reset.
fn no_vacuum_words(ctx: &Context) -> String {
    match ctx.primary.and_then(|p| p.window) {
        Some(w) if w.source == WindowSource::DatabaseReset => format!(
            "; no vacuum recorded since the statistics were reset {} ago",
            age_words(w.seconds())
        ),
        Some(w) if w.source == WindowSource::DatabaseCountersStarted => format!(
            "; no vacuum recorded since the database's counters started {} ago",
            age_words(w.seconds())
        ),
        Some(w) if w.source == WindowSource::StatisticsDiscarded => format!(
            "; no vacuum recorded since the statistics were discarded {} ago (crash recovery or \
             first start)",
            age_words(w.seconds())
        ),
        _ => "; no vacuum on record".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::Session;

    /// 10,000 live and 15,000 dead rows, autovacuum off for the table.
    fn churn_without_autovacuum(oid: u32, name: &str) -> Table {
        let mut t = table(oid, name);
        t.reltuples = 10_000.0;
        t.reloptions = vec!["autovacuum_enabled=false".into()];
        t.stats.n_live_tup = Some(10_000);
        t.stats.n_dead_tup = Some(15_000);
        t
    }

    #[test]
    fn dead_rows_past_the_trigger_with_autovacuum_off() {
        let mut p = primary();
        let off = churn_without_autovacuum(10, "churn");
        // Autovacuum on and 1.5× the trigger: due, not behind.
        let mut due = table(11, "due");
        due.reltuples = 10_000.0;
        due.stats.n_live_tup = Some(10_000);
        due.stats.n_dead_tup = Some(3_000);
        p.tables = vec![off, due];
        p.sessions = vec![Session {
            pid: 77,
            state: Some("idle in transaction".into()),
            xact_age_seconds: Some(600.0),
            xid_age_xids: Some(20_000),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::DeadTuples);
        assert_eq!(found.len(), 1);
        let f = found[0];
        assert_eq!(f.table.as_deref(), Some("churn"));
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence_value("autovacuum_trigger_tuples"), Some(2050.0));
        assert!(f.message.contains("autovacuum_enabled = false"));
        assert!(f.message.contains("session pid 77"));
        assert_eq!(
            f.fix.as_deref(),
            Some(
                "VACUUM (VERBOSE, ANALYZE) public.churn;\nALTER TABLE public.churn RESET \
                 (autovacuum_enabled);"
            )
        );
    }

    #[test]
    fn a_slots_catalog_xmin_is_no_reason_for_dead_rows_in_ordinary_tables() {
        use crate::audit::snapshot::ReplicationSlot;
        let mut p = primary();
        let churn = churn_without_autovacuum(10, "churn");
        let mut catalog = churn.clone();
        catalog.oid = 11;
        catalog.name = "decoded".into();
        catalog.reloptions = vec![
            "autovacuum_enabled=false".into(),
            "user_catalog_table=true".into(),
        ];
        p.tables = vec![churn, catalog];
        p.replication_slots = vec![ReplicationSlot {
            name: "decoder".into(),
            slot_type: "logical".into(),
            active: false,
            catalog_xmin_age_xids: Some(5_000_000),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let dead = |name: &str| {
            report
                .findings
                .iter()
                .find(|f| f.check == Check::DeadTuples && f.table.as_deref() == Some(name))
                .unwrap()
        };
        let churn = dead("churn");
        assert!(!churn.message.contains("decoder"), "{}", churn.message);
        assert_eq!(churn.evidence_value("horizon_holders"), Some(0.0));
        let decoded = dead("decoded");
        assert!(
            decoded.message.contains("slot decoder"),
            "{}",
            decoded.message
        );
        // The slot is still a finding of its own.
        assert!(report.findings.iter().any(|f| f.check == Check::XminHorizon
            && f.message.contains("decoder")
            && f.message.contains("catalog xmin horizon")));
    }

    #[test]
    fn a_share_of_rows_is_quoted_both_ways_when_the_counters_and_pg_class_disagree() {
        // A VACUUM set reltuples to 5,000 live rows, then a late statistics flush left
        // n_live_tup at 10,000: 10,000 dead rows are 50% by the counters, 67% by pg_class.
        let mut p = primary();
        let mut t = churn_without_autovacuum(10, "raced");
        t.reltuples = 5_000.0;
        t.stats.n_dead_tup = Some(10_000);
        p.tables.push(t);
        let report = audit_nodes(vec![("primary", p)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::DeadTuples)
            .unwrap();
        assert!(
            f.message.contains(
                "(50% of its rows by the statistics counters (10,000 live), 67% by pg_class's \
                 row count (5,000): the two disagree)"
            ),
            "{}",
            f.message
        );
        // When they agree, one share.
        let mut p = primary();
        p.tables.push(churn_without_autovacuum(10, "agreed"));
        let report = audit_nodes(vec![("primary", p)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::DeadTuples)
            .unwrap();
        assert!(f.message.contains("(60% of its rows)"), "{}", f.message);
    }

    #[test]
    fn live_rows_not_counted_since_a_reset_come_from_pg_class() {
        let mut p = primary();
        // pg_stat_reset(), then 30,000 updates: n_live_tup 0, no vacuum or analyze since.
        let mut t = table(10, "reset");
        t.reltuples = 100_000.0;
        t.reloptions = vec!["autovacuum_enabled=false".into()];
        t.stats = Default::default();
        t.stats.n_live_tup = Some(0);
        t.stats.n_dead_tup = Some(30_000);
        p.tables = vec![t];
        let report = audit_nodes(vec![("p", p)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::DeadTuples)
            .unwrap();
        assert!(
            f.message.contains("(23% of its rows by pg_class"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence_value("reltuples"), Some(100_000.0));
    }

    #[test]
    fn standby_only_is_skipped() {
        let mut s = standby();
        let mut t = table(10, "t");
        t.stats.n_dead_tup = Some(0);
        s.tables = vec![t];
        let report = audit_nodes(vec![("s", s)]);
        assert!(report.findings.iter().all(|f| f.check != Check::DeadTuples));
        assert!(
            report
                .skipped
                .iter()
                .any(|s| s.check == Check::DeadTuples && s.reason.starts_with("standby"))
        );
    }

    #[test]
    fn per_table_scale_factor_and_18_cap() {
        let mut t = table(1, "t");
        t.reltuples = 1e9;
        let mut settings = crate::audit::snapshot::Settings::default();
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0 + 0.2e9);
        settings.autovacuum_vacuum_max_threshold = Some(100_000_000.0);
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 1e8);
        t.reloptions = vec!["autovacuum_vacuum_scale_factor=0.01".into()];
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0 + 1e7);
        t.reltuples = -1.0;
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0);
    }

    #[test]
    fn min_size_never_hides_a_table_pg_class_has_not_measured() {
        let mut p = primary();
        // Bulk-loaded with autovacuum off, never vacuumed or analyzed: relpages 0.
        let mut never = table(10, "never_vacuumed");
        never.relpages = 0;
        never.reltuples = -1.0;
        never.relallvisible = 0;
        never.heap_bytes = Some(0);
        never.table_bytes = Some(0);
        never.reloptions = vec!["autovacuum_enabled=f".into()];
        never.stats.n_live_tup = Some(100_000);
        never.stats.n_dead_tup = Some(100_000);
        never.stats.last_autovacuum = None;
        // Measured when it was small, then loaded: its pages grew with its rows.
        let mut grown = table(11, "grown");
        grown.relpages = 10;
        grown.reltuples = 1000.0;
        grown.table_bytes = Some(10 * 8192);
        grown.reloptions = vec!["autovacuum_enabled=false".into()];
        grown.stats.n_live_tup = Some(100_000);
        grown.stats.n_dead_tup = Some(100_000);
        // Truly small: left out.
        let mut small = table(12, "small");
        small.relpages = 10;
        small.reltuples = 1000.0;
        small.table_bytes = Some(10 * 8192);
        small.reloptions = vec!["autovacuum_enabled=false".into()];
        small.stats.n_live_tup = Some(1000);
        small.stats.n_dead_tup = Some(1500);
        p.tables = vec![never, grown, small];
        let options = crate::audit::AuditOptions {
            min_size_bytes: 1 << 20,
            ..Default::default()
        };
        let report = run_with(vec![("p", p)], &options);
        let mut tables: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::DeadTuples)
            .filter_map(|f| f.table.as_deref())
            .collect();
        tables.sort();
        assert_eq!(
            tables,
            ["grown", "never_vacuumed"],
            "{:#?}",
            report.findings
        );
    }

    #[test]
    fn never_vacuumed_is_worded_by_the_evidence() {
        let dead = |p: &mut crate::audit::NodeSnapshot| {
            let mut t = table(10, "t");
            t.reloptions = vec!["autovacuum_enabled=F".into()];
            t.stats.n_dead_tup = Some(150_000);
            t.stats.last_autovacuum = None;
            p.tables = vec![t];
        };
        let message = |p| {
            let report = audit_nodes(vec![("p", p)]);
            report
                .findings
                .iter()
                .find(|f| f.check == Check::DeadTuples)
                .map(|f| f.message.clone())
                .unwrap()
        };
        // Only the server start is known: no reset to speak of.
        let mut p = primary();
        p.database.shared_stats_reset = None;
        dead(&mut p);
        let m = message(p);
        assert!(m.contains("no vacuum on record"), "{m}");
        assert!(!m.contains("reset"), "{m}");
        // "F" is false to PostgreSQL.
        assert!(m.contains("autovacuum_enabled = false"), "{m}");
        let mut p = primary();
        p.database.stats_reset = Some(ts(3600.0));
        dead(&mut p);
        let m = message(p);
        assert!(
            m.contains("since the statistics were reset 60 min ago"),
            "{m}"
        );
    }

    #[test]
    fn counter_checks_are_skipped_without_track_counts() {
        let mut p = primary();
        p.settings.track_counts = false;
        let t = table(10, "t");
        let mut i = index(100, &t, "t_a", vec![col(2, "a")]);
        i.scans = Some(0);
        p.indexes = vec![i];
        p.tables = vec![t];
        let report = audit_nodes(vec![("host=p", p)]);
        for check in [
            Check::UnusedIndex,
            Check::DeadTuples,
            Check::StaleStatistics,
            Check::VisibilityMap,
        ] {
            assert!(
                report
                    .skipped
                    .iter()
                    .any(|s| s.check == check
                        && s.reason.starts_with("track_counts is off on host=p")),
                "{check:?}: {:?}",
                report.skipped
            );
            assert!(report.findings.iter().all(|f| f.check != check));
        }
    }

    #[test]
    fn dead_rows_in_a_toast_table_name_their_owner() {
        use crate::audit::snapshot::{TableStats, ToastTable};
        let toast = |reloptions: Vec<String>| ToastTable {
            oid: 99,
            name: "pg_toast_10".into(),
            relpages: 5000,
            reltuples: 10_000.0,
            reloptions,
            stats: TableStats {
                n_live_tup: Some(10_000),
                n_dead_tup: Some(40_000),
                n_ins_since_vacuum: Some(50_000),
                last_autovacuum: Some(ts(86_400.0)),
                ..Default::default()
            },
        };
        // toast.autovacuum_enabled=false lands on the TOAST table itself.
        let mut p = primary();
        let mut owner = table(10, "docs");
        owner.toast = Some(toast(vec!["autovacuum_enabled=false".into()]));
        p.tables = vec![owner];
        let report = audit_nodes(vec![("p", p)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::DeadTuples)
            .unwrap_or_else(|| panic!("{:#?}", report.findings));
        assert_eq!(f.schema.as_deref(), Some("pg_toast"));
        assert_eq!(f.table.as_deref(), Some("pg_toast_10"));
        assert!(
            f.message.starts_with(
                "TOAST table pg_toast.pg_toast_10 of public.docs has 40,000 dead rows"
            ),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("toast.autovacuum_enabled = false on public.docs")
        );
        assert_eq!(
            f.fix.as_deref(),
            Some(
                "VACUUM (VERBOSE, PROCESS_MAIN FALSE) public.docs;\nALTER TABLE public.docs RESET \
                 (toast.autovacuum_enabled);"
            )
        );
        assert_eq!(f.evidence_value("inserts_since_vacuum"), Some(50_000.0));
        assert_eq!(f.evidence_value("insert_trigger_tuples"), Some(3000.0));

        // A TOAST table without options of its own follows the owner's, as autovacuum does:
        // the owner's scale factor makes these dead rows due, not behind.
        let mut p = primary();
        let mut owner = table(10, "docs");
        owner.reloptions = vec!["autovacuum_vacuum_scale_factor=2".into()];
        owner.toast = Some(toast(vec![]));
        p.tables = vec![owner];
        let report = audit_nodes(vec![("p", p)]);
        assert!(
            report.findings.iter().all(|f| f.check != Check::DeadTuples),
            "{:#?}",
            report.findings
        );
    }

    #[test]
    fn dead_rows_after_a_vacuum_name_the_oldest_xmin_whatever_its_age() {
        use crate::audit::snapshot::Standby;
        let mut p = primary();
        let mut t = table(10, "churn");
        t.reltuples = 10_000.0;
        t.stats.n_live_tup = Some(10_000);
        t.stats.n_dead_tup = Some(50_000);
        t.stats.last_autovacuum = Some(ts(30.0));
        p.tables = vec![t];
        // A young session and standby feedback below the stand-alone thresholds.
        p.sessions = vec![Session {
            pid: 77,
            state: Some("active".into()),
            xact_age_seconds: Some(60.0),
            xmin_age_xids: Some(900),
            ..Default::default()
        }];
        p.standbys = vec![Standby {
            pid: 5,
            application_name: Some("replica1".into()),
            xmin_age_xids: Some(40_000),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.check != Check::XminHorizon)
        );
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::DeadTuples)
            .unwrap();
        assert!(
            f.message
                .contains("the oldest xmin is held by standby replica1"),
            "{}",
            f.message
        );
        assert!(f.message.contains("40,000"), "{}", f.message);
        assert_eq!(f.evidence_value("oldest_xmin_age_xids"), Some(40_000.0));
        assert_eq!(f.evidence_value("horizon_holders"), Some(0.0));
    }
}
