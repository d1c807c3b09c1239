//! unused_index: indexes no audited node has scanned, and (16+) indexes nobody has scanned for
//! longer than the minimum statistics age.
//!
//! `idx_scan` is per node: a standby counts only the scans it served itself, so an index is
//! unused only when the sum over every audited node is 0. Indexes that enforce a constraint,
//! uniqueness or the replica identity are never offered for dropping, whatever their scans.
//!
//! A partitioned index has no storage and no scans of its own: the planner scans its
//! partitions' indexes. Its usage is theirs, summed on each node; a partition's index cannot be
//! dropped on its own (it goes with its parent index), so it is never reported by itself.

use crate::audit::snapshot::{Index, Timestamp};
use crate::audit::{Check, Context, Finding, NodeUsage, Output, Severity};

use super::{age_words, bytes_words, counted, qualified};

/// 16+: an index whose last scan on every node is older than the minimum statistics age, and at
/// least this old, is reported as no longer used.
pub const NOT_SCANNED_LATELY_MIN_SECONDS: f64 = 86_400.0;

/// The table's inserts and non-HOT updates over the counting window: each writes an entry into
/// every index of the table, this one included once it existed.
pub const WRITES_EVIDENCE: &str = "table_inserts_and_non_hot_updates_in_window";
pub const WRITES_PER_DAY_EVIDENCE: &str = "table_inserts_and_non_hot_updates_per_day";

pub fn run(ctx: &Context, out: &mut Output) {
    if ctx.primary.is_none() {
        // A standby-only audit cannot see the primary's scans, so "unused" would be a guess.
        out.skip(
            Check::UnusedIndex,
            "standby: only standbys were audited; each node counts only its own index scans, \
             and the primary's were not seen",
        );
        return;
    }
    if super::skip_without_counters(out, Check::UnusedIndex, &ctx.nodes) {
        return;
    }
    let min_age = ctx.options.min_stats_age.as_secs_f64();
    let window = ctx.shortest_window();
    let node_names: Vec<std::sync::Arc<str>> = ctx.nodes.iter().map(|n| n.name.into()).collect();
    for index in &ctx.reference.snapshot.indexes {
        if !index.valid || index.is_load_bearing() || !ctx.index_big_enough(index) {
            continue;
        }
        // Judged through the partitioned index at the top of its tree.
        if index.partition_child || index.parent_index_oid.is_some() {
            continue;
        }
        let (rows, size_bytes) = if index.partitioned {
            let leaves = partition_leaves(ctx, index);
            if leaves.is_empty() {
                continue; // no partition yet: nothing could have scanned it
            }
            let size = leaves
                .iter()
                .map(|l| l.size_bytes.unwrap_or(0).max(0))
                .sum();
            (summed_usage(ctx, &leaves), size)
        } else {
            let rows = ctx
                .usage_of(index)
                .iter()
                .map(|row| {
                    row.map(|i| Usage {
                        scans: i.scans,
                        last_scan: i.last_scan,
                    })
                })
                .collect();
            (rows, index.size_bytes.unwrap_or(0))
        };
        let usage: Vec<NodeUsage> = node_names
            .iter()
            .zip(&rows)
            .map(|(node, row)| NodeUsage {
                node: node.clone(),
                index_scans: row.and_then(|u| u.scans),
                last_idx_scan: row.and_then(|u| u.last_scan).map(|t| t.iso()),
            })
            .collect();
        let scans: i64 = rows.iter().flatten().map(|u| u.scans.unwrap_or(0)).sum();
        let target = Target { index, size_bytes };
        if scans == 0 {
            out.findings
                .push(never_scanned(ctx, &target, window, min_age, usage));
        } else if let Some(finding) = not_scanned_lately(ctx, &target, &rows, scans, min_age, usage)
        {
            out.findings.push(finding);
        }
    }
}

/// An index's usage on one node: its own, or for a partitioned index its partitions' summed.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    scans: Option<i64>,
    last_scan: Option<Timestamp>,
}

/// The index judged, with its size (a partitioned index's is its partitions').
struct Target<'i> {
    index: &'i Index,
    size_bytes: i64,
}

