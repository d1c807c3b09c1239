//! What the session checks share: the backends of the audited database, which clients are
//! connection poolers, how a session is named, how long a lock has been waited for, and the
//! per-node session figures the metrics export.

use super::Node;
use super::snapshot::{Backend, NodeSnapshot, SessionLock};

/// Application names of connection poolers and proxies (lower case, matched as substrings).
/// PgBouncer passes its client's name on, so it is seen here only when a client names itself
/// after it; `application_name_add_host` is recognised by its suffix instead.
pub const POOLER_NAMES: &[&str] = &[
    "pgbouncer",
    "odyssey",
    "pgcat",
    "pgpool",
    "supavisor",
    "pgagroal",
    "pgdog",
    "rds proxy",
];

/// This many client backends from one client address look like a pooler's server connections
/// (or an application's own pool).
pub const SHARED_ADDRESS_SESSIONS: usize = 10;

/// The client backends of the audited database, the audit's own session excluded.
pub fn audited_backends(snapshot: &NodeSnapshot) -> impl Iterator<Item = &Backend> {
    let database = snapshot.server.database.as_str();
    snapshot
        .backends
        .iter()
        .filter(move |b| !b.audit_session && b.database.as_deref() == Some(database))
}

/// Records, for a session check, each node where other roles' sessions are hidden from the
/// audit role (no `pg_read_all_stats`): their state and query read as null, so what they hold
/// or wait for is not judged there.
pub fn skip_hidden_sessions(ctx: &super::Context, out: &mut super::Output, check: super::Check) {
    for node in &ctx.nodes {
        let server = &node.snapshot.server;
        if !server.pg_read_all_stats && !server.superuser {
            out.skip(
                check,
                format!(
                    "{}: other roles' sessions are hidden (no pg_read_all_stats): their state, \
                     locks and waits cannot be judged",
                    node.name
                ),
            );
        }
    }
}

/// Why the session looks like a pooler's server connection, if it does: a pooler's
/// application name, PgBouncer's `application_name_add_host` suffix (" - 10.0.0.5:51234"), or
/// an address many sessions share.
pub fn pooler_reason(snapshot: &NodeSnapshot, backend: &Backend) -> Option<String> {
    if let Some(app) = backend
        .application_name
        .as_deref()
        .filter(|a| !a.is_empty())
    {
        let lower = app.to_ascii_lowercase();
        if let Some(name) = POOLER_NAMES.iter().find(|n| lower.contains(**n)) {
            return Some(format!("its application name {app:?} is {name}'s"));
        }
        if has_added_host(app) {
            return Some(format!(
                "its application name {app:?} ends in the client address PgBouncer's \
                 application_name_add_host appends"
            ));
        }
    }
    let addr = backend.client_addr.as_deref()?;
    let sharing = snapshot
        .backends
        .iter()
        .filter(|b| b.client_addr.as_deref() == Some(addr))
        .count();
    (sharing >= SHARED_ADDRESS_SESSIONS)
        .then(|| format!("{sharing} sessions share its client address {addr}"))
}

/// PgBouncer's `application_name_add_host`: "name - 10.0.0.5:51234" (or "name - unix(...)").
fn has_added_host(app: &str) -> bool {
    let Some((_, host)) = app.rsplit_once(" - ") else {
        return false;
    };
    if host.starts_with("unix(") {
        return true;
    }
    let Some((address, port)) = host.rsplit_once(':') else {
        return false;
    };
    let address = address.trim_start_matches('[').trim_end_matches(']');
    !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && address.parse::<std::net::IpAddr>().is_ok()
}

/// "user app, application worker, from 10.0.0.5": who a session is, as far as it shows.
pub fn who(backend: &Backend) -> String {
    let mut parts = Vec::new();
    if let Some(user) = &backend.user {
        parts.push(format!("user {user}"));
    }
    if let Some(app) = backend
        .application_name
        .as_deref()
        .filter(|a| !a.is_empty())
    {
        parts.push(format!("application {app}"));
    }
    match &backend.client_addr {
        Some(addr) => parts.push(format!("from {addr}")),
        None => parts.push("over a local socket".into()),
    }
    parts.join(", ")
}

