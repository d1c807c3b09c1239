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
    /// Extensions whose package is installed on the server (`pg_available_extensions`), created
    /// in this database or not.
    pub available_extensions: Vec<String>,
    /// The connection's TLS version, when encrypted (`pg_stat_ssl`).
    pub tls_version: Option<String>,
    pub tls_cipher: Option<String>,
    /// `pg_control_system()`'s system identifier: the same on a primary and its physical standbys.
    pub system_identifier: Option<String>,
    /// `pg_postmaster_start_time()`, as text (ISO 8601).
    pub started_at: Option<String>,
    /// Seconds since the server started.
    pub uptime_seconds: Option<f64>,
    /// `pg_index`'s size in bytes (about 200 per index): how large the catalog an audit reads
    /// is, known before reading it.
    pub index_catalog_bytes: Option<i64>,
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

    /// Why HypoPG cannot be used in this database, and the fix for this case: its package is
    /// missing on the server; or it is there and the extension was never created, which a
    /// standby cannot do (CREATE EXTENSION on the primary replicates to it). `None` when it is
    /// installed.
    pub fn hypopg_missing(&self) -> Option<(String, String)> {
        if self.has_extension("hypopg") {
            return None;
        }
        let db = &self.database;
        let major = self.major();
        if !self.available_extensions.iter().any(|n| n == "hypopg") {
            let create = if self.in_recovery {
                format!(
                    "CREATE EXTENSION hypopg in database {db} on the primary (a standby cannot)"
                )
            } else {
                format!("CREATE EXTENSION hypopg in database {db}")
            };
            return Some((
                "HypoPG is not available on this server: its package is not installed \
                 (pg_available_extensions has no hypopg)"
                    .to_owned(),
                format!(
                    "install HypoPG for PostgreSQL {major} on the server (Debian and Ubuntu: \
                     postgresql-{major}-hypopg), then {create}"
                ),
            ));
        }
        if self.in_recovery {
            return Some((
                format!(
                    "HypoPG is installed on this standby but not created in database {db}, and a \
                     standby cannot create an extension"
                ),
                format!(
                    "CREATE EXTENSION hypopg in database {db} on the primary (it replicates to its \
                     standbys; the package must be installed on both)"
                ),
            ));
        }
        Some((
            format!("HypoPG is not created in database {db}"),
            format!(
                "CREATE EXTENSION hypopg in database {db} (its package is installed on the server)"
            ),
        ))
    }
}

/// How many of the database's tables the connected role may build indexes on. CREATE INDEX
/// and DROP INDEX need ownership of the table ("must be owner of table"), which a role has as
/// a member of the owner's role (with its privileges) or as a superuser; SELECT or any other
/// grant is not enough, so a role that reads every table may still build on none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableOwnership {
    /// Ordinary and partitioned tables and materialized views outside the system schemas.
    pub tables: u64,
    /// Of those, the ones the role owns.
    pub owned: u64,
    /// The roles owning the others, most tables first (at most three), with how many each.
    pub other_owners: Vec<(String, u64)>,
}

