//! What one node's catalog and statistics said, as plain rows: the input of every audit check.
//!
//! Filled by `db::catalog::read_snapshot` from one read-only transaction, or built by hand in
//! tests. Every figure the server may leave NULL is an `Option`; nothing here is derived.

use serde::Serialize;

/// A point in time as the server reported it, with its age at the time of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 UTC.
    pub epoch_seconds: f64,
    /// Seconds between this time and the snapshot (`now()` of the audit transaction).
    pub age_seconds: f64,
}

impl Timestamp {
    /// ISO 8601 in UTC, to the second: "2026-11-30T09:55:56Z".
    pub fn iso(&self) -> String {
        iso_utc(self.epoch_seconds)
    }
}

/// Formats epoch seconds as ISO 8601 UTC (days-to-civil conversion, proleptic Gregorian).
pub fn iso_utc(epoch_seconds: f64) -> String {
    if !epoch_seconds.is_finite() {
        return "invalid time".into();
    }
    let secs = epoch_seconds.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Everything read from one node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeSnapshot {
    pub server: ServerInfo,
    pub settings: Settings,
    pub database: DatabaseInfo,
    pub tables: Vec<Table>,
    pub indexes: Vec<Index>,
    /// Table columns with their statistics (`pg_stats`), for bloat estimates.
    pub columns: Vec<Column>,
    pub foreign_keys: Vec<ForeignKey>,
    /// Sessions that hold a snapshot or a transaction id (the audit's own session excluded).
    pub sessions: Vec<Session>,
    pub replication_slots: Vec<ReplicationSlot>,
    pub prepared_xacts: Vec<PreparedXact>,
    /// Standbys streaming from this node (`pg_stat_replication`).
    pub standbys: Vec<Standby>,
    /// `CREATE INDEX` / `REINDEX` runs in progress (`pg_stat_progress_create_index`).
    pub index_builds: Vec<IndexBuild>,
    /// Every client backend of the server (`pg_stat_activity`), the audit's own included and
    /// marked: connection slots are the server's, the other session checks filter by database.
    pub backends: Vec<Backend>,
    /// Advisory locks, locks waited for, the locks on the relations waited for, and the relation
    /// locks of sessions idle in a transaction (`pg_locks`).
    pub session_locks: Vec<SessionLock>,
    /// `pg_stat_database_conflicts` for the audited database: queries a standby cancelled
    /// because replay needed what they held (zeros on a primary).
    pub recovery_conflicts: Option<RecoveryConflicts>,
    /// What the audit role could not read, and which check lost what.
    pub privileges_missing: Vec<PrivilegeGap>,
}

/// Facts about the server and the session (copied from `db::facts::ServerFacts`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerInfo {
    /// `server_version_num`, e.g. 160014.
    pub version_num: u32,
    /// e.g. "16.14".
    pub version: String,
    /// `pg_is_in_recovery()`: a standby.
    pub in_recovery: bool,
    /// The same on a primary and its physical standbys; `None` without the privilege to read it.
    pub system_identifier: Option<String>,
    pub database: String,
    pub user: String,
    pub superuser: bool,
    pub pg_monitor: bool,
    pub pg_read_all_stats: bool,
    /// `pg_postmaster_start_time()`. Not reset by crash recovery, so it is no bound on the
    /// statistics window; kept for display.
    pub started_at: Option<Timestamp>,
}

impl ServerInfo {
    pub fn major(&self) -> u32 {
        self.version_num / 10000
    }
}

