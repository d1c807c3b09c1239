//! Reads the catalog facts `pgplan advise` proposes from (`queries/advise_*.sql`): the tables a
//! workload's plans scan, their columns with `pg_stats`, and their existing indexes, turned
//! into the pure core's [`Facts`], and the relation names of their schemas a new index's name
//! must step over. Four statements, each run once for all tables, through
//! `query_typed` (never prepared, so they work behind a transaction-mode pooler); they only
//! read, and need no privilege beyond what the workload's own queries need.

use std::collections::{BTreeSet, HashMap};

use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Type};

use super::catalog::CatalogError;
use super::connect::Connection;
use super::error::describe;
use super::facts::ServerFacts;
use super::session::{Limits, SessionError};
use crate::advise::{
    ColumnFacts, ColumnStats, Facts, IndexFacts, IndexKeyFacts, TableFacts, naming,
};

const TABLES_SQL: &str = include_str!("../../queries/advise_tables.sql");
const COLUMNS_SQL: &str = include_str!("../../queries/advise_columns.sql");
const INDEXES_SQL: &str = include_str!("../../queries/advise_indexes.sql");
const TAKEN_NAMES_SQL: &str = include_str!("../../queries/advise_taken_names.sql");
const FORCE_FLUSH_SQL: &str = include_str!("../../queries/stats_force_next_flush.sql");
const REPORT_PENDING_SQL: &str = include_str!("../../queries/stats_report_pending.sql");

/// PostgreSQL 13 and 14's PGSTAT_STAT_INTERVAL: a backend sends its counters to the collector
/// at most this often, and a reader accepts a statistics file this old.
const STATS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// Makes the index scans this session's own measuring counted visible to its next catalog read,
/// so that the drops advise reads (audit's unused and duplicate checks, which compare scans)
/// see what `pgplan audit` run afterwards sees. Without it the last runs' scans are still
/// pending in this backend (15+ flushes them at most once a second; 13 and 14 send them at most
/// every 500 ms and read a file up to 500 ms old), and the index of a duplicate pair the
/// workload scanned reads as unscanned: advise would drop the one audit keeps.
///
/// 15+: one statement, and the flush happens before the server answers the next ROLLBACK
/// (pending statistics are reported before ReadyForQuery). 13 and 14: waits out the interval,
/// lets the backend send, and waits again for the collector's file: about a second.
pub async fn publish_own_counters(
    conn: &mut Connection,
    limits: &Limits,
) -> Result<(), SessionError> {
    let run = async |conn: &mut Connection, sql: &'static str| {
        conn.read_only(limits, async |client| {
            client
                .query_typed(sql, &[])
                .await
                .map(|_| ())
                .map_err(|e| SessionError::from_pg("publishing this session's statistics", &e))
        })
        .await
    };
    if conn.facts.major() >= 15 {
        return run(conn, FORCE_FLUSH_SQL).await;
    }
    tokio::time::sleep(STATS_INTERVAL).await;
    run(conn, REPORT_PENDING_SQL).await?;
    tokio::time::sleep(STATS_INTERVAL).await;
    Ok(())
}

/// A table as a plan names it: the schema when the plan says it (VERBOSE), and the name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    pub schema: Option<String>,
    pub name: String,
}

