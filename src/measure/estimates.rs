//! Putting back, at the end of a run, the planner figures its builds changed in place: on 18,
//! with `pg_restore_relation_stats` in one committed transaction; before 18, by naming the
//! command that recounts them (the words are in [`crate::compare::estimates`]).

use crate::compare::estimates::{PutBack, put_back_note};
use crate::compare::{TableEstimate, estimate_changes};
use crate::db::connect::Connection;
use crate::db::explain;
use crate::db::session::Limits;

/// Compares the tables' figures now with `initial` (read before the first build) and puts back
/// what changed; one note per changed table, nothing when none changed.
pub async fn put_back(
    conn: &mut Connection,
    limits: &Limits,
    initial: &[TableEstimate],
) -> Vec<String> {
    if initial.is_empty() {
        return Vec::new();
    }
    let tables: Vec<String> = initial.iter().map(|t| t.table.clone()).collect();
    let now = match conn
        .read_only(limits, async |client| {
            explain::table_estimates(client, &tables).await
        })
        .await
    {
        Ok(now) => now,
        Err(e) => {
            return vec![format!(
                "the tables' planner figures could not be read again to put back what the run \
                 changed in place: {e}"
            )];
        }
    };
    let changes = estimate_changes(initial, &now);
    if changes.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for change in &changes {
        let outcome = if conn.facts.major() < 18 {
            PutBack::NoWayBefore18
        } else {
            let was = initial.iter().find(|t| t.table == change.table);
            let left = now.iter().find(|t| t.table == change.table);
            match (was, left) {
                (Some(was), Some(left)) => restore(conn, limits, was, left).await,
                _ => continue,
            }
        };
        notes.push(put_back_note(change, &outcome));
    }
    notes
}

/// Sets `was` back, in its own committed transaction, unless the figures are no longer those
/// pgplan's run left (`left`): then a VACUUM or ANALYZE ran meanwhile and its figures stand.
async fn restore(
    conn: &mut Connection,
    limits: &Limits,
    was: &TableEstimate,
    left: &TableEstimate,
) -> PutBack {
    let table = [was.table.clone()];
    let outcome = conn
        .committed(limits, async |client| {
            let current = explain::table_estimates(client, &table).await?;
            if current.first() != Some(left) {
                return Ok(PutBack::ChangedMeanwhile);
            }
            Ok(
                if crate::db::stats::restore_planner_figures(client, was).await? {
                    PutBack::Restored
                } else {
                    PutBack::Refused("the server refused a figure; see its WARNING".into())
                },
            )
        })
        .await;
    outcome.unwrap_or_else(|e| PutBack::Refused(e.to_string()))
}
