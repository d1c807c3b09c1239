//! Reads one node's catalog and statistics for `pgplan audit`: a handful of simple statements
//! (`queries/audit_*.sql`), each run once, turned into the pure core's snapshot rows.
//!
//! No pairwise self-joins and no bloat arithmetic here: on 10,000 tables and 50,000 indexes the
//! usual audit SQL takes seconds to a minute, while reading every index's figures once takes a
//! fraction of a second; comparisons and estimates happen in `audit`. The caller has opened a
//! `REPEATABLE READ READ ONLY` transaction with its timeouts (a helper connection reads the
//! indexes on its exported snapshot); every statement here only reads, calls no function with
//! side effects, and runs as a role with nothing more than `pg_monitor`.
//! Statements go through `query_typed` (unnamed, never prepared), so they also work behind a
//! transaction-mode pooler.

use foldhash::{HashMap, HashMapExt, HashSet};

use futures_util::TryStreamExt;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, ToSql, Type};

use super::connect::Connection;
use super::error::describe;
use super::facts::ServerFacts;
use super::session::Limits;
use crate::audit::Scope;
use crate::audit::snapshot::*;

const SETTINGS_SQL: &str = include_str!("../../queries/audit_settings.sql");
const DATABASE_SQL: &str = include_str!("../../queries/audit_database.sql");
const TABLES_SQL: &str = include_str!("../../queries/audit_tables.sql");
const INDEXES_SQL: &str = include_str!("../../queries/audit_indexes.sql");
const COLUMNS_SQL: &str = include_str!("../../queries/audit_columns.sql");
const COLUMNS_STATISTIC_SQL: &str = include_str!("../../queries/audit_columns_statistic.sql");
const FOREIGN_KEYS_SQL: &str = include_str!("../../queries/audit_foreign_keys.sql");
const SESSIONS_SQL: &str = include_str!("../../queries/audit_sessions.sql");
const SLOTS_SQL: &str = include_str!("../../queries/audit_replication_slots.sql");
const PREPARED_SQL: &str = include_str!("../../queries/audit_prepared_xacts.sql");
const STANDBYS_SQL: &str = include_str!("../../queries/audit_standbys.sql");
const INDEX_BUILDS_SQL: &str = include_str!("../../queries/audit_index_builds.sql");
const LOCKS_SQL: &str = include_str!("../../queries/audit_locks.sql");
const ACTIVITY_SQL: &str = include_str!("../../queries/audit_activity.sql");
const SESSION_LOCKS_SQL: &str = include_str!("../../queries/audit_session_locks.sql");
const CONFLICTS_SQL: &str = include_str!("../../queries/audit_database_conflicts.sql");
const INDEX_DEFINITIONS_SQL: &str = include_str!("../../queries/audit_index_definitions.sql");

/// Indexes deparsed per statement: each holds an ACCESS SHARE lock on its table until the
/// savepoint is rolled back, so a batch must fit the lock table (64 locks per connection by
/// default, shared) with room to spare.
const DEPARSE_BATCH: usize = 200;

/// How long deparsing waits for a table's lock before giving up on the batch: a lock that
/// appeared after the audit read pg_locks. The audit then reads the locks again and retries.
const DEPARSE_LOCK_TIMEOUT: &str = "100ms";

/// Retries of a batch whose deparse hit a lock that appeared meanwhile.
const DEPARSE_RETRIES: usize = 3;

/// The oldest server the audit statements support.
pub const MIN_VERSION_NUM: u32 = 130_000;

/// The settings read from `pg_settings`.
const SETTING_NAMES: &[&str] = &[
    "autovacuum",
    "track_counts",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_vacuum_max_threshold",
    "autovacuum_analyze_threshold",
    "autovacuum_analyze_scale_factor",
    "autovacuum_freeze_max_age",
    "autovacuum_multixact_freeze_max_age",
    "block_size",
    "hot_standby_feedback",
    "max_connections",
    "superuser_reserved_connections",
    // 16+.
    "reserved_connections",
    "idle_in_transaction_session_timeout",
];

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("PostgreSQL {version} is not supported by pgplan audit (13 or later is needed)")]
    Unsupported { version: String },
    #[error("reading {what}: {message}")]
    Query { what: &'static str, message: String },
    #[error("reading {what}: column {column}: {message}")]
    Decode {
        what: &'static str,
        column: &'static str,
        message: String,
    },
}

/// Every version difference of the audit statements, in one place: the statement text for this
/// server, with each `{{placeholder}}` replaced by the column that exists there or a typed NULL.
pub fn statement_for(sql: &str, version_num: u32) -> String {
    let columns: [(&str, &str); 6] = [
        // pg_stat_all_indexes.last_idx_scan (pg_stat_get_lastscan) appeared in 16.
        (
            "{{last_idx_scan}}",
            if version_num >= 160_000 {
                "pg_stat_get_lastscan(i.indexrelid)"
            } else {
                "NULL::timestamptz"
            },
        ),
        // 17 split pg_stat_checkpointer out of pg_stat_bgwriter; both keep a stats_reset, and
        // on 15+ all server-wide statistics are stamped together when statistics are discarded.
        (
            "{{checkpointer_stats_reset}}",
            if version_num >= 170_000 {
                "(SELECT cp.stats_reset FROM pg_stat_checkpointer cp)"
            } else {
                "NULL::timestamptz"
            },
        ),
        // pg_index.indnullsnotdistinct (UNIQUE NULLS NOT DISTINCT) appeared in 15; before, every
        // unique index treats NULLs as distinct.
        (
            "{{indnullsnotdistinct}}",
            if version_num >= 150_000 {
                "i.indnullsnotdistinct"
            } else {
                "false"
            },
        ),
        // pg_locks.waitstart (when a lock wait began) appeared in 14.
        (
            "{{lock_wait_seconds}}",
            if version_num >= 140_000 {
                "extract(epoch FROM now() - l.waitstart)::float8"
            } else {
                "NULL::float8"
            },
        ),
        // pg_stat_database_conflicts.confl_active_logicalslot appeared in 16.
        (
            "{{confl_active_logicalslot}}",
            if version_num >= 160_000 {
                "c.confl_active_logicalslot::int8"
            } else {
                "NULL::int8"
            },
        ),
        // pg_replication_slots.inactive_since appeared in 17.
        (
            "{{inactive_since}}",
            if version_num >= 170_000 {
                "s.inactive_since"
            } else {
                "NULL::timestamptz"
            },
        ),
    ];
    let mut text = sql.to_owned();
    for (placeholder, column) in columns {
        text = text.replace(placeholder, column);
    }
    // Filled per privilege by `database_statement`; unknown unless the role may read files.
    text.replace("{{database_created}}", "NULL::timestamptz")
}