/// Server settings the checks compare against, in their base units. Defaults are PostgreSQL's.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub autovacuum: bool,
    /// Without `track_counts` there are no table statistics and autovacuum cannot work.
    pub track_counts: bool,
    pub autovacuum_vacuum_threshold: f64,
    pub autovacuum_vacuum_scale_factor: f64,
    /// 13+.
    pub autovacuum_vacuum_insert_threshold: Option<f64>,
    /// 13+.
    pub autovacuum_vacuum_insert_scale_factor: Option<f64>,
    /// 18+: a cap on the dead-tuple trigger (-1 disables it).
    pub autovacuum_vacuum_max_threshold: Option<f64>,
    pub autovacuum_analyze_threshold: f64,
    pub autovacuum_analyze_scale_factor: f64,
    pub autovacuum_freeze_max_age: f64,
    pub autovacuum_multixact_freeze_max_age: f64,
    pub block_size_bytes: f64,
    /// On a standby: whether its snapshots hold back the primary's vacuum.
    pub hot_standby_feedback: bool,
    pub max_connections: f64,
    /// Slots only superusers may take.
    pub superuser_reserved_connections: f64,
    /// 16+: slots only roles with `pg_use_reserved_connections` may take.
    pub reserved_connections: Option<f64>,
    /// 0 (the default) lets a session sit idle in a transaction forever.
    pub idle_in_transaction_session_timeout_ms: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            autovacuum: true,
            track_counts: true,
            autovacuum_vacuum_threshold: 50.0,
            autovacuum_vacuum_scale_factor: 0.2,
            autovacuum_vacuum_insert_threshold: Some(1000.0),
            autovacuum_vacuum_insert_scale_factor: Some(0.2),
            autovacuum_vacuum_max_threshold: None,
            autovacuum_analyze_threshold: 50.0,
            autovacuum_analyze_scale_factor: 0.1,
            autovacuum_freeze_max_age: 200_000_000.0,
            autovacuum_multixact_freeze_max_age: 400_000_000.0,
            block_size_bytes: 8192.0,
            hot_standby_feedback: false,
            max_connections: 100.0,
            superuser_reserved_connections: 3.0,
            reserved_connections: None,
            idle_in_transaction_session_timeout_ms: 0.0,
        }
    }
}

/// The audited database and the evidence of how long its statistics have been counting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DatabaseInfo {
    /// `pg_stat_database.stats_reset`: an explicit reset of this database's counters (15+: null
    /// until one happens; before 15 also the time the counters were created after a loss).
    pub stats_reset: Option<Timestamp>,
    /// The earliest `stats_reset` of the server-wide statistics (bgwriter, archiver, and the
    /// checkpointer on 17+). On 15+ these are all set when statistics are discarded after a crash
    /// (or on a first start without a statistics file), which also drops every index counter.
    pub shared_stats_reset: Option<Timestamp>,
    /// `age(datfrozenxid)`.
    pub frozen_xid_age: Option<i64>,
    /// `mxid_age(datminmxid)`.
    pub multixact_age: Option<i64>,
    /// When the database was created, where the role may tell (superuser: the time its
    /// `PG_VERSION` file was written): none when unknown.
    pub created: Option<Timestamp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    Table,
    MaterializedView,
    Partitioned,
}

/// One table (`pg_class` with `pg_stat_all_tables`).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    pub kind: TableKind,
    pub unlogged: bool,
    /// `pg_class.relpages`, `reltuples`, `relallvisible`: as of the last VACUUM or ANALYZE.
    /// `reltuples` is -1 on 14+ when the table was never vacuumed or analyzed (0 before 14).
    pub relpages: i64,
    pub reltuples: f64,
    pub relallvisible: i64,
    /// `pg_class.reloptions`, "name=value".
    pub reloptions: Vec<String>,
    /// The heap: `relpages` × block size (as of the last VACUUM or ANALYZE; reading the file
    /// sizes would open and lock every relation).
    pub heap_bytes: Option<i64>,
    /// The heap and its TOAST table, the same way.
    pub table_bytes: Option<i64>,
    pub frozen_xid_age: Option<i64>,
    pub multixact_age: Option<i64>,
    pub stats: TableStats,
    /// A partition's parent table.
    pub parent_oid: Option<u32>,
    /// A partitioned table: whether `pg_stats` shows the inherited statistics that only an
    /// ANALYZE of the parent itself writes (autovacuum never does). None for other tables.
    pub inherited_statistics: Option<bool>,
    /// Its TOAST table, which autovacuum processes as a table of its own.
    pub toast: Option<ToastTable>,
}

