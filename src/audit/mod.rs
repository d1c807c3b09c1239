//! The audit core: index and table health from one snapshot per node of a cluster (a primary and
//! its standbys), combined the way PostgreSQL's statistics demand. Pure: no database, no async.
//!
//! Combining nodes: index scans are counted per node (a standby counts only the scans it served),
//! so usage is summed over every audited node; table statistics (dead tuples, modifications since
//! analyze, vacuum and analyze times) exist only on the primary, so the checks that need them
//! say "skipped: standby" when no primary was audited instead of reporting a clean result.
//!
//! Several databases in one run: catalogs and statistics are per database, so the nodes of each
//! database (a primary and its standbys, all connected to that database) are combined on their
//! own by [`audit`], and [`audit_databases`] merges the reports, every finding, skipped check and
//! per-object figure naming its database.

pub mod activity;
pub mod checks;
pub mod deparse;
pub mod scope_match;
pub mod snapshot;

// The audit hashes names and index signatures hundreds of thousands of times at fleet scale;
// std's default SipHash guards against inputs chosen to collide, which catalog names read
// from the user's own server are not, and costs a tenth of the audit's time. foldhash is
// seeded per process all the same.
use foldhash::{HashMap, HashMapExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;

pub use crate::plan::Severity;
pub use snapshot::NodeSnapshot;
use snapshot::{ForeignKey, Index, Table, Timestamp};

/// Which objects to read: the `--schema`, `--exclude-schema` and `--table` options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Only these schemas (empty: all but the system schemas).
    pub schemas: Vec<String>,
    /// Never these schemas.
    pub exclude_schemas: Vec<String>,
    /// Only these tables: "table" or "schema.table". Identifiers follow SQL rules: unquoted
    /// names are folded to lower case, double-quoted ones are taken as written.
    pub tables: Vec<String>,
}

impl Scope {
    /// The `--table` patterns as (schema or "", table) pairs, for the catalog queries.
    pub fn table_filters(&self) -> (Vec<String>, Vec<String>) {
        let mut schemas = Vec::new();
        let mut tables = Vec::new();
        for pattern in &self.tables {
            let parts = split_qualified(pattern);
            match parts.as_slice() {
                [table] => {
                    schemas.push(String::new());
                    tables.push(table.clone());
                }
                [schema, table] => {
                    schemas.push(schema.clone());
                    tables.push(table.clone());
                }
                _ => {
                    // Not a valid name; keep it whole so it matches nothing rather than everything.
                    schemas.push(String::new());
                    tables.push(pattern.clone());
                }
            }
        }
        (schemas, tables)
    }
}

/// Splits `a.b` / `"A.x".b` into identifiers, folding unquoted ones to lower case as the server
/// does.
fn split_qualified(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push(finish_ident(&mut current, &mut was_quoted));
            }
            c => current.push(c),
        }
    }
    parts.push(finish_ident(&mut current, &mut was_quoted));
    parts
}

fn finish_ident(current: &mut String, was_quoted: &mut bool) -> String {
    let ident = std::mem::take(current);
    let ident = if *was_quoted {
        ident
    } else {
        ident.to_lowercase()
    };
    *was_quoted = false;
    ident
}

/// How the audit judges what it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditOptions {
    /// Objects smaller than this are not reported (`--min-size`).
    pub min_size_bytes: u64,
    /// Below this much counting time, unused-index findings are only informational
    /// (`--min-stats-age`, default 7 days).
    pub min_stats_age: Duration,
    /// A transaction (or a prepared transaction) open this long that holds the xmin horizon is
    /// a finding (default 5 minutes).
    pub horizon_min_age: Duration,
    /// A session idle in a transaction this long is a finding (default 1 minute).
    pub idle_in_transaction_min_age: Duration,
    /// A statement waiting this long for a lock is a finding, with the queue behind it
    /// (default 5 seconds).
    pub lock_wait_min_age: Duration,
    /// Fill [`AuditReport::objects`], the per-object figures only the metrics show: at fleet
    /// scale a row per index (50,000, with their names copied) that would be the largest
    /// allocation of a report in any other format.
    pub object_figures: bool,
}

impl Default for AuditOptions {
    fn default() -> Self {
        Self {
            min_size_bytes: 0,
            min_stats_age: Duration::from_secs(7 * 86_400),
            horizon_min_age: Duration::from_secs(300),
            idle_in_transaction_min_age: Duration::from_secs(60),
            lock_wait_min_age: Duration::from_secs(5),
            object_figures: true,
        }
    }
}

/// One node as the caller saw it: its snapshot, or why it could not be read.
#[derive(Debug, Clone)]
pub struct NodeResult {
    /// The node's name as shown to people: the redacted conninfo.
    pub name: String,
    pub outcome: Result<NodeSnapshot, String>,
}

/// The checks pgplan audit runs; their names are part of the JSON contract and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    UnusedIndex,
    InvalidIndex,
    DuplicateIndex,
    RedundantIndex,
    MissingFkIndex,
    DeadTuples,
    StaleStatistics,
    VisibilityMap,
    IndexBloat,
    TableBloat,
    XminHorizon,
    ReplicationSlot,
    XidWraparound,
    AdvisoryLock,
    IdleInTransaction,
    LockQueue,
    ConnectionPressure,
    PreparedTransaction,
    RecoveryConflict,
}

impl Check {
    pub const ALL: [Check; 19] = [
        Check::UnusedIndex,
        Check::InvalidIndex,
        Check::DuplicateIndex,
        Check::RedundantIndex,
        Check::MissingFkIndex,
        Check::DeadTuples,
        Check::StaleStatistics,
        Check::VisibilityMap,
        Check::IndexBloat,
        Check::TableBloat,
        Check::XminHorizon,
        Check::ReplicationSlot,
        Check::XidWraparound,
        Check::AdvisoryLock,
        Check::IdleInTransaction,
        Check::LockQueue,
        Check::ConnectionPressure,
        Check::PreparedTransaction,
        Check::RecoveryConflict,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Check::UnusedIndex => "unused_index",
            Check::InvalidIndex => "invalid_index",
            Check::DuplicateIndex => "duplicate_index",
            Check::RedundantIndex => "redundant_index",
            Check::MissingFkIndex => "missing_fk_index",
            Check::DeadTuples => "dead_tuples",
            Check::StaleStatistics => "stale_statistics",
            Check::VisibilityMap => "visibility_map",
            Check::IndexBloat => "index_bloat",
            Check::TableBloat => "table_bloat",
            Check::XminHorizon => "xmin_horizon",
            Check::ReplicationSlot => "replication_slot",
            Check::XidWraparound => "xid_wraparound",
            Check::AdvisoryLock => "advisory_lock",
            Check::IdleInTransaction => "idle_in_transaction",
            Check::LockQueue => "lock_queue",
            Check::ConnectionPressure => "connection_pressure",
            Check::PreparedTransaction => "prepared_transaction",
            Check::RecoveryConflict => "recovery_conflict",
        }
    }
}

/// How far a bloat estimate can be trusted, and why not more.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confidence {
    /// "high", "medium" or "low".
    pub level: &'static str,
    pub reasons: Vec<String>,
}

/// An index's usage on one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeUsage {
    /// Shared by every finding that names the node: at fleet scale 40,000 findings each held a
    /// copy of the node's conninfo.
    #[serde(serialize_with = "shared_str")]
    pub node: std::sync::Arc<str>,
    pub index_scans: Option<i64>,
    /// `last_idx_scan` (16+), ISO 8601.
    pub last_idx_scan: Option<String>,
}

fn shared_str<S: serde::Serializer>(text: &std::sync::Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(text)
}

