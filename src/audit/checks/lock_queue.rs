//! lock_queue: statements waiting for a heavyweight lock, reported once per session at the head
//! of the queue (the holder that waits for nothing itself), with everyone queued behind it.
//! PostgreSQL grants locks in queue order: a request that conflicts with one already queued
//! waits behind it even if the lock's holder would let it in, so an `ALTER TABLE` waiting for
//! one long read makes every new query on the table wait behind the `ALTER`.
//! `pg_blocking_pids()` lists both kinds of blocker (holders and those queued ahead), which is
//! the chain followed here; 0 stands for a prepared transaction.

use foldhash::{HashMap, HashMapExt, HashSet};

use crate::audit::activity::{audited_backends, awaited_lock, lock_wait_seconds, short_query, who};
use crate::audit::snapshot::{Backend, NodeSnapshot as Snapshot};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{age_words, counted};

/// This many sessions queued behind one holder is critical whatever waits.
pub const CRITICAL_WAITERS: usize = 10;

/// Whether a statement is DDL (or another command that takes ACCESS EXCLUSIVE): what turns
/// one waiter into a queue.
fn is_ddl(query: &str) -> bool {
    let first: String = query
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(
        first.as_str(),
        "ALTER"
            | "DROP"
            | "TRUNCATE"
            | "REINDEX"
            | "CLUSTER"
            | "VACUUM"
            | "LOCK"
            | "CREATE"
            | "REFRESH"
            | "COMMENT"
            | "GRANT"
            | "REVOKE"
    )
}

/// The lock waited for, in words: a relation's by name, a row's by what it is.
fn lock_words(lock: &crate::audit::snapshot::SessionLock) -> String {
    if let Some(relation) = lock.relation_name() {
        return format!("{} on {relation}", lock.mode);
    }
    match lock.locktype.as_str() {
        // Waiting for another transaction to end: a row it changed (or a unique key it
        // inserted) is what the waiter needs.
        "transactionid" => "a row the holder changed: its transaction to end".to_owned(),
        "tuple" => "a row another session is changing".to_owned(),
        "advisory" => match &lock.advisory_key {
            Some(key) => format!("advisory lock {key}"),
            None => "an advisory lock".to_owned(),
        },
        "virtualxid" => "another transaction to end".to_owned(),
        other => format!("{} ({other})", lock.mode),
    }
}

pub fn run(ctx: &Context, out: &mut Output) {
    crate::audit::activity::skip_hidden_sessions(ctx, out, Check::LockQueue);
    let min = ctx.options.lock_wait_min_age.as_secs_f64();
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        let by_pid: HashMap<i32, &Backend> = snapshot.backends.iter().map(|b| (b.pid, b)).collect();
        let queues = queues_by_root(snapshot, &by_pid);
        let mut roots: Vec<i32> = queues.keys().copied().collect();
        roots.sort_unstable();
        for root in roots {
            let queue = Queue::of(snapshot, root, &queues[&root], by_pid.get(&root).copied());
            if queue.longest < min {
                continue;
            }
            let mut finding = queue.finding();
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
    }
}

/// The lock waiters of a snapshot by the roots of their chains: the blockers up each chain
/// that wait for no lock themselves.
fn queues_by_root<'a>(
    snapshot: &'a Snapshot,
    by_pid: &HashMap<i32, &'a Backend>,
) -> HashMap<i32, Vec<&'a Backend>> {
    let mut queues: HashMap<i32, Vec<&Backend>> = HashMap::new();
    for w in audited_backends(snapshot).filter(|b| b.is_waiting_for_lock()) {
        let mut seen: HashSet<i32> = HashSet::default();
        let mut stack: Vec<i32> = w.blocking_pids.clone();
        let mut roots: Vec<i32> = Vec::new();
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            match by_pid.get(&pid) {
                Some(b) if b.is_waiting_for_lock() => stack.extend(&b.blocking_pids),
                _ => roots.push(pid),
            }
        }
        for root in roots {
            queues.entry(root).or_default().push(w);
        }
    }
    queues
}

/// One holder's queue: who waits, the first in line, and the DDL among them.
struct Queue<'a> {
    snapshot: &'a Snapshot,
    /// The holder's pid (0: a prepared transaction).
    root: i32,
    holder: Option<&'a Backend>,
    waiting: usize,
    longest: f64,
    /// The first in line: the DDL that waits for the holder itself when there is one (what
    /// turns a wait into a queue), else who has waited longest for it.
    first: Option<&'a Backend>,
    ddl: Option<&'a Backend>,
}

