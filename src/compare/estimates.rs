//! The planner figures a build changes in place, and what that does to other clients' plans.
//!
//! `CREATE INDEX` updates the table's `pg_class` row in place (`index_update_stats` in
//! PostgreSQL's `index.c`): `relpages` and `reltuples` from the heap it scanned, and
//! `relallvisible` recounted from the visibility map, which after updates is often far below the
//! figure the last VACUUM left. An in-place update is not undone by ROLLBACK (seen on 13 to 17;
//! 18.4 left the figures alone for a rolled-back build), so every planner reads the new figures
//! until the next VACUUM or ANALYZE. `relallvisible` matters most: the planner costs an
//! index-only scan by the fraction of pages it believes all-visible, so a lower figure can move
//! other clients' Index Only Scans to Index or Bitmap Heap Scans.

use serde::Serialize;

/// A table's planner figures as `pg_class` holds them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableEstimate {
    /// schema.table, quoted as needed.
    pub table: String,
    pub relpages: f64,
    pub reltuples: f64,
    pub relallvisible: f64,
    /// The unquoted schema and table name, as `pg_restore_relation_stats` takes them.
    #[serde(skip)]
    pub schema_name: String,
    #[serde(skip)]
    pub table_name: String,
}

/// A table whose planner figures changed while pgplan measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimateChange {
    pub table: String,
    pub relpages: Pair2,
    pub reltuples: Pair2,
    /// Pages the planner believes all-visible (`pg_class.relallvisible`).
    pub relallvisible: Pair2,
}

/// A before/after pair for a changed estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pair2 {
    pub before: f64,
    pub after: f64,
}

impl Pair2 {
    fn changed(self) -> bool {
        self.before != self.after
    }
}

impl EstimateChange {
    /// "relpages 109 → 119, reltuples 10000 → 10000, relallvisible 109 → 0 (...)": the figures,
    /// and what a lost all-visible count does to index-only scans when it was lost.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "relpages {} → {}, reltuples {} → {}",
            self.relpages.before, self.relpages.after, self.reltuples.before, self.reltuples.after
        );
        if self.relallvisible.changed() {
            text.push_str(&format!(
                ", relallvisible {} → {}",
                self.relallvisible.before, self.relallvisible.after
            ));
            if self.relallvisible.after < self.relallvisible.before {
                text.push_str(
                    " (the planner now believes fewer pages all-visible, so index-only scans \
                     on it look dearer to every client, whose plans may move to Index or Bitmap \
                     Heap Scans)",
                );
            }
        }
        text
    }
}

/// The tables whose figures differ between two readings.
pub fn estimate_changes(before: &[TableEstimate], after: &[TableEstimate]) -> Vec<EstimateChange> {
    before
        .iter()
        .filter_map(|b| {
            let a = after.iter().find(|a| a.table == b.table)?;
            let pair = |before: f64, after: f64| Pair2 { before, after };
            let change = EstimateChange {
                table: b.table.clone(),
                relpages: pair(b.relpages, a.relpages),
                reltuples: pair(b.reltuples, a.reltuples),
                relallvisible: pair(b.relallvisible, a.relallvisible),
            };
            (change.relpages.changed()
                || change.reltuples.changed()
                || change.relallvisible.changed())
            .then_some(change)
        })
        .collect()
}

/// What became of one table's changed figures at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum PutBack {
    /// `pg_restore_relation_stats` set them back to what they were before the run (18+).
    Restored,
    /// They changed again after pgplan's last build (autovacuum or someone's ANALYZE ran): the
    /// newer figures are the server's own and are left as they are.
    ChangedMeanwhile,
    /// The server refused (the role lacks MAINTAIN on the table, say): why.
    Refused(String),
    /// PostgreSQL before 18 has no function that sets them.
    NoWayBefore18,
}