/// The indexes with storage under a partitioned index, through every level of partitioning.
fn partition_leaves<'a>(ctx: &Context<'a>, index: &Index) -> Vec<&'a Index> {
    let mut leaves = Vec::new();
    let mut pending = vec![(index.oid, 0u8)];
    while let Some((oid, depth)) = pending.pop() {
        for child in ctx.index_partitions.get(&oid).into_iter().flatten() {
            if child.partitioned {
                // The bound only guards a catalog that loops.
                if depth < 32 {
                    pending.push((child.oid, depth + 1));
                }
            } else {
                leaves.push(*child);
            }
        }
    }
    leaves
}

/// The partitions' index scans summed on each node, with the latest last scan among them; a
/// node where no partition's index is known reads as unknown.
fn summed_usage(ctx: &Context, leaves: &[&Index]) -> Vec<Option<Usage>> {
    let mut summed: Vec<Option<Usage>> = vec![None; ctx.nodes.len()];
    for leaf in leaves {
        for (slot, row) in summed.iter_mut().zip(ctx.usage_of(leaf)) {
            let Some(row) = row else { continue };
            let usage = slot.get_or_insert_with(Usage::default);
            if let Some(n) = row.scans {
                usage.scans = Some(usage.scans.unwrap_or(0) + n);
            }
            usage.last_scan = match (usage.last_scan, row.last_scan) {
                (Some(a), Some(b)) => Some(if a.epoch_seconds >= b.epoch_seconds {
                    a
                } else {
                    b
                }),
                (a, b) => a.or(b),
            };
        }
    }
    summed
}

/// The foreign key whose referencing columns this index's leading columns cover (in any order)
/// and no other index of the table that stays does: deletes and key updates on the referenced
/// table look rows up through it. Where another valid index that is scanned or load-bearing (so
/// not itself offered for dropping as unused) serves the key too, dropping this one costs those
/// lookups nothing; two unused indexes on the key both keep the caveat, so following every fix
/// never leaves the key without an index unawares.
fn supported_foreign_key<'a>(ctx: &Context<'a>, index: &Index) -> Option<&'a str> {
    let others = ctx
        .indexes_by_table
        .get(&index.table_oid)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    ctx.foreign_keys_by_table
        .get(&index.table_oid)
        .into_iter()
        .flatten()
        .find(|fk| {
            super::missing_fk_index::serves(index, fk)
                && !others.iter().any(|o| {
                    o.oid != index.oid
                        && super::missing_fk_index::serves(o, fk)
                        && (o.is_load_bearing() || ctx.total_scans(o) > 0)
                })
        })
        .map(|fk| fk.name.as_str())
}

fn base_finding(ctx: &Context, target: &Target, severity: Severity, message: String) -> Finding {
    let index = target.index;
    let name = qualified(&index.schema, &index.name);
    // DROP INDEX CONCURRENTLY refuses a partitioned index (it would have to lock every
    // partition at once); dropping it drops its partitions' indexes with it.
    let drop = if index.partitioned {
        format!(
            "-- a partitioned index cannot be dropped concurrently: this locks the table and \
             its partitions\nDROP INDEX {name};"
        )
    } else {
        format!("DROP INDEX CONCURRENTLY {name};")
    };
    let (mut message, fix) = (message, drop);
    // A node the user named could not be read: it may be the one standby whose read traffic
    // uses this index (each node counts only its own scans), so the drop is no longer a
    // confident fix. The fix reads the count there first and leaves the DROP commented out.
    let fix = if ctx.nodes_not_read.is_empty() {
        fix
    } else {
        let nodes = ctx.nodes_not_read.join(", ");
        message.push_str(&format!(
            "; {nodes} could not be read in this run, so its scans there were not seen: check \
             them before dropping"
        ));
        let literal = crate::sql::quote_literal(&name);
        // A partitioned index counts no scans itself: its partitions' indexes do.
        let read = if index.partitioned {
            format!(
                "SELECT sum(idx_scan) FROM pg_stat_all_indexes WHERE indexrelid IN \
                 (SELECT relid FROM pg_partition_tree({literal}::regclass) WHERE isleaf);"
            )
        } else {
            format!(
                "SELECT idx_scan FROM pg_stat_all_indexes WHERE indexrelid = {literal}::regclass;"
            )
        };
        format!(
            "-- on {nodes} (not read in this run), check its scans first:\n{read}\n\
             -- then, if they are 0 there too:\n-- {}",
            fix.replace('\n', "\n-- ")
        )
    };
    let mut finding = Finding::new(Check::UnusedIndex, severity, message)
        .on_index(index)
        .evidence("index_size_bytes", target.size_bytes as f64)
        .evidence("nodes_not_read", ctx.nodes_not_read.len() as f64)
        .fix(fix);
    // What the index costs: every insert and every non-HOT update writes an entry into it. The
    // counters are the table's since counting started, which may predate the index (nothing
    // records when an index was created): the name says exactly that.
    if let Some(table) = ctx.primary_table(&index.schema, &index.table) {
        let s = &table.stats;
        let writes =
            s.n_tup_ins.unwrap_or(0) + s.n_tup_upd.unwrap_or(0) - s.n_tup_hot_upd.unwrap_or(0);
        finding = finding.evidence(WRITES_EVIDENCE, writes.max(0) as f64);
        // A rate over a window shorter than an hour (a restart a minute ago, a bulk load just
        // after it) would claim billions of writes a day from seconds of counting.
        if let Some(w) = ctx.primary.and_then(|p| p.window)
            && w.seconds() >= 3_600.0
        {
            finding = finding.evidence(
                WRITES_PER_DAY_EVIDENCE,
                writes.max(0) as f64 * 86_400.0 / w.seconds(),
            );
        }
    }
    finding
}

