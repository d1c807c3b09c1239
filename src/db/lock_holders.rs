//! Reads who holds the locks a statement may have waited for, after it gave up (lock_timeout),
//! for [`crate::compare::lock_timeout`]: the error PostgreSQL sends names neither.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::compare::lock_timeout::LockHolder;

const LOCK_HOLDERS_SQL: &str = include_str!("../../queries/lock_holders.sql");

pub async fn lock_holders(
    client: &Client,
    tables: &[String],
) -> Result<Vec<LockHolder>, SessionError> {
    let rows = client
        .query_typed(LOCK_HOLDERS_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("reading who holds the locks", &e))?;
    Ok(rows
        .iter()
        .map(|r| LockHolder {
            relation: r.get(0),
            pid: r.get(1),
            mode: r.get(2),
            application_name: r.get(3),
            xact_age_seconds: r.get(4),
        })
        .collect())
}
