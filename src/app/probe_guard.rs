//! The tables whose representative write `compare --workload --allow-writes` and `advise
//! --allow-writes` do not run (user triggers, rules, publications) or run because the user
//! accepted them by name (`--allow-probe-triggers`), read before any work, and the notes that
//! say so.

use anyhow::{Result, anyhow, bail};

use crate::compare::workload::probe_guard::{
    ACCEPT_FLAG, Accepted, acceptance_warnings, accepted_note, skipped_note,
};
use crate::db::connect::Connection;
use crate::db::session::Limits;
use crate::db::workload::relation_name;
use crate::db::write_probe::probe_blockers;
use crate::format::printable;
use crate::sql::IndexCandidate;

/// Each table of `--allow-probe-triggers` as the catalog names it (resolved as regclass input
/// is, through the search_path), with what its probe fires. A name that resolves to no table
/// is an error: before any work, since the user meant a table that is not there.
pub async fn resolve_accepted(
    conn: &mut Connection,
    limits: &Limits,
    names: &[String],
) -> Result<Vec<Accepted>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let found = conn
        .read_only(limits, async |client| {
            let mut found = Vec::new();
            for name in names {
                let table = relation_name(client, name).await?;
                let blockers = match &table {
                    Some(t) => probe_blockers(client, t).await?,
                    None => Vec::new(),
                };
                found.push((name.clone(), table, blockers));
            }
            Ok(found)
        })
        .await
        .map_err(|e| anyhow!("resolving {ACCEPT_FLAG}: {e}"))?;
    let mut accepted = Vec::new();
    for (written, table, blockers) in found {
        let Some(table) = table else {
            bail!(
                "{ACCEPT_FLAG} {}: no table of that name on {} (the name is read as \
                 PostgreSQL reads a table name: unquoted it is lowercased, and without a schema \
                 it is looked up on the search_path)",
                printable(&written),
                printable(&conn.target)
            );
        };
        accepted.push(Accepted {
            written,
            table,
            blockers,
        });
    }
    Ok(accepted)
}

/// The notes for the representative writes on the candidates' tables: each table whose write
/// is not run and why (with the flag that accepts it), each accepted one with what it fires,
/// and each acceptance that changes nothing.
pub async fn probe_notes(
    conn: &mut Connection,
    limits: &Limits,
    candidates: &[IndexCandidate],
    accepted: &[Accepted],
) -> Result<Vec<String>> {
    let mut tables: Vec<&str> = candidates.iter().map(|c| c.table.as_str()).collect();
    tables.sort_unstable();
    tables.dedup();
    let read = conn
        .read_only(limits, async |client| {
            let mut read = Vec::new();
            for table in &tables {
                let resolved = relation_name(client, table).await?;
                let blockers = match &resolved {
                    Some(t) => probe_blockers(client, t).await?,
                    None => Vec::new(),
                };
                read.push((table.to_string(), resolved, blockers));
            }
            Ok(read)
        })
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let mut notes = Vec::new();
    let mut probed = Vec::new();
    for (table, resolved, blockers) in read {
        let Some(resolved) = resolved else { continue };
        match accepted.iter().find(|a| a.table == resolved) {
            Some(a) => notes.extend(accepted_note(a)),
            None => notes.extend(skipped_note(&table, &blockers)),
        }
        probed.push(resolved);
    }
    notes.extend(acceptance_warnings(accepted, &probed));
    Ok(notes)
}
