//! Reads who holds the locks a statement may have waited for, after it gave up (lock_timeout),
//! for [`crate::compare::lock_timeout`]: the error PostgreSQL sends names neither.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::compare::lock_timeout::LockHolder;
use crate::sql::quote_ident_to_show;

const LOCK_HOLDERS_SQL: &str = include_str!("../../queries/lock_holders.sql");

/// Who holds the locks a statement on `tables` (or, with none, a workload query) may have
/// waited for: see `queries/lock_holders.sql`.
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
            // Shown to a person: a control character in a name is written as PostgreSQL's
            // Unicode escape, never raw.
            relation: format!(
                "{}.{}",
                quote_ident_to_show(r.get(0)),
                quote_ident_to_show(r.get(1))
            ),
            table_name: r.get(1),
            pid: r.get(2),
            mode: r.get(3),
            application_name: r
                .get::<_, Option<String>>(4)
                .map(|a| crate::format::printable(&a)),
            xact_age_seconds: r.get(5),
        })
        .collect())
}
