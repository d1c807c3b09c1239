//! The existing indexes a recommended index makes redundant: a valid B-tree whose key columns
//! are a leading prefix of the recommendation's (same columns or expressions, operator classes
//! and collations, in the same directions or all reversed: a B-tree scans either way), with the
//! same predicate, and whose INCLUDE columns the recommendation stores too (or its index-only
//! scans would be lost). Every scan the existing index serves, the recommendation serves. Never
//! one that enforces something besides lookups: a unique or primary key index, one a
//! constraint uses (unique, exclusion), or the replica identity.

use super::covered::{normalized, same_leading_keys};
use crate::advise::{Candidate, IndexFacts, Method, TableFacts};
use crate::sql::quote_ident;

/// The indexes of `table` that `c` makes redundant, in the table's order.
pub fn replaced<'t>(c: &Candidate, table: &'t TableFacts) -> Vec<&'t IndexFacts> {
    if c.schema != table.schema || c.table != table.name {
        return Vec::new();
    }
    table.indexes.iter().filter(|e| redundant(e, c)).collect()
}

/// Why `c` replaces `e`, in words, for the report's evidence.
pub fn evidence(e: &IndexFacts, c: &Candidate) -> String {
    let keys: Vec<&str> = e.keys.iter().map(|k| k.expr.as_str()).collect();
    let mut s = format!(
        "its keys ({}) lead those of {} with the same operator classes, collations and predicate",
        keys.join(", "),
        c.name
    );
    if !e.include.is_empty() {
        s.push_str(&format!(
            ", which stores its INCLUDE ({}) too",
            e.include.join(", ")
        ));
    }
    s
}

/// The statement that drops it without blocking writes (once the recommendation is built).
pub fn drop_statement(schema: &str, index: &str) -> String {
    format!(
        "DROP INDEX CONCURRENTLY {}.{};",
        quote_ident(schema),
        quote_ident(index)
    )
}