/// A table's TOAST table (`pg_toast.pg_toast_<oid>`): its own figures, storage options (where
/// `toast.autovacuum_*` set on the owner end up) and counters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToastTable {
    pub oid: u32,
    pub name: String,
    pub relpages: i64,
    pub reltuples: f64,
    /// The TOAST table's own reloptions: `toast.autovacuum_enabled=false` on the owner is
    /// `autovacuum_enabled=false` here.
    pub reloptions: Vec<String>,
    pub stats: TableStats,
}

/// `pg_stat_all_tables`: zeros (or nulls) on a standby, which counts none of this.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableStats {
    pub n_tup_ins: Option<i64>,
    pub n_tup_upd: Option<i64>,
    pub n_tup_hot_upd: Option<i64>,
    pub n_tup_del: Option<i64>,
    pub n_live_tup: Option<i64>,
    pub n_dead_tup: Option<i64>,
    pub n_mod_since_analyze: Option<i64>,
    /// 13+.
    pub n_ins_since_vacuum: Option<i64>,
    pub last_vacuum: Option<Timestamp>,
    pub last_autovacuum: Option<Timestamp>,
    pub last_analyze: Option<Timestamp>,
    pub last_autoanalyze: Option<Timestamp>,
    pub analyze_count: Option<i64>,
    pub autoanalyze_count: Option<i64>,
}

impl Table {
    /// A reloption's value, if set on the table.
    pub fn reloption(&self, name: &str) -> Option<&str> {
        reloption(&self.reloptions, name)
    }

    pub fn reloption_f64(&self, name: &str) -> Option<f64> {
        self.reloption(name).and_then(|v| v.parse().ok())
    }

    /// `autovacuum_enabled=false` on the table (in any spelling the server accepts).
    pub fn autovacuum_disabled_by_reloption(&self) -> bool {
        self.reloption("autovacuum_enabled").and_then(parse_bool) == Some(false)
    }
}

/// A boolean as PostgreSQL's `parse_bool` reads it (reloptions keep the text as written):
/// case-insensitive, any unique prefix of true, false, yes, no, and on, off (at least two
/// letters, "o" alone being ambiguous), or exactly 1 or 0.
pub fn parse_bool(text: &str) -> Option<bool> {
    let lower = text.to_ascii_lowercase();
    let prefix_of = |word: &str| !lower.is_empty() && word.starts_with(lower.as_str());
    match lower.as_bytes().first()? {
        b't' if prefix_of("true") => Some(true),
        b'f' if prefix_of("false") => Some(false),
        b'y' if prefix_of("yes") => Some(true),
        b'n' if prefix_of("no") => Some(false),
        b'o' if lower.len() >= 2 && prefix_of("on") => Some(true),
        b'o' if lower.len() >= 2 && prefix_of("off") => Some(false),
        b'1' if lower.len() == 1 => Some(true),
        b'0' if lower.len() == 1 => Some(false),
        _ => None,
    }
}

/// Looks up "name=value" in a reloptions array.
pub fn reloption<'a>(options: &'a [String], name: &str) -> Option<&'a str> {
    options.iter().find_map(|o| {
        let (n, v) = o.split_once('=')?;
        (n == name).then_some(v)
    })
}

/// One column of an index, in index order.
///
/// Two columns are the same key when their column number, expression tree, operator class,
/// collation and order match: the expression is compared as the server stores it
/// (`pg_index.indexprs`, node text without parse locations), never by its deparsed text, which
/// only the few definitions that reach the report need.
#[derive(Debug, Clone)]
pub struct IndexColumn {
    /// The column name or expression, as `pg_get_indexdef(index, n, true)` prints it. For an
    /// expression it is empty until deparsed (only those a finding shows are).
    pub definition: String,
    /// An expression column's node tree (`indexprs`, locations removed); none for a plain column.
    pub expression: Option<String>,
    /// The table column number; 0 for an expression.
    pub attnum: i16,
    /// The operator class (`indclass`); INCLUDE columns have none (0).
    pub opclass: u32,
    /// The collation (`indcollation`); 0 for a type that has none.
    pub collation: u32,
    /// `indoption` bits: DESC (1), NULLS FIRST (2).
    pub option: i16,
}

