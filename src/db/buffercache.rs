//! A truly cold first run: the query's tables, their indexes and TOAST evicted from shared
//! buffers with pg_buffercache (17+, superuser). This changes the server's cache for everyone:
//! the next queries on those tables read them again. Reads then come from the operating
//! system's page cache or the disk, which PostgreSQL cannot tell apart.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::session::SessionError;

const EVICT_BUFFERS_SQL: &str = include_str!("../../queries/buffercache_evict_buffers.sql");
const EVICT_RELATIONS_SQL: &str = include_str!("../../queries/buffercache_evict_relations.sql");

/// The first major version with `pg_buffercache_evict`.
pub const EVICT_MIN_MAJOR: u32 = 17;

/// Evicts every buffer of `tables` (regclass input), their indexes and TOAST; returns how many
/// were evicted. 17 evicts buffer by buffer; 18 has `pg_buffercache_evict_relation` (and
/// changed `pg_buffercache_evict` to return a record).
pub async fn evict(client: &Client, tables: &[String], major: u32) -> Result<f64, SessionError> {
    let sql = if major >= 18 {
        EVICT_RELATIONS_SQL
    } else {
        EVICT_BUFFERS_SQL
    };
    let rows = client
        .query_typed(sql, &[(&tables, Type::TEXT_ARRAY)])
        .await
        .map_err(|e| {
            SessionError::from_pg("evicting the query's relations from shared buffers", &e)
        })?;
    Ok(rows.first().map_or(0.0, |r| r.get("evicted")))
}
