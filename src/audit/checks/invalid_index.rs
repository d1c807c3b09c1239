//! invalid_index: indexes with `indisvalid = false`, typically left by a failed or cancelled
//! `CREATE INDEX CONCURRENTLY` or `REINDEX CONCURRENTLY`. They are never used by queries but,
//! once ready, still cost every write. A build still running shows in
//! `pg_stat_progress_create_index` and is reported as in progress, not as a failure.

use crate::audit::snapshot::{Index, IndexBuild, Table, TableKind};
use crate::audit::{Check, Context, Finding, Output, Severity};
use foldhash::HashSet;

use super::{count_words, qualified};

pub fn run(ctx: &Context, out: &mut Output) {
    // Builds are visible only on the node running them: the primary.
    let builds: &[IndexBuild] = ctx
        .primary
        .map(|p| p.snapshot.index_builds.as_slice())
        .unwrap_or(&[]);
    for index in &ctx.reference.snapshot.indexes {
        if index.valid && index.ready {
            continue;
        }
        if index.partitioned {
            // A partitioned index is invalid until every partition has an index attached to it
            // (CREATE INDEX ON ONLY, then ALTER INDEX ... ATTACH PARTITION for each). An
            // attached index that is itself invalid is reported on its own.
            if let Some(finding) = unattached_partitions(ctx, index) {
                out.findings.push(finding);
            }
            continue;
        }
        let finding = match build_of(index, builds) {
            Some(build) => in_progress(index, build),
            None => invalid(ctx, index),
        };
        out.findings.push(finding);
    }
}

/// The build that is creating this index: the same index (CREATE INDEX CONCURRENTLY reports
/// it), or a concurrent REINDEX of the same table, which builds a `_ccnew` copy.
fn build_of<'a>(index: &Index, builds: &'a [IndexBuild]) -> Option<&'a IndexBuild> {
    builds
        .iter()
        .find(|b| b.index_oid == index.oid)
        .or_else(|| {
            builds.iter().find(|b| {
                b.table_oid == index.table_oid
                    && b.command
                        .as_deref()
                        .is_some_and(|c| c.contains("REINDEX CONCURRENTLY"))
                    && is_ccnew(&index.name)
            })
        })
}

/// REINDEX CONCURRENTLY names the new copy `<name>_ccnew` (then `_ccnew1`, ...) and the old one
/// `<name>_ccold` before dropping it.
fn is_ccnew(name: &str) -> bool {
    suffix_number(name, "_ccnew")
}

fn is_ccold(name: &str) -> bool {
    suffix_number(name, "_ccold")
}

fn suffix_number(name: &str, marker: &str) -> bool {
    name.rfind(marker).is_some_and(|at| {
        name[at + marker.len()..]
            .chars()
            .all(|c| c.is_ascii_digit())
    })
}

fn in_progress(index: &Index, build: &IndexBuild) -> Finding {
    let command = build.command.as_deref().unwrap_or("index build");
    let phase = build.phase.as_deref().unwrap_or("unknown phase");
    let mut message = format!(
        "index {} on {} is being built ({command}, pid {}, {phase})",
        index.name,
        qualified(&index.schema, &index.table),
        build.pid
    );
    if let (Some(total), Some(done)) = (build.blocks_total, build.blocks_done)
        && total > 0
    {
        message.push_str(&format!(
            ", {} of {} blocks",
            count_words(done as f64),
            count_words(total as f64)
        ));
    }
    if let Some(locker) = build.current_locker_pid.filter(|p| *p > 0) {
        message.push_str(&format!(
            "; it is waiting for the transactions of pid {locker} (and others older than the \
             build) to finish"
        ));
    }
    message.push_str("; not a failure: leave it to finish");
    let mut finding = Finding::new(Check::InvalidIndex, Severity::Info, message)
        .on_index(index)
        .evidence("build_pid", build.pid as f64);
    for (name, value) in [
        ("blocks_total", build.blocks_total),
        ("blocks_done", build.blocks_done),
        ("tuples_total", build.tuples_total),
        ("tuples_done", build.tuples_done),
        ("lockers_total", build.lockers_total),
        ("lockers_done", build.lockers_done),
    ] {
        if let Some(v) = value {
            finding = finding.evidence(name, v as f64);
        }
    }
    finding
}

