//! The reads `compare --workload` makes: pg_stat_statements' top statements and how long it has
//! counted, column statistics for parameter values, tables' write counters, a built index's
//! entries, and relation names. Version differences are filled in here, in one place.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;
use crate::compare::workload::TableActivity;
use crate::compare::workload::params::ColumnStats;
use crate::sql::quote_ident;

const STATEMENTS_SQL: &str = include_str!("../../queries/workload_statements.sql");
const STATEMENTS_WINDOW_SQL: &str = include_str!("../../queries/workload_statements_window.sql");
const EXTENSION_SQL: &str = include_str!("../../queries/workload_extension.sql");
const COLUMN_STATS_SQL: &str = include_str!("../../queries/workload_column_stats.sql");
const TABLE_ACTIVITY_SQL: &str = include_str!("../../queries/workload_table_activity.sql");
const INDEX_ENTRIES_SQL: &str = include_str!("../../queries/workload_index_entries.sql");
const RELATION_NAME_SQL: &str = include_str!("../../queries/workload_relation_name.sql");
const RELATION_PAGES_SQL: &str = include_str!("../../queries/workload_relation_pages.sql");
const SAMPLE_VALUE_SQL: &str = include_str!("../../queries/workload_sample_value.sql");

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> SessionError + '_ {
    move |e| SessionError::from_pg(context, &e)
}

/// The statements query for a server version.
pub fn statements_sql(major: u32) -> String {
    STATEMENTS_SQL.replace(
        "{{toplevel}}",
        if major >= 14 { "s.toplevel" } else { "true" },
    )
}

/// The counting-window query for a server version.
pub fn statements_window_sql(major: u32) -> String {
    STATEMENTS_WINDOW_SQL.replace(
        "{{since}}",
        if major >= 14 {
            "SELECT stats_reset, 'reset'::text FROM pg_stat_statements_info"
        } else {
            "SELECT pg_postmaster_start_time(), 'server_start'::text"
        },
    )
}

/// Whether pg_stat_statements is created in this database, and preloaded.
pub async fn statements_available(client: &Client) -> Result<(bool, bool), SessionError> {
    let rows = client
        .query_typed(EXTENSION_SQL, &[])
        .await
        .map_err(err("checking for pg_stat_statements"))?;
    let row = rows.first().ok_or_else(|| SessionError {
        context: "checking for pg_stat_statements".into(),
        message: "no row".into(),
        sqlstate: None,
    })?;
    Ok((row.get(0), row.get(1)))
}

/// A statement of pg_stat_statements.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub queryid: String,
    pub query: String,
    pub calls: f64,
    pub total_exec_ms: f64,
    /// Every statement's execution time with enough calls, the top ones or not.
    pub all_exec_ms: f64,
}

/// The top `top` statements with at least `min_calls` calls, and the seconds the view has
/// been counting (with where that figure comes from).
pub async fn top_statements(
    client: &Client,
    major: u32,
    top: i64,
    min_calls: i64,
) -> Result<(Vec<Statement>, Option<(f64, String)>), SessionError> {
    let rows = client
        .query_typed(
            &statements_sql(major),
            &[(&top, Type::INT8), (&min_calls, Type::INT8)],
        )
        .await
        .map_err(err("reading pg_stat_statements"))?;
    let statements = rows
        .iter()
        .map(|r| Statement {
            queryid: r.get(0),
            query: r.get(1),
            calls: r.get(2),
            total_exec_ms: r.get(3),
            all_exec_ms: r.get(4),
        })
        .collect();
    let window = client
        .query_typed(&statements_window_sql(major), &[])
        .await
        .map_err(err("reading how long pg_stat_statements has counted"))?
        .first()
        .and_then(|r| {
            let seconds: Option<f64> = r.get(0);
            seconds.map(|s| (s, r.get::<_, String>(1)))
        });
    Ok((statements, window))
}

/// `schema.table` of a relation name as written, or None when it does not resolve.
pub async fn relation_name(client: &Client, name: &str) -> Result<Option<String>, SessionError> {
    let name = name.to_owned();
    let rows = client
        .query_typed(RELATION_NAME_SQL, &[(&name, Type::TEXT)])
        .await
        .map_err(err("resolving a table name"))?;
    Ok(rows.first().map(|r| r.get(0)))
}

/// A column's statistics, when pg_stats has them.
pub async fn column_stats(
    client: &Client,
    schema: &str,
    table: &str,
    column: &str,
) -> Result<Option<ColumnStats>, SessionError> {
    let (s, t, c) = (schema.to_owned(), table.to_owned(), column.to_owned());
    let rows = client
        .query_typed(
            COLUMN_STATS_SQL,
            &[(&s, Type::TEXT), (&t, Type::TEXT), (&c, Type::TEXT)],
        )
        .await
        .map_err(err("reading column statistics"))?;
    Ok(rows.first().map(|r| ColumnStats {
        column: format!("{}.{}", quote_ident(table), quote_ident(column)),
        most_common_vals: r.get(0),
        most_common_freqs: r.get(1),
        histogram_bounds: r.get(2),
    }))
}

/// One value of `column` from a sampled row of `schema.table`.
pub async fn sample_value(
    client: &Client,
    schema: &str,
    table: &str,
    column: &str,
) -> Result<Option<String>, SessionError> {
    let sql = SAMPLE_VALUE_SQL
        .replace(
            "{{table}}",
            &format!("{}.{}", quote_ident(schema), quote_ident(table)),
        )
        .replace("{{column}}", &quote_ident(column));
    let rows = client
        .query_typed(&sql, &[])
        .await
        .map_err(err("sampling a row for a parameter value"))?;
    Ok(rows.first().and_then(|r| r.get(0)))
}

/// The tables' sizes in blocks (see `queries/workload_relation_pages.sql`).
pub async fn relation_pages(
    client: &Client,
    tables: &[String],
) -> Result<Vec<(String, Option<f64>)>, SessionError> {
    let rows = client
        .query_typed(RELATION_PAGES_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(err("reading the tables' sizes"))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// A table's write counters (the window is the caller's), its index count and column names.
pub async fn table_activity(
    client: &Client,
    table: &str,
) -> Result<Option<(TableActivity, Vec<String>)>, SessionError> {
    let table = table.to_owned();
    let rows = client
        .query_typed(TABLE_ACTIVITY_SQL, &[(&table, Type::TEXT)])
        .await
        .map_err(err("reading the table's write counters"))?;
    Ok(rows.first().map(|r| {
        (
            TableActivity {
                table: r.get(0),
                inserts: r.get(1),
                updates: r.get(2),
                hot_updates: r.get(3),
                deletes: r.get(4),
                window_seconds: None,
                index_count: r.get(5),
            },
            r.get(6),
        )
    }))
}

/// A just-built index's entries and its table's rows, as the build counted them.
pub async fn index_entries(
    client: &Client,
    index: &str,
    table: &str,
) -> Result<Option<(f64, f64)>, SessionError> {
    let (index, table) = (index.to_owned(), table.to_owned());
    let rows = client
        .query_typed(
            INDEX_ENTRIES_SQL,
            &[(&index, Type::TEXT), (&table, Type::TEXT)],
        )
        .await
        .map_err(err("reading the index's entries"))?;
    Ok(rows.first().map(|r| (r.get(0), r.get(1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled_on_every_version() {
        for major in 13..=18 {
            assert!(!statements_sql(major).contains("{{"));
            assert!(!statements_window_sql(major).contains("{{"));
        }
        assert!(statements_sql(13).contains("AND true"));
        assert!(statements_sql(14).contains("s.toplevel"));
    }
}
