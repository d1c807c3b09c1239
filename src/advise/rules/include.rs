//! Rule: INCLUDE columns, so that an index-only scan answers the query without visiting the
//! heap. Only when the visibility map lets it: an index-only scan still reads the heap page of
//! every row on a page not marked all-visible, which would make the wider index pay for
//! nothing.

use super::{Input, btree};
use crate::advise::access::Key;
use crate::advise::{Candidate, Kind, Method, Note};

/// At most this many INCLUDE columns: wider, and the index approaches a copy of the table.
pub const MAX_INCLUDE: usize = 3;

/// The share of all-visible pages an index-only scan needs to avoid most heap visits.
pub const MIN_ALL_VISIBLE: f64 = 0.9;

/// An index-only scan saves a heap visit per row: below this many rows it saves little.
pub const MIN_ROWS: f64 = 10.0;

pub fn propose(input: &Input<'_>, notes: &mut Vec<Note>) -> Vec<Candidate> {
    let a = input.access;
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    if a.output_has_expressions || input.outputs_whole_row() {
        return Vec::new();
    }
    if a.rows_returned.or(a.plan_rows).unwrap_or(0.0) < MIN_ROWS {
        return Vec::new();
    }
    let Some((keys, why)) = btree::variants(input, None).into_iter().next() else {
        return Vec::new();
    };
    // Only plain key columns give their value back; an expression key does not return the
    // column it is computed from.
    let in_keys: Vec<&str> = keys.iter().filter_map(|k| k.key.column()).collect();
    let extra: Vec<String> = a
        .needed_columns()
        .into_iter()
        .filter(|c| !in_keys.contains(&c.as_str()))
        .collect();
    if extra.is_empty()
        || extra.len() > MAX_INCLUDE
        || !extra.iter().all(|c| input.table.column(c).is_some())
    {
        return Vec::new();
    }
    let Some(visible) = input.table.all_visible_share() else {
        return Vec::new();
    };
    if visible < MIN_ALL_VISIBLE {
        notes.push(input.note(format!(
            "an index-only scan with INCLUDE ({}) would still visit the heap: only {:.0}% of the pages of {} are all-visible; VACUUM it, then advise again",
            extra.join(", "),
            visible * 100.0,
            input.table.name
        )));
        return Vec::new();
    }
    let names: Vec<String> = extra
        .iter()
        .map(|c| Key::Column(c.clone()).definition())
        .collect();
    let mut c = input.candidate(Method::Btree, keys, Kind::Include);
    c.include = extra;
    c.reasons.push(format!(
        "{evidence}: {why}, with INCLUDE ({}) so an index-only scan answers it ({:.0}% of pages all-visible)",
        names.join(", "),
        visible * 100.0
    ));
    vec![c]
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, facts, propose_for, propose_with};

    #[test]
    fn include_the_columns_the_query_returns() {
        for v in 13..=18 {
            let p = propose_for("advise/composite_eq_sort", v);
            assert!(
                definitions(&p).contains(
                    &"ON public.tickets (account_id, created_at DESC) INCLUDE (id)".into()
                ),
                "pg{v}: {:?}",
                definitions(&p)
            );
        }
    }

    #[test]
    fn not_when_the_visibility_map_is_stale() {
        let mut f = facts();
        let t = f.tables.iter_mut().find(|t| t.name == "tickets").unwrap();
        t.all_visible_pages = t.pages * 0.5;
        let p = propose_with("advise/composite_eq_sort", 17, &f);
        assert!(p.candidates.iter().all(|c| c.include.is_empty()));
        assert!(
            p.notes.iter().any(|n| n
                .message
                .contains("only 50% of the pages of tickets are all-visible")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn not_for_a_whole_row() {
        for v in 13..=18 {
            let p = propose_for("advise/join_key", v);
            assert!(p.candidates.iter().all(|c| c.include.is_empty()), "pg{v}");
        }
    }
}
