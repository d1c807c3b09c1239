//! What pgplan knows about a server: the facts read once per connection, and what pgplan can do
//! there because of them. Plain data, shared by the core and the I/O shell.

use serde::Serialize;

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

/// A pgplan feature and whether it works on this server, with the reason when it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Feature {
    pub name: &'static str,
    pub available: bool,
    /// Why not, or a caveat when it works with limits.
    pub note: Option<String>,
}

fn feature(name: &'static str, available: bool, note: Option<String>) -> Feature {
    Feature {
        name,
        available,
        note,
    }
}

/// What pgplan can do on a server with these facts.
pub fn features(facts: &ServerFacts) -> Vec<Feature> {
    let writable = !facts.in_recovery && !facts.read_only;
    let not_writable = || {
        Some(if facts.in_recovery {
            "a standby cannot build indexes; use --hypothetical, or a writable copy".to_owned()
        } else {
            "the session is read-only (default_transaction_read_only); use --hypothetical, or a \
             writable connection"
                .to_owned()
        })
    };
    let owner_note = Some("needs ownership of the query's tables (CREATE INDEX rights)".to_owned());
    let stats_visible = facts.superuser || facts.pg_read_all_stats || facts.pg_monitor;
    let mut list = vec![
        feature(
            "compare",
            writable,
            if writable {
                owner_note.clone()
            } else {
                not_writable()
            },
        ),
        feature(
            "compare --drop-index",
            writable,
            if writable { owner_note } else { not_writable() },
        ),
        feature(
            "compare --hypothetical",
            facts.has_extension("hypopg"),
            (!facts.has_extension("hypopg")).then(|| {
                "HypoPG is not installed in this database (CREATE EXTENSION hypopg)".to_owned()
            }),
        ),
    ];
    let table_stats = facts
        .in_recovery
        .then(|| "a standby reads zeros for table statistics: audit its primary too".to_owned());
    for check in ["audit: dead_tuples", "audit: stale_statistics"] {
        list.push(feature(check, !facts.in_recovery, table_stats.clone()));
    }
    list.push(feature(
        "audit: xmin_horizon",
        stats_visible,
        (!stats_visible).then(|| {
            "other users' sessions hide their xmin without pg_read_all_stats (GRANT pg_monitor TO ...)"
                .to_owned()
        }),
    ));
    for check in [
        "audit: unused_index",
        "audit: invalid_index",
        "audit: duplicate_index",
        "audit: visibility_map",
        "audit: bloat",
    ] {
        list.push(feature(check, true, None));
    }
    list
}