/// One thing worth a person's attention, with the numbers behind it and the SQL that fixes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The database whose audit found it (filled by the audit once the checks have run).
    pub database: String,
    pub check: Check,
    pub severity: Severity,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub index: Option<String>,
    /// What tells this finding apart from others of its check on the same object and node: the
    /// foreign key, the kind of id, the holder of the horizon, the slot. Metrics carry it as a
    /// label so no two findings share a series.
    pub subject: Option<String>,
    pub message: String,
    /// Named figures, units in the names.
    pub evidence: Vec<(&'static str, f64)>,
    /// The SQL that fixes it; none when nothing should be run (a build still in progress).
    pub fix: Option<String>,
    /// duplicate_index and redundant_index: the index that stays in this one's place (the one
    /// every decision of the group finally keeps), which `advise` names too.
    pub kept_index: Option<String>,
    /// The node the finding is about, for per-node objects (sessions, slots).
    pub node: Option<String>,
    /// Per-node index usage (unused_index).
    pub usage: Vec<NodeUsage>,
    /// For estimates (bloat). Boxed: most findings have none, and 40,000 findings each kept 40
    /// bytes for it.
    pub confidence: Option<Box<Confidence>>,
    /// The other reasons found for the same index, weaker first-reason aside: an index is one
    /// finding, under its strongest reason (see [`one_per_index`]).
    pub also: Vec<Reason>,
    /// The size of the object (an index's or a table's, from `relpages`; a slot's retained
    /// WAL), for ordering: largest first within a kind.
    pub object_size_bytes: Option<i64>,
}

/// Another check's reason for an index that is already a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reason {
    pub check: Check,
    pub severity: Severity,
    pub message: String,
    pub fix: Option<String>,
    /// As [`Finding::kept_index`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_index: Option<String>,
}

impl Finding {
    fn new(check: Check, severity: Severity, message: String) -> Self {
        Self {
            database: String::new(),
            check,
            severity,
            schema: None,
            table: None,
            index: None,
            subject: None,
            message,
            evidence: Vec::new(),
            fix: None,
            kept_index: None,
            node: None,
            usage: Vec::new(),
            confidence: None,
            also: Vec::new(),
            object_size_bytes: None,
        }
    }

    fn on_table(mut self, table: &Table) -> Self {
        self.schema = Some(table.schema.clone());
        self.table = Some(table.name.clone());
        self
    }

    fn on_index(mut self, index: &Index) -> Self {
        self.schema = Some(index.schema.clone());
        self.table = Some(index.table.clone());
        self.index = Some(index.name.clone());
        self
    }

    fn evidence(mut self, name: &'static str, value: f64) -> Self {
        self.evidence.push((name, value));
        self
    }

    fn fix(mut self, sql: impl Into<String>) -> Self {
        self.fix = Some(sql.into());
        self
    }

    fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// "schema.table", "schema.table index", or "" — how text output names the object.
    pub fn object(&self) -> String {
        let mut text = String::new();
        if let (Some(s), Some(t)) = (&self.schema, &self.table) {
            text = format!("{s}.{t}");
        }
        if let Some(i) = &self.index {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str("index ");
            text.push_str(i);
        }
        text
    }

    pub fn evidence_value(&self, name: &str) -> Option<f64> {
        self.evidence
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// A check that did not run (or ran on less than everything), and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// The database whose audit skipped it.
    pub database: String,
    pub check: Check,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Primary,
    Standby,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Standby => "standby",
        }
    }
}

/// Where a node's counting window comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `pg_stat_database.stats_reset` on 15+: an explicit reset.
    DatabaseReset,
    /// `pg_stat_database.stats_reset` before 15: set whenever the database's counters start,
    /// by a reset or by their creation (the database's first use after it was created, or after
    /// statistics were lost), so on a fresh cluster nobody reset anything.
    DatabaseCountersStarted,
    /// The server-wide statistics' reset time: on 15+, when statistics were last discarded
    /// (crash recovery, or a start without a statistics file).
    StatisticsDiscarded,
    /// When the database was created (its `PG_VERSION` file, readable by a superuser): a
    /// database younger than the server's statistics counted nothing before it existed.
    DatabaseCreated,
    /// Only the server start time is known: counters survive a clean restart but not a crash,
    /// so this is an approximation.
    ServerStart,
}

impl WindowSource {
    pub fn words(self) -> &'static str {
        match self {
            WindowSource::DatabaseReset => "statistics reset",
            WindowSource::DatabaseCountersStarted => {
                "database counters started (a reset, or their creation on first use)"
            }
            WindowSource::StatisticsDiscarded => {
                "statistics discarded (crash recovery or first start)"
            }
            WindowSource::DatabaseCreated => "database created",
            WindowSource::ServerStart => "server start (approximate: no reset time recorded)",
        }
    }

    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::DatabaseReset => "database_reset",
            WindowSource::DatabaseCountersStarted => "database_counters_started",
            WindowSource::StatisticsDiscarded => "statistics_discarded",
            WindowSource::DatabaseCreated => "database_created",
            WindowSource::ServerStart => "server_start",
        }
    }
}

/// Since when a node's counters have been counting, on the best evidence available.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsWindow {
    pub since: Timestamp,
    pub source: WindowSource,
    /// The window may be shorter than this: on 15+ nothing dates the database itself when no
    /// reset is recorded and the role cannot read its creation time, so a database created after
    /// the server-wide time inherits a window it never counted.
    pub upper_bound: bool,
}

impl StatsWindow {
    /// Every index and table counter of the database restarts at 0 on an explicit reset of the
    /// database (or of one object, which also stamps the database's `stats_reset`), and when
    /// statistics are discarded after a crash; a database created later counted nothing before
    /// it existed. The latest of those times starts the window.
    ///
    /// Before 15, `pg_stat_database.stats_reset` is set whenever the database's counters are
    /// (re)created, so it alone is the answer. On 15+ it stays null until an explicit reset, and
    /// statistics survive clean restarts; a crash discards them and stamps the server-wide
    /// statistics (bgwriter, archiver, checkpointer) with the time, so the earliest of those
    /// bounds the last discard. That time is the server's, not the database's: without the
    /// database's creation time (superuser only) it is an upper bound. The server start time is
    /// no bound either way (a crash restarts the backends without changing it, and a clean
    /// restart keeps the counters): it is the last resort, marked as such.
    pub fn of(snapshot: &NodeSnapshot) -> Option<StatsWindow> {
        Self::from_evidence(
            snapshot.server.version_num,
            &snapshot.database,
            snapshot.server.started_at,
        )
    }

    /// [`StatsWindow::of`] from what it weighs: the server's version, the database's reset,
    /// server-wide reset and creation times, and the server's start.
    pub fn from_evidence(
        version_num: u32,
        database: &snapshot::DatabaseInfo,
        started_at: Option<Timestamp>,
    ) -> Option<StatsWindow> {
        let before_15 = version_num < 150_000;
        let window = |since: Timestamp, source| StatsWindow {
            since,
            source,
            upper_bound: false,
        };
        let db = database.stats_reset.map(|t| {
            window(
                t,
                if before_15 {
                    WindowSource::DatabaseCountersStarted
                } else {
                    WindowSource::DatabaseReset
                },
            )
        });
        let shared = database
            .shared_stats_reset
            .map(|t| window(t, WindowSource::StatisticsDiscarded));
        let created = database
            .created
            .map(|t| window(t, WindowSource::DatabaseCreated));
        let best = [db, shared, created]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.since.epoch_seconds.total_cmp(&b.since.epoch_seconds));
        let mut best = best.or_else(|| started_at.map(|t| window(t, WindowSource::ServerStart)))?;
        best.upper_bound = !before_15 && db.is_none() && created.is_none();
        Some(best)
    }

    pub fn seconds(&self) -> f64 {
        self.since.age_seconds.max(0.0)
    }
}

/// One audited node, as the report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSummary {
    pub name: String,
    pub role: Option<Role>,
    pub server_version: Option<String>,
    /// The database the node was read from; for a node that could not be read, the one it was
    /// asked for, when the caller said (see [`audit_databases`]).
    pub database: Option<String>,
    pub window: Option<StatsWindow>,
    pub error: Option<String>,
    /// Why this node's figures were left out of the combined audit (a different cluster).
    pub excluded: Option<String>,
    pub privileges_missing: Vec<snapshot::PrivilegeGap>,
}

