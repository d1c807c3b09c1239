//! The explain runner: EXPLAIN statements and everything `compare` runs inside its rolled-back
//! transactions — prepared statements for parameters, candidate indexes real or hypothetical,
//! their sizes, and the tables' row estimates.
//!
//! Everything goes through the extended protocol (`query_typed`, unnamed statements): the
//! server itself refuses a second statement hidden in user text, and unnamed statements leave
//! nothing behind on a pooled server connection.

use tokio_postgres::Client;
use tokio_postgres::types::{FromSql, Type};

use super::session::SessionError;

const TABLE_ESTIMATES_SQL: &str = include_str!("../../queries/table_estimates.sql");
const INDEX_FACTS_SQL: &str = include_str!("../../queries/index_facts.sql");
const INDEX_NAMES_SQL: &str = include_str!("../../queries/index_names.sql");
const INDEX_BY_NAME_SQL: &str = include_str!("../../queries/index_by_name.sql");
const HYPOPG_CREATE_SQL: &str = include_str!("../../queries/hypopg_create_index.sql");
const HYPOPG_SIZE_SQL: &str = include_str!("../../queries/hypopg_index_size.sql");
const HYPOPG_DROP_SQL: &str = include_str!("../../queries/hypopg_drop_index.sql");
const HYPOPG_HIDE_SQL: &str = include_str!("../../queries/hypopg_hide_index.sql");
const HYPOPG_UNHIDE_SQL: &str = include_str!("../../queries/hypopg_unhide_index.sql");

/// The EXPLAIN options pgplan uses: measured (`ANALYZE, BUFFERS`) or estimates only. VERBOSE
/// names relations with their schema; SETTINGS records planner settings that differ from the
/// defaults, so a saved plan says under what conditions it was made.
pub fn explain_sql(statement: &str, analyze: bool) -> String {
    if analyze {
        format!("EXPLAIN (ANALYZE, BUFFERS, VERBOSE, SETTINGS, FORMAT JSON) {statement}")
    } else {
        format!("EXPLAIN (VERBOSE, SETTINGS, FORMAT JSON) {statement}")
    }
}

/// Any column read as the text it holds: EXPLAIN (FORMAT JSON) returns `json`, whose binary form
/// is its text.
struct Text(String);

impl<'a> FromSql<'a> for Text {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Text(String::from_utf8(raw.to_vec())?))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> SessionError + '_ {
    move |e| SessionError::from_pg(context, &e)
}

/// Runs one statement that returns no rows worth reading (DDL, SET, SAVEPOINT...).
pub async fn run(client: &Client, sql: &str, context: &str) -> Result<(), SessionError> {
    client.query_typed(sql, &[]).await.map_err(err(context))?;
    Ok(())
}

/// Runs an EXPLAIN and returns the plan as the server sent it.
pub async fn explain(client: &Client, sql: &str, context: &str) -> Result<String, SessionError> {
    let rows = client.query_typed(sql, &[]).await.map_err(err(context))?;
    let mut text = String::new();
    for row in rows {
        let Text(line) = row.try_get(0).map_err(err(context))?;
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    }
    Ok(text)
}

/// A query prepared for EXPLAIN: the statement to explain (`EXECUTE name(...)`) and the prepared
/// statement's name, which the caller must DEALLOCATE before its transaction ends (a rollback
/// does not remove it, and a pooled server connection would keep it).
pub struct Prepared {
    pub statement: String,
    pub name: String,
}

/// Prepares `query` with `plan_cache_mode` set for this transaction only: a custom plan for
/// `params` (quoted as literals), or with `generic` the generic plan, executed with NULLs for
/// its `parameters` (the values a generic plan never looks at).
pub async fn prepare(
    client: &Client,
    query: &str,
    params: &[String],
    generic: bool,
    parameters: u32,
) -> Result<Prepared, SessionError> {
    // plan_cache_mode is read when the statement is executed, so it can be set first: then a
    // failure leaves no prepared statement behind.
    let mode = if generic {
        "force_generic_plan"
    } else {
        "force_custom_plan"
    };
    run(
        client,
        &format!("SET LOCAL plan_cache_mode = {mode}"),
        "setting plan_cache_mode",
    )
    .await?;
    let name = format!("pgplan_{}", std::process::id());
    run(
        client,
        &format!("PREPARE {name} AS {query}"),
        "preparing the query",
    )
    .await?;
    let args: Vec<String> = if generic {
        vec!["NULL".into(); parameters as usize]
    } else {
        params
            .iter()
            .map(|p| crate::sql::quote_literal(p))
            .collect()
    };
    let statement = if args.is_empty() {
        format!("EXECUTE {name}")
    } else {
        format!("EXECUTE {name}({})", args.join(", "))
    };
    Ok(Prepared { statement, name })
}

/// Removes a prepared statement (see [`Prepared`]).
pub async fn deallocate(client: &Client, name: &str) -> Result<(), SessionError> {
    run(
        client,
        &format!("DEALLOCATE {name}"),
        "removing the prepared statement",
    )
    .await
}

