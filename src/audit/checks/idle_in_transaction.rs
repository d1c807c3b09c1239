//! idle_in_transaction: sessions that opened a transaction and stopped talking
//! (`idle in transaction`, or `(aborted)` after an error) for longer than
//! `--idle-in-transaction-min-age`. Such a session keeps every lock it took until it ends its
//! transaction (an ALTER TABLE on one of those tables queues behind it, and every query behind
//! the ALTER), and the snapshot or transaction id it holds keeps VACUUM from removing dead rows
//! (the xmin_horizon check names it as a holder too). `idle_in_transaction_session_timeout`
//! (0, off, by default) is the server's own guard.

use crate::audit::activity::{audited_backends, short_query, who};
use crate::audit::checks::xmin_horizon;
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{age_words, count_words, counted};

/// Idle this long in a transaction, or blocking anyone, is critical.
pub const CRITICAL_IDLE_SECONDS: f64 = 3600.0;

pub fn run(ctx: &Context, out: &mut Output) {
    crate::audit::activity::skip_hidden_sessions(ctx, out, Check::IdleInTransaction);
    let min = ctx.options.idle_in_transaction_min_age.as_secs_f64();
    let horizon: Vec<(String, String)> = xmin_horizon::holders(ctx)
        .into_iter()
        .map(|h| (h.node, h.subject))
        .collect();
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        let timeout_off = snapshot.settings.idle_in_transaction_session_timeout_ms <= 0.0;
        for b in audited_backends(snapshot) {
            if !b.is_idle_in_transaction() {
                continue;
            }
            let Some(idle) = b.state_age_seconds.filter(|s| *s >= min) else {
                continue;
            };
            let mut locks: Vec<String> = Vec::new();
            let mut advisory = 0usize;
            for l in snapshot
                .session_locks
                .iter()
                .filter(|l| l.pid == Some(b.pid) && l.granted)
            {
                if l.locktype == "advisory" {
                    advisory += 1;
                } else if let Some(name) = l.relation_name() {
                    let text = format!("{} on {name}", l.mode);
                    if !locks.contains(&text) {
                        locks.push(text);
                    }
                }
            }
            let blocked = snapshot
                .backends
                .iter()
                .filter(|w| w.blocking_pids.contains(&b.pid))
                .count();
            let state = b.state.as_deref().unwrap_or("idle in transaction");
            let mut message = format!(
                "session pid {} ({}) has been {state} for {}",
                b.pid,
                who(b),
                age_words(idle)
            );
            if let Some(x) = b.xact_age_seconds {
                message.push_str(&format!(" (its transaction began {} ago)", age_words(x)));
            }
            let query = short_query(b.query.as_deref());
            if !query.is_empty() {
                message.push_str(&format!(", last statement {query:?}"));
            }
            if locks.is_empty() {
                message.push_str("; it holds no relation lock of this database");
            } else {
                message.push_str(&format!(
                    "; it holds {}: {}",
                    counted(locks.len() as f64, "relation lock", "relation locks"),
                    locks.join(", ")
                ));
            }
            if advisory > 0 {
                message.push_str(&format!(
                    " and {}",
                    counted(advisory as f64, "advisory lock", "advisory locks")
                ));
            }
            if blocked > 0 {
                message.push_str(&format!(
                    "; {} waiting for it (see lock_queue)",
                    counted(blocked as f64, "session is", "sessions are")
                ));
            }
            let holds_horizon = horizon
                .iter()
                .any(|(n, s)| n == node.name && *s == format!("session pid {}", b.pid));
            let xmin_xids = match (b.xmin_age_xids, b.xid_age_xids) {
                (Some(a), Some(x)) => Some(a.max(x)),
                (a, x) => a.or(x),
            };
            if holds_horizon {
                message.push_str("; it holds back the xmin horizon (see xmin_horizon)");
            } else if let Some(x) = xmin_xids {
                message.push_str(&format!(
                    "; its snapshot is {} transactions old, so VACUUM cannot remove rows that \
                     died after it began",
                    count_words(x as f64)
                ));
            }
            let mut fix = format!("SELECT pg_terminate_backend({});", b.pid);
            if timeout_off {
                message.push_str(
                    "; idle_in_transaction_session_timeout is off, so nothing ends such a \
                     session",
                );
                fix.push_str(
                    "\n-- and let the server end such sessions (per role, or server-wide):\n\
                     ALTER SYSTEM SET idle_in_transaction_session_timeout = '5min';\n\
                     SELECT pg_reload_conf();",
                );
            }
            let severity = if blocked > 0 || idle >= CRITICAL_IDLE_SECONDS {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut finding = Finding::new(Check::IdleInTransaction, severity, message)
                .subject(format!("pid {}", b.pid))
                .evidence("pid", b.pid as f64)
                .evidence("idle_seconds", idle)
                .evidence("relation_locks", locks.len() as f64)
                .evidence("advisory_locks", advisory as f64)
                .evidence("blocked_sessions", blocked as f64)
                .evidence("holds_xmin_horizon", if holds_horizon { 1.0 } else { 0.0 })
                .fix(fix);
            if let Some(x) = b.xact_age_seconds {
                finding = finding.evidence("transaction_age_seconds", x);
            }
            if let Some(x) = xmin_xids {
                finding = finding.evidence("xmin_age_xids", x as f64);
            }
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{Backend, SessionLock};
    use crate::audit::{AuditOptions, Check, Severity};

    fn lock(pid: i32, mode: &str, table: &str) -> SessionLock {
        SessionLock {
            pid: Some(pid),
            locktype: "relation".into(),
            mode: mode.into(),
            granted: true,
            schema: Some("public".into()),
            relation: Some(table.into()),
            ..Default::default()
        }
    }

    #[test]
    fn idle_transactions_name_their_locks_the_horizon_and_the_timeout() {
        let mut p = primary();
        let idle = Backend {
            pid: 20,
            database: Some("app".into()),
            user: Some("app".into()),
            state: Some("idle in transaction".into()),
            state_age_seconds: Some(400.0),
            xact_age_seconds: Some(900.0),
            xid_age_xids: Some(12),
            query: Some("UPDATE t SET a = 1".into()),
            ..Default::default()
        };
        p.backends = vec![
            idle.clone(),
            // Too young.
            Backend {
                pid: 21,
                state_age_seconds: Some(5.0),
                ..idle.clone()
            },
            Backend {
                pid: 22,
                state: Some("active".into()),
                wait_event_type: Some("Lock".into()),
                blocking_pids: vec![20],
                ..idle.clone()
            },
        ];
        // The horizon's own view of the same session.
        p.sessions = vec![crate::audit::snapshot::Session {
            pid: 20,
            state: Some("idle in transaction".into()),
            xact_age_seconds: Some(900.0),
            xid_age_xids: Some(12),
            ..Default::default()
        }];
        p.session_locks = vec![
            lock(20, "RowExclusiveLock", "t"),
            lock(20, "AccessShareLock", "u"),
            lock(21, "RowExclusiveLock", "t"),
        ];
        let report = audit_nodes(vec![("p", p.clone())]);
        let found = findings_of(&report, Check::IdleInTransaction);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.evidence_value("pid"), Some(20.0));
        assert_eq!(f.evidence_value("relation_locks"), Some(2.0));
        assert_eq!(f.evidence_value("blocked_sessions"), Some(1.0));
        assert_eq!(f.evidence_value("holds_xmin_horizon"), Some(1.0));
        assert!(
            f.message
                .contains("RowExclusiveLock on public.t, AccessShareLock on public.u"),
            "{}",
            f.message
        );
        assert!(f.message.contains("see xmin_horizon"), "{}", f.message);
        assert!(
            f.message
                .contains("idle_in_transaction_session_timeout is off")
        );
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .starts_with("SELECT pg_terminate_backend(20);")
        );

        // With the timeout set and a longer threshold: only the threshold decides.
        p.settings.idle_in_transaction_session_timeout_ms = 600_000.0;
        let options = AuditOptions {
            idle_in_transaction_min_age: std::time::Duration::from_secs(300),
            ..Default::default()
        };
        let report = run_with(vec![("p", p.clone())], &options);
        let f = findings_of(&report, Check::IdleInTransaction)[0];
        assert!(!f.message.contains("timeout is off"), "{}", f.message);
        let options = AuditOptions {
            idle_in_transaction_min_age: std::time::Duration::from_secs(500),
            ..Default::default()
        };
        let report = run_with(vec![("p", p)], &options);
        assert!(findings_of(&report, Check::IdleInTransaction).is_empty());
    }
}