impl IndexColumn {
    /// What identifies the column as a key: its expression tree, or (for a plain column, or an
    /// expression known only by its text) its definition.
    fn key(&self) -> (i16, &str, u32, u32, i16) {
        let text = match (&self.expression, self.attnum) {
            (Some(tree), 0) => tree.as_str(),
            _ => self.definition.as_str(),
        };
        (self.attnum, text, self.opclass, self.collation, self.option)
    }
}

impl PartialEq for IndexColumn {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for IndexColumn {}

impl std::hash::Hash for IndexColumn {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

/// The constraint an index enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConstraint {
    pub name: String,
    /// 'p' primary key, 'u' unique, 'x' exclusion.
    pub kind: char,
}

/// One index (`pg_index`, `pg_class`, `pg_stat_all_indexes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    pub oid: u32,
    pub table_oid: u32,
    pub schema: String,
    pub table: String,
    pub name: String,
    /// `pg_am.amname`: btree, hash, gist, gin, brin, spgist...
    pub access_method: String,
    pub unique: bool,
    pub primary: bool,
    pub exclusion: bool,
    pub replica_identity: bool,
    /// `indnullsnotdistinct` (15+; false before): a unique index that treats NULLs as equal, so
    /// it rejects rows a plain unique index on the same keys accepts.
    pub nulls_not_distinct: bool,
    /// Attached to this partitioned index (a partition's index).
    pub parent_index_oid: Option<u32>,
    /// `indimmediate`: uniqueness is checked at once. False for a DEFERRABLE constraint's index,
    /// which foreign keys cannot reference and `ON CONFLICT` cannot use as an arbiter.
    pub immediate: bool,
    pub valid: bool,
    pub ready: bool,
    pub live: bool,
    /// An index on a partitioned table (no storage of its own).
    pub partitioned: bool,
    /// Attached to an index of a partitioned table (cannot be dropped on its own).
    pub partition_child: bool,
    /// Key columns first, then INCLUDE columns.
    pub columns: Vec<IndexColumn>,
    /// `indnkeyatts`.
    pub key_column_count: usize,
    /// `WHERE` of a partial index, deparsed (only where a finding shows it; else empty).
    pub predicate: Option<String>,
    /// `WHERE` of a partial index as the server stores it (`indpred`, locations removed): what
    /// two indexes are compared by.
    pub predicate_tree: Option<String>,
    pub constraint: Option<IndexConstraint>,
    pub reloptions: Vec<String>,
    pub relpages: i64,
    pub reltuples: f64,
    /// `relpages` × block size, as of the last VACUUM, ANALYZE or CREATE INDEX.
    pub size_bytes: Option<i64>,
    /// `idx_scan` on this node (each node counts only its own scans).
    pub scans: Option<i64>,
    /// `last_idx_scan`, 16+.
    pub last_scan: Option<Timestamp>,
    /// `pg_get_indexdef`, read only for invalid indexes (to rebuild them).
    pub definition: Option<String>,
    /// Why this index's expressions, predicate or definition could not be deparsed (its table
    /// was locked against the audit): they are compared all the same, but not shown.
    /// Boxed: rare, and 72 bytes inline in each of 50,000 indexes.
    pub unread: Option<Box<LockHolder>>,
}