fn invalid(ctx: &Context, index: &Index) -> Finding {
    let name = qualified(&index.schema, &index.name);
    let on = qualified(&index.schema, &index.table);
    let mut message = if is_ccnew(&index.name) || is_ccold(&index.name) {
        format!(
            "index {} on {on} is invalid: a leftover of a failed REINDEX CONCURRENTLY (the \
             original index is intact); it is never used but still maintained on every write",
            index.name
        )
    } else {
        format!(
            "index {} on {on} is invalid (a failed or cancelled CREATE INDEX CONCURRENTLY): \
             queries never use it{}",
            index.name,
            if index.ready {
                ", yet every write still maintains it"
            } else {
                ""
            }
        )
    };
    let fix = if is_ccnew(&index.name) || is_ccold(&index.name) {
        format!("DROP INDEX CONCURRENTLY {name};")
    } else if index.unique {
        message.push_str(
            "; a unique build usually fails on duplicate values: remove them before rebuilding, \
             or the rebuild fails again",
        );
        let mut fix = format!("DROP INDEX CONCURRENTLY {name};");
        if let Some(def) = &index.definition {
            fix.push('\n');
            fix.push_str(&concurrently(def));
            fix.push(';');
        }
        fix
    } else {
        format!("REINDEX INDEX CONCURRENTLY {name};")
    };
    if ctx.primary.is_none() {
        message.push_str(
            "; only standbys were audited, and a build in progress on the primary cannot be \
             seen from them",
        );
    }
    Finding::new(Check::InvalidIndex, Severity::Warning, message)
        .on_index(index)
        .evidence("index_size_bytes", index.size_bytes.unwrap_or(0) as f64)
        .fix(fix)
}

/// An invalid partitioned index: the partitions (in scope) with no index attached to it, and the
/// SQL that attaches one to each (an equivalent index the partition already has, or a new one).
fn unattached_partitions(ctx: &Context, index: &Index) -> Option<Finding> {
    let snapshot = ctx.reference.snapshot;
    let attached: HashSet<u32> = snapshot
        .indexes
        .iter()
        .filter(|i| i.parent_index_oid == Some(index.oid))
        .map(|i| i.table_oid)
        .collect();
    let mut missing: Vec<&Table> = snapshot
        .tables
        .iter()
        .filter(|t| t.parent_oid == Some(index.table_oid) && !attached.contains(&t.oid))
        .collect();
    if missing.is_empty() {
        return None;
    }
    missing.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    let parent_index = qualified(&index.schema, &index.name);
    let names: Vec<String> = missing
        .iter()
        .map(|t| qualified(&t.schema, &t.name))
        .collect();
    let message = format!(
        "partitioned index {} on {} is invalid: {} of its partitions have no index attached to \
         it ({}); until each has one, it stays invalid, and a unique one enforces nothing over \
         the whole table",
        index.name,
        qualified(&index.schema, &index.table),
        missing.len(),
        names.join(", ")
    );
    let mut fix = Vec::new();
    for partition in &missing {
        let on = qualified(&partition.schema, &partition.name);
        // An equivalent index the partition already has only needs attaching.
        let existing = ctx.indexes_by_table.get(&partition.oid).and_then(|list| {
            list.iter().find(|i| {
                i.parent_index_oid.is_none()
                    && i.valid
                    && i.access_method == index.access_method
                    && i.unique == index.unique
                    && i.predicate == index.predicate
                    && i.key_column_count == index.key_column_count
                    && i.columns.len() == index.columns.len()
                    && i.columns
                        .iter()
                        .zip(&index.columns)
                        .all(|(a, b)| a.definition == b.definition && a.opclass == b.opclass)
            })
        });
        let child = match existing {
            Some(i) => qualified(&i.schema, &i.name),
            None => {
                let name = child_index_name(&index.name, &partition.name);
                let Some(create) = index
                    .definition
                    .as_deref()
                    .and_then(|def| create_on_partition(def, &name, &on, partition))
                else {
                    fix.push(format!(
                        "-- create an index on {on} matching {parent_index}, then attach it"
                    ));
                    continue;
                };
                fix.push(create);
                qualified(&partition.schema, &name)
            }
        };
        fix.push(format!(
            "ALTER INDEX {parent_index} ATTACH PARTITION {child};"
        ));
    }
    Some(
        Finding::new(Check::InvalidIndex, Severity::Warning, message)
            .on_index(index)
            .evidence("partitions_without_index", missing.len() as f64)
            .fix(fix.join("\n")),
    )
}