fn never_scanned(
    ctx: &Context,
    target: &Target,
    window: Option<(f64, &str)>,
    min_age: f64,
    usage: Vec<NodeUsage>,
) -> Finding {
    let index = target.index;
    let nodes = ctx.nodes.len();
    let mut message = format!(
        "{} {} on {} ({}) has not been scanned on any of the {nodes} audited node(s)",
        if index.partitioned {
            "partitioned index"
        } else {
            "index"
        },
        index.name,
        qualified(&index.schema, &index.table),
        bytes_words(target.size_bytes as f64),
    );
    if index.partitioned {
        message.push_str(" (its partitions' indexes, summed)");
    }
    let mut severity = Severity::Warning;
    match window {
        Some((seconds, node)) => {
            message.push_str(&format!(" in {} of counting", age_words(seconds)));
            if seconds < min_age {
                severity = Severity::Info;
                message.push_str(&format!(
                    "; {node} has been counting for less than the minimum statistics age ({}), \
                     so this may just be too early to tell",
                    age_words(min_age)
                ));
            }
        }
        None => {
            severity = Severity::Info;
            message.push_str("; how long the counters have been counting is unknown");
        }
    }
    if let Some(node) = ctx.window_upper_bound() {
        severity = Severity::Info;
        message.push_str(&format!(
            "; the window of {node} is an upper bound: no statistics reset is recorded for the \
             database and this role cannot read when it was created, so it may have counted \
             for less"
        ));
    }
    if ctx.standbys_not_audited > 0 {
        message.push_str(&format!(
            "; {} standby(s) streaming from the primary were not audited, so their usage was \
             not seen",
            ctx.standbys_not_audited
        ));
    }
    if let Some(fk) = supported_foreign_key(ctx, index) {
        severity = Severity::Info;
        message.push_str(&format!(
            "; it may support foreign key {fk}: without it, deletes and key updates on the \
             referenced table scan this table"
        ));
    }
    if !ctx.nodes_not_read.is_empty() {
        severity = Severity::Info;
    }
    let mut finding = base_finding(ctx, target, severity, message).evidence("index_scans", 0.0);
    if let Some((seconds, _)) = window {
        finding = finding.evidence("counting_window_seconds", seconds);
    }
    finding = finding.evidence("standbys_not_audited", ctx.standbys_not_audited as f64);
    finding.usage = usage;
    finding
}