/// Who kept the audit from reading an object: the session or prepared transaction that holds
/// (or waits for) an ACCESS EXCLUSIVE lock on it. All unknown when the lock appeared after the
/// audit looked and was not granted within its short wait.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LockHolder {
    /// The relation the lock is on (the table, or the index itself).
    pub relation_oid: u32,
    /// The backend; none for a prepared transaction.
    pub pid: Option<i32>,
    /// The prepared transaction's name.
    pub gid: Option<String>,
    /// Held (true) or queued for (false).
    pub granted: bool,
    /// When the holder's transaction started (or was prepared).
    pub since: Option<Timestamp>,
}

impl Index {
    /// What a partial index is compared by: its predicate's tree, or its text where only that
    /// is known.
    pub fn predicate_key(&self) -> Option<&str> {
        self.predicate_tree.as_deref().or(self.predicate.as_deref())
    }

    /// Whether showing this index needs text the server must deparse (an expression or a
    /// predicate).
    pub fn needs_deparse(&self) -> bool {
        self.predicate_tree.is_some() || self.columns.iter().any(|c| c.expression.is_some())
    }

    pub fn key_columns(&self) -> &[IndexColumn] {
        &self.columns[..self.key_column_count.min(self.columns.len())]
    }

    pub fn include_columns(&self) -> &[IndexColumn] {
        &self.columns[self.key_column_count.min(self.columns.len())..]
    }

    /// Backs a constraint (primary key, unique, exclusion) or serves as replica identity:
    /// dropping it changes more than lookups (a constraint goes, or logical replication of
    /// updates and deletes stops), so no audit proposes that while something else can go.
    pub fn is_protected(&self) -> bool {
        self.primary || self.replica_identity || self.constraint.is_some()
    }

    /// Whether a unique index `other` enforces exactly what this one does: the same NULL
    /// treatment (15+'s NULLS NOT DISTINCT) and the same timing (a DEFERRABLE constraint's index
    /// serves no foreign key and no `ON CONFLICT`).
    pub fn same_uniqueness(&self, other: &Index) -> bool {
        self.unique == other.unique
            && self.nulls_not_distinct == other.nulls_not_distinct
            && self.immediate == other.immediate
    }

    /// Enforces a constraint or serves as replica identity: never to be dropped as unused or
    /// duplicate on its own.
    pub fn is_load_bearing(&self) -> bool {
        self.unique
            || self.primary
            || self.exclusion
            || self.replica_identity
            || self.constraint.is_some()
    }

    /// What it is for, in words: "primary key", "unique constraint c", "replica identity".
    pub fn role_words(&self) -> Option<String> {
        if let Some(c) = &self.constraint {
            let kind = match c.kind {
                'p' => "primary key",
                'u' => "unique constraint",
                'x' => "exclusion constraint",
                _ => "constraint",
            };
            return Some(format!("{kind} {}", c.name));
        }
        if self.primary {
            Some("primary key".into())
        } else if self.exclusion {
            Some("exclusion constraint".into())
        } else if self.unique {
            Some("unique index".into())
        } else if self.replica_identity {
            Some("replica identity".into())
        } else {
            None
        }
    }
}

/// A table column and its statistics, for bloat estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub table_oid: u32,
    pub attnum: i16,
    pub name: String,
    /// `attlen`: bytes for a fixed-width type, -1 (varlena) or -2 (cstring).
    pub type_length: i16,
    /// `attalign`: 'c', 's', 'i' or 'd'.
    pub type_align: char,
    pub not_null: bool,
    /// A dropped column still takes space in rows written before it was dropped.
    pub dropped: bool,
    /// `pg_stats.null_frac`, `avg_width`, `n_distinct`: none when never analyzed, or when this
    /// role may not SELECT the column (`pg_stats` hides such rows).
    pub null_frac: Option<f64>,
    pub avg_width: Option<f64>,
    pub n_distinct: Option<f64>,
}

