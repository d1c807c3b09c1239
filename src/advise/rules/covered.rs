//! Dropping candidates an existing index already is: same method, same predicate, and the
//! candidate's keys leading the existing index's with the same operator classes and
//! collations, in the same directions or all reversed (a B-tree scans either way); its INCLUDE
//! columns among the existing index's columns. An invalid index covers nothing.

use super::super::expr;
use crate::advise::{Candidate, IndexFacts, IndexKey, Method, TableFacts};

/// The name of the existing index that already serves what `c` would, if any.
pub fn covering_index<'t>(c: &Candidate, table: &'t TableFacts) -> Option<&'t str> {
    table
        .indexes
        .iter()
        .find(|i| covers(i, c))
        .map(|i| i.name.as_str())
}

/// An expression as both the plan and pg_get_indexdef print it, read and written back the same
/// way so that `lower(email)` and `lower((email)::text)`-free spellings compare equal.
pub(super) fn normalized(sql: &str) -> String {
    expr::read(sql).map_or_else(|| sql.to_owned(), |e| e.unqualified())
}

fn same_key(existing: &crate::advise::IndexKeyFacts, k: &IndexKey) -> bool {
    let opclass_matches = match &k.opclass {
        None => existing.default_opclass,
        Some(op) => &existing.opclass == op,
    };
    normalized(&existing.expr) == normalized(&k.key.definition())
        && opclass_matches
        && existing.collation.is_none()
}

/// Whether the keys of `existing` and `candidate`, paired from the first for as many as the
/// shorter has, are the same keys in the same directions, or all reversed (a B-tree scans
/// either way).
pub(super) fn same_leading_keys(
    existing: &[crate::advise::IndexKeyFacts],
    candidate: &[IndexKey],
) -> bool {
    let same = |reversed: bool| {
        existing.iter().zip(candidate).all(|(e, k)| {
            same_key(e, k)
                && (e.descending != k.descending) == reversed
                && (e.nulls_first != k.effective_nulls_first()) == reversed
        })
    };
    same(false) || same(true)
}

fn covers(existing: &IndexFacts, c: &Candidate) -> bool {
    if !existing.valid
        || existing.method != c.method.name()
        || existing.keys.len() < c.keys.len()
        || existing.predicate.as_deref().map(normalized) != c.predicate.as_deref().map(normalized)
    {
        return false;
    }
    let keys_match = match c.method {
        Method::Btree => same_leading_keys(&existing.keys, &c.keys),
        // GIN and BRIN search every key column alike, in any order.
        _ => c
            .keys
            .iter()
            .all(|k| existing.keys.iter().any(|e| same_key(e, k))),
    };
    keys_match
        && c.include.iter().all(|col| {
            existing.include.iter().any(|i| i == col)
                || existing.keys.iter().any(|e| normalized(&e.expr) == *col)
        })
}

#[cfg(test)]
mod tests {
    use crate::advise::IndexFacts;
    use crate::advise::testing::{btree_of as btree, definitions, facts, key, propose_with};

    fn with_index(index: IndexFacts) -> crate::advise::Facts {
        let mut f = facts();
        f.tables
            .iter_mut()
            .find(|t| t.name == "tickets")
            .unwrap()
            .indexes
            .push(index);
        f
    }

    #[test]
    fn an_existing_index_with_the_same_leading_keys_reversed() {
        let f = with_index(btree(
            "tickets_acct_created",
            vec![
                key("account_id", true),
                key("created_at", false),
                key("id", true),
            ],
        ));
        let p = propose_with("advise/composite_eq_sort", 17, &f);
        let covered: Vec<_> = p.covered.iter().map(|c| c.by_index.as_str()).collect();
        assert!(covered.contains(&"tickets_acct_created"), "{:?}", p.covered);
        assert!(
            !definitions(&p).contains(&"ON public.tickets (account_id, created_at DESC)".into()),
            "{:?}",
            definitions(&p)
        );
        // Its INCLUDE (id) variant is covered too: id is a key column of the existing index.
        assert!(
            p.candidates.iter().all(|c| c.include.is_empty()),
            "{:?}",
            definitions(&p)
        );
    }

    #[test]
    fn not_by_a_different_opclass_predicate_direction_or_an_invalid_index() {
        let mut other_opclass = btree("a", vec![key("account_id", false), key("created_at", true)]);
        other_opclass.keys[1].default_opclass = false;
        let mut partial = btree("b", vec![key("account_id", false), key("created_at", true)]);
        partial.predicate = Some("state = 'open'::text".into());
        let mixed = btree(
            "c",
            vec![key("account_id", false), key("created_at", false)],
        );
        let mut invalid = btree("d", vec![key("account_id", false), key("created_at", true)]);
        invalid.valid = false;
        for index in [other_opclass, partial, mixed, invalid] {
            let name = index.name.clone();
            let p = propose_with("advise/composite_eq_sort", 17, &with_index(index));
            assert!(
                p.covered
                    .iter()
                    .all(|c| c.by_index != name || c.candidate.keys.len() == 1),
                "{name}: {:?}",
                p.covered
            );
            assert!(
                definitions(&p).contains(&"ON public.tickets (account_id, created_at DESC)".into()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_partial_index_with_the_same_predicate_written_by_the_server() {
        let mut partial = btree("open_by_created", vec![key("created_at", false)]);
        partial.predicate = Some("state = 'open'::text".into());
        let p = propose_with("advise/partial_hot_constant", 17, &with_index(partial));
        assert!(
            p.covered.iter().any(|c| c.by_index == "open_by_created"),
            "{:?}",
            definitions(&p)
        );
    }
}
