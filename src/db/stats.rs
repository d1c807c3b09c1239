//! The reads of `pgplan stats export` (a table's `pg_class` figures, its columns and its
//! `pg_stats` rows) and the writes of `stats import` (PostgreSQL 18's
//! `pg_restore_relation_stats` and `pg_restore_attribute_stats`). Version differences are
//! filled in here: `relallfrozen` (18+) and the range columns of `pg_stats` (17+).

use tokio_postgres::Client;

use super::session::SessionError;
use crate::check::stats::{ColumnStatsRow, ColumnType, TableStats};

const TABLE_SQL: &str = include_str!("../../queries/stats_table.sql");
const SCHEMA_TABLES_SQL: &str = include_str!("../../queries/stats_schema_tables.sql");
const COLUMNS_SQL: &str = include_str!("../../queries/stats_columns.sql");
const RESTORE_RELATION_SQL: &str = include_str!("../../queries/stats_restore_relation.sql");
const RESTORE_ATTRIBUTE_SQL: &str = include_str!("../../queries/stats_restore_attribute.sql");

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> SessionError + '_ {
    move |e| SessionError::from_pg(context, &e)
}

pub fn table_sql(major: u32) -> String {
    TABLE_SQL.replace(
        "{{relallfrozen}}",
        if major >= 18 {
            "c.relallfrozen"
        } else {
            "NULL::integer"
        },
    )
}

pub fn columns_sql(major: u32) -> String {
    COLUMNS_SQL.replace(
        "{{range}}",
        if major >= 17 {
            "range_length_histogram::text, range_empty_frac, range_bounds_histogram::text"
        } else {
            "NULL::text AS range_length_histogram, NULL::real AS range_empty_frac, \
             NULL::text AS range_bounds_histogram"
        },
    )
}

/// A table's figures and columns (its `stats` left empty), or `None` when there is no such
/// table. `name` is regclass input (`public.orders`, `"Mixed Case"`).
pub async fn table(
    client: &Client,
    major: u32,
    name: &str,
) -> Result<Option<TableStats>, SessionError> {
    let rows = client
        .query(&table_sql(major), &[&name])
        .await
        .map_err(err("reading a table's planner figures"))?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let columns: Vec<ColumnType> =
        serde_json::from_str(row.get::<_, &str>("columns")).map_err(|e| SessionError {
            context: "reading a table's columns".into(),
            message: e.to_string(),
            sqlstate: None,
        })?;
    Ok(Some(TableStats {
        schema: row.get("schema"),
        table: row.get("table"),
        relpages: row.get("relpages"),
        reltuples: row.get("reltuples"),
        relallvisible: row.get("relallvisible"),
        relallfrozen: row.get("relallfrozen"),
        columns,
        stats: Vec::new(),
    }))
}

/// The tables of a schema, as regclass input.
pub async fn schema_tables(client: &Client, schema: &str) -> Result<Vec<String>, SessionError> {
    let rows = client
        .query(SCHEMA_TABLES_SQL, &[&schema])
        .await
        .map_err(err("listing a schema's tables"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// A table's `pg_stats` rows (only those of columns the user may read: pg_stats shows no
/// others).
pub async fn column_stats(
    client: &Client,
    major: u32,
    schema: &str,
    table: &str,
) -> Result<Vec<ColumnStatsRow>, SessionError> {
    let rows = client
        .query(&columns_sql(major), &[&schema, &table])
        .await
        .map_err(err("reading pg_stats"))?;
    Ok(rows
        .iter()
        .map(|r| ColumnStatsRow {
            column: r.get("column"),
            inherited: r.get("inherited"),
            null_frac: r.get("null_frac"),
            avg_width: r.get("avg_width"),
            n_distinct: r.get("n_distinct"),
            most_common_vals: r.get("most_common_vals"),
            most_common_freqs: r.get("most_common_freqs"),
            histogram_bounds: r.get("histogram_bounds"),
            correlation: r.get("correlation"),
            most_common_elems: r.get("most_common_elems"),
            most_common_elem_freqs: r.get("most_common_elem_freqs"),
            elem_count_histogram: r.get("elem_count_histogram"),
            range_length_histogram: r.get("range_length_histogram"),
            range_empty_frac: r.get("range_empty_frac"),
            range_bounds_histogram: r.get("range_bounds_histogram"),
        })
        .collect())
}

/// Sets the table's `pg_class` figures; false when the server refused one (it says why in a
/// WARNING).
pub async fn restore_relation(client: &Client, t: &TableStats) -> Result<bool, SessionError> {
    let row = client
        .query_one(
            RESTORE_RELATION_SQL,
            &[
                &t.schema,
                &t.table,
                &t.relpages,
                &t.reltuples,
                &t.relallvisible,
                &t.relallfrozen,
            ],
        )
        .await
        .map_err(err("restoring a table's planner figures"))?;
    Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
}

/// Sets a table's `relpages`, `reltuples` and `relallvisible` back to `figures` (18+), leaving
/// `relallfrozen` as it is; false when the server refused one (it says why in a WARNING).
pub async fn restore_planner_figures(
    client: &Client,
    figures: &crate::compare::TableEstimate,
) -> Result<bool, SessionError> {
    let row = client
        .query_one(
            RESTORE_RELATION_SQL,
            &[
                &figures.schema_name,
                &figures.table_name,
                &(figures.relpages as i32),
                &(figures.reltuples as f32),
                &(figures.relallvisible as i32),
                &None::<i32>,
            ],
        )
        .await
        .map_err(err("putting back a table's planner figures"))?;
    Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
}

/// Sets one column's statistics; false when the server refused one.
pub async fn restore_attribute(
    client: &Client,
    schema: &str,
    table: &str,
    r: &ColumnStatsRow,
) -> Result<bool, SessionError> {
    let row = client
        .query_one(
            RESTORE_ATTRIBUTE_SQL,
            &[
                &schema,
                &table,
                &r.column,
                &r.inherited,
                &r.null_frac,
                &r.avg_width,
                &r.n_distinct,
                &r.most_common_vals,
                &r.most_common_freqs,
                &r.histogram_bounds,
                &r.correlation,
                &r.most_common_elems,
                &r.most_common_elem_freqs,
                &r.elem_count_histogram,
                &r.range_length_histogram,
                &r.range_empty_frac,
                &r.range_bounds_histogram,
            ],
        )
        .await
        .map_err(err("restoring a column's statistics"))?;
    Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
}