/// A foreign key, seen from the referencing table.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKey {
    pub name: String,
    pub table_oid: u32,
    pub schema: String,
    pub table: String,
    pub referenced_table_oid: u32,
    pub referenced_schema: String,
    pub referenced_table: String,
    /// Referencing columns (`conkey`).
    pub attnums: Vec<i16>,
    pub column_names: Vec<String>,
    /// The unique index on the referenced table it relies on (`conindid`).
    pub referenced_index_oid: u32,
    /// A copy made on a partition of a partitioned table's foreign key (`conparentid` set).
    pub inherited: bool,
}

/// A session holding a snapshot or a transaction id (`pg_stat_activity`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Session {
    pub pid: i32,
    pub database: Option<String>,
    pub user: Option<String>,
    pub application_name: Option<String>,
    pub client_addr: Option<String>,
    pub backend_type: Option<String>,
    /// "active", "idle in transaction", ...; null for sessions this role may not see.
    pub state: Option<String>,
    pub xact_age_seconds: Option<f64>,
    pub state_age_seconds: Option<f64>,
    /// `age(backend_xmin)`, `age(backend_xid)`.
    pub xmin_age_xids: Option<i64>,
    pub xid_age_xids: Option<i64>,
    /// The current or last query; `<insufficient privilege>` for other roles' sessions without
    /// `pg_read_all_stats`.
    pub query: Option<String>,
}

/// A replication slot (`pg_replication_slots`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplicationSlot {
    pub name: String,
    /// "physical" or "logical".
    pub slot_type: String,
    pub database: Option<String>,
    pub temporary: bool,
    pub active: bool,
    pub active_pid: Option<i32>,
    pub xmin_age_xids: Option<i64>,
    pub catalog_xmin_age_xids: Option<i64>,
    /// WAL kept for the slot: current (or replayed) position minus `restart_lsn`.
    pub retained_wal_bytes: Option<f64>,
    /// 13+: reserved, extended, unreserved, lost.
    pub wal_status: Option<String>,
    /// 17+: `inactive_since`.
    pub inactive_since: Option<Timestamp>,
}

/// A prepared transaction (`pg_prepared_xacts`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreparedXact {
    pub gid: String,
    pub database: Option<String>,
    pub owner: Option<String>,
    pub xid_age_xids: Option<i64>,
    pub prepared_age_seconds: Option<f64>,
    /// The relation locks it still holds, "RowExclusiveLock on public.t".
    pub locks: Vec<String>,
}

/// A standby streaming from this node (`pg_stat_replication`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Standby {
    pub pid: i32,
    pub application_name: Option<String>,
    pub client_addr: Option<String>,
    pub state: Option<String>,
    pub sync_state: Option<String>,
    /// `age(backend_xmin)`: set when the standby sends `hot_standby_feedback`.
    pub xmin_age_xids: Option<i64>,
    pub replay_lag_seconds: Option<f64>,
}

/// An index build in progress (`pg_stat_progress_create_index`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexBuild {
    pub pid: i32,
    pub database: Option<String>,
    pub table_oid: u32,
    /// 0 for a non-concurrent CREATE INDEX (the index is not visible yet).
    pub index_oid: u32,
    /// "CREATE INDEX CONCURRENTLY", "REINDEX CONCURRENTLY", ...
    pub command: Option<String>,
    pub phase: Option<String>,
    pub blocks_total: Option<i64>,
    pub blocks_done: Option<i64>,
    pub tuples_total: Option<i64>,
    pub tuples_done: Option<i64>,
    pub lockers_total: Option<i64>,
    pub lockers_done: Option<i64>,
    pub current_locker_pid: Option<i64>,
}