/// The statements the session and lock checks add to an audit, as run on this server: what
/// the `audit_sessions` benchmark times.
pub fn session_statements(version_num: u32) -> [(&'static str, String); 3] {
    [
        ("activity", statement_for(ACTIVITY_SQL, version_num)),
        ("locks", statement_for(SESSION_LOCKS_SQL, version_num)),
        (
            "recovery conflicts",
            statement_for(CONFLICTS_SQL, version_num),
        ),
    ]
}

/// audit_database.sql for this role: a superuser may stat the database's `PG_VERSION` file
/// (written by CREATE DATABASE), which dates the database; `pg_stat_file` is superuser-only by
/// default, and it fails rather than returning null without the privilege, so other roles do
/// not call it. A database in another tablespace keeps its files elsewhere: unknown.
fn database_statement(version_num: u32, superuser: bool) -> String {
    let created = if superuser {
        "CASE WHEN d.dattablespace = (SELECT t.oid FROM pg_tablespace t WHERE t.spcname = \
         'pg_default') THEN (pg_stat_file('base/' || d.oid || '/PG_VERSION', true)).modification END"
    } else {
        "NULL::timestamptz"
    };
    statement_for(
        &DATABASE_SQL.replace("{{database_created}}", created),
        version_num,
    )
}

/// A second connection to the same node, for reading a large catalog's indexes beside
/// everything else: the server runs one connection's statements one after another, and on
/// 50,000 indexes the index statement alone takes as long as all the others together.
pub struct Helper<'a> {
    /// The connection, being opened meanwhile; `None` if it could not be.
    pub connection: std::pin::Pin<Box<dyn Future<Output = Option<Connection>> + Send + 'a>>,
    pub limits: Limits,
}

/// How long the audit waits for the helper to be connected and inside a transaction on the
/// audit's snapshot before reading the indexes itself: a transaction-mode pooler whose pool the
/// audit's own transaction has exhausted would queue the helper until its timeout (PgBouncer's
/// query_wait_timeout, two minutes by default).
const HELPER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads everything the audit needs from one node, in the caller's read-only transaction, which
/// is REPEATABLE READ when there is a `helper`: it exports its snapshot (`pg_export_snapshot()`,
/// which takes no transaction id and works on a standby), the helper imports it, and both read
/// the catalog as of one moment.
pub async fn read_snapshot(
    client: &tokio_postgres::Client,
    facts: &ServerFacts,
    scope: &Scope,
    helper: Option<Helper<'_>>,
) -> Result<NodeSnapshot, CatalogError> {
    if facts.version_num < MIN_VERSION_NUM {
        return Err(CatalogError::Unsupported {
            version: facts.version.clone(),
        });
    }
    let v = facts.version_num;
    let (table_schemas, table_names) = scope.table_filters();
    let scope_params: [(&(dyn ToSql + Sync), Type); 4] = [
        (&scope.schemas, Type::TEXT_ARRAY),
        (&scope.exclude_schemas, Type::TEXT_ARRAY),
        (&table_schemas, Type::TEXT_ARRAY),
        (&table_names, Type::TEXT_ARRAY),
    ];
    // The helper connects while the first round trip runs.
    let mut helper = helper.map(|h| {
        (
            Box::pin(futures_util::future::maybe_done(h.connection)),
            h.limits,
        )
    });
    let first = first_round(client, facts, helper.as_mut().map(|(c, _)| c)).await?;
    let settings = settings(&first.settings);
    let (now, database) = first
        .database
        .into_iter()
        .next()
        .ok_or(CatalogError::Query {
            what: "database statistics",
            message: "no row for the current database".into(),
        })?;
    // pg_stats checks every column's privilege and joins by name; pg_statistic is three times
    // faster on a large catalog but readable only by superusers (not by pg_monitor).
    let columns_sql = if facts.superuser {
        COLUMNS_STATISTIC_SQL
    } else {
        COLUMNS_SQL
    };
    let helper = match (helper, first.snapshot_id) {
        (Some((connecting, limits)), Some(snapshot_id)) => Some(SharedRead {
            connecting,
            limits,
            snapshot_id,
        }),
        _ => None,
    };
    let indexes = read_indexes(client, v, &scope_params, now, helper);
    let (
        tables,
        columns,
        foreign_keys,
        sessions,
        replication_slots,
        prepared_xacts,
        standbys,
        index_builds,
        backends,
        session_locks,
        recovery_conflicts,
        mut indexes,
    ) = futures_util::try_join!(
        run(client, "tables", TABLES_SQL, v, &scope_params, |r| {
            table(r, now)
        }),
        run(client, "columns", columns_sql, v, &scope_params, column),
        run(
            client,
            "foreign keys",
            FOREIGN_KEYS_SQL,
            v,
            &scope_params,
            foreign_key,
        ),
        run(client, "sessions", SESSIONS_SQL, v, &[], session),
        run(client, "replication slots", SLOTS_SQL, v, &[], |r| {
            slot(r, now)
        }),
        run(
            client,
            "prepared transactions",
            PREPARED_SQL,
            v,
            &[],
            prepared,
        ),
        run(client, "standbys", STANDBYS_SQL, v, &[], standby),
        run(
            client,
            "index builds",
            INDEX_BUILDS_SQL,
            v,
            &[],
            index_build,
        ),
        run(client, "activity", ACTIVITY_SQL, v, &[], backend),
        run(client, "locks", SESSION_LOCKS_SQL, v, &[], session_lock),
        run(
            client,
            "recovery conflicts",
            CONFLICTS_SQL,
            v,
            &[],
            recovery_conflicts
        ),
        indexes,
    )?;
    name_columns(&mut indexes, &columns);

    let server = server_info(facts, now);
    let privileges_missing = privileges_missing(&server, &tables, &columns);
    let mut snapshot = NodeSnapshot {
        server,
        settings,
        database,
        tables,
        indexes,
        columns,
        foreign_keys,
        sessions,
        replication_slots,
        prepared_xacts,
        standbys,
        index_builds,
        backends,
        session_locks,
        recovery_conflicts: recovery_conflicts.into_iter().next(),
        privileges_missing,
    };
    deparse_definitions(client, v, &mut snapshot, now).await?;
    Ok(snapshot)
}

/// The helper connection while it is being opened, kept so a round trip can run meanwhile.
type Connecting<'a> = std::pin::Pin<
    Box<
        futures_util::future::MaybeDone<
            std::pin::Pin<Box<dyn Future<Output = Option<Connection>> + Send + 'a>>,
        >,
    >,
>;

