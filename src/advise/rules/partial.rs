//! Rule: a partial index when the query's hot predicate is a constant of a few-valued column
//! (its `pg_stats` frequency) whose slice is a real saving: the predicate moves into the
//! index's WHERE, the index holds only that slice without the constant's column among its keys,
//! and writes to rows outside it cost the index nothing. Measurement decides between it and
//! the full index, which the B-tree rule still proposes.

use super::{Input, btree};
use crate::advise::access::{Condition, Key, Operand, Use};
use crate::advise::{Candidate, IndexKey, Kind, Method};

/// Up to this share of the table the slice is small: its partial index is cheap to build, so
/// every key list the B-tree rule would try is tried with it.
pub const SMALL_SHARE: f64 = 0.25;

/// The largest share of the table a partial index's predicate may select. Past nine tenths the
/// partial index saves less than a tenth of the full one's entries and of its writes: about
/// the room B-tree's default fillfactor (90) leaves free on every leaf page anyway, so it is
/// the full index in all but its predicate, and serves fewer queries (only that constant's).
pub const MAX_SHARE: f64 = 0.9;

/// The most distinct values the predicate's column may have: a constant of a column with a few
/// values names a state the query is about (`state = 'open'`); one of a column with thousands
/// names an entity (`account_id = 17`), and a partial index per entity serves one query.
pub const MAX_DISTINCT: f64 = 20.0;

pub fn propose(input: &Input<'_>) -> Vec<Candidate> {
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    let Some((cond, share)) = slice(input) else {
        return Vec::new();
    };
    let mut variants = btree::variants(input, Some(&cond.key));
    let without_key = !variants.is_empty();
    if variants.is_empty() {
        // Nothing else to search by: the predicate's own column keeps the index valid for
        // a bitmap scan of the slice.
        variants.push((vec![IndexKey::plain(cond.key.clone())], String::new()));
    }
    if share > SMALL_SHARE {
        // A common slice's partial index costs nearly a full build to measure: only the best
        // key list, the one the full index leads with, so each query adds one candidate.
        variants.truncate(1);
    }
    let slice = slice_reason(cond, share, without_key);
    variants
        .into_iter()
        .map(|(keys, why)| {
            let mut c = input.candidate(Method::Btree, keys, Kind::Partial);
            c.predicate = Some(cond.sql.clone());
            c.reasons.push(if why.is_empty() {
                format!("{evidence}: {slice}")
            } else {
                format!("{evidence}: {slice}; {why}")
            });
            c
        })
        .collect()
}

/// The equality on a constant of a few-valued column with the smallest share of the rows, at
/// most [`MAX_SHARE`], with that share.
fn slice<'a>(input: &Input<'a>) -> Option<(&'a Condition, f64)> {
    let rows = input.table.rows;
    input
        .access
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
        .min_by(|x, y| x.1.total_cmp(&y.1))
}

/// What the partial index saves against the full one: the rows it leaves out, the key it drops
/// and the writes it never sees.
fn slice_reason(cond: &Condition, share: f64, without_key: bool) -> String {
    let dropped = if without_key {
        format!(", without {} among its keys,", cond.key.definition())
    } else {
        String::new()
    };
    format!(
        "{} holds {:.1}% of the rows (pg_stats), so a partial index holds only that slice{dropped} and writes to the other {:.1}% of the rows do not touch it",
        cond.sql,
        share * 100.0,
        (1.0 - share) * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::{Input, MAX_SHARE, propose};
    use crate::advise::Kind;
    use crate::advise::access::{Condition, Key, Operand, Use};
    use crate::advise::testing::{definitions, facts, fixture, propose_for, propose_with};

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
    fn a_common_constant_is_a_partial_index_beside_the_full_one() {
        // The story's 'pending' is 70% of the events: its partial index still holds less than
        // the full one (70% of the rows, one key fewer) and no write of the other 30%; which of
        // the two pays more per byte is for measurement to say, so both are proposed.
        for v in 13..=18 {
            let p = propose_for("story/before", v);
            let defs = definitions(&p);
            assert!(
                defs.contains(&"ON public.events (status, created_at DESC)".into()),
                "pg{v}: {defs:?}"
            );
            assert!(
                defs.contains(
                    &"ON public.events (created_at DESC) WHERE status = 'pending'::text".into()
                ),
                "pg{v}: {defs:?}"
            );
            let partials: Vec<_> = p
                .candidates
                .iter()
                .filter(|c| c.predicate.is_some())
                .collect();
            assert_eq!(partials.len(), 1, "pg{v}: one extra candidate: {defs:?}");
            assert_eq!(partials[0].kinds, [Kind::Partial]);
            let why = &partials[0].reasons[0];
            assert!(why.contains("holds 70.0% of the rows"), "pg{v}: {why}");
            assert!(
                why.contains("without status among its keys"),
                "pg{v}: {why}"
            );
            assert!(why.contains("the other 30.0% of the rows"), "pg{v}: {why}");
        }
    }

    #[test]
    fn a_slice_of_nearly_every_row_is_not_a_partial_index() {
        let with_pending = |share: f64| {
            let mut f = facts();
            let events = f.tables.iter_mut().find(|t| t.name == "events").unwrap();
            let status = events
                .columns
                .iter_mut()
                .find(|c| c.name == "status")
                .unwrap();
            let stats = status.stats.as_mut().unwrap();
            stats.most_common_freqs[0] = share;
            // The other values keep the rest, so the frequencies still add up to one.
            let rest: f64 = stats.most_common_freqs[1..].iter().sum();
            for f in &mut stats.most_common_freqs[1..] {
                *f *= (1.0 - share) / rest;
            }
            propose_with("story/before", 17, &f)
        };
        let partials = |share: f64| {
            with_pending(share)
                .candidates
                .iter()
                .filter(|c| c.predicate.is_some())
                .count()
        };
        assert_eq!(partials(MAX_SHARE), 1);
        assert_eq!(partials(0.95), 0);
        assert_eq!(partials(1.0), 0);
        // The full index is proposed either way.
        assert!(
            definitions(&with_pending(0.95))
                .contains(&"ON public.events (status, created_at DESC)".into())
        );
    }

    #[test]
    fn a_small_slice_tries_every_key_list_a_common_one_only_the_best() {
        // The story's scan with a range beside its sort: two key lists without status.
        let plan = fixture("story/before", 17);
        let mut access = crate::advise::access::accesses(&plan)
            .into_iter()
            .find(|a| a.table == "events")
            .unwrap();
        access.conditions.push(Condition {
            key: Key::Column("tenant_id".into()),
            uses: Use::Range,
            operand: Operand::Constant("5".into()),
            sql: "tenant_id > 5".into(),
        });
        let partials = |pending: f64| {
            let mut f = facts();
            let events = f.tables.iter_mut().find(|t| t.name == "events").unwrap();
            let status = events
                .columns
                .iter_mut()
                .find(|c| c.name == "status")
                .unwrap();
            let stats = status.stats.as_mut().unwrap();
            stats.most_common_freqs = vec![pending, 1.0 - pending - 0.1, 0.07, 0.03];
            let input = Input {
                query: 0,
                access: &access,
                table: f.table(Some("public"), "events").unwrap(),
                facts: &f,
            };
            propose(&input)
                .iter()
                .map(|c| c.definition())
                .collect::<Vec<_>>()
        };
        let small = partials(0.05);
        assert_eq!(
            small,
            [
                "ON public.events (created_at DESC) WHERE status = 'pending'::text",
                "ON public.events (tenant_id) WHERE status = 'pending'::text"
            ]
        );
        assert_eq!(partials(0.7), small[..1]);
    }
}