/// "<parent index>_<partition>", cut to PostgreSQL's 63-byte identifiers on a char boundary.
fn child_index_name(index: &str, partition: &str) -> String {
    let mut name = format!("{partition}_{index}");
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// The partitioned index's definition (`CREATE [UNIQUE] INDEX name ON ONLY parent USING ...`)
/// rewritten for one partition: a new name, the partition, and CONCURRENTLY where the partition
/// is a plain table (a partitioned one cannot be indexed concurrently).
fn create_on_partition(
    definition: &str,
    name: &str,
    on: &str,
    partition: &Table,
) -> Option<String> {
    let head_end = definition.find(" INDEX ")?;
    let using = definition.find(" USING ")?;
    let head = &definition[..head_end];
    let rest = &definition[using..];
    Some(if partition.kind == TableKind::Partitioned {
        format!(
            "-- {on} is partitioned itself: this locks it while it builds\n{head} INDEX {} ON {on}{rest};",
            crate::sql::quote_ident_to_show(name)
        )
    } else {
        format!(
            "{head} INDEX CONCURRENTLY {} ON {on}{rest};",
            crate::sql::quote_ident_to_show(name)
        )
    })
}

/// `CREATE [UNIQUE] INDEX name ON ...` → `CREATE [UNIQUE] INDEX CONCURRENTLY name ON ...`.
fn concurrently(definition: &str) -> String {
    match definition.find(" INDEX ") {
        Some(at) => format!(
            "{} INDEX CONCURRENTLY {}",
            &definition[..at],
            &definition[at + " INDEX ".len()..]
        ),
        None => definition.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    fn of(report: &crate::audit::AuditReport) -> Vec<&Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.check == Check::InvalidIndex)
            .collect()
    }

    #[test]
    fn failed_unique_build_is_dropped_and_recreated() {
        let mut p = primary();
        let t = table(10, "users");
        let mut bad = index(100, &t, "users_email", vec![col(2, "email")]);
        bad.valid = false;
        bad.unique = true;
        bad.definition =
            Some("CREATE UNIQUE INDEX users_email ON public.users USING btree (email)".into());
        let good = index(101, &t, "users_name", vec![col(3, "name")]);
        p.indexes = vec![bad, good];
        p.tables.push(t);
        let report = audit_nodes(vec![("p", p)]);
        let found = of(&report);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index.as_deref(), Some("users_email"));
        assert_eq!(found[0].severity, Severity::Warning);
        assert_eq!(
            found[0].fix.as_deref(),
            Some(
                "DROP INDEX CONCURRENTLY public.users_email;\nCREATE UNIQUE INDEX CONCURRENTLY \
                 users_email ON public.users USING btree (email);"
            )
        );
    }

    #[test]
    fn a_build_in_progress_is_not_a_failure() {
        let mut p = primary();
        let t = table(10, "users");
        let mut building = index(100, &t, "users_email", vec![col(2, "email")]);
        building.valid = false;
        let mut leftover = index(101, &t, "users_name_ccnew", vec![col(3, "name")]);
        leftover.valid = false;
        p.indexes = vec![building, leftover];
        p.tables.push(t);
        p.index_builds.push(IndexBuild {
            pid: 4242,
            table_oid: 10,
            index_oid: 100,
            command: Some("CREATE INDEX CONCURRENTLY".into()),
            phase: Some("waiting for old snapshots".into()),
            current_locker_pid: Some(77),
            ..Default::default()
        });
        let report = audit_nodes(vec![("p", p)]);
        let found = of(&report);
        assert_eq!(found.len(), 2);
        let building = found
            .iter()
            .find(|f| f.index.as_deref() == Some("users_email"))
            .unwrap();
        assert_eq!(building.severity, Severity::Info);
        assert!(building.fix.is_none());
        assert!(building.message.contains("pid 4242"));
        assert!(building.message.contains("pid 77"));
        let leftover = found
            .iter()
            .find(|f| f.index.as_deref() == Some("users_name_ccnew"))
            .unwrap();
        assert_eq!(
            leftover.fix.as_deref(),
            Some("DROP INDEX CONCURRENTLY public.users_name_ccnew;")
        );
    }

    #[test]
    fn an_invalid_partitioned_index_names_the_partitions_without_one() {
        let mut p = primary();
        let mut parent = table(10, "pt");
        parent.kind = TableKind::Partitioned;
        let mut p1 = table(11, "pt_1");
        p1.parent_oid = Some(10);
        let mut p2 = table(12, "pt_2");
        p2.parent_oid = Some(10);
        let mut p3 = table(13, "pt_3");
        p3.parent_oid = Some(10);
        let mut on_parent = index(100, &parent, "pt_x", vec![col(1, "x")]);
        on_parent.partitioned = true;
        on_parent.valid = false;
        on_parent.definition = Some("CREATE INDEX pt_x ON ONLY public.pt USING btree (x)".into());
        let mut attached = index(101, &p1, "pt_1_x", vec![col(1, "x")]);
        attached.partition_child = true;
        attached.parent_index_oid = Some(100);
        // pt_3 has an equivalent index that was never attached.
        let unattached = index(102, &p3, "pt_3_x", vec![col(1, "x")]);
        p.indexes = vec![on_parent, attached, unattached];
        p.tables = vec![parent, p1, p2, p3];
        let report = audit_nodes(vec![("p", p)]);
        let found = of(&report);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.index.as_deref(), Some("pt_x"));
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains(
                "2 of its partitions have no index attached to it (public.pt_2, public.pt_3)"
            ),
            "{}",
            f.message
        );
        assert_eq!(
            f.fix.as_deref(),
            Some(
                "CREATE INDEX CONCURRENTLY pt_2_pt_x ON public.pt_2 USING btree (x);\n\
                 ALTER INDEX public.pt_x ATTACH PARTITION public.pt_2_pt_x;\n\
                 ALTER INDEX public.pt_x ATTACH PARTITION public.pt_3_x;"
            )
        );
    }
}