/// No parallel workers for the catalog reads: each worker is a process started per statement,
/// whose start-up and extra CPU a cron job's few catalog scans rarely repay in wall time (the
/// audit_scale benchmark runs the largest statements both ways).
/// On 15+ (shared-memory statistics), every counter is read from one snapshot of the
/// database's statistics taken at the first read: the tables' and the indexes' counters are of
/// the same moment, and each of the 100,000 lookups at fleet scale is a local hash probe
/// instead of a lookup in shared memory under a lock. Before 15 the statistics collector's file
/// is always read whole into such a snapshot, and the setting does not exist.
/// Transaction-local, like every setting.
fn catalog_read_settings(version_num: u32) -> &'static str {
    if version_num >= 150_000 {
        "SET LOCAL max_parallel_workers_per_gather = 0; \
         SET LOCAL stats_fetch_consistency = snapshot"
    } else {
        "SET LOCAL max_parallel_workers_per_gather = 0"
    }
}

async fn set_catalog_read_settings(
    client: &tokio_postgres::Client,
    version_num: u32,
) -> Result<(), CatalogError> {
    client
        .batch_execute(catalog_read_settings(version_num))
        .await
        .map_err(|e| CatalogError::Query {
            what: "settings",
            message: describe(&e),
        })
}

/// What the first round trip reads.
struct FirstRound {
    settings: Vec<(String, String)>,
    database: Vec<(f64, DatabaseInfo)>,
    /// The exported snapshot, when a helper is to share it.
    snapshot_id: Option<String>,
}

/// The first round trip: the settings above, the server's settings, the clock with the
/// database's statistics, and the snapshot the helper imports (when there is one, which
/// connects meanwhile). Statements are sent together: tokio-postgres pipelines the requests of
/// one connection, in the order they are first polled.
async fn first_round(
    client: &tokio_postgres::Client,
    facts: &ServerFacts,
    connecting: Option<&mut Connecting<'_>>,
) -> Result<FirstRound, CatalogError> {
    let v = facts.version_num;
    let database_sql = database_statement(v, facts.superuser);
    let setting_names: Vec<String> = SETTING_NAMES.iter().map(|s| s.to_string()).collect();
    let settings_params: [(&(dyn ToSql + Sync), Type); 1] = [(&setting_names, Type::TEXT_ARRAY)];
    let sharing = connecting.is_some();
    let export = async move {
        if !sharing {
            return Ok(None);
        }
        let rows = client
            .query_typed("SELECT pg_export_snapshot()", &[])
            .await
            .map_err(|e| CatalogError::Query {
                what: "the snapshot to share",
                message: describe(&e),
            })?;
        Ok(rows.first().and_then(|r| r.get::<_, Option<String>>(0)))
    };
    let round = async {
        futures_util::try_join!(
            set_catalog_read_settings(client, v),
            run(
                client,
                "settings",
                SETTINGS_SQL,
                v,
                &settings_params,
                setting
            ),
            run(
                client,
                "database statistics",
                &database_sql,
                v,
                &[],
                database
            ),
            export,
        )
    };
    let round = std::pin::pin!(round);
    let ((), settings, database, snapshot_id) = match connecting {
        Some(connecting) => match futures_util::future::select(round, connecting.as_mut()).await {
            futures_util::future::Either::Left((read, _)) => read,
            futures_util::future::Either::Right(((), round)) => round.await,
        },
        None => round.await,
    }?;
    Ok(FirstRound {
        settings,
        database,
        snapshot_id,
    })
}

/// The helper connection and the snapshot it is to read the indexes in.
struct SharedRead<'a> {
    connecting: Connecting<'a>,
    limits: Limits,
    snapshot_id: String,
}

/// The indexes, read on the helper connection in the exported snapshot when it is ready within
/// [`HELPER_WAIT`] and the server takes the snapshot, on `client` otherwise.
async fn read_indexes(
    client: &tokio_postgres::Client,
    v: u32,
    scope_params: &[(&(dyn ToSql + Sync), Type)],
    now: f64,
    helper: Option<SharedRead<'_>>,
) -> Result<Vec<Index>, CatalogError> {
    let here = async || {
        run(client, "indexes", INDEXES_SQL, v, scope_params, |r| {
            index(r, now)
        })
        .await
    };
    let Some(SharedRead {
        mut connecting,
        limits,
        snapshot_id,
    }) = helper
    else {
        return here().await;
    };
    let ready = tokio::time::timeout(HELPER_WAIT, connecting.as_mut()).await;
    let Some(mut connection) = ready
        .ok()
        .and_then(|()| connecting.as_mut().take_output())
        .flatten()
    else {
        return here().await;
    };
    // The same transaction-local settings as this connection's; on 15+ its statistics
    // snapshot is its own, taken a few milliseconds from this one's.
    let read =
        connection.read_only_imported(&limits, &snapshot_id, HELPER_WAIT, async |helper_client| {
            if let Err(e) = set_catalog_read_settings(helper_client, v).await {
                return Ok(Err(e));
            }
            Ok(run(
                helper_client,
                "indexes",
                INDEXES_SQL,
                v,
                scope_params,
                |r| index(r, now),
            )
            .await)
        });
    match read.await {
        Ok(Some(read)) => read,
        Err(e) => Err(CatalogError::Query {
            what: "indexes",
            message: e.to_string(),
        }),
        // Not imported (the server refused the snapshot), or not begun in time.
        Ok(None) => {
            drop(connection);
            here().await
        }
    }
}

/// The server's facts as the snapshot holds them, its start time dated from `now`.
fn server_info(facts: &ServerFacts, now: f64) -> ServerInfo {
    ServerInfo {
        version_num: facts.version_num,
        version: facts.version.clone(),
        in_recovery: facts.in_recovery,
        system_identifier: facts.system_identifier.clone(),
        database: facts.database.clone(),
        user: facts.user.clone(),
        superuser: facts.superuser,
        pg_monitor: facts.pg_monitor,
        pg_read_all_stats: facts.pg_read_all_stats,
        started_at: facts.uptime_seconds.map(|up| Timestamp {
            epoch_seconds: now - up,
            age_seconds: up,
        }),
    }
}

