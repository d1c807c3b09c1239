//! The catalog side of what outlives pgplan's rollback: the `pg_proc` rows of the functions a
//! query names and of those the user's functions call in turn, and the statistics counters ANALYZE moves (the rules and words are in
//! [`crate::effects`]).

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::effects::{AnalyzeCounters, Call, FiredTrigger, FunctionRow, reach};

const FUNCTION_BODIES_SQL: &str = include_str!("../../queries/function_bodies.sql");
const ANALYZE_COUNTERS_SQL: &str = include_str!("../../queries/analyze_counters.sql");
const SEQUENCE_VALUES_SQL: &str = include_str!("../../queries/sequence_values.sql");

/// Every readable sequence's last value (see `queries/sequence_values.sql`).
pub async fn sequence_values(
    client: &Client,
) -> Result<Vec<crate::effects::SequenceValue>, SessionError> {
    let rows = client
        .query(SEQUENCE_VALUES_SQL, &[])
        .await
        .map_err(|e| SessionError::from_pg("reading the sequences' values", &e))?;
    Ok(rows
        .iter()
        .map(|r| crate::effects::SequenceValue {
            sequence: r.get(0),
            last_value: r.get(1),
        })
        .collect())
}

const LASTING_STATE_SQL: &str = include_str!("../../queries/lasting_state.sql");

/// The server's lasting state as this session sees it (see `queries/lasting_state.sql`).
pub async fn lasting_state(
    client: &Client,
) -> Result<Vec<crate::lasting_state::Item>, SessionError> {
    let rows = client
        .query(LASTING_STATE_SQL, &[])
        .await
        .map_err(|e| SessionError::from_pg("reading the server's lasting state", &e))?;
    Ok(rows
        .iter()
        .map(|r| crate::lasting_state::Item {
            kind: r.get(0),
            name: r.get(1),
            detail: r.get(2),
        })
        .collect())
}

/// The `pg_proc` rows of every function with one of these names, in any schema.
pub async fn function_rows(
    client: &Client,
    names: &[String],
) -> Result<Vec<FunctionRow>, SessionError> {
    let rows = client
        .query_typed(FUNCTION_BODIES_SQL, &[(&names, Type::TEXT_ARRAY)])
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
            language: r.get(5),
            body: r.get(6),
        })
        .collect())
}

/// The rows of the functions of these names and of every function their bodies call, read a
/// level at a time down to [`reach::MAX_DEPTH`] levels (what the walk of [`reach::reach`]
/// follows).
pub async fn functions_reached(
    client: &Client,
    names: &[String],
) -> Result<Vec<FunctionRow>, SessionError> {
    let mut read: Vec<String> = names.to_vec();
    read.sort();
    read.dedup();
    let mut rows = function_rows(client, &read).await?;
    for _ in 0..reach::MAX_DEPTH {
        let next = reach::names_to_read(&rows, &read);
        if next.is_empty() {
            break;
        }
        rows.extend(function_rows(client, &next).await?);
        read.extend(next);
    }
    Ok(rows)
}

/// The statistics counters ANALYZE moves, for the named tables (regclass input).
pub async fn analyze_counters(
    client: &Client,
    tables: &[String],
) -> Result<Vec<AnalyzeCounters>, SessionError> {
    let rows = client
        .query_typed(ANALYZE_COUNTERS_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("reading the tables' analyze counters", &e))?;
    Ok(rows
        .iter()
        .map(|r| AnalyzeCounters {
            table: r.get(0),
            mods_since_analyze: r.get(1),
            analyze_count: r.get(2),
            last_analyze: r.get(3),
        })
        .collect())
}

const TRIGGER_SOURCES_SQL: &str = include_str!("../../queries/trigger_sources.sql");

/// The user triggers on `tables` (names as regclass input) with their functions' source (see
/// `queries/trigger_sources.sql`).
pub async fn trigger_sources(
    client: &Client,
    tables: &[String],
) -> Result<Vec<crate::lasting_rows::Trigger>, SessionError> {
    let rows = client
        .query_typed(TRIGGER_SOURCES_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("reading the triggers of the written tables", &e))?;
    Ok(rows
        .iter()
        .map(|r| crate::lasting_rows::Trigger {
            table: r.get(0),
            name: r.get(1),
            function: r.get(2),
            source: r.get(3),
        })
        .collect())
}

const TRIGGER_FUNCTIONS_SQL: &str = include_str!("../../queries/trigger_functions.sql");

/// The user triggers a write to `tables` (names as regclass input) fires, with their functions
/// as calls (see `queries/trigger_functions.sql`).
pub async fn trigger_functions(
    client: &Client,
    tables: &[String],
) -> Result<Vec<FiredTrigger>, SessionError> {
    let rows = client
        .query_typed(TRIGGER_FUNCTIONS_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("reading the triggers the query's writes fire", &e))?;
    Ok(rows
        .iter()
        .map(|r| FiredTrigger {
            table: r.get(0),
            trigger: r.get(1),
            function: Call {
                schema: Some(r.get(2)),
                name: r.get(3),
            },
        })
        .collect())
}

const TABLE_ROW_CHANGES_SQL: &str = include_str!("../../queries/table_row_changes.sql");

/// The committed-change counters of `tables` (names as regclass input; see
/// `queries/table_row_changes.sql`).
pub async fn table_row_changes(
    client: &Client,
    tables: &[String],
) -> Result<Vec<crate::lasting_rows::RowCounter>, SessionError> {
    let rows = client
        .query_typed(TABLE_ROW_CHANGES_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| SessionError::from_pg("reading the watched tables' row counters", &e))?;
    Ok(rows
        .iter()
        .map(|r| crate::lasting_rows::RowCounter {
            name: r.get(0),
            table: r.get(1),
            changed_rows: r.get(2),
            analyzes: r.get(3),
        })
        .collect())
}
