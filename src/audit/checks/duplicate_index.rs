//! duplicate_index and redundant_index: indexes another index of the same table makes
//! unnecessary, found by hashing index signatures (never by comparing every pair, which is what
//! makes the usual catalog self-join take seconds on 50,000 indexes).
//!
//! Two indexes compare only when the table, access method, predicate and every key column —
//! column or expression, operator class, collation, DESC/NULLS order — match. Identical keys make
//! a duplicate (keep one: a protected one first — primary key, another constraint's index, the
//! replica identity — then a unique one, the wider INCLUDE list, the most scanned); keys that are
//! a leading prefix of another btree index's keys make a redundant index. A unique index goes
//! only for one that enforces the same (unique, NULLS NOT DISTINCT alike, both immediate or both
//! deferrable); two protected duplicates are reported with no DROP. An index's INCLUDE columns
//! must be covered by the one that replaces it, or index-only scans would be lost.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::audit::snapshot::{Index, IndexColumn};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{bytes_words, count_words, counted, qualified};

/// What must match for two indexes to serve the same lookups.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Signature<'a> {
    table_oid: u32,
    access_method: &'a str,
    predicate: Option<&'a str>,
    keys: &'a [IndexColumn],
}

fn signature<'a>(index: &'a Index, key_count: usize) -> Signature<'a> {
    Signature {
        table_oid: index.table_oid,
        access_method: &index.access_method,
        predicate: index.predicate_key(),
        keys: &index.key_columns()[..key_count],
    }
}

fn candidate(index: &Index) -> bool {
    index.valid && index.ready && !index.partition_child && !index.columns.is_empty()
}

/// Columns stored in the index (keys and INCLUDE), by table column number.
fn stored_columns(index: &Index) -> HashSet<i16> {
    index.columns.iter().map(|c| c.attnum).collect()
}

fn include_set(index: &Index) -> HashSet<&IndexColumn> {
    index.include_columns().iter().collect()
}

/// Keep order among indexes with identical keys: protected first (the primary key, then another
/// constraint's index, then the replica identity: dropping any of those changes more than
/// lookups), then uniqueness, then the wider INCLUDE list, then the most scanned, then the oldest.
fn keep_rank(ctx: &Context, index: &Index) -> (u8, bool, usize, i64, std::cmp::Reverse<u32>) {
    let protected = if index.primary {
        3
    } else if index.constraint.is_some() {
        2
    } else if index.replica_identity {
        1
    } else {
        0
    };
    (
        protected,
        index.unique || index.exclusion,
        index.include_columns().len(),
        ctx.total_scans(index),
        std::cmp::Reverse(index.oid),
    )
}

/// One index to drop, and the index that makes it unnecessary.
struct Decision<'a> {
    index: &'a Index,
    keep: &'a Index,
    check: Check,
    /// A strict leading prefix of `keep`'s keys (else the same keys).
    prefix: bool,
}