/// 16+: scanned at some point, but on every node the last scan is older than the minimum
/// statistics age.
fn not_scanned_lately(
    ctx: &Context,
    target: &Target,
    rows: &[Option<Usage>],
    scans: i64,
    min_age: f64,
    usage: Vec<NodeUsage>,
) -> Option<Finding> {
    if ctx.nodes.iter().any(|n| n.snapshot.server.major() < 16) {
        return None;
    }
    let mut newest: Option<f64> = None;
    for row in rows {
        let row = (*row)?;
        if row.scans.unwrap_or(0) == 0 {
            continue;
        }
        let age = row.last_scan?.age_seconds;
        newest = Some(newest.map_or(age, |n: f64| n.min(age)));
    }
    let age = newest?;
    // A last scan a moment ago is not "lately unused", even when the minimum age is zero.
    if age < min_age.max(NOT_SCANNED_LATELY_MIN_SECONDS) {
        return None;
    }
    let index = target.index;
    let mut message = format!(
        "index {} on {} was last scanned {} ago on any audited node ({} in all)",
        index.name,
        qualified(&index.schema, &index.table),
        age_words(age),
        counted(scans as f64, "scan", "scans")
    );
    if let Some(fk) = supported_foreign_key(ctx, index) {
        message.push_str(&format!("; it may support foreign key {fk}"));
    }
    let mut finding = base_finding(ctx, target, Severity::Info, message)
        .evidence("index_scans", scans as f64)
        .evidence("last_idx_scan_age_seconds", age);
    finding.usage = usage;
    Some(finding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{ForeignKey, Standby};

    fn of(report: &crate::audit::AuditReport) -> Vec<&Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.check == Check::UnusedIndex)
            .collect()
    }

    fn cluster() -> (crate::audit::NodeSnapshot, crate::audit::NodeSnapshot) {
        let mut p = primary();
        let t = table(10, "orders");
        let mut used_on_standby = index(100, &t, "orders_status", vec![col(2, "status")]);
        used_on_standby.scans = Some(0);
        let mut pk = index(101, &t, "orders_pkey", vec![col(1, "id")]);
        pk.unique = true;
        pk.primary = true;
        pk.scans = Some(0);
        let mut unused = index(102, &t, "orders_note", vec![col(3, "note")]);
        unused.scans = Some(0);
        p.tables.push(t);
        p.indexes = vec![used_on_standby.clone(), pk.clone(), unused.clone()];
        p.standbys.push(Standby {
            pid: 1,
            ..Default::default()
        });
        let mut s = standby();
        s.tables = p.tables.clone();
        used_on_standby.scans = Some(42);
        s.indexes = vec![used_on_standby, pk, unused];
        (p, s)
    }

    #[test]
    fn usage_on_a_standby_counts_and_constraints_are_never_droppable() {
        let (p, s) = cluster();
        let report = audit_nodes(vec![("primary", p), ("standby", s)]);
        let found = of(&report);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.index.as_deref(), Some("orders_note"));
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(
            f.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.orders_note;")
        );
        assert_eq!(f.usage.len(), 2);
        assert_eq!(f.evidence_value("standbys_not_audited"), Some(0.0));
    }

    #[test]
    fn primary_alone_says_its_standbys_were_not_seen() {
        let (p, _) = cluster();
        let report = audit_nodes(vec![("primary", p)]);
        let found = of(&report);
        let names: Vec<_> = found.iter().filter_map(|f| f.index.as_deref()).collect();
        assert_eq!(names, vec!["orders_note", "orders_status"]);
        assert!(
            found[1].message.contains("were not audited"),
            "{}",
            found[1].message
        );
        assert_eq!(found[1].evidence_value("standbys_not_audited"), Some(1.0));
    }

    #[test]
    fn a_short_window_lowers_the_severity() {
        let (mut p, _) = cluster();
        p.standbys.clear();
        p.database.stats_reset = Some(ts(3600.0));
        let report = audit_nodes(vec![("primary", p)]);
        let f = of(&report)
            .into_iter()
            .find(|f| f.index.as_deref() == Some("orders_note"))
            .unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.message.contains("minimum statistics age"));
        assert_eq!(f.evidence_value("counting_window_seconds"), Some(3600.0));
        assert!(f.evidence_value(WRITES_PER_DAY_EVIDENCE).is_some());
    }

    /// A write rate from seconds of counting would be extrapolated into nonsense.
    #[test]
    fn no_write_rate_from_less_than_an_hour_of_counting() {
        let (mut p, _) = cluster();
        p.standbys.clear();
        p.database.stats_reset = Some(ts(60.0));
        let report = audit_nodes(vec![("primary", p)]);
        let f = of(&report)
            .into_iter()
            .find(|f| f.index.as_deref() == Some("orders_note"))
            .unwrap();
        assert_eq!(f.evidence_value("counting_window_seconds"), Some(60.0));
        assert!(f.evidence_value(WRITES_EVIDENCE).is_some());
        assert_eq!(f.evidence_value(WRITES_PER_DAY_EVIDENCE), None);
    }

    #[test]
    fn an_index_that_may_back_a_foreign_key_is_only_info() {
        let (mut p, _) = cluster();
        p.standbys.clear();
        p.foreign_keys.push(ForeignKey {
            name: "orders_note_fk".into(),
            table_oid: 10,
            schema: "public".into(),
            table: "orders".into(),
            referenced_table_oid: 11,
            referenced_schema: "public".into(),
            referenced_table: "notes".into(),
            attnums: vec![3],
            column_names: vec!["note".into()],
            referenced_index_oid: 0,
            inherited: false,
        });
        let report = audit_nodes(vec![("primary", p)]);
        let f = of(&report)
            .into_iter()
            .find(|f| f.index.as_deref() == Some("orders_note"))
            .unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.message.contains("orders_note_fk"));
    }

    #[test]
    fn the_foreign_key_caveat_needs_no_other_index_that_stays_to_serve_the_key() {
        let fk = ForeignKey {
            name: "orders_note_fk".into(),
            table_oid: 10,
            schema: "public".into(),
            table: "orders".into(),
            referenced_table_oid: 11,
            referenced_schema: "public".into(),
            referenced_table: "notes".into(),
            attnums: vec![3],
            column_names: vec!["note".into()],
            referenced_index_oid: 0,
            inherited: false,
        };
        let with_second = |scans: i64| {
            let (mut p, _) = cluster();
            p.standbys.clear();
            p.foreign_keys.push(fk.clone());
            let t = p.tables[0].clone();
            let mut second = index(
                103,
                &t,
                "orders_note_created",
                vec![col(3, "note"), col(4, "c")],
            );
            second.scans = Some(scans);
            p.indexes.push(second);
            audit_nodes(vec![("primary", p)])
        };
        // Another index that is scanned serves the key: no caveat, a plain warning.
        let report = with_second(7);
        let f = of(&report)
            .into_iter()
            .find(|f| f.index.as_deref() == Some("orders_note"))
            .unwrap();
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert!(!f.message.contains("foreign key"), "{}", f.message);
        // Both unused: each keeps the caveat, so dropping both is never advised unawares.
        let report = with_second(0);
        for name in ["orders_note", "orders_note_created"] {
            let f = of(&report)
                .into_iter()
                .find(|f| f.index.as_deref() == Some(name))
                .unwrap();
            assert_eq!(f.severity, Severity::Info, "{}", f.message);
            assert!(f.message.contains("orders_note_fk"), "{}", f.message);
        }
    }

    #[test]
    fn the_write_evidence_is_named_for_what_it_counts() {
        assert_eq!(
            WRITES_EVIDENCE,
            "table_inserts_and_non_hot_updates_in_window"
        );
        let (mut p, _) = cluster();
        p.standbys.clear();
        p.tables[0].stats.n_tup_ins = Some(500_000);
        p.tables[0].stats.n_tup_upd = Some(30);
        p.tables[0].stats.n_tup_hot_upd = Some(10);
        let report = audit_nodes(vec![("primary", p)]);
        let f = of(&report)[0];
        assert_eq!(f.evidence_value(WRITES_EVIDENCE), Some(500_020.0));
    }

    #[test]
    fn a_window_that_is_only_an_upper_bound_keeps_unused_indexes_informational() {
        let (mut p, _) = cluster();
        p.standbys.clear();
        // 15+, no reset recorded, creation time unknown: the server-wide time is all there is.
        p.server.version_num = 160_004;
        p.database.stats_reset = None;
        p.database.created = None;
        let report = audit_nodes(vec![("primary", p.clone())]);
        let f = of(&report)[0];
        assert_eq!(f.severity, Severity::Info, "{}", f.message);
        assert!(
            f.message
                .contains("the window of primary is an upper bound"),
            "{}",
            f.message
        );
        // Knowing when the database was created (30 days ago, after the server-wide reset)
        // lifts it, and starts the window.
        p.database.created = Some(ts(30.0 * 86_400.0));
        let report = audit_nodes(vec![("primary", p)]);
        let f = of(&report)[0];
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert_eq!(
            report.nodes[0].window.map(|w| w.source),
            Some(crate::audit::WindowSource::DatabaseCreated)
        );
    }

    #[test]
    fn a_partitioned_index_is_unused_when_its_partitions_indexes_are_on_every_node() {
        use crate::audit::snapshot::TableKind;
        let mut p = primary();
        let mut parent = table(10, "events");
        parent.kind = TableKind::Partitioned;
        let mut part_1 = table(11, "events_1");
        part_1.parent_oid = Some(10);
        let mut part_2 = table(12, "events_2");
        part_2.parent_oid = Some(10);
        let on_parent = |oid, name: &str, column: IndexColumnSpec| {
            let mut i = index(oid, &parent, name, vec![col(column.0, column.1)]);
            i.partitioned = true;
            i.relpages = 0;
            i.size_bytes = Some(0);
            i.scans = Some(0);
            i
        };
        let unused = on_parent(100, "events_note", (3, "note"));
        let used = on_parent(101, "events_kind", (2, "kind"));
        let mut leaves = Vec::new();
        for (oid, part, parent_oid, name, column) in [
            (110, &part_1, 100, "events_1_note", (3, "note")),
            (111, &part_2, 100, "events_2_note", (3, "note")),
            (120, &part_1, 101, "events_1_kind", (2, "kind")),
            (121, &part_2, 101, "events_2_kind", (2, "kind")),
        ] {
            let mut leaf = index(oid, part, name, vec![col(column.0, column.1)]);
            leaf.parent_index_oid = Some(parent_oid);
            leaf.partition_child = true;
            leaf.scans = Some(0);
            leaves.push(leaf);
        }
        p.tables = vec![parent, part_1, part_2];
        p.indexes = vec![unused, used];
        p.indexes.extend(leaves);
        p.standbys.push(Standby {
            pid: 1,
            ..Default::default()
        });
        let mut s = standby();
        s.tables = p.tables.clone();
        s.indexes = p.indexes.clone();
        // Only the standby scans one partition's index of events_kind.
        s.indexes
            .iter_mut()
            .find(|i| i.name == "events_2_kind")
            .unwrap()
            .scans = Some(7);
        let report = audit_nodes(vec![("primary", p), ("standby", s)]);
        let found = of(&report);
        let names: Vec<_> = found.iter().filter_map(|f| f.index.as_deref()).collect();
        assert_eq!(names, vec!["events_note"], "{found:#?}");
        let f = found[0];
        assert!(
            f.message.contains("partitioned index events_note"),
            "{}",
            f.message
        );
        assert_eq!(
            f.evidence_value("index_size_bytes"),
            Some(2.0 * 300.0 * 8192.0)
        );
        assert_eq!(f.usage.len(), 2);
        assert!(f.usage.iter().all(|u| u.index_scans == Some(0)));
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.ends_with("\nDROP INDEX public.events_note;"), "{fix}");
        assert!(!fix.contains("CONCURRENTLY"), "{fix}");
    }

    type IndexColumnSpec = (i16, &'static str);

    #[test]
    fn standby_only_is_skipped_not_clean() {
        let (_, s) = cluster();
        let report = audit_nodes(vec![("standby", s)]);
        assert!(of(&report).is_empty());
        assert!(
            report
                .skipped
                .iter()
                .any(|s| s.check == Check::UnusedIndex && s.reason.starts_with("standby"))
        );
    }

    #[test]
    fn long_unscanned_on_16_is_info() {
        let (mut p, _) = cluster();
        p.standbys.clear();
        p.indexes[2].scans = Some(3);
        p.indexes[2].last_scan = Some(ts(30.0 * 86_400.0));
        p.indexes[0].scans = Some(3);
        p.indexes[0].last_scan = Some(ts(60.0));
        let report = audit_nodes(vec![("primary", p)]);
        let found = of(&report);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index.as_deref(), Some("orders_note"));
        assert_eq!(found[0].severity, Severity::Info);
        assert!(found[0].message.contains("last scanned 30.0 days ago"));
    }

    #[test]
    fn a_named_node_that_could_not_be_read_makes_unused_only_info_without_a_drop() {
        let (p, _) = cluster();
        let nodes = vec![
            crate::audit::NodeResult {
                name: "host=primary".into(),
                outcome: Ok(p),
            },
            crate::audit::NodeResult {
                name: "host=standby".into(),
                outcome: Err("connection refused".into()),
            },
        ];
        let report = crate::audit::audit(&nodes, &crate::audit::AuditOptions::default());
        let found = of(&report);
        let f = found
            .iter()
            .find(|f| f.index.as_deref() == Some("orders_status"))
            .unwrap();
        assert_eq!(f.severity, Severity::Info, "{}", f.message);
        assert!(
            f.message
                .contains("host=standby could not be read in this run"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence_value("nodes_not_read"), Some(1.0));
        let fix = f.fix.as_deref().unwrap();
        assert!(
            fix.lines()
                .filter(|l| !l.starts_with("--"))
                .all(|l| !l.contains("DROP")),
            "{fix}"
        );
        assert!(fix.contains("-- DROP INDEX CONCURRENTLY public.orders_status;"));
    }
}
