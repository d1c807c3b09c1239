//! The audit checks, one per file, and the helpers they share (quoting, ages, autovacuum
//! triggers).

pub mod advisory_lock;
pub mod connection_pressure;
pub mod dead_tuples;
pub mod duplicate_index;
pub mod idle_in_transaction;
pub mod index_bloat;
pub mod invalid_index;
pub mod lock_queue;
pub mod missing_fk_index;
pub mod prepared_transaction;
pub mod recovery_conflict;
pub mod replication_slot;
pub mod stale_statistics;
pub mod table_bloat;
pub mod unused_index;
pub mod visibility_map;
pub mod xid_wraparound;
pub mod xmin_horizon;

use super::snapshot::{Settings, Table};
use super::{Check, Context, Output};

/// Runs every check, their findings in this order.
///
/// The checks only read the context, so unused_index, a third of the checks' time at fleet scale
/// (a finding and its message for most indexes), runs on a thread of its own beside the others:
/// by then every read is done and the server idle, and the audit runs in series after them.
pub fn run_all(ctx: &Context, out: &mut Output) {
    let unused = std::thread::scope(|scope| {
        let unused = scope.spawn(|| {
            let mut unused = Output::default();
            unused_index::run(ctx, &mut unused);
            unused
        });
        let mut rest = Output::default();
        invalid_index::run(ctx, &mut rest);
        duplicate_index::run(ctx, &mut rest);
        missing_fk_index::run(ctx, &mut rest);
        dead_tuples::run(ctx, &mut rest);
        stale_statistics::run(ctx, &mut rest);
        visibility_map::run(ctx, &mut rest);
        index_bloat::run(ctx, &mut rest);
        table_bloat::run(ctx, &mut rest);
        xmin_horizon::run(ctx, &mut rest);
        replication_slot::run(ctx, &mut rest);
        xid_wraparound::run(ctx, &mut rest);
        advisory_lock::run(ctx, &mut rest);
        idle_in_transaction::run(ctx, &mut rest);
        lock_queue::run(ctx, &mut rest);
        connection_pressure::run(ctx, &mut rest);
        prepared_transaction::run(ctx, &mut rest);
        recovery_conflict::run(ctx, &mut rest);
        match unused.join() {
            Ok(unused) => (unused, rest),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    let (unused, rest) = unused;
    out.append(unused);
    out.append(rest);
}

pub use super::snapshot::qualified;

/// The reason a table-statistics check cannot run on a standby-only audit.
pub fn skip_standby(out: &mut Output, check: Check) {
    out.skip(
        check,
        "standby: table statistics (dead tuples, modifications since analyze, vacuum and analyze \
         times) are kept only on the primary and read as zeros on a standby, and no primary was \
         audited",
    );
}

/// Skips a check that counts on the statistics counters when a node it reads has
/// `track_counts` off: nothing is counted there (scans, dead tuples, modifications stay frozen),
/// so a clean result or an "unused" would be false. True when skipped.
pub fn skip_without_counters<'a>(
    out: &mut Output,
    check: Check,
    nodes: impl IntoIterator<Item = &'a super::Node<'a>>,
) -> bool {
    let off: Vec<&str> = nodes
        .into_iter()
        .filter(|n| !n.snapshot.settings.track_counts)
        .map(|n| n.name)
        .collect();
    if off.is_empty() {
        return false;
    }
    out.skip(
        check,
        format!(
            "track_counts is off on {}: the statistics counters this check reads are not \
             kept there",
            off.join(", ")
        ),
    );
    true
}

/// An age in words: "45 s", "12 min", "3.5 h", "9.2 days".
pub fn age_words(seconds: f64) -> String {
    use crate::format::{OneDecimal, WholeNumber};
    let s = seconds.max(0.0);
    if s < 120.0 {
        format!("{} s", WholeNumber(s))
    } else if s < 7200.0 {
        format!("{} min", WholeNumber(s / 60.0))
    } else if s < 172_800.0 {
        format!("{} h", OneDecimal(s / 3600.0))
    } else {
        format!("{} days", OneDecimal(s / 86_400.0))
    }
}

pub fn count_words(value: f64) -> String {
    crate::format::count(value)
}

/// A count and its noun, singular for exactly one: "1 scan", "0 scans", "4,096 scans".
pub fn counted(value: f64, singular: &str, plural: &str) -> String {
    let noun = if value == 1.0 { singular } else { plural };
    format!("{} {noun}", count_words(value))
}

pub fn bytes_words(value: f64) -> String {
    crate::format::bytes(value)
}

/// Whether autovacuum can process the table, and if not, why.
pub fn autovacuum_off_reason(table: &Table, settings: &Settings) -> Option<&'static str> {
    if !settings.track_counts {
        Some("track_counts is off on the server, so autovacuum has nothing to go on")
    } else if !settings.autovacuum {
        Some("autovacuum is off on the server")
    } else if table.autovacuum_disabled_by_reloption() {
        Some("autovacuum is disabled on the table (autovacuum_enabled = false)")
    } else {
        None
    }
}

/// `reltuples` as autovacuum reads it: -1 (14+, never vacuumed or analyzed) counts as 0.
pub fn reltuples_for_triggers(table: &Table) -> f64 {
    table.reltuples.max(0.0)
}

/// The table's own dead-tuple trigger for autovacuum: `autovacuum_vacuum_threshold +
/// autovacuum_vacuum_scale_factor × reltuples`, per-table storage options first, capped on 18+
/// by `autovacuum_vacuum_max_threshold` (-1 disables the cap).
pub fn vacuum_trigger(table: &Table, settings: &Settings) -> f64 {
    let base = table
        .reloption_f64("autovacuum_vacuum_threshold")
        .unwrap_or(settings.autovacuum_vacuum_threshold);
    let scale = table
        .reloption_f64("autovacuum_vacuum_scale_factor")
        .unwrap_or(settings.autovacuum_vacuum_scale_factor);
    let trigger = base + scale * reltuples_for_triggers(table);
    let cap = table
        .reloption_f64("autovacuum_vacuum_max_threshold")
        .or(settings.autovacuum_vacuum_max_threshold);
    match cap {
        Some(cap) if cap >= 0.0 => trigger.min(cap),
        _ => trigger,
    }
}

/// 13+: the insert trigger for autovacuum: `autovacuum_vacuum_insert_threshold +
/// autovacuum_vacuum_insert_scale_factor × reltuples` against `n_ins_since_vacuum`, storage
/// options first. None before 13 and when the threshold is -1 (disabled) for this table. (18
/// scales by the unfrozen part of the table only, so there this is an upper bound.)
pub fn insert_trigger(table: &Table, settings: &Settings) -> Option<f64> {
    let base = table
        .reloption_f64("autovacuum_vacuum_insert_threshold")
        .or(settings.autovacuum_vacuum_insert_threshold)?;
    if base < 0.0 {
        return None;
    }
    let scale = table
        .reloption_f64("autovacuum_vacuum_insert_scale_factor")
        .or(settings.autovacuum_vacuum_insert_scale_factor)?;
    Some(base + scale * reltuples_for_triggers(table))
}

/// The autoanalyze trigger: `autovacuum_analyze_threshold + autovacuum_analyze_scale_factor ×
/// reltuples`, against `n_mod_since_analyze`.
pub fn analyze_trigger(table: &Table, settings: &Settings) -> f64 {
    let base = table
        .reloption_f64("autovacuum_analyze_threshold")
        .unwrap_or(settings.autovacuum_analyze_threshold);
    let scale = table
        .reloption_f64("autovacuum_analyze_scale_factor")
        .unwrap_or(settings.autovacuum_analyze_scale_factor);
    base + scale * reltuples_for_triggers(table)
}

/// The table's live rows for comparing against: `n_live_tup`, except when it is 0 with no
/// vacuum or analyze on record. A statistics reset (or a crash on 15+, which discards the
/// counters) zeroes `n_live_tup`, and only a VACUUM or ANALYZE counts the rows again
/// (pgstat_report_vacuum/pgstat_report_analyze set it), so that 0 means "not counted since",
/// and the row count `pg_class` kept is the better figure. The flag says `reltuples` was used.
pub fn live_rows(table: &Table) -> (f64, bool) {
    let s = &table.stats;
    let counted = s.n_live_tup.unwrap_or(0).max(0) as f64;
    let recounted = latest(s.last_vacuum, s.last_autovacuum).is_some()
        || latest(s.last_analyze, s.last_autoanalyze).is_some();
    if counted == 0.0 && !recounted && table.reltuples > 0.0 {
        (table.reltuples, true)
    } else {
        (counted, false)
    }
}

/// The most recent of two times (manual and automatic vacuum, or analyze).
pub fn latest(
    a: Option<super::snapshot::Timestamp>,
    b: Option<super::snapshot::Timestamp>,
) -> Option<super::snapshot::Timestamp> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if x.epoch_seconds >= y.epoch_seconds {
            x
        } else {
            y
        }),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
