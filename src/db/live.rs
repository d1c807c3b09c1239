//! The catalog and session reads of `explain -d`: the statistics of the tables a plan's findings
//! are about, their extended statistics, and the memory settings the query ran with.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::explain::{ExtendedStatistics, SessionMemory, TableStatistics};

const TABLE_STATS_SQL: &str = include_str!("../../queries/live_table_stats.sql");
const EXTENDED_STATS_SQL: &str = include_str!("../../queries/live_extended_stats.sql");
const SESSION_SETTINGS_SQL: &str = include_str!("../../queries/live_session_settings.sql");

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> SessionError + '_ {
    move |e| SessionError::from_pg(context, &e)
}

/// Statistics of the named tables (regclass input); names that do not resolve are left out.
pub async fn table_statistics(
    client: &Client,
    tables: &[String],
) -> Result<Vec<TableStatistics>, SessionError> {
    let rows = client
        .query_typed(TABLE_STATS_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(err("reading the tables' statistics"))?;
    Ok(rows
        .iter()
        .map(|r| TableStatistics {
            table: r.get("name"),
            reltuples: r.get("reltuples"),
            relpages: r.get("relpages"),
            relallvisible: r.get("relallvisible"),
            n_live_tup: r.get("n_live_tup"),
            n_mod_since_analyze: r.get("n_mod_since_analyze"),
            analyze_threshold: r.get("analyze_threshold"),
            analyze_scale_factor: r.get("analyze_scale_factor"),
            last_analyze_age_seconds: r.get("last_analyze_age_seconds"),
            last_analyze_auto: r.get("last_analyze_auto"),
            last_vacuum_age_seconds: r.get("last_vacuum_age_seconds"),
            last_vacuum_auto: r.get("last_vacuum_auto"),
        })
        .collect())
}

/// The extended statistics objects on the named tables.
pub async fn extended_statistics(
    client: &Client,
    tables: &[String],
) -> Result<Vec<ExtendedStatistics>, SessionError> {
    let rows = client
        .query_typed(EXTENDED_STATS_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(err("reading the tables' extended statistics"))?;
    Ok(rows
        .iter()
        .map(|r| ExtendedStatistics {
            table: r.get("table_name"),
            name: r.get("name"),
            kinds: r.get("kinds"),
            columns: r.get("columns"),
        })
        .collect())
}

/// `work_mem` (kB) and `hash_mem_multiplier` as the current transaction sees them.
pub async fn session_memory(client: &Client) -> Result<SessionMemory, SessionError> {
    let row = client
        .query_typed(SESSION_SETTINGS_SQL, &[])
        .await
        .map_err(err("reading work_mem and hash_mem_multiplier"))?
        .into_iter()
        .next()
        .ok_or_else(|| SessionError {
            context: "reading work_mem and hash_mem_multiplier".into(),
            message: "the server returned no row".into(),
            sqlstate: None,
        })?;
    Ok(SessionMemory {
        work_mem_kb: row.get("work_mem_kb"),
        hash_mem_multiplier: row.get("hash_mem_multiplier"),
    })
}
