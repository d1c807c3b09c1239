//! missing_fk_index: foreign keys with no index on the referencing columns. PostgreSQL indexes
//! the referenced side (it must be unique) but not the referencing one, so every DELETE or key
//! UPDATE on the referenced table scans the referencing table once per row to check it.

use crate::audit::snapshot::{ForeignKey, Index, TableKind};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{bytes_words, qualified};
use crate::sql::quote_ident_to_show as quote_ident;

/// A referencing table at least this large (pages) makes the missing index a warning when the
/// referenced table sees deletes or updates.
pub const WARN_MIN_PAGES: i64 = 1000;

/// An index serves the foreign key's lookups when its leading key columns are exactly the
/// foreign key's columns, in any order, and it is not partial.
pub fn serves(index: &Index, fk: &ForeignKey) -> bool {
    if !index.valid || index.predicate_key().is_some() || fk.attnums.len() > index.key_column_count
    {
        return false;
    }
    let mut lead: Vec<i16> = index.key_columns()[..fk.attnums.len()]
        .iter()
        .map(|c| c.attnum)
        .collect();
    let mut want = fk.attnums.clone();
    lead.sort_unstable();
    want.sort_unstable();
    lead == want
}

pub fn run(ctx: &Context, out: &mut Output) {
    for fk in &ctx.reference.snapshot.foreign_keys {
        // A partition's copy of a partitioned table's foreign key is judged on the parent,
        // whose indexes cascade to the partitions.
        if fk.inherited {
            continue;
        }
        let Some(table) = ctx.tables_by_oid.get(&fk.table_oid) else {
            continue;
        };
        if !ctx.table_big_enough(table) {
            continue;
        }
        let indexes = ctx.indexes_by_table.get(&fk.table_oid);
        if indexes.is_some_and(|list| list.iter().any(|i| serves(i, fk))) {
            continue;
        }
        let referenced_writes = ctx
            .primary_table(&fk.referenced_schema, &fk.referenced_table)
            .map(|t| t.stats.n_tup_del.unwrap_or(0) + t.stats.n_tup_upd.unwrap_or(0));
        let severity = if table.relpages >= WARN_MIN_PAGES && referenced_writes.unwrap_or(0) > 0 {
            Severity::Warning
        } else {
            Severity::Info
        };
        let columns = fk
            .column_names
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ");
        let mut message = format!(
            "foreign key {} on {} ({columns}) has no index on its columns: each delete or key \
             update on {} scans {} ({})",
            fk.name,
            qualified(&fk.schema, &fk.table),
            qualified(&fk.referenced_schema, &fk.referenced_table),
            qualified(&fk.schema, &fk.table),
            bytes_words(table.table_bytes.unwrap_or(0) as f64),
        );
        if let Some(writes) = referenced_writes.filter(|w| *w > 0) {
            message.push_str(&format!(
                "; the referenced table has had {} deletes and updates",
                super::count_words(writes as f64)
            ));
        }
        // CREATE INDEX CONCURRENTLY does not work on a partitioned table.
        let create = if table.kind == TableKind::Partitioned {
            "CREATE INDEX ON"
        } else {
            "CREATE INDEX CONCURRENTLY ON"
        };
        let mut finding = Finding::new(Check::MissingFkIndex, severity, message)
            .on_table(table)
            .subject(fk.name.clone())
            .evidence("table_pages", table.relpages as f64)
            .fix(format!(
                "{create} {} ({columns});",
                qualified(&fk.schema, &fk.table)
            ));
        if let Some(writes) = referenced_writes {
            finding = finding.evidence("referenced_table_deletes_and_updates", writes as f64);
        }
        out.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    fn fk(table: u32, attnums: Vec<i16>, names: Vec<&str>) -> ForeignKey {
        ForeignKey {
            name: "child_parent_fk".into(),
            table_oid: table,
            schema: "public".into(),
            table: "child".into(),
            referenced_table_oid: 1,
            referenced_schema: "public".into(),
            referenced_table: "parent".into(),
            attnums,
            column_names: names.into_iter().map(str::to_owned).collect(),
            referenced_index_oid: 0,
            inherited: false,
        }
    }

    #[test]
    fn a_foreign_key_without_an_index_is_found() {
        let mut p = primary();
        let mut parent = table(1, "parent");
        parent.stats.n_tup_del = Some(10);
        let child = table(10, "child");
        let covered = table(11, "covered");
        p.indexes = vec![index(
            100,
            &covered,
            "covered_b_a",
            vec![col(2, "b"), col(1, "a"), col(3, "c")],
        )];
        let mut other = fk(11, vec![1, 2], vec!["a", "b"]);
        other.name = "covered_fk".into();
        other.table = "covered".into();
        p.foreign_keys = vec![fk(10, vec![2], vec!["Parent Id"]), other];
        p.tables = vec![parent, child, covered];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::MissingFkIndex);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].table.as_deref(), Some("child"));
        assert_eq!(found[0].severity, Severity::Warning);
        assert_eq!(
            found[0].fix.as_deref(),
            Some("CREATE INDEX CONCURRENTLY ON public.child (\"Parent Id\");")
        );
    }
}