/// Per-object figures for metrics (the Prometheus exposition).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectFigures {
    pub tables: Vec<TableFigures>,
    pub indexes: Vec<IndexFigures>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableFigures {
    pub database: String,
    pub schema: String,
    pub table: String,
    /// `relpages` × block size (heap and TOAST) as of the table's last VACUUM, ANALYZE or
    /// CREATE INDEX: reading the files would lock every relation.
    pub size_bytes: Option<i64>,
    /// Whether `size_bytes` is known to be behind: `pg_class` never measured the table, or the
    /// statistics counters show more than twice the rows it recorded (a bulk load since).
    pub size_stale: bool,
    /// From the primary; none when no primary was audited.
    pub live_tuples: Option<i64>,
    pub dead_tuples: Option<i64>,
    pub mods_since_analyze: Option<i64>,
    pub last_vacuum_age_seconds: Option<f64>,
    pub last_analyze_age_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexFigures {
    pub database: String,
    pub schema: String,
    pub table: String,
    pub index: String,
    pub size_bytes: Option<i64>,
    /// (node name, idx_scan on that node).
    pub scans: Vec<(String, Option<i64>)>,
}

/// The audit's result: nodes, findings, what was skipped, and figures for metrics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuditReport {
    /// The databases audited, in the order they were given (one for [`audit`]).
    pub databases: Vec<String>,
    pub nodes: Vec<NodeSummary>,
    /// Most severe first.
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    /// Facts about the combination itself (nodes that could not be compared, standbys unseen).
    pub notes: Vec<String>,
    pub objects: ObjectFigures,
    /// Per node: idle-in-transaction and lock-wait ages, idle advisory locks, queue length and
    /// connection slots, for the metrics (written whether or not anything is a finding).
    pub sessions: Vec<activity::SessionFigures>,
}

impl AuditReport {
    /// 2 when no node could be read at all (a connection error, as psql exits 2); 3 when some
    /// node failed or was left out as another cluster's (partial); else 1 when a finding is at
    /// least `fail_on`, else 0.
    pub fn exit_code(&self, fail_on: Severity) -> u8 {
        if !self.nodes.is_empty() && self.nodes.iter().all(|n| n.error.is_some()) {
            crate::exit::ERROR
        } else if self
            .nodes
            .iter()
            .any(|n| n.error.is_some() || n.excluded.is_some())
        {
            crate::exit::PARTIAL
        } else if self.findings.iter().any(|f| f.severity >= fail_on) {
            crate::exit::FINDINGS
        } else {
            crate::exit::SUCCESS
        }
    }

    pub fn count(&self, check: Check, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.check == check && f.severity == severity)
            .count()
    }

    /// Whether findings must say which database they are in for a reader to tell them apart.
    pub fn spans_databases(&self) -> bool {
        self.databases.len() > 1
    }
}

/// An audited node whose figures take part in the combined audit.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub name: &'a str,
    pub snapshot: &'a NodeSnapshot,
    pub window: Option<StatsWindow>,
}

impl Node<'_> {
    pub fn is_primary(&self) -> bool {
        !self.snapshot.server.in_recovery
    }
}

/// The position of `item` in `items` when it is one of them (the same element, not an equal
/// one), found from its address.
fn position_in<T>(items: &[T], item: &T) -> Option<usize> {
    let size = std::mem::size_of::<T>();
    let offset = (item as *const T as usize).checked_sub(items.as_ptr() as usize)?;
    (size > 0 && offset % size == 0 && offset / size < items.len()).then_some(offset / size)
}

/// What every check sees: the combined nodes and lookups built once.
pub struct Context<'a> {
    pub options: &'a AuditOptions,
    /// The node whose catalog is audited: the primary when one was audited, else the first
    /// standby (a physical standby's catalog is the primary's).
    pub reference: Node<'a>,
    pub primary: Option<Node<'a>>,
    /// Every node that takes part, the reference included.
    pub nodes: Vec<Node<'a>>,
    /// Standbys the primary reports streaming to it, beyond those audited.
    pub standbys_not_audited: usize,
    /// Nodes of this database the user named that could not be read: their index scans (a
    /// standby's own read traffic) were not seen in this run.
    pub nodes_not_read: Vec<&'a str>,
    /// Index rows per node by (schema, index name), in `nodes` order.
    /// `usage_rows[i * nodes.len()..][..nodes.len()]` for the index at position i: one
    /// allocation, not one per index (50,000 at fleet scale).
    usage: HashMap<(&'a str, &'a str), usize>,
    usage_rows: Vec<Option<&'a Index>>,
    /// The usage position of each of the reference's indexes, in its order: the checks ask
    /// about the reference's own rows, 50,000 times each at fleet scale, and find them here
    /// without hashing two names.
    reference_usage: Vec<usize>,
    pub tables_by_oid: HashMap<u32, &'a Table>,
    /// The primary's table rows by (schema, name): the only place table statistics are kept.
    primary_tables: HashMap<&'a str, HashMap<&'a str, &'a Table>>,
    pub indexes_by_table: HashMap<u32, Vec<&'a Index>>,
    /// The partition indexes attached to each partitioned index (`pg_inherits`), by its oid.
    pub index_partitions: HashMap<u32, Vec<&'a Index>>,
    /// Foreign keys by their referencing table's oid, and by the index they reference, in
    /// catalog order: checks ask per index, and 50,000 indexes against 10,000 keys must not be
    /// a product.
    pub foreign_keys_by_table: HashMap<u32, Vec<&'a ForeignKey>>,
    pub foreign_keys_by_referenced_index: HashMap<u32, Vec<&'a ForeignKey>>,
}

impl<'a> Context<'a> {
    pub fn new(options: &'a AuditOptions, nodes: Vec<Node<'a>>) -> Option<Self> {
        let reference = *nodes.iter().find(|n| n.is_primary()).or(nodes.first())?;
        let primary = nodes.iter().copied().find(|n| n.is_primary());
        let audited_standbys = nodes.iter().filter(|n| !n.is_primary()).count();
        let standbys_not_audited = primary
            .map(|p| p.snapshot.standbys.len().saturating_sub(audited_standbys))
            .unwrap_or(0);
        let mut usage: HashMap<(&str, &str), usize> =
            HashMap::with_capacity(reference.snapshot.indexes.len());
        let mut usage_rows: Vec<Option<&Index>> =
            Vec::with_capacity(reference.snapshot.indexes.len() * nodes.len());
        let mut reference_usage = Vec::with_capacity(reference.snapshot.indexes.len());
        for (i, node) in nodes.iter().enumerate() {
            let is_reference = std::ptr::eq(node.snapshot, reference.snapshot);
            for index in &node.snapshot.indexes {
                let next = usage.len();
                let position = *usage
                    .entry((index.schema.as_str(), index.name.as_str()))
                    .or_insert(next);
                if position == next {
                    usage_rows.resize(usage_rows.len() + nodes.len(), None);
                }
                usage_rows[position * nodes.len() + i] = Some(index);
                if is_reference {
                    reference_usage.push(position);
                }
            }
        }
        let tables_by_oid = reference
            .snapshot
            .tables
            .iter()
            .map(|t| (t.oid, t))
            .collect();
        let mut primary_tables: HashMap<&str, HashMap<&str, &Table>> = HashMap::new();
        for table in primary.iter().flat_map(|p| &p.snapshot.tables) {
            primary_tables
                .entry(table.schema.as_str())
                .or_default()
                .insert(table.name.as_str(), table);
        }
        let mut indexes_by_table: HashMap<u32, Vec<&Index>> = HashMap::new();
        let mut index_partitions: HashMap<u32, Vec<&Index>> = HashMap::new();
        for index in &reference.snapshot.indexes {
            indexes_by_table
                .entry(index.table_oid)
                .or_default()
                .push(index);
            if let Some(parent) = index.parent_index_oid {
                index_partitions.entry(parent).or_default().push(index);
            }
        }
        let mut foreign_keys_by_table: HashMap<u32, Vec<&ForeignKey>> = HashMap::new();
        let mut foreign_keys_by_referenced_index: HashMap<u32, Vec<&ForeignKey>> = HashMap::new();
        for fk in &reference.snapshot.foreign_keys {
            foreign_keys_by_table
                .entry(fk.table_oid)
                .or_default()
                .push(fk);
            foreign_keys_by_referenced_index
                .entry(fk.referenced_index_oid)
                .or_default()
                .push(fk);
        }
        Some(Self {
            options,
            reference,
            primary,
            nodes,
            standbys_not_audited,
            nodes_not_read: Vec::new(),
            usage,
            usage_rows,
            reference_usage,
            tables_by_oid,
            primary_tables,
            indexes_by_table,
            index_partitions,
            foreign_keys_by_table,
            foreign_keys_by_referenced_index,
        })
    }

