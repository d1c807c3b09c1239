//! Rule: an index on the join key of the larger side of a join whose other side brings few
//! rows, so a nested loop can look each of them up instead of reading the whole table into a
//! hash or a sort. The scan's own equalities lead the key, the join key follows.

use super::{Input, btree_key, equality_keys};
use crate::advise::{Candidate, IndexKey, Kind, Method};

/// The other side must bring at most this share of the rows this side reads.
pub const MAX_OTHER_SHARE: f64 = 0.01;

pub fn propose(input: &Input<'_>) -> Vec<Candidate> {
    let a = input.access;
    if !a.node_type.ends_with("Seq Scan") {
        return Vec::new();
    }
    let Some(read) = a
        .rows_returned
        .map(|r| r + a.rows_removed.unwrap_or(0.0))
        .or(input.table.rows)
    else {
        return Vec::new();
    };
    let mut out: Vec<Candidate> = Vec::new();
    for jk in &a.join_keys {
        let Some(other) = jk.other_rows else {
            continue;
        };
        if other > read * MAX_OTHER_SHARE {
            continue;
        }
        let mut keys: Vec<IndexKey> = equality_keys(a)
            .into_iter()
            .map(|c| btree_key(c, input.table))
            .collect();
        if keys.iter().any(|k| k.key == jk.key) {
            continue;
        }
        keys.push(IndexKey::plain(jk.key.clone()));
        let mut c = input.candidate(Method::Btree, keys, Kind::JoinKey);
        c.reasons.push(format!(
            "the {} read {} rows of {} to join them with {} rows: an index on the join key {} lets a nested loop look those up",
            a.node_type,
            super::count(read),
            a.table,
            super::count(other),
            jk.key.definition()
        ));
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, propose_for};

    #[test]
    fn the_big_sides_join_key() {
        for v in 13..=18 {
            let p = propose_for("advise/join_key", v);
            assert_eq!(definitions(&p), ["ON public.tickets (account_id)"], "pg{v}");
            assert_eq!(p.candidates[0].kinds, [crate::advise::Kind::JoinKey]);
        }
    }

    #[test]
    fn not_when_both_sides_are_large() {
        // orders ⋈ customers, every order joined.
        for v in 13..=18 {
            let p = propose_for("plans/hash_join_batches", v);
            assert!(p.candidates.is_empty(), "pg{v}: {:?}", definitions(&p));
        }
    }
}
