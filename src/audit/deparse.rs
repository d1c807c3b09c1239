//! Which index definitions the report can show, so the catalog read deparses only those, and the
//! node-tree text the comparisons use instead.
//!
//! `pg_get_indexdef` and `pg_get_expr` cost the server most of the index read on a large catalog
//! and take an ACCESS SHARE lock on each table (held to the end of the transaction, and waiting
//! behind any ACCESS EXCLUSIVE lock). Two indexes are compared by the trees the server stores
//! (`pg_index.indexprs`, `indpred`), which cost nothing to read and need no lock; the text is
//! fetched only for the indexes a finding may quote: invalid ones (their definition rebuilds
//! them), expression or partial indexes that share a table, access method, predicate and leading
//! key with another index (the duplicate and redundant checks quote their keys), and expression
//! or partial indexes of the partitions an invalid partitioned index is missing (matched by text).

use foldhash::{HashMap, HashMapExt, HashSet};
use std::collections::BTreeSet;

use super::snapshot::{Index, IndexColumn, NodeSnapshot};

/// The oids of the indexes whose text a finding may show, in ascending order.
pub fn indexes_to_deparse(snapshot: &NodeSnapshot) -> Vec<u32> {
    let mut wanted: BTreeSet<u32> = BTreeSet::new();
    for index in &snapshot.indexes {
        if !index.valid {
            wanted.insert(index.oid);
        }
    }
    type Group<'a> = (u32, &'a str, Option<&'a str>, Option<&'a IndexColumn>);
    // Sized for every index up front: growing a map rehashes what it holds, each time.
    let mut groups: HashMap<Group, Vec<&Index>> = HashMap::with_capacity(snapshot.indexes.len());
    for index in &snapshot.indexes {
        if !index.valid || !index.ready || index.partition_child || index.columns.is_empty() {
            continue;
        }
        groups
            .entry((
                index.table_oid,
                index.access_method.as_str(),
                index.predicate_key(),
                index.key_columns().first(),
            ))
            .or_default()
            .push(index);
    }
    for group in groups.values().filter(|g| g.len() > 1) {
        wanted.extend(group.iter().filter(|i| i.needs_deparse()).map(|i| i.oid));
    }
    let parents: HashSet<u32> = snapshot
        .indexes
        .iter()
        .filter(|i| i.partitioned && !i.valid)
        .map(|i| i.table_oid)
        .collect();
    if !parents.is_empty() {
        let partitions: HashSet<u32> = snapshot
            .tables
            .iter()
            .filter(|t| t.parent_oid.is_some_and(|p| parents.contains(&p)))
            .map(|t| t.oid)
            .collect();
        wanted.extend(
            snapshot
                .indexes
                .iter()
                .filter(|i| partitions.contains(&i.table_oid) && i.needs_deparse())
                .map(|i| i.oid),
        );
    }
    wanted.into_iter().collect()
}

/// A node tree's text without its parse locations (`:location 17`), which differ between two
/// statements that wrote the same expression in different places.
pub fn without_locations(tree: &str) -> String {
    let mut out = String::with_capacity(tree.len());
    let mut rest = tree;
    while let Some(at) = rest.find(":location ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + ":location ".len()..];
        let end = after
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
            .map_or(after.len(), |(i, _)| i);
        rest = after[end..].strip_prefix(' ').unwrap_or(&after[end..]);
    }
    out.push_str(rest);
    out.trim_end().to_owned()
}

/// The elements of a node list's text, `({A ...} {B ...})`, each a `{...}` node. Tokens escape
/// braces inside names with a backslash (outToken), so only unescaped braces nest.
pub fn list_elements(list: &str) -> Vec<&str> {
    let mut elements = Vec::new();
    let (mut depth, mut start, mut escaped) = (0usize, None, false);
    for (i, c) in list.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(s) = start.take()
                {
                    elements.push(&list[s..=i]);
                }
            }
            _ => {}
        }
    }
    elements
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn locations_are_dropped_and_nothing_else() {
        let a =
            "{FUNCEXPR :funcid 870 :args ({VAR :varno 1 :varattno 3 :location 20}) :location 14}";
        let b =
            "{FUNCEXPR :funcid 870 :args ({VAR :varno 1 :varattno 3 :location 7}) :location -1}";
        assert_eq!(without_locations(a), without_locations(b));
        assert_eq!(
            without_locations(a),
            "{FUNCEXPR :funcid 870 :args ({VAR :varno 1 :varattno 3 }) }"
        );
        let c = "{FUNCEXPR :funcid 871 :args ({VAR :varno 1 :varattno 3 :location 7}) :location 1}";
        assert_ne!(without_locations(a), without_locations(c));
    }

    #[test]
    fn list_elements_split_top_level_nodes_only() {
        let list = r"({FUNCEXPR :args ({VAR :varattno 3})} {CONST :constvalue 4 [ 1 0 0 0 ]} {A :name x\{y})";
        let parts = list_elements(list);
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert_eq!(parts[0], "{FUNCEXPR :args ({VAR :varattno 3})}");
        assert_eq!(parts[2], r"{A :name x\{y}");
    }

    fn expression(tree: &str) -> IndexColumn {
        let mut c = col(0, "");
        c.expression = Some(tree.into());
        c
    }

    #[test]
    fn only_indexes_a_finding_can_quote_are_deparsed() {
        let mut p = primary();
        let t = table(10, "t");
        let u = table(11, "u");
        let mut lonely = index(100, &t, "t_lower_b", vec![expression("{F 1}")]);
        lonely.columns[0].expression = Some("{F 1}".into());
        let dup_a = index(101, &u, "u_lower_b", vec![expression("{F 2}")]);
        let dup_b = index(102, &u, "u_lower_b_again", vec![expression("{F 2}")]);
        // Same leading key as an expression index of its table: a redundant prefix candidate.
        let wide = index(
            103,
            &u,
            "u_a_lower_b",
            vec![col(2, "a"), expression("{F 2}")],
        );
        let narrow = index(104, &u, "u_a", vec![col(2, "a")]);
        let mut invalid = index(105, &t, "t_broken", vec![col(2, "a")]);
        invalid.valid = false;
        let mut partial = index(106, &t, "t_a_pos", vec![col(3, "b")]);
        partial.predicate_tree = Some("{OPEXPR}".into());
        p.indexes = vec![lonely, dup_a, dup_b, wide, narrow, invalid, partial];
        p.tables = vec![t, u];
        assert_eq!(indexes_to_deparse(&p), vec![101, 102, 103, 105]);
    }
}
