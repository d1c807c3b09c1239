//! Rule: a trigram GIN index (pg_trgm's `gin_trgm_ops`) for `LIKE '%x%'`, `ILIKE` and regular
//! expressions, which no btree answers. Only with pg_trgm installed in the database: advise
//! never proposes an index whose CREATE would fail, and says what to install instead.

use super::Input;
use crate::advise::access::{Operand, Use};
use crate::advise::{Candidate, IndexKey, Kind, Method, Note};

/// pg_trgm extracts trigrams from the pattern's fixed parts; a pattern without three fixed
/// characters in a row gives it nothing to search by and the index is read whole.
pub const MIN_FIXED_RUN: usize = 3;

fn longest_fixed_run(pattern: &str) -> usize {
    pattern
        .split(['%', '_'])
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
}

pub fn propose(input: &Input<'_>, notes: &mut Vec<Note>) -> Vec<Candidate> {
    let a = input.access;
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    let mut out: Vec<Candidate> = Vec::new();
    for cond in a.conditions.iter().filter(|c| c.uses == Use::Substring) {
        let text_column = cond
            .key
            .column()
            .and_then(|c| input.table.column(c))
            .is_some_and(|c| c.is_text());
        if !text_column {
            continue;
        }
        if let Operand::Constant(p) = &cond.operand
            && longest_fixed_run(p) < MIN_FIXED_RUN
        {
            notes.push(input.note(format!(
                "no trigram index proposed for {}: the pattern has no {MIN_FIXED_RUN} fixed characters in a row to search by",
                cond.sql
            )));
            continue;
        }
        if !input.facts.has_extension("pg_trgm") {
            notes.push(input.note(format!(
                "{} needs a trigram index, and pg_trgm is not installed: CREATE EXTENSION pg_trgm, then advise again",
                cond.sql
            )));
            continue;
        }
        let key = IndexKey {
            opclass: Some("gin_trgm_ops".into()),
            ..IndexKey::plain(cond.key.clone())
        };
        if out.iter().any(|c| c.keys[0] == key) {
            continue;
        }
        let mut c = input.candidate(Method::Gin, vec![key], Kind::Trigram);
        c.reasons.push(format!(
            "{evidence}: {} searches inside the text, which pg_trgm's GIN operator class answers",
            cond.sql
        ));
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, facts, propose_for, propose_with};

    #[test]
    fn substring_search_with_pg_trgm() {
        for v in 13..=18 {
            let p = propose_for("advise/trigram_substring", v);
            assert_eq!(
                definitions(&p),
                ["ON public.docs USING gin (title gin_trgm_ops)"],
                "pg{v}"
            );
        }
    }

    #[test]
    fn without_pg_trgm_a_note_says_what_to_install() {
        let mut f = facts();
        f.extensions.clear();
        let p = propose_with("advise/trigram_substring", 16, &f);
        assert!(p.candidates.is_empty());
        assert!(
            p.notes[0].message.contains("CREATE EXTENSION pg_trgm"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn a_pattern_with_too_few_fixed_characters() {
        // customers.name LIKE '%77': two fixed characters.
        let p = propose_for("plans/disabled_node", 17);
        assert!(p.candidates.is_empty(), "{:?}", definitions(&p));
        assert!(
            p.notes[0].message.contains("no 3 fixed characters"),
            "{:?}",
            p.notes
        );
    }
}
