//! Rule: a B-tree with the equality columns first, then either the sort key (in the query's
//! direction) when a LIMIT ends the sort early, or the first range column. Equality columns
//! lead because every row the index walks then matches them; a range column ends the part of
//! the key the index can search by, so the sort key must come before it to serve the order.

use super::{Input, btree_key, equality_keys, in_list_keys, range_keys};
use crate::advise::access::Key;
use crate::advise::{Candidate, IndexKey, Kind, Method};

/// The most key columns advise proposes: past four, an index rarely serves more queries and
/// its writes and size keep growing.
pub const MAX_KEYS: usize = 4;

/// The key lists worth trying for the scan, best first, each with why; `exclude` leaves one
/// column out (the partial rule moves it into the predicate).
pub fn variants(input: &Input<'_>, exclude: Option<&Key>) -> Vec<(Vec<IndexKey>, String)> {
    let a = input.access;
    if input.evidence().is_none() {
        return Vec::new();
    }
    let keep = |k: &Key| Some(k) != exclude;
    let eq: Vec<_> = equality_keys(a)
        .into_iter()
        .filter(|c| keep(&c.key))
        .collect();
    let ins: Vec<_> = in_list_keys(a)
        .into_iter()
        .filter(|c| keep(&c.key))
        .collect();
    let ranges: Vec<_> = range_keys(a)
        .into_iter()
        .filter(|c| keep(&c.key) && !eq.iter().any(|e| e.key == c.key))
        .collect();
    let mut lead: Vec<IndexKey> = eq.iter().map(|c| btree_key(c, input.table)).collect();
    lead.extend(ins.iter().map(|c| btree_key(c, input.table)));
    let lead_names: Vec<String> = lead.iter().map(|k| k.key.definition()).collect();
    let excluded_key = |k: &Key| exclude == Some(k);

    let mut out: Vec<(Vec<IndexKey>, String)> = Vec::new();
    // The sort key after the equalities: only without in-lists (an `= ANY` key returns its
    // values one after another, not in the sort's order) and only when a LIMIT stops early.
    if let Some(order) = &input.order()
        && order.limit_rows.is_some()
        && ins.is_empty()
    {
        let sort: Vec<IndexKey> = order
            .keys
            .iter()
            .filter(|k| !eq.iter().any(|e| e.key == k.key) && !excluded_key(&k.key))
            .map(|k| IndexKey {
                key: k.key.clone(),
                opclass: None,
                descending: k.descending,
                nulls_first: k.nulls_first,
            })
            .collect();
        if !sort.is_empty() {
            let names: Vec<String> = sort
                .iter()
                .map(|k| {
                    let dir = if k.descending { " DESC" } else { "" };
                    format!("{}{dir}", k.key.definition())
                })
                .collect();
            let mut keys = lead.clone();
            keys.extend(sort);
            let why = if lead_names.is_empty() {
                format!(
                    "the index returns rows in the order of {} so the LIMIT stops the scan early",
                    names.join(", ")
                )
            } else {
                format!(
                    "equality on {} first, then {} so the index returns rows in the sort's order and the LIMIT stops the scan early",
                    lead_names.join(", "),
                    names.join(", ")
                )
            };
            out.push((keys, why));
        }
    }
    if let Some(range) = ranges.first() {
        let served_by_order = out
            .first()
            .is_some_and(|(keys, _)| keys.get(lead.len()).is_some_and(|k| k.key == range.key));
        if !served_by_order {
            let mut keys = lead.clone();
            keys.push(btree_key(range, input.table));
            let why = if lead_names.is_empty() {
                format!("the range on {}", range.key.definition())
            } else {
                format!(
                    "equality on {} first, then the range on {}",
                    lead_names.join(", "),
                    range.key.definition()
                )
            };
            out.push((keys, why));
        }
    }
    if out.is_empty() && !lead.is_empty() {
        out.push((lead, format!("equality on {}", lead_names.join(", "))));
    }
    for (keys, _) in &mut out {
        keys.truncate(MAX_KEYS);
    }
    out
}