pub fn run(ctx: &Context, out: &mut Output) {
    let indexes: Vec<&Index> = ctx
        .reference
        .snapshot
        .indexes
        .iter()
        .filter(|i| candidate(i))
        .collect();
    let mut decisions: Vec<Decision> = Vec::new();
    // Indexes some decision drops: never chosen as what another one keeps.
    let mut dropped: HashSet<u32> = HashSet::new();

    // Duplicates: identical key signatures.
    // Maps sized up front: growing one rehashes what it holds, each time.
    let mut groups: HashMap<Signature, Vec<&Index>> = HashMap::with_capacity(indexes.len());
    for index in &indexes {
        groups
            .entry(signature(
                index,
                index.key_column_count.min(index.columns.len()),
            ))
            .or_default()
            .push(index);
    }
    let mut groups: Vec<Vec<&Index>> = groups.into_values().filter(|g| g.len() > 1).collect();
    groups.sort_by_key(|g| g.iter().map(|i| i.oid).min());
    for mut group in groups {
        group.sort_by_key(|i| std::cmp::Reverse(keep_rank(ctx, i)));
        for (position, index) in group.iter().enumerate() {
            // The keeper is one that stays: an earlier member another one was not dropped for.
            let keeper = group[..position].iter().find(|keep| {
                let covered = include_set(index).is_subset(&include_set(keep));
                // A unique index goes only for one that enforces exactly the same: 15+'s NULLS
                // NOT DISTINCT rejects rows a plain one accepts, and a DEFERRABLE constraint's
                // index serves no foreign key and no ON CONFLICT.
                let uniqueness_kept = !index.unique || index.same_uniqueness(keep);
                let exclusion_kept = !index.exclusion || keep.exclusion;
                !dropped.contains(&keep.oid) && covered && uniqueness_kept && exclusion_kept
            });
            let Some(keep) = keeper else { continue };
            // Two protected duplicates are reported with no DROP: the index stays.
            if !index.is_protected() {
                dropped.insert(index.oid);
            }
            let check = if index.include_columns().len() == keep.include_columns().len() {
                Check::DuplicateIndex
            } else {
                Check::RedundantIndex
            };
            decisions.push(Decision {
                index,
                keep,
                check,
                prefix: false,
            });
        }
    }

    // Redundant: keys that are a strict leading prefix of another btree index's keys. Every
    // btree index registers each of its proper prefixes; an index whose full key signature is
    // found there is covered.
    let mut prefixes: HashMap<Signature, Vec<&Index>> = HashMap::new();
    for index in indexes.iter().filter(|i| i.access_method == "btree") {
        for len in 1..index.key_column_count.min(index.columns.len()) {
            prefixes
                .entry(signature(index, len))
                .or_default()
                .push(index);
        }
    }
    for index in &indexes {
        if index.access_method != "btree" || index.is_load_bearing() || dropped.contains(&index.oid)
        {
            continue;
        }
        let key = signature(index, index.key_column_count.min(index.columns.len()));
        let Some(wider) = prefixes.get(&key) else {
            continue;
        };
        let needed: HashSet<i16> = index.include_columns().iter().map(|c| c.attnum).collect();
        // A duplicate that goes is never what stays: its keeper has the same keys and covers
        // its INCLUDE columns, so it is a candidate here too.
        let keep = wider
            .iter()
            .filter(|w| {
                w.oid != index.oid
                    && !dropped.contains(&w.oid)
                    && needed.is_subset(&stored_columns(w))
            })
            .min_by_key(|w| (w.size_bytes.unwrap_or(i64::MAX), w.oid));
        if let Some(keep) = keep {
            dropped.insert(index.oid);
            decisions.push(Decision {
                index,
                keep,
                check: Check::RedundantIndex,
                prefix: true,
            });
        }
    }

    // Decided once for all: an index some decision keeps may itself be dropped by another (a
    // duplicate's keeper that is a prefix of a wider index, a prefix of a prefix). Each finding
    // then names the index that finally stays, so applying every fix, in any order, drops
    // exactly the decided indexes and keeps every lookup served.
    let replacement: HashMap<u32, &Index> = decisions
        .iter()
        .filter(|d| dropped.contains(&d.index.oid))
        .map(|d| (d.index.oid, d.keep))
        .collect();
    let stays = |keep: &'_ Index| -> Option<&Index> {
        let mut current = replacement.get(&keep.oid).copied()?;
        // Every step keeps the keys or lengthens them, so this ends; the bound guards a catalog
        // that loops.
        for _ in 0..64 {
            match replacement.get(&current.oid) {
                Some(next) => current = next,
                None => break,
            }
        }
        Some(current)
    };
    for d in &decisions {
        if !ctx.index_big_enough(d.index) {
            continue;
        }
        let finally = stays(d.keep);
        out.findings.push(if d.prefix {
            redundant_prefix(ctx, d.index, d.keep, finally)
        } else {
            duplicate(ctx, d.check, d.index, d.keep, finally)
        });
    }
}

/// Whether the unused check offers `index` for dropping too: no scans on any node (with a
/// primary audited, where the scans are seen) and nothing depending on it.
fn unused_too(ctx: &Context, index: &Index) -> bool {
    ctx.primary.is_some()
        && !index.is_load_bearing()
        && !index.partitioned
        && ctx.total_scans(index) == 0
}

/// "; B is itself covered by C (a, b), which stays", when the index kept is dropped too.
fn stays_words(ctx: &Context, keep: &Index, finally: Option<&Index>) -> String {
    match finally {
        Some(f) => format!(
            "; {} is itself covered by {} {}, which {}",
            keep.name,
            f.name,
            key_list(f),
            if unused_too(ctx, f) {
                "is not scanned either (a finding of its own)"
            } else {
                "stays"
            }
        ),
        None => String::new(),
    }
}