/// Whether compare and advise can build (and drop) indexes on this database's tables as this
/// role, and in words how many it owns, or what to do when it owns none.
fn build_rights(facts: &ServerFacts, ownership: &TableOwnership) -> (bool, String) {
    let user = &facts.user;
    let n = ownership.tables;
    let owners = ownership
        .other_owners
        .iter()
        .map(|(role, count)| format!("{role} owns {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    if n == 0 {
        return (
            true,
            "the database has no tables yet; building needs ownership of the query's tables"
                .to_owned(),
        );
    }
    if ownership.owned == 0 {
        // Never "GRANT owner TO user": the owner is often a superuser role, whose membership
        // hands over everything it owns.
        return (
            false,
            format!(
                "{user} owns none of the database's {n} table(s), and CREATE INDEX and DROP \
                 INDEX need the table's owner (\"must be owner of table\"), even in a \
                 rolled-back transaction: connect as their owner ({owners}) or as a member of \
                 that role"
            ),
        );
    }
    if ownership.owned < n {
        return (
            true,
            format!(
                "{user} owns {} of the database's {n} tables: only candidates on those can be \
                 built (of the others, {owners})",
                ownership.owned
            ),
        );
    }
    (
        true,
        format!("{user} owns all {n} table(s) of the database"),
    )
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

/// What pgplan can do on a server with these facts, and with `ownership` of its tables when it
/// was read.
pub fn features(facts: &ServerFacts, ownership: Option<&TableOwnership>) -> Vec<Feature> {
    let writable = !facts.in_recovery && !facts.read_only;
    // `what` is what compare would do there, even inside a rolled-back transaction.
    let not_writable = |what: &str| {
        Some(if facts.in_recovery {
            format!("a standby cannot {what}; use --hypothetical, or a writable copy")
        } else {
            format!(
                "the session is read-only (default_transaction_read_only), so it cannot {what}; \
                 use --hypothetical, or a writable connection"
            )
        })
    };
    let (owns, owner_note) = match ownership {
        Some(o) => build_rights(facts, o),
        None => (
            true,
            "needs ownership of the query's tables (CREATE INDEX rights)".to_owned(),
        ),
    };
    let stats_visible = facts.superuser || facts.pg_read_all_stats || facts.pg_monitor;
    let mut list = vec![
        feature(
            "compare",
            writable && owns,
            if writable {
                Some(owner_note.clone())
            } else {
                not_writable("build indexes")
            },
        ),
        feature(
            "compare --drop-index",
            writable && owns,
            if writable {
                Some(owner_note.clone())
            } else {
                not_writable("drop an index, even in a rolled-back transaction")
            },
        ),
        // advise builds every candidate it measures, as compare does.
        feature(
            "advise",
            writable && owns,
            if writable {
                Some(owner_note)
            } else {
                not_writable("build the candidates it measures")
            },
        ),
        feature(
            "compare --hypothetical",
            facts.has_extension("hypopg"),
            facts
                .hypopg_missing()
                .map(|(problem, fix)| format!("{problem}: {fix}")),
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
    list.push(feature(
        "audit: sessions and locks",
        stats_visible,
        (!stats_visible).then(|| {
            "other users' sessions hide their state, query and client address without \
             pg_read_all_stats (GRANT pg_monitor TO ...)"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(major: u32, in_recovery: bool, installed: bool, available: bool) -> ServerFacts {
        ServerFacts {
            version_num: major * 10000 + 1,
            version: format!("{major}.1"),
            in_recovery,
            read_only: in_recovery,
            user: "app".into(),
            database: "shop".into(),
            superuser: false,
            pg_monitor: false,
            pg_read_all_stats: false,
            extensions: if installed {
                vec![("hypopg".into(), "1.4.1".into())]
            } else {
                vec![]
            },
            available_extensions: if available {
                vec!["hypopg".into(), "plpgsql".into()]
            } else {
                vec!["plpgsql".into()]
            },
            tls_version: None,
            tls_cipher: None,
            system_identifier: None,
            started_at: None,
            uptime_seconds: None,
            index_catalog_bytes: None,
        }
    }

    #[test]
    fn the_hypopg_fix_fits_the_case() {
        assert_eq!(facts(16, false, true, true).hypopg_missing(), None);
        let (problem, fix) = facts(16, false, false, false).hypopg_missing().unwrap();
        assert!(
            problem.contains("not available on this server"),
            "{problem}"
        );
        assert_eq!(
            fix,
            "install HypoPG for PostgreSQL 16 on the server (Debian and Ubuntu: \
             postgresql-16-hypopg), then CREATE EXTENSION hypopg in database shop"
        );
        let (_, fix) = facts(13, true, false, false).hypopg_missing().unwrap();
        assert!(fix.contains("postgresql-13-hypopg"), "{fix}");
        assert!(fix.ends_with("on the primary (a standby cannot)"), "{fix}");
        let (problem, fix) = facts(16, true, false, true).hypopg_missing().unwrap();
        assert!(
            problem.contains("a standby cannot create an extension"),
            "{problem}"
        );
        assert!(
            fix.starts_with("CREATE EXTENSION hypopg in database shop on the primary"),
            "{fix}"
        );
        let (problem, fix) = facts(16, false, false, true).hypopg_missing().unwrap();
        assert_eq!(problem, "HypoPG is not created in database shop");
        assert!(
            fix.starts_with("CREATE EXTENSION hypopg in database shop"),
            "{fix}"
        );
    }

    #[test]
    fn info_says_what_a_standby_cannot_do_for_each_feature() {
        let on_standby = features(&facts(16, true, false, true), None);
        let note = |name: &str| {
            on_standby
                .iter()
                .find(|f| f.name == name)
                .and_then(|f| f.note.clone())
                .unwrap()
        };
        assert!(note("compare").starts_with("a standby cannot build indexes"));
        assert!(
            note("compare --drop-index")
                .starts_with("a standby cannot drop an index, even in a rolled-back transaction"),
            "{}",
            note("compare --drop-index")
        );
        assert!(note("compare --hypothetical").contains("on the primary"));
        assert!(note("advise").starts_with("a standby cannot build the candidates"));
    }

    #[test]
    fn a_role_that_owns_no_table_cannot_build_and_is_told_what_to_do() {
        let mut primary = facts(16, false, false, true);
        primary.user = "report reader".into();
        let ownership = TableOwnership {
            tables: 12,
            owned: 0,
            other_owners: vec![("app".into(), 9), ("etl".into(), 3)],
        };
        let list = features(&primary, Some(&ownership));
        for name in ["compare", "compare --drop-index", "advise"] {
            let f = list.iter().find(|f| f.name == name).unwrap();
            assert!(!f.available, "{name}");
            assert_eq!(
                f.note.as_deref(),
                Some(
                    "report reader owns none of the database's 12 table(s), and CREATE INDEX \
                     and DROP INDEX need the table's owner (\"must be owner of table\"), even \
                     in a rolled-back transaction: connect as their owner (app owns 9, etl \
                     owns 3) or as a member of that role"
                ),
                "{name}"
            );
        }
        let some = TableOwnership {
            owned: 3,
            other_owners: vec![("app".into(), 9)],
            ..ownership.clone()
        };
        let compare = &features(&primary, Some(&some))[0];
        assert!(compare.available);
        assert!(
            compare
                .note
                .as_deref()
                .unwrap()
                .starts_with("report reader owns 3 of the database's 12 tables"),
            "{compare:?}"
        );
        let all = TableOwnership {
            owned: 12,
            other_owners: vec![],
            ..ownership
        };
        let compare = &features(&primary, Some(&all))[0];
        assert!(compare.available);
        assert_eq!(
            compare.note.as_deref(),
            Some("report reader owns all 12 table(s) of the database")
        );
        // Not read: the general caveat, never a verdict.
        let compare = &features(&primary, None)[0];
        assert!(compare.available);
        assert!(compare.note.as_deref().unwrap().contains("ownership"));
    }
}