/// Fills in the text of the indexes a finding may quote ([`crate::audit::deparse`]), without
/// ever waiting behind a lock: relations held (or awaited) in ACCESS EXCLUSIVE mode are left out
/// and their indexes marked unread with the holder; the rest are deparsed in batches inside a
/// savepoint with a short lock_timeout, rolled back afterwards so the ACCESS SHARE locks the
/// deparsing takes are released at once (100,000 expression indexes never hold 100,000 locks).
/// A lock that appears between reading pg_locks and deparsing fails the batch within the
/// timeout: the locks are read again and the batch retried without the newly locked relations.
async fn deparse_definitions(
    client: &tokio_postgres::Client,
    version_num: u32,
    snapshot: &mut NodeSnapshot,
    now: f64,
) -> Result<(), CatalogError> {
    let wanted = crate::audit::deparse::indexes_to_deparse(snapshot);
    if wanted.is_empty() {
        return Ok(());
    }
    let position: HashMap<u32, usize> = snapshot
        .indexes
        .iter()
        .enumerate()
        .map(|(i, index)| (index.oid, i))
        .collect();
    let mut locks = read_locks(client, version_num, now).await?;
    for batch in wanted.chunks(DEPARSE_BATCH) {
        let mut attempt = 0;
        loop {
            let mut todo: Vec<u32> = Vec::new();
            for oid in batch {
                let index = &mut snapshot.indexes[position[oid]];
                match locks
                    .get(&index.table_oid)
                    .or_else(|| locks.get(&index.oid))
                {
                    Some(holder) => index.unread = Some(Box::new(holder.clone())),
                    None => todo.push(*oid),
                }
            }
            if todo.is_empty() {
                break;
            }
            match deparse_batch(client, version_num, &todo).await {
                Ok(rows) => {
                    for row in rows {
                        let Some(&i) = position.get(&row.index_oid) else {
                            continue;
                        };
                        apply_definitions(&mut snapshot.indexes[i], row);
                    }
                    break;
                }
                Err(DeparseError::LockTimeout) if attempt < DEPARSE_RETRIES => {
                    attempt += 1;
                    locks = read_locks(client, version_num, now).await?;
                }
                Err(DeparseError::LockTimeout) => {
                    // Locks that come and go faster than the audit can look: give up on this
                    // batch's text, not on the audit.
                    for oid in &todo {
                        let index = &mut snapshot.indexes[position[oid]];
                        index.unread = Some(Box::new(LockHolder {
                            relation_oid: index.table_oid,
                            ..LockHolder::default()
                        }));
                    }
                    break;
                }
                Err(DeparseError::Failed(e)) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Relations another session or a prepared transaction holds or awaits in ACCESS EXCLUSIVE
/// mode, by oid; a holder is preferred to a waiter when both exist.
async fn read_locks(
    client: &tokio_postgres::Client,
    version_num: u32,
    now: f64,
) -> Result<HashMap<u32, LockHolder>, CatalogError> {
    let rows = run(client, "locks", LOCKS_SQL, version_num, &[], |r| {
        const W: &str = "locks";
        Ok(LockHolder {
            relation_oid: oid(r, W, "relation_oid")?,
            pid: get(r, W, "pid")?,
            gid: get(r, W, "gid")?,
            granted: flag(r, W, "granted")?,
            since: time(r, W, "since_epoch", now)?,
        })
    })
    .await?;
    let mut locks: HashMap<u32, LockHolder> = HashMap::new();
    for holder in rows {
        match locks.get(&holder.relation_oid) {
            Some(known) if known.granted || !holder.granted => {}
            _ => {
                locks.insert(holder.relation_oid, holder);
            }
        }
    }
    Ok(locks)
}

struct Definitions {
    index_oid: u32,
    expressions: Vec<Option<String>>,
    predicate: Option<String>,
    definition: Option<String>,
}

enum DeparseError {
    LockTimeout,
    Failed(CatalogError),
}

/// One batch deparsed inside a savepoint that is always rolled back: the locks deparsing took
/// and the short lock_timeout go with it.
async fn deparse_batch(
    client: &tokio_postgres::Client,
    version_num: u32,
    oids: &[u32],
) -> Result<Vec<Definitions>, DeparseError> {
    const W: &str = "index definitions";
    let failed = |e: tokio_postgres::Error| {
        DeparseError::Failed(CatalogError::Query {
            what: W,
            message: describe(&e),
        })
    };
    client
        .batch_execute(&format!(
            "SAVEPOINT pgplan_deparse; SET LOCAL lock_timeout = '{DEPARSE_LOCK_TIMEOUT}'"
        ))
        .await
        .map_err(failed)?;
    let oids: Vec<u32> = oids.to_vec();
    let result = run(
        client,
        W,
        INDEX_DEFINITIONS_SQL,
        version_num,
        &[(&oids, Type::OID_ARRAY)],
        |r| {
            Ok(Definitions {
                index_oid: oid(r, W, "index_oid")?,
                expressions: array::<String>(r, W, "expression_definitions")?,
                predicate: get(r, W, "predicate")?,
                definition: get(r, W, "definition")?,
            })
        },
    )
    .await;
    client
        .batch_execute("ROLLBACK TO SAVEPOINT pgplan_deparse; RELEASE SAVEPOINT pgplan_deparse")
        .await
        .map_err(failed)?;
    match result {
        Ok(rows) => Ok(rows),
        // 55P03 lock_not_available: the lock_timeout above.
        Err(CatalogError::Query { message, .. }) if message.contains("55P03") => {
            Err(DeparseError::LockTimeout)
        }
        Err(e) => Err(DeparseError::Failed(e)),
    }
}

fn apply_definitions(index: &mut Index, row: Definitions) {
    for (column, text) in index.columns.iter_mut().zip(row.expressions) {
        if column.attnum == 0
            && let Some(text) = text
        {
            column.definition = text;
        }
    }
    if index.predicate_tree.is_some() {
        index.predicate = row.predicate;
    }
    index.definition = row.definition;
}

/// What this role cannot see, and which check loses what because of it.
fn privileges_missing(
    server: &ServerInfo,
    tables: &[Table],
    columns: &[Column],
) -> Vec<PrivilegeGap> {
    let mut gaps = Vec::new();
    if server.superuser {
        return gaps;
    }
    if !server.pg_read_all_stats {
        gaps.push(PrivilegeGap {
            check: "xmin_horizon".into(),
            lost: "sessions and walsenders of other roles hide their xmin, state and query \
                   (pg_stat_activity, pg_stat_replication need pg_read_all_stats or pg_monitor)"
                .into(),
        });
        gaps.push(PrivilegeGap {
            check: "advisory_lock, idle_in_transaction, lock_queue".into(),
            lost: "other roles' sessions hide their state, query and client address \
                   (pg_stat_activity needs pg_read_all_stats or pg_monitor): their idle lock \
                   holders and lock waits are not seen, though they count against the \
                   connection slots"
                .into(),
        });
        gaps.push(PrivilegeGap {
            check: "invalid_index".into(),
            lost: "index builds run by other roles are hidden in pg_stat_progress_create_index, \
                   so their invalid indexes look failed"
                .into(),
        });
    }
    if server.system_identifier.is_none() {
        gaps.push(PrivilegeGap {
            check: "nodes".into(),
            lost: "pg_control_system() is not executable: whether the nodes are one cluster \
                   cannot be checked"
                .into(),
        });
    }
    // pg_stats shows only columns the role may SELECT; pg_monitor grants none.
    let with_stats: HashSet<u32> = columns
        .iter()
        .filter(|c| c.avg_width.is_some())
        .map(|c| c.table_oid)
        .collect();
    let hidden = tables
        .iter()
        .filter(|t| t.kind != TableKind::Partitioned && t.reltuples > 0.0)
        .filter(|t| !with_stats.contains(&t.oid))
        .count();
    if hidden > 0 {
        gaps.push(PrivilegeGap {
            check: "table_bloat, index_bloat".into(),
            lost: format!(
                "{hidden} table(s) with rows show no column statistics: pg_stats lists only \
                 columns this role may SELECT (or they were never analyzed), so their bloat is \
                 estimated from fixed-width columns only, or not at all"
            ),
        });
    }
    gaps
}

/// Runs one statement and decodes its rows as they arrive, so a large catalog is never held
/// twice (as raw rows and as decoded ones).
async fn run<T>(
    client: &tokio_postgres::Client,
    what: &'static str,
    sql: &str,
    version_num: u32,
    params: &[(&(dyn ToSql + Sync), Type)],
    mut decode: impl FnMut(&Cells) -> Result<T, CatalogError>,
) -> Result<Vec<T>, CatalogError> {
    let failed = |e: tokio_postgres::Error| CatalogError::Query {
        what,
        message: describe(&e),
    };
    let stream = client
        .query_typed_raw(
            &statement_for(sql, version_num),
            params.iter().map(|(value, ty)| (*value, ty.clone())),
        )
        .await
        .map_err(failed)?;
    let mut stream = std::pin::pin!(stream);
    let mut decoded = Vec::new();
    let mut positions: Option<Positions> = None;
    while let Some(row) = stream.try_next().await.map_err(failed)? {
        let positions = positions.get_or_insert_with(|| Positions::of(&row));
        decoded.push(decode(&Cells {
            row: &row,
            positions,
        })?);
    }
    // A vector grown by doubling holds up to twice its rows: 15,000 index rows' worth of slack
    // at 50,000, kept for the whole audit.
    decoded.shrink_to_fit();
    Ok(decoded)
}

/// A row with its statement's column positions. `Row::get` by name compares the name with the
/// statement's column names one by one, for every value of every row (50,000 index rows of 35
/// columns at fleet scale); the positions are found once per statement instead.
struct Cells<'a> {
    row: &'a Row,
    positions: &'a Positions,
}

/// Where each column of a statement's rows is, by name (every row of a statement has the same
/// columns).
struct Positions(HashMap<String, usize>);

impl Positions {
    fn of(row: &Row) -> Positions {
        let columns = row.columns();
        let mut positions = HashMap::with_capacity(columns.len());
        for (i, column) in columns.iter().enumerate() {
            // The first of two columns with one name, as `Row::get` would find it.
            positions.entry(column.name().to_owned()).or_insert(i);
        }
        Positions(positions)
    }
}

/// A column that may be NULL, decoded without panicking.
fn get<'a, T: FromSql<'a>>(
    row: &Cells<'a>,
    what: &'static str,
    column: &'static str,
) -> Result<Option<T>, CatalogError> {
    let value = match row.positions.0.get(column) {
        Some(&i) => row.row.try_get::<_, Option<T>>(i),
        // Not a column of the statement: the error names it.
        None => row.row.try_get::<_, Option<T>>(column),
    };
    value.map_err(|e| CatalogError::Decode {
        what,
        column,
        message: e.to_string(),
    })
}

fn text(row: &Cells, what: &'static str, column: &'static str) -> Result<String, CatalogError> {
    Ok(get::<String>(row, what, column)?.unwrap_or_default())
}

fn flag(row: &Cells, what: &'static str, column: &'static str) -> Result<bool, CatalogError> {
    Ok(get::<bool>(row, what, column)?.unwrap_or(false))
}

fn oid(row: &Cells, what: &'static str, column: &'static str) -> Result<u32, CatalogError> {
    Ok(get::<u32>(row, what, column)?.unwrap_or(0))
}

fn array<'a, T: FromSql<'a>>(
    row: &Cells<'a>,
    what: &'static str,
    column: &'static str,
) -> Result<Vec<Option<T>>, CatalogError> {
    Ok(get::<Vec<Option<T>>>(row, what, column)?.unwrap_or_default())
}

/// An epoch-seconds column as a timestamp aged against the snapshot's `now()`.
fn time(
    row: &Cells,
    what: &'static str,
    column: &'static str,
    now: f64,
) -> Result<Option<Timestamp>, CatalogError> {
    Ok(get::<f64>(row, what, column)?.map(|epoch| Timestamp {
        epoch_seconds: epoch,
        age_seconds: now - epoch,
    }))
}

fn setting(row: &Cells) -> Result<(String, String), CatalogError> {
    Ok((
        text(row, "settings", "name")?,
        text(row, "settings", "setting")?,
    ))
}

fn settings(rows: &[(String, String)]) -> Settings {
    // Settings absent on this version keep no value where the field is optional.
    let mut s = Settings {
        autovacuum_vacuum_insert_threshold: None,
        autovacuum_vacuum_insert_scale_factor: None,
        ..Settings::default()
    };
    for (name, value) in rows {
        let number = value.parse::<f64>().ok();
        let on = value == "on";
        match name.as_str() {
            "autovacuum" => s.autovacuum = on,
            "track_counts" => s.track_counts = on,
            "hot_standby_feedback" => s.hot_standby_feedback = on,
            "autovacuum_vacuum_threshold" => {
                s.autovacuum_vacuum_threshold = number.unwrap_or(s.autovacuum_vacuum_threshold)
            }
            "autovacuum_vacuum_scale_factor" => {
                s.autovacuum_vacuum_scale_factor =
                    number.unwrap_or(s.autovacuum_vacuum_scale_factor)
            }
            "autovacuum_vacuum_insert_threshold" => s.autovacuum_vacuum_insert_threshold = number,
            "autovacuum_vacuum_insert_scale_factor" => {
                s.autovacuum_vacuum_insert_scale_factor = number
            }
            "autovacuum_vacuum_max_threshold" => s.autovacuum_vacuum_max_threshold = number,
            "autovacuum_analyze_threshold" => {
                s.autovacuum_analyze_threshold = number.unwrap_or(s.autovacuum_analyze_threshold)
            }
            "autovacuum_analyze_scale_factor" => {
                s.autovacuum_analyze_scale_factor =
                    number.unwrap_or(s.autovacuum_analyze_scale_factor)
            }
            "autovacuum_freeze_max_age" => {
                s.autovacuum_freeze_max_age = number.unwrap_or(s.autovacuum_freeze_max_age)
            }
            "autovacuum_multixact_freeze_max_age" => {
                s.autovacuum_multixact_freeze_max_age =
                    number.unwrap_or(s.autovacuum_multixact_freeze_max_age)
            }
            "block_size" => s.block_size_bytes = number.unwrap_or(s.block_size_bytes),
            "max_connections" => s.max_connections = number.unwrap_or(s.max_connections),
            "superuser_reserved_connections" => {
                s.superuser_reserved_connections =
                    number.unwrap_or(s.superuser_reserved_connections)
            }
            "reserved_connections" => s.reserved_connections = number,
            "idle_in_transaction_session_timeout" => {
                s.idle_in_transaction_session_timeout_ms =
                    number.unwrap_or(s.idle_in_transaction_session_timeout_ms)
            }
            _ => {}
        }
    }
    s
}

/// Since when the current database's table and index counters have been counting, by the
/// audit's rules ([`crate::audit::StatsWindow`]), for rates per day outside an audit.
pub async fn read_stats_window(
    client: &tokio_postgres::Client,
    facts: &ServerFacts,
) -> Result<Option<crate::audit::StatsWindow>, CatalogError> {
    let database_sql = database_statement(facts.version_num, facts.superuser);
    let (now, db) = run(
        client,
        "database statistics",
        &database_sql,
        facts.version_num,
        &[],
        database,
    )
    .await?
    .into_iter()
    .next()
    .ok_or(CatalogError::Query {
        what: "database statistics",
        message: "no row for the current database".into(),
    })?;
    let started = facts.uptime_seconds.map(|up| Timestamp {
        epoch_seconds: now - up,
        age_seconds: up,
    });
    Ok(crate::audit::StatsWindow::from_evidence(
        facts.version_num,
        &db,
        started,
    ))
}

fn database(row: &Cells) -> Result<(f64, DatabaseInfo), CatalogError> {
    const W: &str = "database statistics";
    let now = get::<f64>(row, W, "now_epoch")?.unwrap_or(0.0);
    // The earliest of the server-wide reset times bounds the last time statistics were
    // discarded (each may also have been reset on its own, later).
    let shared = [
        "bgwriter_stats_reset_epoch",
        "archiver_stats_reset_epoch",
        "checkpointer_stats_reset_epoch",
    ]
    .into_iter()
    .map(|c| time(row, W, c, now))
    .collect::<Result<Vec<_>, _>>()?
    .into_iter()
    .flatten()
    .min_by(|a, b| a.epoch_seconds.total_cmp(&b.epoch_seconds));
    Ok((
        now,
        DatabaseInfo {
            stats_reset: time(row, W, "database_stats_reset_epoch", now)?,
            shared_stats_reset: shared,
            frozen_xid_age: get(row, W, "frozen_xid_age")?,
            multixact_age: get(row, W, "multixact_age")?,
            created: time(row, W, "database_created_epoch", now)?,
        },
    ))
}

fn table(row: &Cells, now: f64) -> Result<Table, CatalogError> {
    const W: &str = "tables";
    let kind = match text(row, W, "kind")?.as_str() {
        "m" => TableKind::MaterializedView,
        "p" => TableKind::Partitioned,
        _ => TableKind::Table,
    };
    Ok(Table {
        oid: oid(row, W, "table_oid")?,
        schema: text(row, W, "schema_name")?,
        name: text(row, W, "table_name")?,
        kind,
        unlogged: text(row, W, "persistence")? == "u",
        relpages: get(row, W, "relpages")?.unwrap_or(0),
        reltuples: get(row, W, "reltuples")?.unwrap_or(-1.0),
        relallvisible: get(row, W, "relallvisible")?.unwrap_or(0),
        reloptions: array::<String>(row, W, "reloptions")?
            .into_iter()
            .flatten()
            .collect(),
        heap_bytes: get(row, W, "heap_bytes")?,
        table_bytes: get(row, W, "table_bytes")?,
        frozen_xid_age: get(row, W, "frozen_xid_age")?,
        multixact_age: get(row, W, "multixact_age")?,
        stats: TableStats {
            n_tup_ins: get(row, W, "n_tup_ins")?,
            n_tup_upd: get(row, W, "n_tup_upd")?,
            n_tup_hot_upd: get(row, W, "n_tup_hot_upd")?,
            n_tup_del: get(row, W, "n_tup_del")?,
            n_live_tup: get(row, W, "n_live_tup")?,
            n_dead_tup: get(row, W, "n_dead_tup")?,
            n_mod_since_analyze: get(row, W, "n_mod_since_analyze")?,
            n_ins_since_vacuum: get(row, W, "n_ins_since_vacuum")?,
            last_vacuum: time(row, W, "last_vacuum_epoch", now)?,
            last_autovacuum: time(row, W, "last_autovacuum_epoch", now)?,
            last_analyze: time(row, W, "last_analyze_epoch", now)?,
            last_autoanalyze: time(row, W, "last_autoanalyze_epoch", now)?,
            analyze_count: get(row, W, "analyze_count")?,
            autoanalyze_count: get(row, W, "autoanalyze_count")?,
        },
        parent_oid: get(row, W, "parent_oid")?,
        inherited_statistics: get(row, W, "inherited_statistics")?,
        toast: match get::<u32>(row, W, "toast_oid")? {
            None => None,
            Some(toast_oid) => Some(ToastTable {
                oid: toast_oid,
                name: text(row, W, "toast_name")?,
                relpages: get(row, W, "toast_relpages")?.unwrap_or(0),
                reltuples: get(row, W, "toast_reltuples")?.unwrap_or(-1.0),
                reloptions: array::<String>(row, W, "toast_reloptions")?
                    .into_iter()
                    .flatten()
                    .collect(),
                stats: TableStats {
                    n_live_tup: get(row, W, "toast_n_live_tup")?,
                    n_dead_tup: get(row, W, "toast_n_dead_tup")?,
                    n_ins_since_vacuum: get(row, W, "toast_n_ins_since_vacuum")?,
                    last_vacuum: time(row, W, "toast_last_vacuum_epoch", now)?,
                    last_autovacuum: time(row, W, "toast_last_autovacuum_epoch", now)?,
                    ..TableStats::default()
                },
            }),
        },
    })
}

/// Names each plain index column as pg_get_indexdef would (quoted when needed), from the
/// columns read beside the indexes; an expression's text is deparsed later, only if a finding
/// quotes it.
fn name_columns(indexes: &mut [Index], columns: &[Column]) {
    let names: HashMap<(u32, i16), &str> = columns
        .iter()
        .map(|c| ((c.table_oid, c.attnum), c.name.as_str()))
        .collect();
    for index in indexes {
        for column in &mut index.columns {
            if column.attnum != 0 {
                column.definition = names
                    .get(&(index.table_oid, column.attnum))
                    .map(|n| crate::sql::quote_ident(n))
                    .unwrap_or_else(|| format!("column {}", column.attnum));
            }
        }
    }
}

/// An index row; its plain columns are named by [`name_columns`] once the columns are read.
fn index(row: &Cells, now: f64) -> Result<Index, CatalogError> {
    const W: &str = "indexes";
    let table_oid = oid(row, W, "table_oid")?;
    let attnums = array::<i16>(row, W, "attnums")?;
    let opclasses = array::<u32>(row, W, "opclasses")?;
    let collations = array::<u32>(row, W, "collations")?;
    let options = array::<i16>(row, W, "options")?;
    let trees = get::<String>(row, W, "expression_trees")?;
    // indexprs holds one node per expression column, in column order.
    let mut expressions = trees
        .as_deref()
        .map(crate::audit::deparse::list_elements)
        .unwrap_or_default()
        .into_iter()
        .map(crate::audit::deparse::without_locations);
    // indkey covers every column; indclass, indcollation and indoption only the key columns
    // (INCLUDE columns have no operator class).
    let columns = (0..attnums.len())
        .map(|i| {
            let attnum = attnums.get(i).copied().flatten().unwrap_or(0);
            if attnum != 0 {
                (attnum, String::new(), None)
            } else {
                (attnum, String::new(), expressions.next())
            }
        })
        .enumerate()
        .map(|(i, (attnum, definition, expression))| IndexColumn {
            definition,
            expression,
            attnum,
            opclass: opclasses.get(i).copied().flatten().unwrap_or(0),
            collation: collations.get(i).copied().flatten().unwrap_or(0),
            option: options.get(i).copied().flatten().unwrap_or(0),
        })
        .collect();
    let constraint = match (
        get::<String>(row, W, "constraint_name")?,
        get::<String>(row, W, "constraint_type")?,
    ) {
        (Some(name), Some(kind)) => Some(IndexConstraint {
            name,
            kind: kind.chars().next().unwrap_or('?'),
        }),
        _ => None,
    };
    Ok(Index {
        oid: oid(row, W, "index_oid")?,
        table_oid,
        schema: text(row, W, "schema_name")?,
        table: text(row, W, "table_name")?,
        name: text(row, W, "index_name")?,
        access_method: text(row, W, "access_method")?,
        unique: flag(row, W, "indisunique")?,
        primary: flag(row, W, "indisprimary")?,
        exclusion: flag(row, W, "indisexclusion")?,
        replica_identity: flag(row, W, "indisreplident")?,
        nulls_not_distinct: flag(row, W, "indnullsnotdistinct")?,
        // Absent means immediate: only a DEFERRABLE constraint's index has it false.
        immediate: get::<bool>(row, W, "indimmediate")?.unwrap_or(true),
        valid: flag(row, W, "indisvalid")?,
        ready: flag(row, W, "indisready")?,
        live: flag(row, W, "indislive")?,
        partitioned: flag(row, W, "partitioned")?,
        partition_child: flag(row, W, "partition_child")?,
        columns,
        key_column_count: get::<i32>(row, W, "key_column_count")?.unwrap_or(0).max(0) as usize,
        predicate: None,
        predicate_tree: get::<String>(row, W, "predicate_tree")?
            .map(|t| crate::audit::deparse::without_locations(&t)),
        constraint,
        reloptions: array::<String>(row, W, "reloptions")?
            .into_iter()
            .flatten()
            .collect(),
        relpages: get(row, W, "relpages")?.unwrap_or(0),
        reltuples: get(row, W, "reltuples")?.unwrap_or(-1.0),
        size_bytes: get(row, W, "size_bytes")?,
        scans: get(row, W, "idx_scan")?,
        last_scan: time(row, W, "last_idx_scan_epoch", now)?,
        definition: None,
        unread: None,
        parent_index_oid: get(row, W, "parent_index_oid")?,
    })
}

fn column(row: &Cells) -> Result<Column, CatalogError> {
    const W: &str = "columns";
    Ok(Column {
        table_oid: oid(row, W, "table_oid")?,
        attnum: get(row, W, "attnum")?.unwrap_or(0),
        name: text(row, W, "column_name")?,
        type_length: get(row, W, "type_length")?.unwrap_or(-1),
        type_align: text(row, W, "type_align")?.chars().next().unwrap_or('c'),
        not_null: flag(row, W, "not_null")?,
        dropped: flag(row, W, "dropped")?,
        null_frac: get(row, W, "null_frac")?,
        avg_width: get(row, W, "avg_width")?,
        n_distinct: get(row, W, "n_distinct")?,
    })
}

fn foreign_key(row: &Cells) -> Result<ForeignKey, CatalogError> {
    const W: &str = "foreign keys";
    Ok(ForeignKey {
        name: text(row, W, "constraint_name")?,
        table_oid: oid(row, W, "table_oid")?,
        schema: text(row, W, "schema_name")?,
        table: text(row, W, "table_name")?,
        referenced_table_oid: oid(row, W, "referenced_table_oid")?,
        referenced_schema: text(row, W, "referenced_schema")?,
        referenced_table: text(row, W, "referenced_table")?,
        attnums: array::<i16>(row, W, "attnums")?
            .into_iter()
            .flatten()
            .collect(),
        column_names: array::<String>(row, W, "column_names")?
            .into_iter()
            .flatten()
            .collect(),
        referenced_index_oid: oid(row, W, "referenced_index_oid")?,
        inherited: flag(row, W, "inherited")?,
    })
}

fn session(row: &Cells) -> Result<Session, CatalogError> {
    const W: &str = "sessions";
    Ok(Session {
        pid: get(row, W, "pid")?.unwrap_or(0),
        database: get(row, W, "database_name")?,
        user: get(row, W, "user_name")?,
        application_name: get(row, W, "application_name")?,
        client_addr: get(row, W, "client_addr")?,
        backend_type: get(row, W, "backend_type")?,
        state: get(row, W, "state")?,
        xact_age_seconds: get(row, W, "xact_age_seconds")?,
        state_age_seconds: get(row, W, "state_age_seconds")?,
        xmin_age_xids: get(row, W, "xmin_age_xids")?,
        xid_age_xids: get(row, W, "xid_age_xids")?,
        query: get(row, W, "query")?,
    })
}

fn slot(row: &Cells, now: f64) -> Result<ReplicationSlot, CatalogError> {
    const W: &str = "replication slots";
    Ok(ReplicationSlot {
        name: text(row, W, "slot_name")?,
        slot_type: text(row, W, "slot_type")?,
        database: get(row, W, "database_name")?,
        temporary: flag(row, W, "temporary")?,
        active: flag(row, W, "active")?,
        active_pid: get(row, W, "active_pid")?,
        xmin_age_xids: get(row, W, "xmin_age_xids")?,
        catalog_xmin_age_xids: get(row, W, "catalog_xmin_age_xids")?,
        retained_wal_bytes: get(row, W, "retained_wal_bytes")?,
        wal_status: get(row, W, "wal_status")?,
        inactive_since: time(row, W, "inactive_since_epoch", now)?,
    })
}

fn prepared(row: &Cells) -> Result<PreparedXact, CatalogError> {
    const W: &str = "prepared transactions";
    Ok(PreparedXact {
        gid: text(row, W, "gid")?,
        database: get(row, W, "database_name")?,
        owner: get(row, W, "owner_name")?,
        xid_age_xids: get(row, W, "xid_age_xids")?,
        prepared_age_seconds: get(row, W, "prepared_age_seconds")?,
        locks: array::<String>(row, W, "locks")?
            .into_iter()
            .flatten()
            .collect(),
    })
}

fn backend(row: &Cells) -> Result<Backend, CatalogError> {
    const W: &str = "activity";
    Ok(Backend {
        pid: get(row, W, "pid")?.unwrap_or(0),
        audit_session: flag(row, W, "audit_session")?,
        database: get(row, W, "database_name")?,
        user: get(row, W, "user_name")?,
        application_name: get(row, W, "application_name")?,
        client_addr: get(row, W, "client_addr")?,
        state: get(row, W, "state")?,
        wait_event_type: get(row, W, "wait_event_type")?,
        wait_event: get(row, W, "wait_event")?,
        backend_age_seconds: get(row, W, "backend_age_seconds")?,
        xact_age_seconds: get(row, W, "xact_age_seconds")?,
        query_age_seconds: get(row, W, "query_age_seconds")?,
        state_age_seconds: get(row, W, "state_age_seconds")?,
        xmin_age_xids: get(row, W, "xmin_age_xids")?,
        xid_age_xids: get(row, W, "xid_age_xids")?,
        blocking_pids: array::<i32>(row, W, "blocking_pids")?
            .into_iter()
            .flatten()
            .collect(),
        query: get(row, W, "query")?,
    })
}

fn session_lock(row: &Cells) -> Result<SessionLock, CatalogError> {
    const W: &str = "locks";
    Ok(SessionLock {
        pid: get(row, W, "pid")?,
        locktype: text(row, W, "locktype")?,
        mode: text(row, W, "mode")?,
        granted: flag(row, W, "granted")?,
        schema: get(row, W, "schema_name")?,
        relation: get(row, W, "relation_name")?,
        advisory_key: get(row, W, "advisory_key")?,
        wait_seconds: get(row, W, "wait_seconds")?,
    })
}

fn recovery_conflicts(row: &Cells) -> Result<RecoveryConflicts, CatalogError> {
    const W: &str = "recovery conflicts";
    Ok(RecoveryConflicts {
        tablespace: get(row, W, "confl_tablespace")?.unwrap_or(0),
        lock: get(row, W, "confl_lock")?.unwrap_or(0),
        snapshot: get(row, W, "confl_snapshot")?.unwrap_or(0),
        bufferpin: get(row, W, "confl_bufferpin")?.unwrap_or(0),
        deadlock: get(row, W, "confl_deadlock")?.unwrap_or(0),
        active_logicalslot: get(row, W, "confl_active_logicalslot")?,
    })
}

fn standby(row: &Cells) -> Result<Standby, CatalogError> {
    const W: &str = "standbys";
    Ok(Standby {
        pid: get(row, W, "pid")?.unwrap_or(0),
        application_name: get(row, W, "application_name")?,
        client_addr: get(row, W, "client_addr")?,
        state: get(row, W, "state")?,
        sync_state: get(row, W, "sync_state")?,
        xmin_age_xids: get(row, W, "xmin_age_xids")?,
        replay_lag_seconds: get(row, W, "replay_lag_seconds")?,
    })
}

fn index_build(row: &Cells) -> Result<IndexBuild, CatalogError> {
    const W: &str = "index builds";
    Ok(IndexBuild {
        pid: get(row, W, "pid")?.unwrap_or(0),
        database: get(row, W, "database_name")?,
        table_oid: oid(row, W, "table_oid")?,
        index_oid: oid(row, W, "index_oid")?,
        command: get(row, W, "command")?,
        phase: get(row, W, "phase")?,
        blocks_total: get(row, W, "blocks_total")?,
        blocks_done: get(row, W, "blocks_done")?,
        tuples_total: get(row, W, "tuples_total")?,
        tuples_done: get(row, W, "tuples_done")?,
        lockers_total: get(row, W, "lockers_total")?,
        lockers_done: get(row, W, "lockers_done")?,
        current_locker_pid: get(row, W, "current_locker_pid")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[&str] = &[
        SETTINGS_SQL,
        ACTIVITY_SQL,
        SESSION_LOCKS_SQL,
        CONFLICTS_SQL,
        DATABASE_SQL,
        TABLES_SQL,
        INDEXES_SQL,
        COLUMNS_SQL,
        COLUMNS_STATISTIC_SQL,
        FOREIGN_KEYS_SQL,
        SESSIONS_SQL,
        SLOTS_SQL,
        PREPARED_SQL,
        STANDBYS_SQL,
        INDEX_BUILDS_SQL,
        LOCKS_SQL,
        INDEX_DEFINITIONS_SQL,
    ];

    #[test]
    fn every_placeholder_is_filled_on_every_version() {
        for version in [130_000, 140_000, 150_000, 160_000, 170_000, 180_000] {
            for sql in ALL {
                let text = statement_for(sql, version);
                assert!(!text.contains("{{"), "{version}: {text}");
            }
        }
        assert!(statement_for(INDEXES_SQL, 160_000).contains("pg_stat_get_lastscan"));
        assert!(statement_for(INDEXES_SQL, 150_000).contains("NULL::timestamptz"));
        assert!(database_statement(150_000, true).contains("pg_stat_file('base/"));
        assert!(!database_statement(150_000, false).contains("pg_stat_file('base/"));
        assert!(!database_statement(180_000, true).contains("{{"));
    }

    #[test]
    fn every_statement_opens_with_its_header_and_is_one_statement() {
        for sql in ALL {
            assert!(sql.starts_with("-- Audit: "), "{sql}");
            assert!(sql.contains("Minimum server version: 13"), "{sql}");
            let statements = crate::sql::split_statements(sql).unwrap();
            assert_eq!(statements.len(), 1, "{sql}");
        }
    }
}