/// A column as the report shows it: an expression whose text could not be read (its table
/// was locked) says so.
fn column_words(column: &IndexColumn) -> &str {
    if column.definition.is_empty() {
        "<not read>"
    } else {
        &column.definition
    }
}

fn key_list(index: &Index) -> String {
    let mut text = index
        .key_columns()
        .iter()
        .map(column_words)
        .collect::<Vec<_>>()
        .join(", ");
    if !index.include_columns().is_empty() {
        text.push_str(") INCLUDE (");
        text.push_str(
            &index
                .include_columns()
                .iter()
                .map(column_words)
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    format!("({text})")
}

fn why_keep(ctx: &Context, keep: &Index, drop: &Index) -> String {
    if keep.is_protected() && !drop.is_protected() {
        return format!("it backs the {}", protection_words(keep));
    }
    if let Some(role) = keep.role_words()
        && drop.role_words().is_none()
    {
        return format!("it backs the {role}");
    }
    if keep.include_columns().len() > drop.include_columns().len() {
        return "its INCLUDE columns cover this one's".into();
    }
    let (k, d) = (ctx.total_scans(keep), ctx.total_scans(drop));
    if k > d {
        return format!(
            "it is scanned more ({} against {})",
            counted(k as f64, "scan", "scans"),
            count_words(d as f64)
        );
    }
    "it is the older of the two".into()
}

/// What a protected index is for: "primary key t_pkey", "replica identity".
fn protection_words(index: &Index) -> String {
    match (&index.constraint, index.replica_identity) {
        (Some(_), true) => format!(
            "{} and the replica identity",
            index.role_words().unwrap_or_default()
        ),
        (None, true) => "replica identity".into(),
        _ => index.role_words().unwrap_or_else(|| "constraint".into()),
    }
}

/// The SQL that removes `index`, or none when something depends on it.
fn drop_sql(ctx: &Context, index: &Index) -> (Option<String>, Option<String>) {
    let name = qualified(&index.schema, &index.name);
    let referenced_by: Vec<&str> = ctx
        .foreign_keys_by_referenced_index
        .get(&index.oid)
        .into_iter()
        .flatten()
        .map(|fk| fk.name.as_str())
        .collect();
    if !referenced_by.is_empty() {
        return (
            None,
            Some(format!(
                "foreign key(s) {} rely on it: recreate them against the index that stays \
                 before dropping this one",
                referenced_by.join(", ")
            )),
        );
    }
    if index.partitioned {
        // DROP INDEX CONCURRENTLY does not work on a partitioned index.
        return (
            Some(format!("DROP INDEX {name};")),
            Some("a partitioned index cannot be dropped concurrently: this locks the table".into()),
        );
    }
    (Some(format!("DROP INDEX CONCURRENTLY {name};")), None)
}

fn duplicate(
    ctx: &Context,
    check: Check,
    index: &Index,
    keep: &Index,
    finally: Option<&Index>,
) -> Finding {
    let what = if check == Check::DuplicateIndex {
        "duplicates"
    } else {
        "is covered by"
    };
    if index.is_protected() {
        // Both protected (the keeper ranks at least as high): which one to give up is a design
        // decision (drop a constraint, or move the replica identity), not a cleanup.
        let message = format!(
            "index {} {} {} on {}: same key columns {}; both are protected ({} backs the {}, {} \
             the {}), so nothing is proposed for dropping: remove the redundant constraint or \
             point the replica identity at the other index if one of them is not needed",
            index.name,
            what,
            keep.name,
            qualified(&index.schema, &index.table),
            key_list(keep),
            index.name,
            protection_words(index),
            keep.name,
            protection_words(keep),
        );
        return Finding::new(check, Severity::Info, message)
            .on_index(index)
            .evidence("index_size_bytes", index.size_bytes.unwrap_or(0) as f64)
            .evidence("index_scans", ctx.total_scans(index) as f64)
            .evidence("kept_index_scans", ctx.total_scans(keep) as f64);
    }
    let mut message = match finally {
        // The keeper is scanned nowhere either: the unused check offers it for dropping too, so
        // "keep it" would contradict that finding. Both can go; nothing used is lost.
        None if unused_too(ctx, keep) => format!(
            "index {} {} {} on {}: same key columns {}; {} is not scanned either (it is a \
             finding of its own), so both can go",
            index.name,
            what,
            keep.name,
            qualified(&index.schema, &index.table),
            key_list(keep),
            keep.name,
        ),
        None => format!(
            "index {} {} {} on {}: same key columns {}; keep {} because {}",
            index.name,
            what,
            keep.name,
            qualified(&index.schema, &index.table),
            key_list(keep),
            keep.name,
            why_keep(ctx, keep, index)
        ),
        Some(_) => format!(
            "index {} {} {} on {}: same key columns {}{}",
            index.name,
            what,
            keep.name,
            qualified(&index.schema, &index.table),
            key_list(keep),
            stays_words(ctx, keep, finally)
        ),
    };
    let kept = finally.unwrap_or(keep);
    let (fix, note) = drop_sql(ctx, index);
    if let Some(note) = note {
        message.push_str("; ");
        message.push_str(&note);
    }
    let mut finding = Finding::new(check, Severity::Warning, message)
        .on_index(index)
        .evidence("index_size_bytes", index.size_bytes.unwrap_or(0) as f64)
        .evidence("index_scans", ctx.total_scans(index) as f64)
        .evidence("kept_index_scans", ctx.total_scans(kept) as f64);
    finding.fix = fix;
    finding.kept_index = Some(kept.name.clone());
    finding
}

fn redundant_prefix(
    ctx: &Context,
    index: &Index,
    keep: &Index,
    finally: Option<&Index>,
) -> Finding {
    let mut message = format!(
        "index {} {} on {} is redundant: its key columns are a leading prefix of {} {}, which \
         serves the same lookups{}",
        index.name,
        key_list(index),
        qualified(&index.schema, &index.table),
        keep.name,
        key_list(keep),
        stays_words(ctx, keep, finally)
    );
    let keep = finally.unwrap_or(keep);
    if ctx.total_scans(index) > 0 {
        message.push_str(&format!(
            "; its {} would move to {}, a wider index ({} against this one's {})",
            counted(ctx.total_scans(index) as f64, "scan", "scans"),
            keep.name,
            bytes_words(keep.size_bytes.unwrap_or(0) as f64),
            bytes_words(index.size_bytes.unwrap_or(0) as f64),
        ));
    }
    let (fix, note) = drop_sql(ctx, index);
    if let Some(note) = note {
        message.push_str("; ");
        message.push_str(&note);
    }
    let mut finding = Finding::new(Check::RedundantIndex, Severity::Info, message)
        .on_index(index)
        .evidence("index_size_bytes", index.size_bytes.unwrap_or(0) as f64)
        .evidence("index_scans", ctx.total_scans(index) as f64)
        .evidence("kept_index_size_bytes", keep.size_bytes.unwrap_or(0) as f64);
    finding.fix = fix;
    finding.kept_index = Some(keep.name.clone());
    finding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{IndexConstraint, TableKind};

    fn found(report: &crate::audit::AuditReport, check: Check) -> Vec<(String, Option<String>)> {
        report
            .findings
            .iter()
            .filter(|f| f.check == check)
            .map(|f| (f.index.clone().unwrap(), f.fix.clone()))
            .collect()
    }

    /// Every finding of both kinds, as (index dropped, message), over one or more reasons.
    fn decided(report: &crate::audit::AuditReport) -> Vec<(String, String, Option<String>)> {
        report
            .findings
            .iter()
            .flat_map(|f| {
                let mut all = vec![(f.check, f.message.clone(), f.fix.clone())];
                all.extend(
                    f.also
                        .iter()
                        .map(|r| (r.check, r.message.clone(), r.fix.clone())),
                );
                all.into_iter()
                    .filter(|(c, _, _)| matches!(c, Check::DuplicateIndex | Check::RedundantIndex))
                    .map(|(_, m, x)| (f.index.clone().unwrap(), m, x))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn duplicate_and_redundant_advice_is_decided_once_per_group() {
        // t_a and t_a_again are duplicates (keep t_a, the older); t_a is a prefix of t_a_b,
        // which is a prefix of t_a_b_c. Every index but t_a_b_c goes, and every finding names
        // t_a_b_c as what stays: no finding keeps what another drops.
        let mut p = primary();
        let t = table(10, "t");
        let a = index(100, &t, "t_a", vec![col(2, "a")]);
        let a_again = index(101, &t, "t_a_again", vec![col(2, "a")]);
        let mut a_b = index(102, &t, "t_a_b", vec![col(2, "a"), col(3, "b")]);
        a_b.size_bytes = Some(1 << 20);
        let mut a_b_c = index(
            103,
            &t,
            "t_a_b_c",
            vec![col(2, "a"), col(3, "b"), col(4, "c")],
        );
        a_b_c.size_bytes = Some(9 << 20);
        p.indexes = vec![a, a_again, a_b, a_b_c];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let decisions = decided(&report);
        let dropped: Vec<&str> = decisions.iter().map(|(i, _, _)| i.as_str()).collect();
        let mut sorted = dropped.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["t_a", "t_a_again", "t_a_b"], "{decisions:#?}");
        for (index, message, fix) in &decisions {
            assert_eq!(
                fix.as_deref(),
                Some(format!("DROP INDEX CONCURRENTLY public.{index};").as_str())
            );
            for gone in &dropped {
                assert!(!message.contains(&format!("keep {gone} ")), "{message}");
            }
            if index != "t_a_b" {
                assert!(
                    message.contains("is itself covered by t_a_b_c (a, b, c), which stays"),
                    "{message}"
                );
            }
        }
        // Applying every fix leaves t_a_b_c; applying them again finds nothing more to drop.
        let mut after = primary();
        let t = table(10, "t");
        after.indexes = vec![index(
            103,
            &t,
            "t_a_b_c",
            vec![col(2, "a"), col(3, "b"), col(4, "c")],
        )];
        after.tables.push(t);
        assert!(decided(&audit_nodes(vec![("p", after)])).is_empty());
    }

    #[test]
    fn a_scanned_redundant_index_gives_the_sizes() {
        let mut p = primary();
        let t = table(10, "t");
        let mut narrow = index(100, &t, "t_a", vec![col(2, "a")]);
        narrow.size_bytes = Some(2 << 20);
        let mut wide = index(101, &t, "t_a_b", vec![col(2, "a"), col(3, "b")]);
        wide.size_bytes = Some(9 << 20);
        p.indexes = vec![narrow, wide];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let (_, message, _) = &decided(&report)[0];
        assert!(
            message.contains(
                "its 5 scans would move to t_a_b, a wider index (9.0 MB against this one's 2.0 MB)"
            ),
            "{message}"
        );
    }

    #[test]
    fn min_size_measures_a_partitioned_index_by_its_partitions() {
        let mut p = primary();
        let mut parent = table(10, "events");
        parent.kind = TableKind::Partitioned;
        parent.relpages = 0;
        parent.table_bytes = Some(0);
        parent.heap_bytes = Some(0);
        let mut part = table(11, "events_1");
        part.parent_oid = Some(10);
        let on_parent = |oid, name: &str| {
            let mut i = index(oid, &parent, name, vec![col(1, "id")]);
            i.partitioned = true;
            i.relpages = 0;
            i.size_bytes = Some(0);
            i
        };
        let a = on_parent(100, "events_a");
        let b = on_parent(101, "events_b");
        let mut part_a = index(110, &part, "events_1_a", vec![col(1, "id")]);
        part_a.parent_index_oid = Some(100);
        part_a.partition_child = true;
        let mut part_b = index(111, &part, "events_1_b", vec![col(1, "id")]);
        part_b.parent_index_oid = Some(101);
        part_b.partition_child = true;
        p.indexes = vec![a, b, part_a, part_b];
        p.tables = vec![parent, part];
        // Each partition index is 300 pages (2.4 MB); the partitioned ones have no storage.
        let options = crate::audit::AuditOptions {
            min_size_bytes: 1 << 20,
            ..Default::default()
        };
        let report = run_with(vec![("p", p)], &options);
        let dups = found(&report, Check::DuplicateIndex);
        assert!(
            dups.iter()
                .any(|(name, _)| name.starts_with("events_") && !name.starts_with("events_1")),
            "{dups:?}"
        );
    }

    #[test]
    fn duplicates_keep_the_constraint() {
        let mut p = primary();
        let t = table(10, "t");
        let mut pk = index(100, &t, "t_pkey", vec![col(1, "id")]);
        pk.primary = true;
        pk.unique = true;
        pk.constraint = Some(IndexConstraint {
            name: "t_pkey".into(),
            kind: 'p',
        });
        let dup = index(101, &t, "t_id_idx", vec![col(1, "id")]);
        // Same column, different operator class: not a duplicate.
        let mut other_opclass = index(102, &t, "t_id_pattern", vec![col(1, "id")]);
        other_opclass.columns[0].opclass = 3035;
        // Same column, partial: not a duplicate.
        let mut partial = index(103, &t, "t_id_partial", vec![col(1, "id")]);
        partial.predicate = Some("(id > 0)".into());
        p.indexes = vec![pk, dup, other_opclass, partial];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        assert_eq!(
            found(&report, Check::DuplicateIndex),
            vec![(
                "t_id_idx".into(),
                Some("DROP INDEX CONCURRENTLY public.t_id_idx;".into())
            )]
        );
        let f = &report.findings[0];
        assert!(
            f.message
                .contains("keep t_pkey because it backs the primary key")
        );
        assert!(found(&report, Check::RedundantIndex).is_empty());
    }

    #[test]
    fn prefixes_are_redundant_but_unique_ones_never() {
        let mut p = primary();
        let t = table(10, "t");
        let wide = index(100, &t, "t_a_b", vec![col(1, "a"), col(2, "b")]);
        let prefix = index(101, &t, "t_a", vec![col(1, "a")]);
        let mut unique_prefix = index(102, &t, "t_a_unique", vec![col(1, "a")]);
        unique_prefix.unique = true;
        // Not a leading prefix.
        let second = index(103, &t, "t_b", vec![col(2, "b")]);
        // Its INCLUDE column is not in t_a_b: it must stay.
        let mut covering = index(104, &t, "t_a_inc_c", vec![col(1, "a"), col(3, "c")]);
        covering.key_column_count = 1;
        covering.columns[1].opclass = 0;
        p.indexes = vec![wide, prefix, unique_prefix, second, covering];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        // t_a duplicates t_a_unique's keys (kept: unique), so it is reported once, as a
        // duplicate; t_a_inc_c has INCLUDE (c) that t_a_b lacks.
        assert_eq!(
            found(&report, Check::DuplicateIndex),
            vec![(
                "t_a".into(),
                Some("DROP INDEX CONCURRENTLY public.t_a;".into())
            )]
        );
        let redundant: Vec<_> = findings_of(&report, Check::RedundantIndex);
        assert!(redundant.is_empty(), "{redundant:#?}");
    }

    #[test]
    fn a_prefix_alone_is_redundant() {
        let mut p = primary();
        let t = table(10, "t");
        let wide = index(100, &t, "t_a_b", vec![col(1, "a"), col(2, "b")]);
        let prefix = index(101, &t, "t_a", vec![col(1, "a")]);
        let mut desc = index(102, &t, "t_a_desc", vec![col(1, "a")]);
        desc.columns[0].option = 3;
        p.indexes = vec![wide, prefix, desc];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let f: Vec<_> = findings_of(&report, Check::RedundantIndex);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].index.as_deref(), Some("t_a"));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("leading prefix of t_a_b (a, b)"));
    }

    #[test]
    fn a_narrower_include_list_is_covered() {
        let mut p = primary();
        let t = table(10, "t");
        let mut narrow = index(100, &t, "t_a_inc_b", vec![col(1, "a"), col(2, "b")]);
        narrow.key_column_count = 1;
        let mut wide = index(
            101,
            &t,
            "t_a_inc_bc",
            vec![col(1, "a"), col(2, "b"), col(3, "c")],
        );
        wide.key_column_count = 1;
        p.indexes = vec![narrow, wide];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let f = &report.findings[0];
        assert_eq!(f.check, Check::RedundantIndex);
        assert_eq!(f.index.as_deref(), Some("t_a_inc_b"));
        assert!(f.message.contains("INCLUDE columns cover"));
    }

    /// The kept duplicate is the one scanned more, and the counts read as a person writes them.
    #[test]
    fn the_duplicate_scanned_more_is_kept_and_its_scans_counted_in_words() {
        let mut p = primary();
        let t = table(10, "t");
        let mut scanned = index(100, &t, "t_a_scanned", vec![col(1, "a")]);
        scanned.scans = Some(1);
        let mut idle = index(101, &t, "t_a_idle", vec![col(1, "a")]);
        idle.scans = Some(0);
        p.indexes = vec![idle, scanned];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let f = findings_of(&report, Check::DuplicateIndex);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].index.as_deref(), Some("t_a_idle"));
        assert!(
            f[0].message
                .contains("it is scanned more (1 scan against 0)"),
            "{}",
            f[0].message
        );
    }

    fn unique(mut i: crate::audit::snapshot::Index) -> crate::audit::snapshot::Index {
        i.unique = true;
        i
    }

    #[test]
    fn the_replica_identity_index_is_kept_over_a_plain_unique_one() {
        let mut p = primary();
        let t = table(10, "t");
        let mut ri = unique(index(100, &t, "t_ri", vec![col(1, "id")]));
        ri.replica_identity = true;
        // Scanned more and newer: everything but protection would keep it.
        let mut plain = unique(index(101, &t, "t_id_unique", vec![col(1, "id")]));
        plain.scans = Some(1000);
        p.indexes = vec![ri, plain];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        assert_eq!(
            found(&report, Check::DuplicateIndex),
            vec![(
                "t_id_unique".into(),
                Some("DROP INDEX CONCURRENTLY public.t_id_unique;".into())
            )]
        );
        assert!(
            report.findings[0]
                .message
                .contains("keep t_ri because it backs the replica identity"),
            "{}",
            report.findings[0].message
        );
    }

    #[test]
    fn two_protected_duplicates_are_reported_without_a_drop() {
        let mut p = primary();
        let t = table(10, "t");
        let mut pk = unique(index(100, &t, "t_pkey", vec![col(1, "id")]));
        pk.primary = true;
        pk.constraint = Some(IndexConstraint {
            name: "t_pkey".into(),
            kind: 'p',
        });
        let mut uc = unique(index(101, &t, "t_id_key", vec![col(1, "id")]));
        uc.constraint = Some(IndexConstraint {
            name: "t_id_key".into(),
            kind: 'u',
        });
        let mut ri = unique(index(102, &t, "t_ri", vec![col(1, "id")]));
        ri.replica_identity = true;
        p.indexes = vec![pk, uc, ri];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let dups: Vec<&Finding> = findings_of(&report, Check::DuplicateIndex);
        assert_eq!(dups.len(), 2, "{dups:#?}");
        for f in dups {
            assert_ne!(f.index.as_deref(), Some("t_pkey"));
            assert_eq!(f.fix, None, "{f:#?}");
            assert_eq!(f.severity, Severity::Info);
            assert!(f.message.contains("both are protected"), "{}", f.message);
        }
    }

    #[test]
    fn nulls_not_distinct_and_deferrable_unique_indexes_are_not_duplicates() {
        let mut p = primary();
        let t = table(10, "t");
        let plain = unique(index(100, &t, "t_a_unique", vec![col(1, "a")]));
        let mut nnd = unique(index(101, &t, "t_a_nnd", vec![col(1, "a")]));
        nnd.nulls_not_distinct = true;
        let mut deferrable = unique(index(102, &t, "t_a_deferrable", vec![col(1, "a")]));
        deferrable.immediate = false;
        deferrable.constraint = Some(IndexConstraint {
            name: "t_a_deferrable".into(),
            kind: 'u',
        });
        // A plain index on the same key is still a duplicate of whichever unique one stays.
        let mut b_plain = unique(index(103, &t, "t_b_unique", vec![col(2, "b")]));
        b_plain.scans = Some(0);
        let mut b_deferrable = unique(index(104, &t, "t_b_deferrable", vec![col(2, "b")]));
        b_deferrable.immediate = false;
        let b_index = index(105, &t, "t_b", vec![col(2, "b")]);
        p.indexes = vec![plain, nnd, deferrable, b_plain, b_deferrable, b_index];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let names: Vec<String> = found(&report, Check::DuplicateIndex)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec!["t_b".to_string()], "{:#?}", report.findings);
    }
}
