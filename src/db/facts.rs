//! What pgplan learns about a server once per connection: version, role, privileges, extensions
//! and TLS — everything a command needs to decide what it can do there.

use serde::Serialize;

use super::error::describe;

const FACTS_SQL: &str = include_str!("../../queries/server_facts.sql");

/// Facts about the server and the session, read once after connecting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerFacts {
    /// `server_version_num`, e.g. 160014.
    pub version_num: u32,
    /// `server_version`, e.g. "16.14".
    pub version: String,
    /// `pg_is_in_recovery()`: a standby (or a server restoring from archive).
    pub in_recovery: bool,
    /// `transaction_read_only` of a fresh transaction (`default_transaction_read_only`, a standby,
    /// or a pooler that forces it).
    pub read_only: bool,
    pub user: String,
    pub database: String,
    pub superuser: bool,
    /// Member of `pg_monitor` (directly or through other roles), or superuser.
    pub pg_monitor: bool,
    /// Member of `pg_read_all_stats` (sees every session's activity), or superuser.
    pub pg_read_all_stats: bool,
    /// Installed extensions in the current database, with their versions.
    pub extensions: Vec<(String, String)>,
    /// The connection's TLS version, when encrypted (`pg_stat_ssl`).
    pub tls_version: Option<String>,
    pub tls_cipher: Option<String>,
    /// `pg_control_system()`'s system identifier: the same on a primary and its physical standbys.
    pub system_identifier: Option<String>,
    /// `pg_postmaster_start_time()`, as text (ISO 8601).
    pub started_at: Option<String>,
    /// Seconds since the server started.
    pub uptime_seconds: Option<f64>,
}

impl ServerFacts {
    pub fn major(&self) -> u32 {
        self.version_num / 10000
    }

    pub fn is_standby(&self) -> bool {
        self.in_recovery
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|(n, _)| n == name)
    }
}

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
        tls_version: row.get("tls_version"),
        tls_cipher: row.get("tls_cipher"),
        system_identifier: row.get("system_identifier"),
        started_at: row.get("started_at"),
        uptime_seconds: row.get("uptime_seconds"),
    })
}
