//! Reading [`ServerFacts`] from a connection, once, with one query; and for `info`, how many of
//! the database's tables the role owns ([`TableOwnership`]).

pub use crate::server::{ServerFacts, TableOwnership};

use super::error::describe;

const FACTS_SQL: &str = include_str!("../../queries/server_facts.sql");
const OWNERSHIP_SQL: &str = include_str!("../../queries/table_ownership.sql");

/// Reads the facts with one query (`queries/server_facts.sql`).
pub async fn read_facts(client: &tokio_postgres::Client) -> Result<ServerFacts, String> {
    let row = client
        .query_typed(FACTS_SQL, &[])
        .await
        .map_err(|e| format!("reading server facts: {}", describe(&e)))?
        .into_iter()
        .next()
        .ok_or("reading server facts: no row")?;
    let extensions: Vec<String> = row.get("extensions");
    Ok(ServerFacts {
        version_num: row
            .get::<_, String>("version_num")
            .parse()
            .map_err(|_| "unexpected server_version_num")?,
        version: row.get("version"),
        in_recovery: row.get("in_recovery"),
        read_only: row.get::<_, String>("read_only") == "on",
        user: row.get("current_user"),
        database: row.get("database"),
        superuser: row.get("superuser"),
        pg_monitor: row.get("pg_monitor"),
        pg_read_all_stats: row.get("pg_read_all_stats"),
        extensions: extensions
            .into_iter()
            .filter_map(|e| e.split_once('=').map(|(n, v)| (n.to_owned(), v.to_owned())))
            .collect(),
        available_extensions: row.get("available_extensions"),
        tls_version: row.get("tls_version"),
        tls_cipher: row.get("tls_cipher"),
        system_identifier: row.get("system_identifier"),
        started_at: row.get("started_at"),
        uptime_seconds: row.get("uptime_seconds"),
        index_catalog_bytes: row.get("index_catalog_bytes"),
    })
}

/// Reads how many of the database's tables the connected role owns, and who owns the others
/// (`queries/table_ownership.sql`): one pass over `pg_class`, so only `info` asks.
pub async fn read_table_ownership(
    client: &tokio_postgres::Client,
) -> Result<TableOwnership, String> {
    let row = client
        .query_typed(OWNERSHIP_SQL, &[])
        .await
        .map_err(|e| format!("reading table ownership: {}", describe(&e)))?
        .into_iter()
        .next()
        .ok_or("reading table ownership: no row")?;
    let count = |column: &str| -> Result<u64, String> {
        row.try_get::<_, i64>(column)
            .map(|n| n.max(0) as u64)
            .map_err(|e| format!("reading table ownership: {column}: {e}"))
    };
    let owners: Vec<String> = row
        .try_get("other_owners")
        .map_err(|e| format!("reading table ownership: other_owners: {e}"))?;
    let counts: Vec<i64> = row
        .try_get("other_owner_tables")
        .map_err(|e| format!("reading table ownership: other_owner_tables: {e}"))?;
    Ok(TableOwnership {
        tables: count("tables")?,
        owned: count("owned")?,
        other_owners: owners
            .into_iter()
            .zip(counts)
            .map(|(o, n)| (o, n.max(0) as u64))
            .collect(),
    })
}
