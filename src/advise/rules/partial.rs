//! Rule: a partial index when the query's hot predicate is a constant that selects a small
//! slice of the table (its `pg_stats` frequency): the predicate moves into the index's WHERE,
//! the index holds only that slice, and writes to rows outside it cost the index nothing.

use super::{Input, btree};
use crate::advise::access::{Key, Operand, Use};
use crate::advise::{Candidate, IndexKey, Kind, Method};

/// The largest share of the table a partial index's predicate may select: past a quarter the
/// index is no longer much smaller than a full one.
pub const MAX_SHARE: f64 = 0.25;

/// The most distinct values the predicate's column may have: a constant of a column with a few
/// values names a state the query is about (`state = 'open'`); one of a column with thousands
/// names an entity (`account_id = 17`), and a partial index per entity serves one query.
pub const MAX_DISTINCT: f64 = 20.0;

pub fn propose(input: &Input<'_>) -> Vec<Candidate> {
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    let a = input.access;
    let rows = input.table.rows;
    // The equality on a constant with the smallest share.
    let best = a
        .conditions
        .iter()
        .filter(|c| c.uses == Use::Equal)
        .filter_map(|c| {
            let Operand::Constant(value) = &c.operand else {
                return None;
            };
            let Key::Column(name) = &c.key else {
                return None;
            };
            let col = input.table.column(name)?;
            let stats = col.stats.as_ref()?;
            let few_values = col.type_name == "boolean"
                || value == "NULL"
                || (stats.n_distinct > 0.0 && stats.n_distinct <= MAX_DISTINCT);
            if !few_values {
                return None;
            }
            let share = match value.as_str() {
                "NULL" => Some(stats.null_frac),
                // pg_stats prints boolean MCVs as t and f.
                "true" if col.type_name == "boolean" => stats.frequency("t", rows),
                "false" if col.type_name == "boolean" => stats.frequency("f", rows),
                v => stats.frequency(v, rows),
            }?;
            (share <= MAX_SHARE).then_some((c, share))
        })
        .min_by(|x, y| x.1.total_cmp(&y.1));
    let Some((cond, share)) = best else {
        return Vec::new();
    };
    let mut variants = btree::variants(input, Some(&cond.key));
    if variants.is_empty() {
        // Nothing else to search by: the predicate's own column keeps the index valid for
        // a bitmap scan of the slice.
        variants.push((vec![IndexKey::plain(cond.key.clone())], String::new()));
    }
    variants
        .into_iter()
        .map(|(keys, why)| {
            let mut c = input.candidate(Method::Btree, keys, Kind::Partial);
            c.predicate = Some(cond.sql.clone());
            let slice = format!(
                "{} holds {:.1}% of the rows (pg_stats), so a partial index holds only that slice",
                cond.sql,
                share * 100.0
            );
            c.reasons.push(if why.is_empty() {
                format!("{evidence}: {slice}")
            } else {
                format!("{evidence}: {slice}; {why}")
            });
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, propose_for};

    #[test]
    fn a_rare_constant_becomes_the_predicate() {
        for v in 13..=18 {
            let p = propose_for("advise/partial_hot_constant", v);
            let defs = definitions(&p);
            assert!(
                defs.contains(&"ON public.tickets (created_at) WHERE state = 'open'::text".into()),
                "pg{v}: {defs:?}"
            );
            let partial = p.candidates.iter().find(|c| c.predicate.is_some()).unwrap();
            assert!(
                partial.reasons[0].contains("2.0% of the rows"),
                "{:?}",
                partial.reasons
            );
        }
    }

    #[test]
    fn a_common_constant_is_not_a_partial_index() {
        // The story's 'pending' is 70% of the events.
        for v in 13..=18 {
            let p = propose_for("story/before", v);
            assert!(
                p.candidates.iter().all(|c| c.predicate.is_none()),
                "pg{v}: {:?}",
                definitions(&p)
            );
            assert!(
                definitions(&p).contains(&"ON public.events (status, created_at DESC)".into()),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }
}