/// A statement as a message quotes it: one line, at most 120 characters.
pub fn short_query(query: Option<&str>) -> String {
    let one_line: String = query
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.chars().count() > 120 {
        let cut: String = one_line.chars().take(117).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

/// The lock a session waits for.
pub fn awaited_lock(snapshot: &NodeSnapshot, pid: i32) -> Option<&SessionLock> {
    snapshot
        .session_locks
        .iter()
        .find(|l| l.pid == Some(pid) && !l.granted)
}

/// How long a session has waited for its lock: `pg_locks.waitstart` (14+), else since its
/// statement started (an upper bound: it may have run a while before it had to wait).
pub fn lock_wait_seconds(snapshot: &NodeSnapshot, backend: &Backend) -> Option<f64> {
    awaited_lock(snapshot, backend.pid)
        .and_then(|l| l.wait_seconds)
        .or(backend.query_age_seconds)
}

/// The connection slots ordinary roles may take: `max_connections` minus the superusers'
/// reserve and (16+) `reserved_connections`.
pub fn usable_slots(snapshot: &NodeSnapshot) -> f64 {
    let s = &snapshot.settings;
    (s.max_connections - s.superuser_reserved_connections - s.reserved_connections.unwrap_or(0.0))
        .max(0.0)
}

fn database_of(snapshot: &NodeSnapshot) -> &str {
    snapshot.server.database.as_str()
}

/// The advisory locks a session holds.
pub fn advisory_locks_of(snapshot: &NodeSnapshot, pid: i32) -> usize {
    snapshot
        .session_locks
        .iter()
        .filter(|l| l.pid == Some(pid) && l.granted && l.locktype == "advisory")
        .count()
}

/// One node's sessions as the metrics show them, whether or not anything is a finding.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFigures {
    pub database: String,
    pub node: String,
    /// The longest a session of the database has been idle in a transaction (0 if none).
    pub longest_idle_in_transaction_seconds: f64,
    /// Advisory locks held by sessions of the database that are idle outside a transaction.
    pub idle_advisory_locks: usize,
    /// The longest a session of the database has waited for a lock (0 if none).
    pub longest_lock_wait_seconds: f64,
    /// Sessions of the database waiting for a lock.
    pub lock_waiters: usize,
    /// Client backends of the whole server, the audit's own included.
    pub client_sessions: usize,
    /// Connection slots ordinary roles may take.
    pub connection_slots: f64,
}

pub fn figures(node: &Node, database: &str) -> SessionFigures {
    let snapshot = node.snapshot;
    let mut figures = SessionFigures {
        database: database.to_owned(),
        node: node.name.to_owned(),
        longest_idle_in_transaction_seconds: 0.0,
        idle_advisory_locks: 0,
        longest_lock_wait_seconds: 0.0,
        lock_waiters: 0,
        client_sessions: snapshot.backends.len(),
        connection_slots: usable_slots(snapshot),
    };
    // The audit's own session holds advisory locks only when a pooler handed it a connection
    // an earlier client left them on.
    figures.idle_advisory_locks = snapshot
        .backends
        .iter()
        .filter(|b| b.audit_session && b.database.as_deref() == Some(database_of(snapshot)))
        .map(|b| advisory_locks_of(snapshot, b.pid))
        .sum();
    for b in audited_backends(snapshot) {
        if b.is_idle_in_transaction() {
            figures.longest_idle_in_transaction_seconds = figures
                .longest_idle_in_transaction_seconds
                .max(b.state_age_seconds.unwrap_or(0.0));
        }
        if b.state.as_deref() == Some("idle") {
            figures.idle_advisory_locks += advisory_locks_of(snapshot, b.pid);
        }
        if b.is_waiting_for_lock() {
            figures.lock_waiters += 1;
            figures.longest_lock_wait_seconds = figures
                .longest_lock_wait_seconds
                .max(lock_wait_seconds(snapshot, b).unwrap_or(0.0));
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poolers_are_known_by_name_added_host_or_shared_address() {
        let mut s = NodeSnapshot::default();
        let named = Backend {
            application_name: Some("PgBouncer".into()),
            ..Default::default()
        };
        assert!(pooler_reason(&s, &named).unwrap().contains("pgbouncer"));
        let added = Backend {
            application_name: Some("worker - 127.0.0.1:51234".into()),
            ..Default::default()
        };
        assert!(
            pooler_reason(&s, &added)
                .unwrap()
                .contains("application_name_add_host")
        );
        let plain = Backend {
            application_name: Some("billing - nightly".into()),
            client_addr: Some("10.0.0.9".into()),
            ..Default::default()
        };
        assert_eq!(pooler_reason(&s, &plain), None);
        s.backends = vec![plain.clone(); SHARED_ADDRESS_SESSIONS];
        assert!(
            pooler_reason(&s, &plain)
                .unwrap()
                .starts_with("10 sessions share")
        );
    }

    #[test]
    fn hidden_sessions_skip_the_session_checks_in_part() {
        use crate::audit::Check;
        use crate::audit::checks::fixture::{audit_nodes, primary};
        let mut p = primary();
        p.server.superuser = false;
        p.server.pg_read_all_stats = false;
        let report = audit_nodes(vec![("p", p)]);
        for check in [
            Check::AdvisoryLock,
            Check::IdleInTransaction,
            Check::LockQueue,
        ] {
            assert!(
                report
                    .skipped
                    .iter()
                    .any(|s| s.check == check && s.reason.contains("no pg_read_all_stats")),
                "{check:?}: {:?}",
                report.skipped
            );
        }
        let report = audit_nodes(vec![("p", primary())]);
        assert!(
            !report
                .skipped
                .iter()
                .any(|s| s.check == Check::AdvisoryLock)
        );
    }

    #[test]
    fn usable_slots_leave_out_the_reserves() {
        let mut s = NodeSnapshot::default();
        s.settings.max_connections = 100.0;
        s.settings.superuser_reserved_connections = 3.0;
        s.settings.reserved_connections = Some(2.0);
        assert_eq!(usable_slots(&s), 95.0);
    }

    #[test]
    fn long_queries_are_cut_to_one_line() {
        assert_eq!(short_query(Some("SELECT\n  1")), "SELECT 1");
        let long = "x".repeat(300);
        assert_eq!(short_query(Some(&long)).chars().count(), 120);
    }
}
