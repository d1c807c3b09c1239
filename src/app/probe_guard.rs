//! The notes for the tables whose representative write `compare --workload --allow-writes`
//! does not run (user triggers, rules, publications), read before any work.

use anyhow::{Result, anyhow};

use crate::compare::workload::probe_guard::skipped_note;
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::db::write_probe::probe_blockers;
use crate::sql::IndexCandidate;

pub async fn skipped_notes(
    conn: &mut Connection,
    limits: &Limits,
    candidates: &[IndexCandidate],
) -> Result<Vec<String>> {
    let mut tables: Vec<&str> = candidates.iter().map(|c| c.table.as_str()).collect();
    tables.sort_unstable();
    tables.dedup();
    conn.read_only(limits, async |client| {
        let mut notes = Vec::new();
        for table in &tables {
            let blockers = probe_blockers(client, table).await?;
            notes.extend(skipped_note(table, &blockers));
        }
        Ok(notes)
    })
    .await
    .map_err(|e| anyhow!("{e}"))
}