fn redundant(e: &IndexFacts, c: &Candidate) -> bool {
    if !e.valid
        || e.unique
        || e.primary
        || e.exclusion
        || e.backs_constraint
        || e.replica_identity
        || e.method != "btree"
        || c.method != Method::Btree
        || e.keys.is_empty()
        || e.keys.len() > c.keys.len()
        || e.predicate.as_deref().map(normalized) != c.predicate.as_deref().map(normalized)
    {
        return false;
    }
    if !same_leading_keys(&e.keys, &c.keys) {
        return false;
    }
    let stored: Vec<String> = c
        .keys
        .iter()
        .map(|k| normalized(&k.key.definition()))
        .chain(c.include.iter().cloned())
        .collect();
    let identical = e.keys.len() == c.keys.len()
        && e.include.len() == c.include.len()
        && e.include.iter().all(|i| c.include.contains(i));
    !identical && e.include.iter().all(|i| stored.contains(&normalized(i)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::Proposals;
    use crate::advise::testing::{btree_of as btree, facts, key, propose_for};

    /// The (account_id, created_at DESC) candidate of the composite case, and the tickets
    /// table with `indexes` added.
    fn setup(indexes: Vec<IndexFacts>) -> (Candidate, TableFacts) {
        let p: Proposals = propose_for("advise/composite_eq_sort", 17);
        let c = p
            .candidates
            .iter()
            .find(|c| c.definition() == "ON public.tickets (account_id, created_at DESC)")
            .unwrap()
            .clone();
        let mut t = facts()
            .tables
            .into_iter()
            .find(|t| t.name == "tickets")
            .unwrap();
        t.indexes.extend(indexes);
        (c, t)
    }

    fn names(c: &Candidate, t: &TableFacts) -> Vec<String> {
        replaced(c, t).iter().map(|i| i.name.clone()).collect()
    }

    #[test]
    fn a_leading_prefix_in_either_direction_is_replaced() {
        let (c, t) = setup(vec![
            btree("by_account", vec![key("account_id", false)]),
            btree("by_account_desc", vec![key("account_id", true)]),
            btree(
                "both_reversed",
                vec![key("account_id", true), key("created_at", false)],
            ),
        ]);
        assert_eq!(names(&c, &t), ["by_account", "by_account_desc"]);
        // The same keys reversed is the same index: the covered pass drops that candidate, so
        // it is never a recommendation replacing it.
        let mut include = c.clone();
        include.include = vec!["id".into()];
        assert_eq!(
            names(&include, &t),
            ["by_account", "by_account_desc", "both_reversed"]
        );
        let e = replaced(&c, &t)[0];
        assert!(evidence(e, &c).starts_with("its keys (account_id) lead"));
    }

    #[test]
    fn never_a_unique_primary_constraint_exclusion_or_replica_identity_index() {
        let protect: [fn(&mut IndexFacts); 5] = [
            |i| i.unique = true,
            |i| i.primary = true,
            |i| i.backs_constraint = true,
            |i| i.exclusion = true,
            |i| i.replica_identity = true,
        ];
        for (n, set) in protect.iter().enumerate() {
            let mut i = btree("by_account", vec![key("account_id", false)]);
            set(&mut i);
            let (c, t) = setup(vec![i]);
            assert!(names(&c, &t).is_empty(), "protection {n}");
        }
        // The fixture's own tickets_pkey (id) leads nothing here, and is protected anyway.
        let (c, t) = setup(Vec::new());
        assert!(names(&c, &t).is_empty());
    }

    #[test]
    fn not_another_opclass_collation_predicate_order_or_lost_include() {
        let mut opclass = btree("a", vec![key("account_id", false)]);
        opclass.keys[0].default_opclass = false;
        let mut collation = btree("b", vec![key("account_id", false)]);
        collation.keys[0].collation = Some("POSIX".into());
        let mut partial = btree("c", vec![key("account_id", false)]);
        partial.predicate = Some("state = 'open'::text".into());
        let mixed = btree(
            "d",
            vec![key("account_id", false), key("created_at", false)],
        );
        let second_key = btree("e", vec![key("created_at", true)]);
        let mut include = btree("f", vec![key("account_id", false)]);
        include.include = vec!["amount".into()];
        let mut invalid = btree("g", vec![key("account_id", false)]);
        invalid.valid = false;
        let hash = IndexFacts {
            method: "hash".into(),
            ..btree("h", vec![key("account_id", false)])
        };
        let longer = btree(
            "i",
            vec![
                key("account_id", false),
                key("created_at", true),
                key("id", false),
            ],
        );
        let (c, t) = setup(vec![
            opclass, collation, partial, mixed, second_key, include, invalid, hash, longer,
        ]);
        assert!(names(&c, &t).is_empty(), "{:?}", names(&c, &t));
        // INCLUDE columns the recommendation stores as keys are not lost.
        let mut stored = btree("j", vec![key("account_id", false)]);
        stored.include = vec!["created_at".into()];
        let (c, t) = setup(vec![stored]);
        assert_eq!(names(&c, &t), ["j"]);
    }

    #[test]
    fn a_partial_recommendation_replaces_only_an_index_with_its_predicate() {
        let p = propose_for("advise/partial_hot_constant", 17);
        let c = p
            .candidates
            .iter()
            .find(|c| c.predicate.is_some())
            .unwrap()
            .clone();
        let mut t = facts()
            .tables
            .into_iter()
            .find(|t| t.name == "tickets")
            .unwrap();
        let mut same = btree("open_created", vec![key("created_at", false)]);
        same.predicate = c.predicate.clone();
        same.include = vec![];
        let mut plain = btree("created", vec![key("created_at", false)]);
        plain.predicate = None;
        t.indexes.extend([same, plain]);
        // Identical to the candidate: not "replaced" (the covered pass drops such a candidate).
        // The one without the predicate holds rows the partial one does not.
        assert!(
            names(&c, &t).is_empty(),
            "{:?} for {}",
            names(&c, &t),
            c.definition()
        );
        let mut wider = c.clone();
        wider.include = vec!["priority".into()];
        assert_eq!(names(&wider, &t), ["open_created"]);
    }
}