pub fn propose(input: &Input<'_>) -> Vec<Candidate> {
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    variants(input, None)
        .into_iter()
        .map(|(keys, why)| {
            let kind = if keys.iter().any(|k| matches!(k.key, Key::Expression { .. })) {
                Kind::Expression
            } else {
                Kind::Btree
            };
            let mut c = input.candidate(Method::Btree, keys, kind);
            c.reasons.push(format!("{evidence}: {why}"));
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, facts, propose_for, propose_with};

    #[test]
    fn equality_before_the_sort_key_and_its_direction() {
        for v in 13..=18 {
            let p = propose_for("advise/composite_eq_sort", v);
            assert!(
                definitions(&p).contains(&"ON public.tickets (account_id, created_at DESC)".into()),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }

    #[test]
    fn equality_before_the_range() {
        for v in 13..=18 {
            let p = propose_for("advise/composite_eq_range", v);
            assert!(
                definitions(&p).contains(&"ON public.tickets (account_id, created_at)".into()),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }

    #[test]
    fn parameters_of_a_generic_plan_are_equalities_too() {
        // pg_stat_statements' `$1`: no value, so no partial index, but the key order stands.
        for v in 16..=18 {
            let p = propose_for("advise/generic_parameter", v);
            let defs = definitions(&p);
            assert!(
                defs.contains(&"ON public.tickets (account_id, state, created_at DESC)".into()),
                "pg{v}: {defs:?}"
            );
            assert!(p.candidates.iter().all(|c| c.predicate.is_none()), "pg{v}");
            assert!(
                p.candidates[0].reasons[0].contains("for the 20 its LIMIT returned"),
                "{:?}",
                p.candidates[0].reasons
            );
        }
    }

    #[test]
    fn an_expression_key() {
        for v in 13..=18 {
            let p = propose_for("advise/expression_lower", v);
            let c = p
                .candidates
                .iter()
                .find(|c| c.definition() == "ON public.users ((lower(email)))")
                .unwrap_or_else(|| panic!("pg{v}: {:?}", definitions(&p)));
            assert_eq!(c.kinds, [crate::advise::Kind::Expression]);
            // PostgreSQL names an expression column after its function (FigureIndexColname).
            assert_eq!(c.name, "users_lower_idx");
        }
    }

    #[test]
    fn a_prefix_like_under_the_c_collation_is_a_plain_btree() {
        for v in 13..=18 {
            let p = propose_for("advise/prefix_like", v);
            assert_eq!(
                definitions(&p),
                [
                    "ON public.users (name)",
                    "ON public.users (name) INCLUDE (id)"
                ],
                "pg{v}"
            );
        }
    }

    #[test]
    fn a_prefix_like_under_a_linguistic_collation_needs_text_pattern_ops() {
        let mut f = facts();
        let users = f.tables.iter_mut().find(|t| t.name == "users").unwrap();
        for c in &mut users.columns {
            c.default_collation = Some("en_US.utf8".into());
        }
        let p = propose_with("advise/prefix_like", 16, &f);
        assert_eq!(
            definitions(&p)[0],
            "ON public.users (name text_pattern_ops)",
            "{:?}",
            definitions(&p)
        );
    }

    #[test]
    fn a_query_that_reads_the_whole_table_gets_nothing() {
        for v in 13..=18 {
            let p = propose_for("advise/no_index_helps", v);
            assert!(p.candidates.is_empty(), "pg{v}: {:?}", definitions(&p));
            assert_eq!(p.notes.len(), 1, "pg{v}");
            assert!(p.notes[0].message.starts_with("no index proposed"));
        }
    }

    #[test]
    fn equality_then_the_sort_key_on_another_table() {
        // customers: country = 'nl' ORDER BY name LIMIT.
        for v in 17..=18 {
            let p = propose_for("plans/serialize_memory", v);
            assert!(
                definitions(&p).contains(&"ON public.customers (country, name)".into()),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }

    #[test]
    fn an_index_scan_that_gives_the_order_and_filters_the_rest() {
        // orders: customer_id = 11 ORDER BY id LIMIT, walked along orders_pkey while the
        // filter throws rows away; (customer_id) alone is orders_customer_id_idx.
        for v in 13..=18 {
            let p = propose_for("plans/psql_paste", v);
            assert!(
                definitions(&p).contains(&"ON public.orders (customer_id, id)".into()),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }
}