/// The report's line for a table whose figures pgplan changed, and what became of them.
pub fn put_back_note(change: &EstimateChange, outcome: &PutBack) -> String {
    let table = &change.table;
    let undo = format!(
        "VACUUM {table} recounts them (relallvisible from the visibility map), as the table's \
         next VACUUM or autovacuum will"
    );
    match outcome {
        PutBack::Restored => format!(
            "the planner figures of {table} that the run changed in place were put back with \
             pg_restore_relation_stats, in a transaction of their own that was committed \
             ({})",
            reversed(change).describe()
        ),
        PutBack::ChangedMeanwhile => format!(
            "the planner figures of {table} changed again after pgplan's last build (a VACUUM or \
             ANALYZE ran meanwhile), so they were left as the server set them"
        ),
        PutBack::Refused(why) => format!(
            "the planner figures of {table} stay as the run left them: putting them back was \
             refused ({why}); {undo}"
        ),
        PutBack::NoWayBefore18 => format!(
            "the planner figures of {table} stay as the run left them: PostgreSQL before 18 has \
             no way to set them back; {undo}"
        ),
    }
}

fn reversed(change: &EstimateChange) -> EstimateChange {
    let flip = |p: Pair2| Pair2 {
        before: p.after,
        after: p.before,
    };
    EstimateChange {
        table: change.table.clone(),
        relpages: flip(change.relpages),
        reltuples: flip(change.reltuples),
        relallvisible: flip(change.relallvisible),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pages: f64, tuples: f64, all_visible: f64) -> TableEstimate {
        TableEstimate {
            table: "public.events".into(),
            relpages: pages,
            reltuples: tuples,
            relallvisible: all_visible,
            schema_name: "public".into(),
            table_name: "events".into(),
        }
    }

    #[test]
    fn estimate_changes_are_detected() {
        assert!(estimate_changes(&[t(10.0, 100.0, 10.0)], &[t(10.0, 100.0, 10.0)]).is_empty());
        let changes = estimate_changes(&[t(0.0, -1.0, 0.0)], &[t(10.0, 100.0, 0.0)]);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].reltuples.after, 100.0);
        let text = changes[0].describe();
        assert_eq!(text, "relpages 0 → 10, reltuples -1 → 100");
    }

    /// 1870 → 0 was seen after a rolled-back build on 15: the change alone is a change, and its
    /// consequence for index-only scans is named.
    #[test]
    fn a_lost_all_visible_count_is_named_with_its_consequence() {
        let changes = estimate_changes(&[t(1870.0, 1e5, 1870.0)], &[t(1870.0, 1e5, 0.0)]);
        assert_eq!(changes.len(), 1);
        let text = changes[0].describe();
        assert!(text.contains("relallvisible 1870 → 0"), "{text}");
        assert!(text.contains("index-only scans"), "{text}");
        // A count that grew (VACUUM ran meanwhile) is a figure, not a warning about plans.
        let grew = estimate_changes(&[t(10.0, 1.0, 0.0)], &[t(10.0, 1.0, 10.0)]);
        assert!(!grew[0].describe().contains("index-only"), "{:?}", grew);
    }

    #[test]
    fn what_became_of_the_figures_is_said_with_the_way_back() {
        let change = &estimate_changes(&[t(109.0, 1e4, 109.0)], &[t(119.0, 1e4, 0.0)])[0];
        let restored = put_back_note(change, &PutBack::Restored);
        assert!(restored.contains("relpages 119 → 109"), "{restored}");
        assert!(restored.contains("relallvisible 0 → 109"), "{restored}");
        assert!(restored.contains("committed"), "{restored}");
        let before_18 = put_back_note(change, &PutBack::NoWayBefore18);
        assert!(before_18.contains("before 18 has no way"), "{before_18}");
        assert!(before_18.contains("VACUUM public.events"), "{before_18}");
        let refused = put_back_note(change, &PutBack::Refused("permission denied".into()));
        assert!(refused.contains("refused (permission denied)"), "{refused}");
        assert!(refused.contains("VACUUM public.events"), "{refused}");
        let meanwhile = put_back_note(change, &PutBack::ChangedMeanwhile);
        assert!(
            meanwhile.contains("left as the server set them"),
            "{meanwhile}"
        );
    }
}
