//! Folding candidates one index can serve together: the same index proposed for several scans
//! becomes one candidate serving all of them, and a B-tree whose keys are the leading keys of
//! another's (same operator classes, directions and predicate, its INCLUDE columns within the
//! other's columns) is served by the longer one, which answers every search the shorter does.

use crate::advise::{Candidate, Method};

pub fn merge(raw: Vec<Candidate>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for c in raw {
        match out.iter_mut().find(|o| o.same_index(&c)) {
            Some(o) => o.absorb(c),
            None => out.push(c),
        }
    }
    // Longest first, so each shorter candidate finds the longest that serves it.
    let mut i = 0;
    while i < out.len() {
        let host = (0..out.len()).find(|&j| j != i && serves_prefix(&out[j], &out[i]));
        match host {
            Some(j) => {
                let c = out.remove(i);
                let j = if j > i { j - 1 } else { j };
                out[j].absorb(c);
                i = 0;
            }
            None => i += 1,
        }
    }
    out
}

/// Whether `long` answers every search `short` would: a B-tree with `short`'s keys leading it.
fn serves_prefix(long: &Candidate, short: &Candidate) -> bool {
    long.method == Method::Btree
        && short.method == Method::Btree
        && long.schema == short.schema
        && long.table == short.table
        && long.predicate == short.predicate
        && long.keys.len() > short.keys.len()
        && long.keys[..short.keys.len()] == short.keys[..]
        && short.include.iter().all(|c| {
            long.include.contains(c) || long.keys.iter().any(|k| k.key.column() == Some(c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::access::Key;
    use crate::advise::testing::{definitions, propose_all};
    use crate::advise::{IndexKey, Kind, Serves, TableRef};

    fn btree(cols: &[&str], query: usize) -> Candidate {
        let t = TableRef {
            schema: "public".into(),
            name: "t".into(),
        };
        let keys = cols
            .iter()
            .map(|c| IndexKey::plain(Key::Column((*c).into())))
            .collect();
        let mut c = Candidate::new(&t, Method::Btree, keys, Kind::Btree);
        c.serves.push(Serves { query, node: 0 });
        c
    }

    #[test]
    fn a_leading_prefix_is_served_by_the_longer_index() {
        let merged = merge(vec![
            btree(&["a"], 0),
            btree(&["a", "b"], 1),
            btree(&["b"], 2),
        ]);
        let defs: Vec<String> = merged.iter().map(Candidate::definition).collect();
        assert_eq!(defs, ["ON public.t (a, b)", "ON public.t (b)"]);
        assert_eq!(merged[0].serves.len(), 2);
    }

    #[test]
    fn a_different_predicate_or_direction_is_not_merged() {
        let mut partial = btree(&["a"], 0);
        partial.predicate = Some("x = 1".into());
        let mut desc = btree(&["a", "b"], 1);
        desc.keys[0].descending = true;
        let merged = merge(vec![partial, desc, btree(&["a"], 2)]);
        assert_eq!(merged.len(), 3);
    }

    #[test]
    fn one_index_for_several_queries_of_a_workload() {
        // The same account's newest tickets and its tickets in a window: both lead with
        // account_id; the join's tickets(account_id) is served by either longer index.
        let p = propose_all(
            &[
                "advise/composite_eq_sort",
                "advise/composite_eq_range",
                "advise/join_key",
            ],
            17,
        );
        let defs = definitions(&p);
        assert!(
            !defs.contains(&"ON public.tickets (account_id)".into()),
            "{defs:?}"
        );
        let served_join = p
            .candidates
            .iter()
            .find(|c| c.serves.iter().any(|s| s.query == 2))
            .unwrap();
        assert!(served_join.keys.len() > 1, "{}", served_join.definition());
        assert!(served_join.kinds.contains(&Kind::JoinKey));
    }
}