pub mod fixture {
    //! Hand-built snapshots for the checks' unit tests.

    use crate::audit::snapshot::*;
    use crate::audit::{AuditOptions, AuditReport, NodeResult, audit};

    pub fn ts(age_seconds: f64) -> Timestamp {
        Timestamp {
            epoch_seconds: 1_800_000_000.0 - age_seconds,
            age_seconds,
        }
    }

    pub fn primary() -> NodeSnapshot {
        NodeSnapshot {
            server: ServerInfo {
                version_num: 170_004,
                version: "17.4".into(),
                in_recovery: false,
                system_identifier: Some("7000000000000000001".into()),
                database: "app".into(),
                user: "postgres".into(),
                superuser: true,
                pg_monitor: true,
                pg_read_all_stats: true,
                started_at: Some(ts(90.0 * 86_400.0)),
            },
            database: DatabaseInfo {
                shared_stats_reset: Some(ts(60.0 * 86_400.0)),
                frozen_xid_age: Some(1000),
                multixact_age: Some(1),
                // Older than the statistics: the window is the server's, and known to be.
                created: Some(ts(365.0 * 86_400.0)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    pub fn standby() -> NodeSnapshot {
        let mut s = primary();
        s.server.in_recovery = true;
        s
    }

    pub fn table(oid: u32, name: &str) -> Table {
        Table {
            oid,
            schema: "public".into(),
            name: name.into(),
            kind: TableKind::Table,
            unlogged: false,
            relpages: 1000,
            reltuples: 100_000.0,
            relallvisible: 1000,
            reloptions: vec![],
            heap_bytes: Some(1000 * 8192),
            table_bytes: Some(1000 * 8192),
            frozen_xid_age: Some(1000),
            multixact_age: Some(1),
            stats: TableStats {
                n_tup_ins: Some(100_000),
                n_tup_upd: Some(0),
                n_tup_hot_upd: Some(0),
                n_tup_del: Some(0),
                n_live_tup: Some(100_000),
                n_dead_tup: Some(0),
                n_mod_since_analyze: Some(0),
                n_ins_since_vacuum: Some(0),
                last_vacuum: None,
                last_autovacuum: Some(ts(3600.0)),
                last_analyze: None,
                last_autoanalyze: Some(ts(3600.0)),
                analyze_count: Some(0),
                autoanalyze_count: Some(1),
            },
            parent_oid: None,
            inherited_statistics: None,
            toast: None,
        }
    }

    pub fn col(attnum: i16, name: &str) -> IndexColumn {
        IndexColumn {
            definition: name.into(),
            expression: None,
            attnum,
            opclass: 1978,
            collation: 0,
            option: 0,
        }
    }

    pub fn index(oid: u32, table: &Table, name: &str, columns: Vec<IndexColumn>) -> Index {
        let keys = columns.len();
        Index {
            oid,
            table_oid: table.oid,
            schema: table.schema.clone(),
            table: table.name.clone(),
            name: name.into(),
            access_method: "btree".into(),
            unique: false,
            primary: false,
            exclusion: false,
            replica_identity: false,
            nulls_not_distinct: false,
            immediate: true,
            valid: true,
            ready: true,
            live: true,
            partitioned: false,
            partition_child: false,
            columns,
            key_column_count: keys,
            predicate: None,
            predicate_tree: None,
            constraint: None,
            reloptions: vec![],
            relpages: 300,
            reltuples: table.reltuples,
            size_bytes: Some(300 * 8192),
            scans: Some(5),
            last_scan: None,
            definition: None,
            unread: None,
            parent_index_oid: None,
        }
    }

    pub fn int_column(table: &Table, attnum: i16, name: &str) -> Column {
        Column {
            table_oid: table.oid,
            attnum,
            name: name.into(),
            type_length: 4,
            type_align: 'i',
            not_null: true,
            dropped: false,
            null_frac: Some(0.0),
            avg_width: Some(4.0),
            n_distinct: Some(-1.0),
        }
    }

    /// The findings of one check.
    pub fn findings_of(
        report: &AuditReport,
        check: crate::audit::Check,
    ) -> Vec<&crate::audit::Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.check == check)
            .collect()
    }

    pub fn audit_nodes(nodes: Vec<(&str, NodeSnapshot)>) -> AuditReport {
        run_with(nodes, &AuditOptions::default())
    }

    pub fn run_with(nodes: Vec<(&str, NodeSnapshot)>, options: &AuditOptions) -> AuditReport {
        let nodes: Vec<NodeResult> = nodes
            .into_iter()
            .map(|(name, s)| NodeResult {
                name: name.into(),
                outcome: Ok(s),
            })
            .collect();
        audit(&nodes, options)
    }
}
