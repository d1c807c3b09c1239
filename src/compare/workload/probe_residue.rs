//! What pgplan's representative writes leave on a table although they are rolled back: the
//! rows they count in the table's cumulative statistics (`n_tup_ins`, `n_tup_del`, and the dead
//! rows of `n_dead_tup`, which PostgreSQL counts for aborted writes too), and the pages a
//! re-inserted row may add at the table's end (a relation is never shrunk by a rollback; the
//! next VACUUM truncates the empty pages). The counters feed the write rates of later runs, so
//! pgplan's own earlier runs would change its advice: as a superuser it turns `track_counts`
//! off for the write itself (the savepoint's rollback turns it on again); otherwise it names
//! what stays.

/// One table's residue over a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Residue {
    /// schema.table, as the catalog names it.
    pub table: String,
    /// Rows inserted and deleted that the statistics counters kept (each run of the write
    /// deletes one row and inserts it again).
    pub rows_counted: f64,
    /// Pages the table grew by between the first read and the last, in 8 kB blocks.
    pub pages_added: f64,
}

/// Each probed table's residue: the rows its probes' counters kept (`counted`, one entry per
/// probe, by table) and the pages it grew by between the two size readings.
pub fn residues(
    pages_before: &[(String, Option<f64>)],
    pages_after: &[(String, Option<f64>)],
    counted: &[(String, f64)],
) -> Vec<Residue> {
    pages_before
        .iter()
        .map(|(table, before)| {
            let after = pages_after
                .iter()
                .find(|(t, _)| t == table)
                .and_then(|(_, p)| *p);
            Residue {
                table: table.clone(),
                rows_counted: counted
                    .iter()
                    .filter(|(t, _)| t == table)
                    .map(|(_, n)| n)
                    .sum(),
                pages_added: match (before, after) {
                    (Some(b), Some(a)) if a > *b => a - b,
                    _ => 0.0,
                },
            }
        })
        .collect()
}

/// Adds `more` (another measuring pass's residues) to `all`, table by table.
pub fn merge(all: &mut Vec<Residue>, more: &[Residue]) {
    for m in more {
        match all.iter_mut().find(|r| r.table == m.table) {
            Some(r) => {
                r.rows_counted += m.rows_counted;
                r.pages_added += m.pages_added;
            }
            None => all.push(m.clone()),
        }
    }
}

/// The report's lines for what the representative writes left, one per table with any.
pub fn residue_notes(residues: &[Residue]) -> Vec<String> {
    residues
        .iter()
        .filter_map(|r| {
            let mut parts = Vec::new();
            if r.rows_counted > 0.0 {
                parts.push(format!(
                    "count {n} inserted and {n} deleted rows in its statistics counters \
                     (n_tup_ins, n_tup_del, and as many dead rows in n_dead_tup until VACUUM), \
                     which no rollback undoes and which the write rates of later runs include \
                     (a superuser's runs keep them out: pgplan then sets track_counts off for \
                     the write)",
                    n = r.rows_counted / 2.0
                ));
            }
            if r.pages_added > 0.0 {
                parts.push(format!(
                    "grew it by {} page(s) at its end, which a rollback does not shrink: the \
                     next VACUUM of {} truncates them",
                    r.pages_added, r.table
                ));
            }
            (!parts.is_empty()).then(|| {
                format!(
                    "the representative writes on {} {}",
                    r.table,
                    parts.join("; they also ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residues_add_up_per_table_and_across_passes() {
        let t = |n: &str| n.to_owned();
        let found = residues(
            &[(t("public.a"), Some(10.0)), (t("public.b"), Some(5.0))],
            &[(t("public.a"), Some(11.0)), (t("public.b"), Some(5.0))],
            &[
                (t("public.a"), 6.0),
                (t("public.a"), 6.0),
                (t("public.b"), 0.0),
            ],
        );
        assert_eq!(found[0].rows_counted, 12.0);
        assert_eq!(found[0].pages_added, 1.0);
        assert_eq!(found[1].rows_counted + found[1].pages_added, 0.0);
        let mut all = found.clone();
        merge(&mut all, &found);
        assert_eq!(
            (all.len(), all[0].rows_counted, all[0].pages_added),
            (2, 24.0, 2.0)
        );
    }

    #[test]
    fn counted_rows_and_added_pages_are_named_with_what_undoes_them() {
        let quiet = Residue {
            table: "public.t".into(),
            ..Default::default()
        };
        assert!(residue_notes(&[quiet]).is_empty());
        let notes = residue_notes(&[Residue {
            table: "public.t".into(),
            rows_counted: 12.0,
            pages_added: 1.0,
        }]);
        assert_eq!(notes.len(), 1);
        let note = &notes[0];
        assert!(
            note.starts_with(
                "the representative writes on public.t count 6 inserted and 6 deleted rows"
            ),
            "{note}"
        );
        assert!(note.contains("write rates of later runs"), "{note}");
        assert!(note.contains("they also grew it by 1 page(s)"), "{note}");
        assert!(note.contains("next VACUUM of public.t truncates"), "{note}");
        let pages_only = residue_notes(&[Residue {
            table: "public.t".into(),
            rows_counted: 0.0,
            pages_added: 2.0,
        }]);
        assert!(
            pages_only[0].starts_with("the representative writes on public.t grew it by 2"),
            "{}",
            pages_only[0]
        );
    }
}