/// Reads the facts of `tables` (missing ones are left out: a plan may name a table since
/// dropped) and the database's extensions from `server`.
pub async fn read_facts(
    client: &tokio_postgres::Client,
    server: &ServerFacts,
    tables: &[TableName],
) -> Result<Facts, CatalogError> {
    let schemas: Vec<String> = tables
        .iter()
        .map(|t| t.schema.clone().unwrap_or_default())
        .collect();
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let rows = query(
        client,
        "advise tables",
        TABLES_SQL,
        &[
            (
                &schemas as &(dyn tokio_postgres::types::ToSql + Sync),
                Type::TEXT_ARRAY,
            ),
            (&names, Type::TEXT_ARRAY),
        ],
    )
    .await?;
    let mut by_oid: HashMap<u32, usize> = HashMap::new();
    let mut out = Vec::new();
    // Pairwise with `out`: the oids and name prefixes the taken names are read by.
    let mut table_oids: Vec<u32> = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    for r in &rows {
        let what = "advise tables";
        let reltuples: f64 = req(r, what, "reltuples")?;
        let oid: u32 = req(r, what, "table_oid")?;
        let name: String = req(r, what, "table_name")?;
        table_oids.push(oid);
        prefixes.push(naming::lookup_prefix(&name).to_owned());
        by_oid.insert(oid, out.len());
        out.push(TableFacts {
            schema: req(r, what, "schema_name")?,
            name,
            columns: Vec::new(),
            indexes: Vec::new(),
            // -1 (14+) means never vacuumed or analyzed; before 14 that read 0 with 0 pages.
            rows: (reltuples >= 0.0).then_some(reltuples),
            pages: req::<i64>(r, what, "relpages")? as f64,
            all_visible_pages: req::<i64>(r, what, "relallvisible")? as f64,
            inserts: opt::<i64>(r, what, "inserts")?.map(|n| n as f64),
            updates: opt::<i64>(r, what, "updates")?.map(|n| n as f64),
            deletes: opt::<i64>(r, what, "deletes")?.map(|n| n as f64),
            hot_updates: opt::<i64>(r, what, "hot_updates")?.map(|n| n as f64),
        });
    }
    let oids: Vec<u32> = by_oid.keys().copied().collect();
    let oid_param: [(&(dyn tokio_postgres::types::ToSql + Sync), Type); 1] =
        [(&oids, Type::OID_ARRAY)];

    for r in query(client, "advise columns", COLUMNS_SQL, &oid_param).await? {
        let what = "advise columns";
        let Some(&t) = by_oid.get(&req::<u32>(&r, what, "table_oid")?) else {
            continue;
        };
        let stats = match opt::<f64>(&r, what, "n_distinct")? {
            Some(n_distinct) => Some(ColumnStats {
                null_frac: opt(&r, what, "null_frac")?.unwrap_or(0.0),
                n_distinct,
                most_common_vals: opt::<Vec<Option<String>>>(&r, what, "most_common_vals")?
                    .unwrap_or_default()
                    .into_iter()
                    .map(Option::unwrap_or_default)
                    .collect(),
                most_common_freqs: opt::<Vec<Option<f64>>>(&r, what, "most_common_freqs")?
                    .unwrap_or_default()
                    .into_iter()
                    .map(|f| f.unwrap_or(0.0))
                    .collect(),
                correlation: opt(&r, what, "correlation")?,
            }),
            None => None,
        };
        out[t].columns.push(ColumnFacts {
            name: req(&r, what, "column_name")?,
            type_name: req(&r, what, "type_name")?,
            collation: opt(&r, what, "collation_name")?,
            default_collation: opt(&r, what, "default_collation")?,
            stats,
        });
    }

    for r in query(client, "advise indexes", INDEXES_SQL, &oid_param).await? {
        let what = "advise indexes";
        let Some(&t) = by_oid.get(&req::<u32>(&r, what, "table_oid")?) else {
            continue;
        };
        let key_count = req::<i32>(&r, what, "key_column_count")?.max(0) as usize;
        let columns: Vec<String> = list(&r, what, "columns")?;
        let opclasses: Vec<String> = list(&r, what, "opclasses")?;
        let defaults: Vec<bool> = list(&r, what, "opclass_defaults")?;
        let collations: Vec<Option<String>> = opt(&r, what, "collations")?.unwrap_or_default();
        let descending: Vec<bool> = list(&r, what, "descending")?;
        let nulls_first: Vec<bool> = list(&r, what, "nulls_first")?;
        let keys = (0..key_count.min(columns.len()))
            .map(|k| IndexKeyFacts {
                expr: columns[k].clone(),
                opclass: opclasses.get(k).cloned().unwrap_or_default(),
                default_opclass: defaults.get(k).copied().unwrap_or(false),
                collation: collations.get(k).cloned().flatten(),
                descending: descending.get(k).copied().unwrap_or(false),
                nulls_first: nulls_first.get(k).copied().unwrap_or(false),
            })
            .collect();
        out[t].indexes.push(IndexFacts {
            name: req(&r, what, "index_name")?,
            method: req(&r, what, "access_method")?,
            keys,
            include: columns.get(key_count..).unwrap_or_default().to_vec(),
            predicate: opt(&r, what, "predicate")?,
            unique: req(&r, what, "indisunique")?,
            valid: req(&r, what, "indisvalid")?,
            primary: req(&r, what, "indisprimary")?,
            exclusion: req(&r, what, "indisexclusion")?,
            replica_identity: req(&r, what, "indisreplident")?,
            backs_constraint: req(&r, what, "backs_constraint")?,
            size_bytes: opt(&r, what, "size_bytes")?,
            scans: opt(&r, what, "scans")?,
        });
    }

    let mut taken_names = BTreeSet::new();
    if !table_oids.is_empty() {
        let params: [(&(dyn tokio_postgres::types::ToSql + Sync), Type); 2] = [
            (&table_oids, Type::OID_ARRAY),
            (&prefixes, Type::TEXT_ARRAY),
        ];
        for r in query(client, "advise taken names", TAKEN_NAMES_SQL, &params).await? {
            let what = "advise taken names";
            taken_names.insert((
                req(&r, what, "schema_name")?,
                req(&r, what, "relation_name")?,
            ));
        }
    }

    Ok(Facts {
        tables: out,
        extensions: server.extensions.iter().map(|(n, _)| n.clone()).collect(),
        taken_names,
    })
}

async fn query(
    client: &tokio_postgres::Client,
    what: &'static str,
    sql: &str,
    params: &[(&(dyn tokio_postgres::types::ToSql + Sync), Type)],
) -> Result<Vec<Row>, CatalogError> {
    client
        .query_typed(sql, params)
        .await
        .map_err(|e| CatalogError::Query {
            what,
            message: describe(&e),
        })
}

fn opt<'a, T: FromSql<'a>>(
    row: &'a Row,
    what: &'static str,
    column: &'static str,
) -> Result<Option<T>, CatalogError> {
    row.try_get::<_, Option<T>>(column)
        .map_err(|e| CatalogError::Decode {
            what,
            column,
            message: e.to_string(),
        })
}

fn req<'a, T: FromSql<'a>>(
    row: &'a Row,
    what: &'static str,
    column: &'static str,
) -> Result<T, CatalogError> {
    opt(row, what, column)?.ok_or_else(|| CatalogError::Decode {
        what,
        column,
        message: "unexpected NULL".into(),
    })
}

/// An array column whose elements are never NULL.
fn list<'a, T: FromSql<'a>>(
    row: &'a Row,
    what: &'static str,
    column: &'static str,
) -> Result<Vec<T>, CatalogError> {
    Ok(opt::<Vec<Option<T>>>(row, what, column)?
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect())
}
