//! The catalog side of judging a query's calls: the `pg_proc` rows of the functions its plan
//! names (the rules are in [`crate::effects`]).

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::effects::FunctionRow;

const FUNCTION_EFFECTS_SQL: &str = include_str!("../../queries/function_effects.sql");

/// The `pg_proc` rows of every function with one of these names, in any schema.
pub async fn function_rows(
    client: &Client,
    names: &[String],
) -> Result<Vec<FunctionRow>, SessionError> {
    let rows = client
        .query_typed(FUNCTION_EFFECTS_SQL, &[(&names, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("looking up the functions the query calls", &e))?;
    Ok(rows
        .iter()
        .map(|r| FunctionRow {
            schema: r.get(0),
            name: r.get(1),
            volatility: r.get::<_, String>(2).chars().next().unwrap_or('v'),
            extension: r.get(3),
            visible: r.get(4),
        })
        .collect())
}
