//! Rule: BRIN for a range condition on a column whose values follow the rows' physical order
//! (`pg_stats.correlation` near ±1) in a table that is only appended to: the index keeps one
//! summary per 128 pages, so it is a few pages where a btree would be thousands, and updates
//! or deletes that break the order would make every summary span everything.

use super::Input;
use crate::advise::access::{Key, Use};
use crate::advise::{Candidate, IndexKey, Kind, Method};

/// |correlation| at least this: the values in a block range stay within a narrow band.
pub const MIN_CORRELATION: f64 = 0.9;

/// BRIN pays on large tables only: on a small one a btree is small too.
pub const MIN_PAGES: f64 = 1000.0;

pub fn propose(input: &Input<'_>) -> Vec<Candidate> {
    let a = input.access;
    let t = input.table;
    let Some(evidence) = input.evidence() else {
        return Vec::new();
    };
    if t.pages < MIN_PAGES || t.append_only() == Some(false) {
        return Vec::new();
    }
    let mut out: Vec<Candidate> = Vec::new();
    for cond in a.conditions.iter().filter(|c| c.uses == Use::Range) {
        let Key::Column(name) = &cond.key else {
            continue;
        };
        let Some(corr) = t
            .column(name)
            .and_then(|c| c.stats.as_ref())
            .and_then(|s| s.correlation)
        else {
            continue;
        };
        if corr.abs() < MIN_CORRELATION || out.iter().any(|c| c.keys[0].key == cond.key) {
            continue;
        }
        let mut c = input.candidate(
            Method::Brin,
            vec![IndexKey::plain(cond.key.clone())],
            Kind::Brin,
        );
        let writes = match t.append_only() {
            Some(_) => "the table is only appended to",
            None => "no write counters to confirm the table is only appended to",
        };
        c.reasons.push(format!(
            "{evidence}: {name} follows the rows' physical order (correlation {corr:.2}) and {writes}, so a BRIN index of a few pages narrows the scan to the matching block ranges"
        ));
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::advise::testing::{definitions, facts, propose_for, propose_with};

    #[test]
    fn a_time_ordered_append_only_column() {
        for v in 13..=18 {
            let defs = definitions(&propose_for("advise/brin_time_range", v));
            assert!(
                defs.contains(&"ON public.logs USING brin (ts)".into()),
                "pg{v}: {defs:?}"
            );
            assert!(
                defs.contains(&"ON public.logs (ts)".into()),
                "pg{v}: {defs:?}"
            );
        }
    }

    #[test]
    fn not_on_a_table_that_is_updated() {
        let mut f = facts();
        let t = f.tables.iter_mut().find(|t| t.name == "logs").unwrap();
        t.updates = Some(t.inserts.unwrap());
        let defs = definitions(&propose_with("advise/brin_time_range", 17, &f));
        assert!(!defs.iter().any(|d| d.contains("brin")), "{defs:?}");
    }
}
