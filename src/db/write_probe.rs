//! Reads what would make the workload's representative write do more than write a row (user
//! triggers, rules, publications), for [`crate::compare::workload::probe_guard`].

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::compare::workload::probe_guard::Blocker;

const WRITE_PROBE_BLOCKERS_SQL: &str = include_str!("../../queries/write_probe_blockers.sql");

pub async fn probe_blockers(client: &Client, table: &str) -> Result<Vec<Blocker>, SessionError> {
    let rows = client
        .query_typed(WRITE_PROBE_BLOCKERS_SQL, &[(&table, Type::TEXT)])
        .await
        .map_err(|e| SessionError::from_pg(format!("reading the triggers of {table}"), &e))?;
    Ok(rows
        .iter()
        .map(|r| Blocker {
            kind: r.get(0),
            name: r.get(1),
        })
        .collect())
}
