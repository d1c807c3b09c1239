//! The reads `pgplan check` makes besides the workload engine's: the settings that change plans.

use std::collections::BTreeMap;

use tokio_postgres::Client;

use super::session::SessionError;

const PLANNER_SETTINGS_SQL: &str = include_str!("../../queries/check_planner_settings.sql");

/// The plan-changing settings as the server reports them, by name.
pub async fn planner_settings(client: &Client) -> Result<BTreeMap<String, String>, SessionError> {
    let rows = client
        .query(PLANNER_SETTINGS_SQL, &[])
        .await
        .map_err(|e| SessionError::from_pg("reading the planner's settings", &e))?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect())
}
