//! Reads what a `--drop-index` name resolves to, for [`crate::compare::drop_target`].

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::compare::drop_target::DropTarget;

const DROP_INDEX_TARGET_SQL: &str = include_str!("../../queries/drop_index_target.sql");

pub async fn drop_target(client: &Client, name: &str) -> Result<DropTarget, SessionError> {
    let rows = client
        .query_typed(DROP_INDEX_TARGET_SQL, &[(&name, Type::TEXT)])
        .await
        .map_err(|e| SessionError::from_pg(format!("looking up --drop-index {name}"), &e))?;
    // The query always returns its one row (LEFT JOINs from a one-row subquery).
    let Some(row) = rows.first() else {
        return Ok(DropTarget::default());
    };
    Ok(DropTarget {
        found: row.get(0),
        relkind: row.get(1),
        qualified: row.get(2),
        constraint_type: row.get(3),
        constraint_name: row.get(4),
    })
}