/// One client backend (`pg_stat_activity`, `backend_type = 'client backend'`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Backend {
    pub pid: i32,
    /// The audit's own session: it takes a connection slot, and is never a finding.
    pub audit_session: bool,
    pub database: Option<String>,
    pub user: Option<String>,
    pub application_name: Option<String>,
    pub client_addr: Option<String>,
    /// "active", "idle", "idle in transaction", ...; null for other roles' sessions without
    /// `pg_read_all_stats`.
    pub state: Option<String>,
    pub wait_event_type: Option<String>,
    pub wait_event: Option<String>,
    pub backend_age_seconds: Option<f64>,
    pub xact_age_seconds: Option<f64>,
    pub query_age_seconds: Option<f64>,
    pub state_age_seconds: Option<f64>,
    /// `age(backend_xmin)`, `age(backend_xid)`.
    pub xmin_age_xids: Option<i64>,
    pub xid_age_xids: Option<i64>,
    /// `pg_blocking_pids()` of a session waiting for a heavyweight lock (empty otherwise); 0
    /// stands for a prepared transaction.
    pub blocking_pids: Vec<i32>,
    /// The current or last statement, cut to 500 characters.
    pub query: Option<String>,
}

impl Backend {
    pub fn is_idle_in_transaction(&self) -> bool {
        self.state
            .as_deref()
            .is_some_and(|s| s.starts_with("idle in transaction"))
    }

    /// Waiting for a heavyweight lock someone holds or is queued for ahead of it.
    pub fn is_waiting_for_lock(&self) -> bool {
        self.wait_event_type.as_deref() == Some("Lock") && !self.blocking_pids.is_empty()
    }
}

/// A heavyweight lock (`pg_locks`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionLock {
    /// None for a prepared transaction's lock.
    pub pid: Option<i32>,
    /// "advisory", "relation".
    pub locktype: String,
    /// "AccessExclusiveLock", "ExclusiveLock", ...
    pub mode: String,
    pub granted: bool,
    /// A relation of the audited database.
    pub schema: Option<String>,
    pub relation: Option<String>,
    /// An advisory lock's key as the functions take it: "42" (one bigint) or "1, 2" (two
    /// integers).
    pub advisory_key: Option<String>,
    /// 14+ (`waitstart`): how long a lock not granted has been waited for.
    pub wait_seconds: Option<f64>,
}

impl SessionLock {
    /// "public.t" for a relation of the audited database.
    pub fn relation_name(&self) -> Option<String> {
        match (&self.schema, &self.relation) {
            (Some(s), Some(r)) => Some(qualified(s, r)),
            _ => None,
        }
    }
}

/// `pg_stat_database_conflicts`: queries cancelled on a standby, by cause, since the counters
/// were reset.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecoveryConflicts {
    pub tablespace: i64,
    pub lock: i64,
    pub snapshot: i64,
    pub bufferpin: i64,
    pub deadlock: i64,
    /// 16+: logical slots on a standby invalidated while in use.
    pub active_logicalslot: Option<i64>,
}

impl RecoveryConflicts {
    pub fn total(&self) -> i64 {
        self.tablespace
            + self.lock
            + self.snapshot
            + self.bufferpin
            + self.deadlock
            + self.active_logicalslot.unwrap_or(0)
    }
}

/// A privilege the audit role lacks, and what a check lost because of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrivilegeGap {
    /// The check that lost something ("xmin_horizon", "table_bloat", ...).
    pub check: String,
    pub lost: String,
}

/// `schema.name` as a report shows it: each part quoted only when it must be, control characters
/// escaped.
pub fn qualified(schema: &str, name: &str) -> String {
    format!(
        "{}.{}",
        crate::sql::quote_ident_to_show(schema),
        crate::sql::quote_ident_to_show(name)
    )
}

#[cfg(test)]
mod tests {
    use super::parse_bool;

    #[test]
    fn booleans_as_postgres_parses_them() {
        for yes in ["t", "TR", "true", "y", "Yes", "on", "ON", "1"] {
            assert_eq!(parse_bool(yes), Some(true), "{yes}");
        }
        for no in ["f", "FA", "false", "n", "NO", "of", "off", "0"] {
            assert_eq!(parse_bool(no), Some(false), "{no}");
        }
        for neither in ["", "o", "tru e", "truee", "offf", "01", "10", "2", "nope"] {
            assert_eq!(parse_bool(neither), None, "{neither}");
        }
    }
}