    /// The index's row on each combined node (none where the node does not have it yet).
    pub fn usage_of(&self, index: &Index) -> &[Option<&'a Index>] {
        let n = self.nodes.len();
        let position = match position_in(&self.reference.snapshot.indexes, index) {
            Some(i) => Some(self.reference_usage[i]),
            None => self
                .usage
                .get(&(index.schema.as_str(), index.name.as_str()))
                .copied(),
        };
        match position {
            Some(position) => &self.usage_rows[position * n..][..n],
            None => &[],
        }
    }

    /// Scans summed over every combined node.
    pub fn total_scans(&self, index: &Index) -> i64 {
        self.usage_of(index)
            .iter()
            .flatten()
            .map(|i| i.scans.unwrap_or(0))
            .sum()
    }

    /// The primary's row for one of the audited tables: the row itself when the primary is
    /// the reference (one lookup fewer per index at fleet scale), else by name.
    pub fn primary_row(&self, table: &'a Table) -> Option<&'a Table> {
        let primary = self.primary?;
        if std::ptr::eq(primary.snapshot, self.reference.snapshot)
            && position_in(&primary.snapshot.tables, table).is_some()
        {
            return Some(table);
        }
        self.primary_table(&table.schema, &table.name)
    }

    /// The primary's row for a table (the one with real statistics).
    pub fn primary_table(&self, schema: &str, name: &str) -> Option<&'a Table> {
        self.primary_tables
            .get(schema)
            .and_then(|by_name| by_name.get(name))
            .copied()
    }

    pub fn big_enough(&self, bytes: Option<i64>) -> bool {
        bytes.unwrap_or(0).max(0) as u64 >= self.options.min_size_bytes
    }

    /// How many times more rows the table holds now than `pg_class` last recorded, from the
    /// primary's live and dead tuple counters; `None` when `pg_class` has not measured the table
    /// at all: `reltuples` is -1 (14+) until the first VACUUM, ANALYZE or CREATE INDEX, and
    /// `relpages` 0 while the counters show rows (a table bulk-loaded with autovacuum off reads
    /// as empty).
    fn growth_since_pg_class(&self, table: &'a Table) -> Option<f64> {
        let rows_now = self
            .primary_row(table)
            .map(|t| {
                t.stats.n_live_tup.unwrap_or(0).max(0) + t.stats.n_dead_tup.unwrap_or(0).max(0)
            })
            .unwrap_or(0) as f64;
        // A partitioned table has no storage (relpages always 0): its size is its partitions'.
        if table.kind == snapshot::TableKind::Partitioned
            || table.reltuples < 0.0
            || (table.relpages <= 0 && rows_now > 0.0)
        {
            return None;
        }
        Some(if table.reltuples > 0.0 {
            (rows_now / table.reltuples).max(1.0)
        } else {
            1.0
        })
    }

    /// `--min-size` for a table. Sizes come from `relpages` (reading the files would lock every
    /// relation), scaled by the rows counted since; a table `pg_class` has not measured is
    /// never left out, so a never-vacuumed table cannot hide its dead tuples.
    pub fn table_big_enough(&self, table: &Table) -> bool {
        match self.growth_since_pg_class(table) {
            None => true,
            Some(growth) => self.big_enough(table.table_bytes.map(|b| (b as f64 * growth) as i64)),
        }
    }

    /// `--min-size` for an index, the same way: its `relpages` scaled by its table's growth,
    /// never left out when its table has not been measured. A partitioned index has no storage
    /// of its own (its size is always 0): it is as big as its partitions' indexes together.
    pub fn index_big_enough(&self, index: &Index) -> bool {
        match self.index_bytes_for_min_size(index, 0) {
            Some(bytes) => self.big_enough(Some(bytes)),
            None => true,
        }
    }

    /// The size `--min-size` compares, or none when something in it was never measured.
    fn index_bytes_for_min_size(&self, index: &Index, depth: u8) -> Option<i64> {
        if index.partitioned {
            // Partitioned indexes nest as deep as the tables do; the bound only guards a
            // catalog that loops.
            if depth >= 32 {
                return Some(0);
            }
            let mut total = 0i64;
            for child in self.index_partitions.get(&index.oid).into_iter().flatten() {
                total = total.saturating_add(self.index_bytes_for_min_size(child, depth + 1)?);
            }
            return Some(total);
        }
        let growth = match self.tables_by_oid.get(&index.table_oid) {
            Some(table) => self.growth_since_pg_class(table)?,
            None => 1.0,
        };
        Some((index.size_bytes.unwrap_or(0).max(0) as f64 * growth) as i64)
    }

    /// A combined node whose counting window is only an upper bound (the database may be
    /// younger than it), if any.
    pub fn window_upper_bound(&self) -> Option<&'a str> {
        self.nodes
            .iter()
            .find(|n| n.window.is_some_and(|w| w.upper_bound))
            .map(|n| n.name)
    }

    /// The shortest counting window among the combined nodes (the one that may have missed the
    /// most), or none when a node has no evidence at all.
    pub fn shortest_window(&self) -> Option<(f64, &'a str)> {
        let mut shortest: Option<(f64, &str)> = None;
        for node in &self.nodes {
            let seconds = node.window?.seconds();
            if shortest.is_none_or(|(s, _)| seconds < s) {
                shortest = Some((seconds, node.name));
            }
        }
        shortest
    }
}

/// Findings and skipped checks as the checks produce them.
#[derive(Debug, Default)]
pub struct Output {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

impl Output {
    /// Another output's findings and skipped checks, after these. The findings are moved as
    /// they are when there are none yet, and otherwise into space reserved once: at fleet scale
    /// they are the audit's largest allocation.
    pub fn append(&mut self, mut other: Output) {
        if self.findings.is_empty() {
            self.findings = other.findings;
        } else {
            self.findings.reserve_exact(other.findings.len());
            self.findings.append(&mut other.findings);
        }
        self.skipped.append(&mut other.skipped);
    }

    pub fn skip(&mut self, check: Check, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            database: String::new(),
            check,
            reason: reason.into(),
        });
    }
}

/// The nodes of one database of a cluster (a primary and its standbys, or any of them), named by
/// the database every one of them was asked to connect to: known even for a node that could not
/// be reached.
#[derive(Debug, Clone)]
pub struct DatabaseNodes {
    pub database: String,
    pub nodes: Vec<NodeResult>,
}

/// Audits several databases in one report: each database's nodes are combined on their own (index
/// usage and table statistics are per database, and two databases' objects are never compared),
/// then the reports are merged. Findings stay most severe first, in the order the databases were
/// given within a severity; notes name their database when there is more than one.
pub fn audit_databases(groups: &[DatabaseNodes], options: &AuditOptions) -> AuditReport {
    let many = groups.len() > 1;
    let mut merged = AuditReport::default();
    let reports = audit_each(groups, options);
    // Findings are most of the report's memory: reserved once, and one database's taken as they
    // are rather than copied.
    if many {
        merged
            .findings
            .reserve_exact(reports.iter().map(|r| r.findings.len()).sum());
    }
    for (group, report) in groups.iter().zip(reports) {
        merged.databases.extend(report.databases);
        merged.nodes.extend(report.nodes);
        if many {
            merged.findings.extend(report.findings);
        } else {
            merged.findings = report.findings;
        }
        merged.skipped.extend(report.skipped);
        merged.notes.extend(report.notes.into_iter().map(|note| {
            if many {
                format!("database {}: {note}", group.database)
            } else {
                note
            }
        }));
        merged.objects.tables.extend(report.objects.tables);
        merged.objects.indexes.extend(report.objects.indexes);
        merged.sessions.extend(report.sessions);
    }
    // Stable: within a severity, databases keep their order and each its own sort (one
    // database's findings are in order already).
    if many {
        merged
            .findings
            .sort_by_key(|f| std::cmp::Reverse(f.severity));
    }
    merged
}