/// `relpages`/`reltuples`/`relallvisible` of the named tables (regclass input).
pub async fn table_estimates(
    client: &Client,
    tables: &[String],
) -> Result<Vec<crate::compare::TableEstimate>, SessionError> {
    let rows = client
        .query_typed(TABLE_ESTIMATES_SQL, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(err("reading the tables' row estimates"))?;
    Ok(rows
        .iter()
        .map(|r| crate::compare::TableEstimate {
            table: r.get(0),
            relpages: r.get(1),
            reltuples: r.get(2),
            relallvisible: r.get(3),
            schema_name: r.get(4),
            table_name: r.get(5),
        })
        .collect())
}

/// Size of an index built on `table`, and whether it has expressions.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexFacts {
    pub size_bytes: f64,
    pub has_expressions: bool,
    /// The names plans show for it: itself and, on a partitioned table, each partition's index
    /// (a plan scans those, never the partitioned index).
    pub plan_names: Vec<String>,
    /// `pg_index.indcheckxmin`: the build met HOT chains it could not index consistently, so
    /// the planner ignores the index in any transaction whose snapshot is older than the index
    /// itself, the one that built it included.
    pub check_xmin: bool,
}

pub async fn index_facts(
    client: &Client,
    table: &str,
    index_name: &str,
) -> Result<Option<IndexFacts>, SessionError> {
    let table = table.to_owned();
    let name = index_name.to_owned();
    let rows = client
        .query_typed(
            INDEX_FACTS_SQL,
            &[(&table, Type::TEXT), (&name, Type::TEXT)],
        )
        .await
        .map_err(err("reading the candidate index's size"))?;
    Ok(rows.first().map(|r| IndexFacts {
        size_bytes: r.get(0),
        has_expressions: r.get(1),
        plan_names: r.get(2),
        check_xmin: r.get(3),
    }))
}

/// The names of every index on `table` (regclass input).
pub async fn index_names(client: &Client, table: &str) -> Result<Vec<String>, SessionError> {
    let table = table.to_owned();
    let rows = client
        .query_typed(INDEX_NAMES_SQL, &[(&table, Type::TEXT)])
        .await
        .map_err(err("listing the table's indexes"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// An existing index found by name: (size, table, bare name as plans show it).
/// An existing index, for --drop-index.
#[derive(Debug, Clone, PartialEq)]
pub struct ExistingIndex {
    pub size_bytes: f64,
    /// The bare name EXPLAIN shows.
    pub relname: String,
    /// As [`IndexFacts::plan_names`].
    pub plan_names: Vec<String>,
}

pub async fn existing_index(
    client: &Client,
    name: &str,
) -> Result<Option<ExistingIndex>, SessionError> {
    let name = name.to_owned();
    let rows = client
        .query_typed(INDEX_BY_NAME_SQL, &[(&name, Type::TEXT)])
        .await
        .map_err(err("looking up the index to drop"))?;
    Ok(rows.first().map(|r| ExistingIndex {
        size_bytes: r.get(0),
        relname: r.get(1),
        plan_names: r.get(2),
    }))
}

/// A hypothetical index: its oid (to drop it) and the name plans show.
pub async fn hypopg_create(
    client: &Client,
    create_sql: &str,
) -> Result<(u32, String), SessionError> {
    let sql = create_sql.to_owned();
    let rows = client
        .query_typed(HYPOPG_CREATE_SQL, &[(&sql, Type::TEXT)])
        .await
        .map_err(err("creating the hypothetical index"))?;
    let row = rows.first().ok_or_else(|| SessionError {
        context: "creating the hypothetical index".into(),
        message: "HypoPG returned no index (it supports btree, brin, hash and bloom only)".into(),
        sqlstate: None,
    })?;
    Ok((row.get(0), row.get(1)))
}

pub async fn hypopg_size(client: &Client, oid: u32) -> Result<Option<f64>, SessionError> {
    let rows = client
        .query_typed(HYPOPG_SIZE_SQL, &[(&oid, Type::OID)])
        .await
        .map_err(err("estimating the hypothetical index's size"))?;
    Ok(rows.first().map(|r| r.get(0)))
}

pub async fn hypopg_drop(client: &Client, oid: u32) -> Result<(), SessionError> {
    client
        .query_typed(HYPOPG_DROP_SQL, &[(&oid, Type::OID)])
        .await
        .map_err(err("removing the hypothetical index"))?;
    Ok(())
}

pub async fn hypopg_hide(client: &Client, index: &str) -> Result<(), SessionError> {
    let index = index.to_owned();
    client
        .query_typed(HYPOPG_HIDE_SQL, &[(&index, Type::TEXT)])
        .await
        .map_err(err(
            "hiding the index (hypopg_hide_index needs HypoPG 1.4 or later)",
        ))?;
    Ok(())
}

pub async fn hypopg_unhide(client: &Client, index: &str) -> Result<(), SessionError> {
    let index = index.to_owned();
    client
        .query_typed(HYPOPG_UNHIDE_SQL, &[(&index, Type::TEXT)])
        .await
        .map_err(err("showing the hidden index again"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_options() {
        assert_eq!(
            explain_sql("SELECT 1", true),
            "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, SETTINGS, FORMAT JSON) SELECT 1"
        );
        assert_eq!(
            explain_sql("EXECUTE q(1)", false),
            "EXPLAIN (VERBOSE, SETTINGS, FORMAT JSON) EXECUTE q(1)"
        );
    }
}