impl<'a> Queue<'a> {
    fn of(
        snapshot: &'a Snapshot,
        root: i32,
        queue: &[&'a Backend],
        holder: Option<&'a Backend>,
    ) -> Self {
        let wait = |b: &Backend| lock_wait_seconds(snapshot, b).unwrap_or(0.0);
        let longest = queue.iter().map(|w| wait(w)).fold(0.0, f64::max);
        let mut direct: Vec<&'a Backend> = queue
            .iter()
            .copied()
            .filter(|w| w.blocking_pids.contains(&root))
            .collect();
        direct.sort_by(|a, b| wait(b).total_cmp(&wait(a)));
        let ddl = direct.iter().copied().find(|w| {
            is_ddl(w.query.as_deref().unwrap_or(""))
                || awaited_lock(snapshot, w.pid).is_some_and(|l| l.mode == "AccessExclusiveLock")
        });
        Queue {
            snapshot,
            root,
            holder,
            waiting: queue.len(),
            longest,
            first: ddl.or(direct.first().copied()),
            ddl,
        }
    }

    /// The holder in words: its pid, state, transaction age, who and what it runs.
    fn holder_text(&self) -> String {
        match (self.root, self.holder) {
            (0, _) => "a prepared transaction (see prepared_transaction)".to_owned(),
            (pid, Some(h)) => {
                let state = h.state.as_deref().unwrap_or("state hidden");
                let mut text = format!("session pid {pid} ({state}");
                if let Some(x) = h.xact_age_seconds {
                    text.push_str(&format!(", transaction open for {}", age_words(x)));
                }
                text.push_str(&format!(", {})", who(h)));
                let q = short_query(h.query.as_deref());
                if !q.is_empty() {
                    let verb = if h.state.as_deref() == Some("active") {
                        "running"
                    } else {
                        "last statement"
                    };
                    text.push_str(&format!(" {verb} {q:?}"));
                }
                text
            }
            (pid, None) => format!("session pid {pid} (not a client backend of this server)"),
        }
    }

    fn behind_the_first(&self) -> usize {
        self.waiting.saturating_sub(1)
    }

    fn message(&self) -> String {
        let mut message = format!("{} holds a lock that ", self.holder_text());
        if let Some(f) = self.first {
            let wait = lock_wait_seconds(self.snapshot, f).unwrap_or(0.0);
            let what = awaited_lock(self.snapshot, f.pid)
                .map(lock_words)
                .unwrap_or_else(|| "a lock".into());
            message.push_str(&format!(
                "{}pid {} waits for ({what}, for {}): {:?}",
                if self.ddl.is_some() {
                    "the DDL of "
                } else {
                    ""
                },
                f.pid,
                age_words(wait),
                short_query(f.query.as_deref())
            ));
        }
        message.push_str(&format!(
            "; {} in all, the longest for {}",
            counted(self.waiting as f64, "session waits", "sessions wait"),
            age_words(self.longest)
        ));
        let behind = self.behind_the_first();
        if self.ddl.is_some() && behind > 0 {
            message.push_str(&format!(
                ", {} queued behind the DDL: while it waits for its lock every new query on \
                 the table waits behind it",
                counted(behind as f64, "session", "sessions")
            ));
        }
        message
    }

    fn fix(&self) -> String {
        let mut fix = String::from(
            "-- run migrations with a lock timeout, so DDL gives up (and is retried) \
             instead of queueing every query behind it:\nSET lock_timeout = '2s';",
        );
        if self.root == 0 {
            fix.push_str(
                "\n-- the holder is a prepared transaction: finish it (see \
                 prepared_transaction)\nSELECT gid, prepared FROM pg_prepared_xacts;",
            );
        } else {
            fix.push_str(&format!(
                "\n-- end the holder:\nSELECT pg_terminate_backend({});",
                self.root
            ));
        }
        fix
    }

    fn finding(&self) -> Finding {
        let severity = if (self.ddl.is_some() && self.behind_the_first() > 0)
            || self.waiting >= CRITICAL_WAITERS
        {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let mut finding = Finding::new(Check::LockQueue, severity, self.message())
            .subject(format!("holder pid {}", self.root))
            .evidence("holder_pid", self.root as f64)
            .evidence("waiting_sessions", self.waiting as f64)
            .evidence("longest_wait_seconds", self.longest)
            .fix(self.fix());
        if let Some(f) = self.first {
            finding = finding.evidence("first_waiter_pid", f.pid as f64);
        }
        if let Some(d) = self.ddl {
            finding = finding.evidence("ddl_pid", d.pid as f64);
        }
        if let Some(x) = self.holder.and_then(|h| h.xact_age_seconds) {
            finding = finding.evidence("holder_transaction_age_seconds", x);
        }
        finding
    }
}

#[cfg(test)]
mod tests {
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{Backend, SessionLock};
    use crate::audit::{Check, Severity};

    fn session(pid: i32, state: &str, query: &str, blocked_by: &[i32]) -> Backend {
        Backend {
            pid,
            database: Some("app".into()),
            user: Some("app".into()),
            state: Some(state.into()),
            wait_event_type: (!blocked_by.is_empty()).then(|| "Lock".into()),
            blocking_pids: blocked_by.to_vec(),
            xact_age_seconds: Some(120.0),
            query_age_seconds: Some(30.0),
            query: Some(query.into()),
            ..Default::default()
        }
    }

    fn waits(pid: i32, mode: &str, seconds: Option<f64>) -> SessionLock {
        SessionLock {
            pid: Some(pid),
            locktype: "relation".into(),
            mode: mode.into(),
            granted: false,
            schema: Some("public".into()),
            relation: Some("orders".into()),
            wait_seconds: seconds,
            ..Default::default()
        }
    }

    #[test]
    fn an_alter_behind_a_reader_with_readers_behind_it_is_one_chain() {
        let mut p = primary();
        p.backends = vec![
            session(1, "idle in transaction", "SELECT count(*) FROM orders", &[]),
            session(2, "active", "ALTER TABLE orders ADD COLUMN note text", &[1]),
            session(3, "active", "SELECT * FROM orders", &[2]),
            session(4, "active", "SELECT * FROM orders WHERE id = 1", &[2]),
            // Elsewhere: a short wait below the threshold.
            session(5, "active", "UPDATE t SET a = 1", &[]),
            Backend {
                query_age_seconds: Some(1.0),
                ..session(6, "active", "UPDATE t SET a = 2", &[5])
            },
        ];
        p.session_locks = vec![
            waits(2, "AccessExclusiveLock", Some(40.0)),
            waits(3, "AccessShareLock", Some(20.0)),
            waits(4, "AccessShareLock", None),
            waits(6, "RowExclusiveLock", Some(1.0)),
        ];
        let report = audit_nodes(vec![("p", p)]);
        let found = findings_of(&report, Check::LockQueue);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.evidence_value("holder_pid"), Some(1.0));
        assert_eq!(f.evidence_value("ddl_pid"), Some(2.0));
        assert_eq!(f.evidence_value("waiting_sessions"), Some(3.0));
        assert_eq!(f.evidence_value("longest_wait_seconds"), Some(40.0));
        assert!(
            f.message
                .contains("AccessExclusiveLock on public.orders, for 40 s"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("2 sessions queued behind the DDL"),
            "{}",
            f.message
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("SET lock_timeout"), "{fix}");
        assert!(fix.ends_with("SELECT pg_terminate_backend(1);"), "{fix}");
    }

    #[test]
    fn a_prepared_transaction_at_the_head_is_named_as_such() {
        let mut p = primary();
        p.backends = vec![session(7, "active", "UPDATE t SET a = 1", &[0])];
        p.session_locks = vec![waits(7, "RowExclusiveLock", Some(60.0))];
        let report = audit_nodes(vec![("p", p)]);
        let f = findings_of(&report, Check::LockQueue)[0];
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.starts_with("a prepared transaction"),
            "{}",
            f.message
        );
        assert!(!f.fix.as_deref().unwrap().contains("pg_terminate_backend"));
    }

    #[test]
    fn a_row_lock_wait_is_named_for_the_row() {
        let mut p = primary();
        p.backends = vec![
            session(
                8,
                "idle in transaction",
                "UPDATE t SET a = 1 WHERE id = 1",
                &[],
            ),
            session(9, "active", "UPDATE t SET a = 2 WHERE id = 1", &[8]),
        ];
        p.session_locks = vec![SessionLock {
            pid: Some(9),
            locktype: "transactionid".into(),
            mode: "ShareLock".into(),
            granted: false,
            wait_seconds: Some(10.0),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let f = findings_of(&report, Check::LockQueue)[0];
        assert!(
            f.message
                .contains("(a row the holder changed: its transaction to end, for 10 s)"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("last statement \"UPDATE t SET a = 1"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence_value("ddl_pid"), None);
    }
}