/// Each group's report, in group order. The databases are independent, and by the time they
/// are audited every read is done and the server idle, so they are audited on every core
/// rather than one after another.
fn audit_each(groups: &[DatabaseNodes], options: &AuditOptions) -> Vec<AuditReport> {
    let one = |group: &DatabaseNodes| audit_database(Some(&group.database), &group.nodes, options);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(groups.len());
    if workers <= 1 {
        return groups.iter().map(one).collect();
    }
    let next = AtomicUsize::new(0);
    let mut reports: Vec<Option<AuditReport>> = vec![None; groups.len()];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(group) = groups.get(i) else {
                            return done;
                        };
                        done.push((i, one(group)));
                    }
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(done) => {
                    for (i, report) in done {
                        reports[i] = Some(report);
                    }
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    reports
        .into_iter()
        .map(|r| r.expect("every group is audited"))
        .collect()
}

/// Audits one database of a cluster from its nodes' snapshots; the database is the one the
/// primary (else the first readable node) is connected to.
pub fn audit(nodes: &[NodeResult], options: &AuditOptions) -> AuditReport {
    audit_database(None, nodes, options)
}

/// [`audit`], with the database named by the caller (`Some`) or by the nodes (`None`).
fn audit_database(
    database: Option<&str>,
    nodes: &[NodeResult],
    options: &AuditOptions,
) -> AuditReport {
    let mut report = AuditReport::default();
    let mut combined: Vec<Node> = Vec::new();
    let mut first_ok: Option<&NodeSnapshot> = None;
    let reference_index = nodes
        .iter()
        .position(|n| n.outcome.as_ref().is_ok_and(|s| !s.server.in_recovery))
        .or_else(|| nodes.iter().position(|n| n.outcome.is_ok()));
    let reference_snapshot = reference_index.and_then(|i| nodes[i].outcome.as_ref().ok());
    let database = database
        .map(str::to_owned)
        .or_else(|| reference_snapshot.map(|s| s.server.database.clone()))
        .unwrap_or_default();
    report.databases.push(database.clone());
    for node in nodes {
        let mut summary = NodeSummary {
            name: node.name.clone(),
            role: None,
            server_version: None,
            database: None,
            window: None,
            error: None,
            excluded: None,
            privileges_missing: Vec::new(),
        };
        match &node.outcome {
            Err(error) => {
                summary.error = Some(error.clone());
                summary.database = Some(database.clone()).filter(|d| !d.is_empty());
            }
            Ok(snapshot) => {
                first_ok.get_or_insert(snapshot);
                let window = StatsWindow::of(snapshot);
                summary.role = Some(if snapshot.server.in_recovery {
                    Role::Standby
                } else {
                    Role::Primary
                });
                summary.server_version = Some(snapshot.server.version.clone());
                summary.database = Some(snapshot.server.database.clone());
                summary.window = window;
                summary.privileges_missing = snapshot.privileges_missing.clone();
                let reference = reference_snapshot.unwrap_or(snapshot);
                match belongs_with(reference, snapshot) {
                    Belongs::Yes => {}
                    Belongs::Unverified(note) => {
                        if !report.notes.contains(&note) {
                            report.notes.push(note);
                        }
                    }
                    Belongs::No(reason) => {
                        report
                            .notes
                            .push(format!("{} left out of the audit: {reason}", node.name));
                        summary.excluded = Some(reason);
                    }
                }
                if summary.excluded.is_none() {
                    combined.push(Node {
                        name: &node.name,
                        snapshot,
                        window,
                    });
                }
            }
        }
        report.nodes.push(summary);
    }
    let primaries = combined.iter().filter(|n| n.is_primary()).count();
    if primaries > 1 {
        report.notes.push(format!(
            "{primaries} nodes report being a primary with the same system identifier: the same \
             server given twice, or a split brain; their index scans were added up"
        ));
    }
    let Some(mut ctx) = Context::new(options, combined) else {
        for check in Check::ALL {
            report.skipped.push(Skipped {
                database: database.clone(),
                check,
                reason: "no node could be read".into(),
            });
        }
        return report;
    };
    ctx.nodes_not_read = nodes
        .iter()
        .filter(|n| n.outcome.is_err())
        .map(|n| n.name.as_str())
        .collect();
    if ctx.standbys_not_audited > 0 {
        report.notes.push(format!(
            "the primary reports {} standby(s) streaming from it that were not audited: their \
             index usage was not seen",
            ctx.standbys_not_audited
        ));
    }
    let mut out = Output::default();
    checks::run_all(&ctx, &mut out);
    unread_definitions(&ctx, &mut out);
    let mut findings = one_per_index(out.findings);
    object_sizes(&ctx, &mut findings);
    // Most severe first; within a kind, the largest objects first (what a person reads first at
    // fleet scale), then by name.
    sort_stable_by(&mut findings, |a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.check.cmp(&b.check))
            .then_with(|| b.object_size_bytes.cmp(&a.object_size_bytes))
            .then_with(|| a.schema.cmp(&b.schema))
            .then_with(|| a.table.cmp(&b.table))
            .then_with(|| a.index.cmp(&b.index))
            .then_with(|| a.message.cmp(&b.message))
    });
    // The checks see one database; the report says which.
    for finding in &mut findings {
        finding.database.clone_from(&database);
    }
    let mut skipped = out.skipped;
    for s in &mut skipped {
        s.database.clone_from(&database);
    }
    report.findings = findings;
    report.skipped = skipped;
    report.sessions = ctx
        .nodes
        .iter()
        .map(|node| activity::figures(node, &database))
        .collect();
    if options.object_figures {
        report.objects = object_figures(&ctx, &database);
    }
    report
}

/// A stable sort that needs no copy of the items: `slice::sort_by` borrows scratch space for
/// half of them or more (8 MB of findings at fleet scale, at the audit's peak), while positions
/// sort in a few hundred kB and the items are then moved into place, cycle by cycle.
fn sort_stable_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> std::cmp::Ordering) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| compare(&items[a], &items[b]));
    // order[k] is the item that belongs at k. Following a cycle from `start`, each swap puts
    // the right item at `current` and carries the item from `start` on to the next place.
    for start in 0..items.len() {
        let mut current = start;
        while order[current] != start {
            let next = order[current];
            items.swap(current, next);
            order[current] = current;
            current = next;
        }
        order[current] = current;
    }
}

/// How strong a reason about an index is, after its severity: a broken index first, then an
/// exact duplicate (certain whatever the counters say), then one nobody uses (measured), then
/// one a wider index covers (which may still be the better fit), then one that is bloated.
fn index_reason_rank(check: Check) -> Option<u8> {
    match check {
        Check::InvalidIndex => Some(0),
        Check::DuplicateIndex => Some(1),
        Check::UnusedIndex => Some(2),
        Check::RedundantIndex => Some(3),
        Check::IndexBloat => Some(4),
        _ => None,
    }
}

/// One finding per index: when several checks report the same index (an exact duplicate is
/// also unused, with the same DROP), the strongest reason — most severe, then by
/// `index_reason_rank` — is the finding, and the others become its `also` reasons; their
/// evidence figures are added where the finding lacks them, and an unused index's per-node
/// usage and a bloat estimate's confidence are kept. Every other finding passes through unchanged, in order.
pub fn one_per_index(mut findings: Vec<Finding>) -> Vec<Finding> {
    // Grouped by position and merged in place: an audit of 50,000 indexes must not hold its
    // findings twice.
    let hasher = foldhash::fast::FixedState::default();
    let mut merges = same_index_groups(&findings, |names| {
        std::hash::BuildHasher::hash_one(&hasher, names)
    });
    let mut removed = vec![false; findings.len()];
    for group in &mut merges {
        group.sort_by_key(|&i| {
            (
                std::cmp::Reverse(findings[i].severity),
                index_reason_rank(findings[i].check).unwrap_or(u8::MAX),
                i,
            )
        });
        let (&first, others) = group.split_first().expect("a group has two findings");
        for &o in others {
            let other = std::mem::replace(
                &mut findings[o],
                Finding::new(Check::UnusedIndex, Severity::Info, String::new()),
            );
            removed[o] = true;
            let f = &mut findings[first];
            for (name, value) in other.evidence {
                if f.evidence_value(name).is_none() {
                    f.evidence.push((name, value));
                }
            }
            if f.usage.is_empty() {
                f.usage = other.usage;
            }
            if f.confidence.is_none() {
                f.confidence = other.confidence;
            }
            f.also.push(Reason {
                check: other.check,
                severity: other.severity,
                message: other.message,
                fix: other.fix,
                kept_index: other.kept_index,
            });
        }
    }
    let mut position = 0;
    findings.retain(|_| {
        position += 1;
        !removed[position - 1]
    });
    // The merged findings' places are free: a fifth of the findings at fleet scale (an
    // unused duplicate is two), kept to the end otherwise.
    findings.shrink_to_fit();
    findings
}

/// The findings about the same index (by schema, table and index name), as groups of two or
/// more positions, each in finding order. The table is keyed by the names' `hash` (16-byte
/// entries, where the names themselves made 72-byte ones whose random accesses missed the cache
/// at every insert); a hit is confirmed by comparing the names, and different indexes whose
/// names share a hash meet in a map by the names themselves.
fn same_index_groups(
    findings: &[Finding],
    hash: impl Fn(&(&str, &str, &str)) -> u64,
) -> Vec<Vec<usize>> {
    fn key(f: &Finding) -> Option<(&str, &str, &str)> {
        index_reason_rank(f.check)?;
        match (&f.schema, &f.table, &f.index) {
            (Some(s), Some(t), Some(x)) => Some((s.as_str(), t.as_str(), x.as_str())),
            _ => None,
        }
    }
    let mut first_by_hash: HashMap<u64, usize> = HashMap::with_capacity(findings.len());
    let mut first_by_name: HashMap<(&str, &str, &str), usize> = HashMap::new();
    // (the group's first finding, another of its findings), in finding order.
    let mut members: Vec<(usize, usize)> = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(names) = key(f) else { continue };
        let first = *first_by_hash.entry(hash(&names)).or_insert(i);
        if first == i {
            continue;
        }
        if key(&findings[first]) == Some(names) {
            members.push((first, i));
        } else {
            match *first_by_name.entry(names).or_insert(i) {
                j if j == i => {}
                j => members.push((j, i)),
            }
        }
    }
    members.sort_by_key(|&(first, _)| first);
    members
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            std::iter::once(group[0].0)
                .chain(group.iter().map(|&(_, other)| other))
                .collect()
        })
        .collect()
}

/// Each finding's object size: an index's from its evidence (a partitioned index's is its
/// partitions'), a table's from `pg_class`, a slot's retained WAL.
fn object_sizes(ctx: &Context, findings: &mut [Finding]) {
    let mut tables: HashMap<(&str, &str), Option<i64>> = HashMap::new();
    for t in &ctx.reference.snapshot.tables {
        tables.insert((t.schema.as_str(), t.name.as_str()), t.table_bytes);
    }
    for f in findings {
        f.object_size_bytes = if f.index.is_some() {
            f.evidence_value("index_size_bytes").map(|v| v as i64)
        } else if let (Some(s), Some(t)) = (&f.schema, &f.table) {
            tables.get(&(s.as_str(), t.as_str())).copied().flatten()
        } else {
            f.evidence_value("retained_wal_bytes").map(|v| v as i64)
        };
    }
}

/// Indexes whose text could not be deparsed because their table was locked: named with the
/// lock's holder, per table, under the checks that quote definitions. Nothing else is lost: they
/// were compared by their stored trees, and every other check read them.
fn unread_definitions(ctx: &Context, out: &mut Output) {
    let mut by_table: Vec<(u32, Vec<&Index>)> = Vec::new();
    for index in &ctx.reference.snapshot.indexes {
        if index.unread.is_none() {
            continue;
        }
        match by_table.iter_mut().find(|(t, _)| *t == index.table_oid) {
            Some((_, list)) => list.push(index),
            None => by_table.push((index.table_oid, vec![index])),
        }
    }
    for (_, indexes) in by_table {
        let first = indexes[0];
        let holder = first.unread.as_ref().expect("unread");
        let table = checks::qualified(&first.schema, &first.table);
        let object = if holder.relation_oid != 0 && holder.relation_oid != first.table_oid {
            "its index"
        } else {
            "the table"
        };
        let since = holder
            .since
            .map(|t| format!(" since {}", t.iso()))
            .unwrap_or_default();
        let who = match (&holder.gid, holder.pid) {
            (Some(gid), _) => format!("prepared transaction {}", crate::sql::quote_literal(gid)),
            (None, Some(pid)) => format!("pid {pid}"),
            (None, None) => String::new(),
        };
        let lock = if who.is_empty() {
            format!(
                "a lock on {object} was not granted within the audit's short wait (it appeared \
                 after pg_locks was read)"
            )
        } else if holder.granted {
            format!("{object} is locked in ACCESS EXCLUSIVE mode by {who}{since}")
        } else {
            format!("{who} is queued for an ACCESS EXCLUSIVE lock on {object}{since}")
        };
        let mut names: Vec<&str> = indexes.iter().map(|i| i.name.as_str()).collect();
        names.sort_unstable();
        let reason = format!(
            "{table}: the text of {} ({}) could not be read without waiting: {lock}; they \
             were compared by their stored definitions and every other check read them, but \
             findings show their expressions as <not read>",
            if names.len() == 1 {
                "1 index".to_owned()
            } else {
                format!("{} indexes", names.len())
            },
            names.join(", ")
        );
        out.skip(Check::DuplicateIndex, reason.clone());
        if indexes.iter().any(|i| !i.valid) {
            out.skip(Check::InvalidIndex, reason);
        }
    }
}

enum Belongs {
    Yes,
    Unverified(String),
    No(String),
}

/// Whether a node can be combined with the reference: the same cluster (system identifier) and
/// the same database.
fn belongs_with(reference: &NodeSnapshot, node: &NodeSnapshot) -> Belongs {
    if std::ptr::eq(reference, node) {
        return Belongs::Yes;
    }
    if reference.server.database != node.server.database {
        return Belongs::No(format!(
            "it is database {:?}, the audit is of {:?}",
            node.server.database, reference.server.database
        ));
    }
    match (
        &reference.server.system_identifier,
        &node.server.system_identifier,
    ) {
        (Some(a), Some(b)) if a != b => Belongs::No(format!(
            "system identifier {b} differs from {a}: not a standby of the same cluster"
        )),
        (Some(_), Some(_)) => Belongs::Yes,
        _ => Belongs::Unverified(
            "could not verify that the nodes are one cluster: pg_control_system() is not \
             readable by the audit role"
                .into(),
        ),
    }
}

/// Past this many times the rows `pg_class` recorded, its size is no longer the table's.
const STALE_SIZE_GROWTH: f64 = 2.0;

fn object_figures(ctx: &Context, database: &str) -> ObjectFigures {
    let mut figures = ObjectFigures::default();
    for table in &ctx.reference.snapshot.tables {
        if !ctx.table_big_enough(table) || table.kind == snapshot::TableKind::Partitioned {
            continue;
        }
        let stats = ctx.primary_row(table).map(|t| &t.stats);
        let last = |a: Option<Timestamp>, b: Option<Timestamp>| {
            [a, b]
                .into_iter()
                .flatten()
                .map(|t| t.age_seconds)
                .reduce(f64::min)
        };
        figures.tables.push(TableFigures {
            database: database.to_owned(),
            schema: table.schema.clone(),
            table: table.name.clone(),
            size_bytes: table.table_bytes,
            size_stale: ctx
                .growth_since_pg_class(table)
                .is_none_or(|growth| growth > STALE_SIZE_GROWTH),
            live_tuples: stats.and_then(|s| s.n_live_tup),
            dead_tuples: stats.and_then(|s| s.n_dead_tup),
            mods_since_analyze: stats.and_then(|s| s.n_mod_since_analyze),
            last_vacuum_age_seconds: stats.and_then(|s| last(s.last_vacuum, s.last_autovacuum)),
            last_analyze_age_seconds: stats.and_then(|s| last(s.last_analyze, s.last_autoanalyze)),
        });
    }
    for index in &ctx.reference.snapshot.indexes {
        if index.partitioned || !ctx.index_big_enough(index) {
            continue;
        }
        let scans = ctx
            .nodes
            .iter()
            .zip(ctx.usage_of(index))
            .map(|(node, row)| (node.name.to_owned(), row.and_then(|i| i.scans)))
            .collect();
        figures.indexes.push(IndexFigures {
            database: database.to_owned(),
            schema: index.schema.clone(),
            table: index.table.clone(),
            index: index.name.clone(),
            size_bytes: index.size_bytes,
            scans,
        });
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_in_place_is_stable_and_matches_slice_sort() {
        // Pseudo-random keys with many ties, each item tagged with its original position.
        let mut seed = 12_345u64;
        for len in [0, 1, 2, 3, 10, 257, 5_000] {
            let items: Vec<(u64, usize)> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((seed >> 33) % 7, i)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_by_key(|&(key, _)| key);
            let mut sorted = items;
            sort_stable_by(&mut sorted, |a, b| a.0.cmp(&b.0));
            assert_eq!(sorted, expected, "{len}");
        }
    }

    #[test]
    fn table_patterns_follow_identifier_rules() {
        let scope = Scope {
            tables: vec![
                "Orders".into(),
                "sales.\"Line Items\"".into(),
                "\"a.b\".c".into(),
            ],
            ..Default::default()
        };
        let (schemas, tables) = scope.table_filters();
        assert_eq!(schemas, vec!["", "sales", "a.b"]);
        assert_eq!(tables, vec!["orders", "Line Items", "c"]);
    }

    /// A primary of `database` whose `orders` table has two indexes on the same column.
    fn with_duplicate(database: &str) -> NodeSnapshot {
        use checks::fixture::*;
        let mut p = primary();
        p.server.database = database.into();
        let t = table(10, "orders");
        p.indexes = vec![
            index(100, &t, "orders_a", vec![col(2, "a")]),
            index(101, &t, "orders_a_again", vec![col(2, "a")]),
        ];
        p.tables = vec![t];
        p
    }

    /// A primary of `database` on another cluster, with the same table and index names (and
    /// oids) as [`with_duplicate`] but no duplicate, and dead rows autovacuum cannot reach.
    fn with_dead_rows(database: &str) -> NodeSnapshot {
        use checks::fixture::*;
        let mut p = primary();
        p.server.database = database.into();
        p.server.system_identifier = Some("7000000000000000002".into());
        let mut t = table(10, "orders");
        t.reloptions = vec!["autovacuum_enabled=false".into()];
        t.stats.n_dead_tup = Some(150_000);
        p.indexes = vec![index(100, &t, "orders_a", vec![col(2, "a")])];
        p.tables = vec![t];
        // One standby streams from it; the one given is down, so its usage goes unseen.
        p.standbys = vec![snapshot::Standby {
            pid: 77,
            ..Default::default()
        }];
        p
    }

    fn ok(name: &str, snapshot: NodeSnapshot) -> NodeResult {
        NodeResult {
            name: name.into(),
            outcome: Ok(snapshot),
        }
    }

    #[test]
    fn databases_are_audited_apart_and_merged() {
        let groups = [
            DatabaseNodes {
                database: "app".into(),
                nodes: vec![ok("host=a dbname=app", with_duplicate("app"))],
            },
            DatabaseNodes {
                database: "billing".into(),
                nodes: vec![
                    ok("host=b dbname=billing", with_dead_rows("billing")),
                    NodeResult {
                        name: "host=b2 dbname=billing".into(),
                        outcome: Err("connection refused".into()),
                    },
                ],
            },
        ];
        let report = audit_databases(&groups, &AuditOptions::default());
        assert_eq!(report.databases, ["app", "billing"]);
        assert!(report.spans_databases());

        // Each database's findings, named by it; app's duplicate is not billing's, although
        // billing has a table and an index of the same names and oids.
        let dup: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::DuplicateIndex)
            .collect();
        assert_eq!(dup.len(), 1, "{:#?}", report.findings);
        assert_eq!(dup[0].database, "app");
        let dead: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::DeadTuples)
            .collect();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].database, "billing");
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.database == "app" || f.database == "billing")
        );
        // Most severe first across databases; within a severity, databases in the order given.
        let order: Vec<(Severity, &str)> = report
            .findings
            .iter()
            .map(|f| (f.severity, f.database.as_str()))
            .collect();
        let mut sorted = order.clone();
        sorted.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| (a.1 == "billing").cmp(&(b.1 == "billing")))
        });
        assert_eq!(order, sorted);

        // A second cluster's primary is not left out when it is another database's.
        assert!(report.nodes.iter().all(|n| n.excluded.is_none()));
        let names: Vec<(&str, Option<&str>)> = report
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.database.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("host=a dbname=app", Some("app")),
                ("host=b dbname=billing", Some("billing")),
                // Unreachable, yet its database is known: the one it asked for.
                ("host=b2 dbname=billing", Some("billing")),
            ]
        );
        assert_eq!(report.exit_code(Severity::Warning), crate::exit::PARTIAL);

        // Notes and per-object figures say which database they are about.
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with("database billing: the primary reports 1 standby")),
            "{:?}",
            report.notes
        );
        let tables: Vec<(&str, &str)> = report
            .objects
            .tables
            .iter()
            .map(|t| (t.database.as_str(), t.table.as_str()))
            .collect();
        assert_eq!(tables, [("app", "orders"), ("billing", "orders")]);
        let indexes: Vec<(&str, &str)> = report
            .objects
            .indexes
            .iter()
            .map(|i| (i.database.as_str(), i.index.as_str()))
            .collect();
        assert_eq!(
            indexes,
            [
                ("app", "orders_a"),
                ("app", "orders_a_again"),
                ("billing", "orders_a")
            ]
        );
    }

    #[test]
    fn object_figures_only_when_asked_and_nothing_else_changes() {
        let nodes = vec![ok("host=a dbname=app", with_duplicate("app"))];
        let with = audit(&nodes, &AuditOptions::default());
        let without = audit(
            &nodes,
            &AuditOptions {
                object_figures: false,
                ..AuditOptions::default()
            },
        );
        assert!(!with.objects.indexes.is_empty() && !with.objects.tables.is_empty());
        assert_eq!(without.objects, ObjectFigures::default());
        assert_eq!(
            AuditReport {
                objects: with.objects.clone(),
                ..without
            },
            with
        );
    }

    #[test]
    fn one_database_reads_as_before() {
        let nodes = vec![ok("host=a dbname=app", with_duplicate("app"))];
        let alone = audit(&nodes, &AuditOptions::default());
        let grouped = audit_databases(
            &[DatabaseNodes {
                database: "app".into(),
                nodes,
            }],
            &AuditOptions::default(),
        );
        assert_eq!(alone, grouped);
        assert!(!grouped.spans_databases());
        assert!(grouped.findings.iter().all(|f| f.database == "app"));
    }

    #[test]
    fn another_cluster_inside_a_database_is_still_left_out() {
        let report = audit_databases(
            &[DatabaseNodes {
                database: "app".into(),
                nodes: vec![
                    ok("host=a dbname=app", with_duplicate("app")),
                    ok("host=z dbname=app", with_dead_rows("app")),
                ],
            }],
            &AuditOptions::default(),
        );
        assert!(report.nodes[0].excluded.is_none());
        let why = report.nodes[1].excluded.as_deref().unwrap_or_default();
        assert!(why.contains("system identifier"), "{why}");
        assert!(
            !report.findings.iter().any(|f| f.check == Check::DeadTuples),
            "the other cluster's table is not audited"
        );
    }

    #[test]
    fn a_database_no_node_could_read_skips_every_check_by_name() {
        let report = audit_databases(
            &[
                DatabaseNodes {
                    database: "app".into(),
                    nodes: vec![ok("host=a dbname=app", with_duplicate("app"))],
                },
                DatabaseNodes {
                    database: "gone".into(),
                    nodes: vec![NodeResult {
                        name: "host=a dbname=gone".into(),
                        outcome: Err("database \"gone\" does not exist".into()),
                    }],
                },
            ],
            &AuditOptions::default(),
        );
        let gone: Vec<&Skipped> = report
            .skipped
            .iter()
            .filter(|s| s.database == "gone")
            .collect();
        assert_eq!(gone.len(), Check::ALL.len());
        assert!(
            report
                .skipped
                .iter()
                .filter(|s| s.database == "app")
                .all(|s| s.reason != "no node could be read")
        );
        assert_eq!(report.exit_code(Severity::Warning), crate::exit::PARTIAL);
    }

    #[test]
    fn no_node_read_is_a_connection_error_and_another_cluster_is_partial() {
        let down = |name: &str| NodeResult {
            name: name.into(),
            outcome: Err("connection refused".into()),
        };
        let none = audit(&[down("host=a"), down("host=b")], &AuditOptions::default());
        assert_eq!(none.exit_code(Severity::Warning), crate::exit::ERROR);
        assert_eq!(none.exit_code(Severity::Critical), crate::exit::ERROR);

        let some = audit(
            &[
                ok("host=a dbname=app", with_duplicate("app")),
                down("host=b"),
            ],
            &AuditOptions::default(),
        );
        assert_eq!(some.exit_code(Severity::Critical), crate::exit::PARTIAL);

        // Another cluster's node is left out: the audit covers less than was asked for.
        let mut other = with_duplicate("app");
        other.server.system_identifier = Some("7000000000000000009".into());
        other.indexes.clear();
        let mut first = with_duplicate("app");
        first.indexes.truncate(1);
        let mixed = audit(
            &[
                ok("host=a dbname=app", first),
                ok("host=z dbname=app", other),
            ],
            &AuditOptions::default(),
        );
        assert!(mixed.nodes[1].excluded.is_some());
        assert!(
            mixed
                .findings
                .iter()
                .all(|f| f.severity < Severity::Warning)
        );
        assert_eq!(mixed.exit_code(Severity::Warning), crate::exit::PARTIAL);
        assert!(
            mixed.notes.iter().any(
                |n| n.contains("host=z dbname=app left out") && n.contains("system identifier")
            ),
            "{:?}",
            mixed.notes
        );
    }

    #[test]
    fn a_position_is_found_for_the_slice_s_own_elements_only() {
        let items = vec![String::from("a"), String::from("b"), String::from("c")];
        assert_eq!(position_in(&items, &items[2]), Some(2));
        assert_eq!(position_in(&items, &items[0]), Some(0));
        let equal = items[1].clone();
        assert_eq!(position_in(&items, &equal), None);
        assert_eq!(position_in(&items[1..], &items[0]), None);
    }

    #[test]
    fn findings_about_one_index_are_grouped_whatever_their_names_hash_to() {
        let about = |check, table: &str, index: &str| {
            let mut f = Finding::new(check, Severity::Info, String::new());
            f.schema = Some("public".into());
            f.table = Some(table.into());
            f.index = Some(index.into());
            f
        };
        let findings = vec![
            about(Check::UnusedIndex, "t", "a"),
            about(Check::UnusedIndex, "t", "b"),
            about(Check::DuplicateIndex, "t", "a"),
            about(Check::RedundantIndex, "u", "a"),
            about(Check::IndexBloat, "t", "b"),
            about(Check::UnusedIndex, "u", "a"),
            about(Check::DeadTuples, "t", "a"),
            about(Check::InvalidIndex, "t", "a"),
            about(Check::UnusedIndex, "t", "c"),
        ];
        let expected = vec![vec![0, 2, 7], vec![1, 4], vec![3, 5]];
        let hasher = foldhash::fast::FixedState::default();
        let real = same_index_groups(&findings, |n| std::hash::BuildHasher::hash_one(&hasher, n));
        assert_eq!(real, expected);
        // Every name colliding, or only some: the names decide.
        assert_eq!(same_index_groups(&findings, |_| 7), expected);
        assert_eq!(same_index_groups(&findings, |n| n.2.len() as u64), expected);
    }

    #[test]
    fn an_index_found_by_several_checks_is_one_finding_under_its_strongest_reason() {
        let mut p = with_duplicate("app");
        // Neither is scanned: orders_a_again is a duplicate and unused, orders_a unused.
        for i in &mut p.indexes {
            i.scans = Some(0);
        }
        let report = audit(&[ok("host=a dbname=app", p)], &AuditOptions::default());
        let about = |name: &str| -> Vec<&Finding> {
            report
                .findings
                .iter()
                .filter(|f| f.index.as_deref() == Some(name))
                .collect()
        };
        let again = about("orders_a_again");
        assert_eq!(again.len(), 1, "{:#?}", report.findings);
        assert_eq!(again[0].check, Check::DuplicateIndex);
        assert_eq!(again[0].also.len(), 1);
        assert_eq!(again[0].also[0].check, Check::UnusedIndex);
        // The unused check's figures and usage become the finding's evidence.
        assert!(again[0].evidence_value("counting_window_seconds").is_some());
        assert!(!again[0].usage.is_empty());
        let kept = about("orders_a");
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].check, Check::UnusedIndex);
        assert!(kept[0].also.is_empty());
        // Sizes order findings: every index finding knows its object's size.
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.object_size_bytes.is_some())
        );
    }

    #[test]
    fn windows_are_named_for_what_the_server_recorded() {
        use checks::fixture::*;
        let mut p = primary();
        p.database.created = None;
        // Before 15 the database's stats_reset is when its counters started, reset or not.
        p.server.version_num = 130_023;
        p.database.stats_reset = Some(ts(3_600.0));
        let w = StatsWindow::of(&p).unwrap();
        assert_eq!(w.source, WindowSource::DatabaseCountersStarted);
        assert!(!w.source.words().contains("statistics reset"));
        assert!(!w.upper_bound);
        // 15+: an explicit reset.
        p.server.version_num = 150_018;
        let w = StatsWindow::of(&p).unwrap();
        assert_eq!(w.source, WindowSource::DatabaseReset);
        assert!(!w.upper_bound);
        // 15+, nothing recorded for the database: the server's discard time, an upper bound.
        p.database.stats_reset = None;
        let w = StatsWindow::of(&p).unwrap();
        assert_eq!(w.source, WindowSource::StatisticsDiscarded);
        assert!(w.upper_bound);
        // ... unless the database is known to be younger, or older.
        p.database.created = Some(ts(600.0));
        let w = StatsWindow::of(&p).unwrap();
        assert_eq!(
            (w.source, w.upper_bound),
            (WindowSource::DatabaseCreated, false)
        );
        assert_eq!(w.seconds(), 600.0);
        p.database.created = Some(ts(400.0 * 86_400.0));
        let w = StatsWindow::of(&p).unwrap();
        assert_eq!(
            (w.source, w.upper_bound),
            (WindowSource::StatisticsDiscarded, false)
        );
    }

    #[test]
    fn prometheus_sizes_pg_class_is_behind_on_are_marked_stale() {
        use checks::fixture::*;
        let mut p = primary();
        let mut loaded = table(10, "loaded");
        loaded.reltuples = 100.0;
        loaded.stats.n_live_tup = Some(300_100);
        let fresh = table(11, "fresh");
        let mut never = table(12, "never");
        never.reltuples = -1.0;
        p.tables = vec![loaded, fresh, never];
        let report = audit(&[ok("p", p)], &AuditOptions::default());
        let stale: Vec<(&str, bool)> = report
            .objects
            .tables
            .iter()
            .map(|t| (t.table.as_str(), t.size_stale))
            .collect();
        assert_eq!(stale, [("loaded", true), ("fresh", false), ("never", true)]);
    }

    #[test]
    fn iso_times() {
        assert_eq!(snapshot::iso_utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(snapshot::iso_utc(1_796_032_556.7), "2026-11-30T09:55:56Z");
        assert_eq!(snapshot::iso_utc(951_782_400.0), "2000-02-29T00:00:00Z");
    }
}
