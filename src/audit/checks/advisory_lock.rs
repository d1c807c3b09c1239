//! advisory_lock: session-level advisory locks held by a session that sits idle outside any
//! transaction. `pg_advisory_lock` keeps its lock until `pg_advisory_unlock` or the end of the
//! session, not of the transaction; behind a transaction-mode pooler the server connection
//! outlives the request that took it, so the lock stays with a connection the next client gets,
//! and every worker asking for the same key waits behind it. An idle session's advisory locks
//! are session-level by definition (transaction-level ones end with the transaction).
//!
//! The audit's own session is a case of its own: pgplan takes no advisory lock, so any its
//! session holds were left on the server connection by an earlier client, which a pooler
//! handed on to the audit (PgBouncer hands out the connection used last).

use crate::audit::activity::{pooler_reason, who};
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{age_words, counted};

pub fn run(ctx: &Context, out: &mut Output) {
    crate::audit::activity::skip_hidden_sessions(ctx, out, Check::AdvisoryLock);
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        let database = snapshot.server.database.as_str();
        for b in &snapshot.backends {
            if b.database.as_deref() != Some(database)
                || !(b.audit_session || b.state.as_deref() == Some("idle"))
            {
                continue;
            }
            let keys: Vec<&str> = snapshot
                .session_locks
                .iter()
                .filter(|l| l.pid == Some(b.pid) && l.granted && l.locktype == "advisory")
                .map(|l| l.advisory_key.as_deref().unwrap_or("?"))
                .collect();
            if keys.is_empty() {
                continue;
            }
            let waiting = snapshot
                .backends
                .iter()
                .filter(|w| w.blocking_pids.contains(&b.pid))
                .count();
            let idle = if b.audit_session {
                0.0
            } else {
                b.state_age_seconds.unwrap_or(0.0)
            };
            let mut message = if b.audit_session {
                format!(
                    "the audit's own server connection, pid {} ({}), holds {} (key {}) that an \
                     earlier client left on it: pgplan takes none, so a connection pooler handed \
                     the connection on with them",
                    b.pid,
                    who(b),
                    counted(
                        keys.len() as f64,
                        "session-level advisory lock",
                        "session-level advisory locks"
                    ),
                    keys.join("; ")
                )
            } else {
                format!(
                    "session pid {} ({}) has been idle outside any transaction for {} and holds {} \
                 (key {})",
                    b.pid,
                    who(b),
                    age_words(idle),
                    counted(
                        keys.len() as f64,
                        "session-level advisory lock",
                        "session-level advisory locks"
                    ),
                    keys.join("; ")
                )
            };
            if let Some(age) = b.backend_age_seconds {
                message.push_str(&format!(", connected {} ago", age_words(age)));
            }
            if waiting > 0 {
                message.push_str(&format!(
                    "; {} waiting for it",
                    counted(waiting as f64, "session is", "sessions are")
                ));
            }
            // The audit's own connection needs no guess: it was handed on by a pooler.
            let pooler = if b.audit_session {
                Some(None)
            } else {
                pooler_reason(snapshot, b).map(Some)
            };
            let mut fix = format!(
                "-- from the session that took them: SELECT pg_advisory_unlock_all();\n\
                 -- or end the session that holds them:\n\
                 SELECT pg_terminate_backend({});",
                b.pid
            );
            if let Some(reason) = &pooler {
                if let Some(reason) = reason {
                    message.push_str(&format!(
                        "; it looks like a connection pooler's server connection ({reason})"
                    ));
                }
                message.push_str(
                    "; session-level advisory locks do not belong behind a transaction-mode \
                     pooler, where the lock stays on the server connection after the request \
                     and passes to whichever client gets it next; take them with \
                     pg_advisory_xact_lock, released at commit or rollback",
                );
                fix.push_str(
                    "\n-- in the application, inside the transaction: \
                     SELECT pg_advisory_xact_lock(key);",
                );
            }
            let severity = if pooler.is_some() || waiting > 0 {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut finding = Finding::new(Check::AdvisoryLock, severity, message)
                .subject(format!("pid {}", b.pid))
                .evidence("pid", b.pid as f64)
                .evidence("advisory_locks", keys.len() as f64)
                .evidence("idle_seconds", idle)
                .evidence("waiting_sessions", waiting as f64)
                .evidence("pooler", if pooler.is_some() { 1.0 } else { 0.0 })
                .fix(fix);
            if let Some(age) = b.backend_age_seconds {
                finding = finding.evidence("backend_age_seconds", age);
            }
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::audit::Check;
    use crate::audit::Severity;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{Backend, SessionLock};

    fn idle(pid: i32, app: &str) -> Backend {
        Backend {
            pid,
            database: Some("app".into()),
            user: Some("app".into()),
            application_name: Some(app.into()),
            state: Some("idle".into()),
            state_age_seconds: Some(600.0),
            backend_age_seconds: Some(7200.0),
            ..Default::default()
        }
    }

    fn advisory(pid: i32, key: &str) -> SessionLock {
        SessionLock {
            pid: Some(pid),
            locktype: "advisory".into(),
            mode: "ExclusiveLock".into(),
            granted: true,
            advisory_key: Some(key.into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_idle_holder_is_named_and_a_pooled_one_is_critical() {
        let mut p = primary();
        p.backends = vec![
            idle(10, "worker - 127.0.0.1:5000"),
            idle(11, "report"),
            // Holds one too, but inside a transaction: not this check's.
            Backend {
                state: Some("active".into()),
                ..idle(12, "report")
            },
            // Waits for 10's key.
            Backend {
                state: Some("active".into()),
                wait_event_type: Some("Lock".into()),
                blocking_pids: vec![10],
                ..idle(13, "worker")
            },
            // Another database's session.
            Backend {
                database: Some("other".into()),
                ..idle(14, "report")
            },
        ];
        p.session_locks = vec![
            advisory(10, "42"),
            advisory(11, "1, 2"),
            advisory(11, "7"),
            advisory(12, "9"),
            advisory(14, "9"),
        ];
        let report = audit_nodes(vec![("p", p)]);
        let found = findings_of(&report, Check::AdvisoryLock);
        assert_eq!(found.len(), 2, "{found:#?}");
        let pooled = found
            .iter()
            .find(|f| f.evidence_value("pid") == Some(10.0))
            .unwrap();
        assert_eq!(pooled.severity, Severity::Critical);
        assert_eq!(pooled.evidence_value("waiting_sessions"), Some(1.0));
        assert_eq!(pooled.evidence_value("pooler"), Some(1.0));
        assert!(
            pooled.message.contains("pg_advisory_xact_lock"),
            "{}",
            pooled.message
        );
        assert!(pooled.message.contains("key 42"), "{}", pooled.message);
        assert!(
            pooled
                .fix
                .as_deref()
                .unwrap()
                .contains("pg_terminate_backend(10)")
        );
        let plain = found
            .iter()
            .find(|f| f.evidence_value("pid") == Some(11.0))
            .unwrap();
        assert_eq!(plain.severity, Severity::Warning);
        assert_eq!(plain.evidence_value("advisory_locks"), Some(2.0));
        assert!(plain.message.contains("key 1, 2; 7"), "{}", plain.message);
        assert!(!plain.message.contains("pooler"), "{}", plain.message);
        assert!(
            plain
                .fix
                .as_deref()
                .unwrap()
                .contains("pg_advisory_unlock_all()")
        );
    }

    #[test]
    fn advisory_locks_on_the_audits_own_connection_came_from_a_pooler() {
        let mut p = primary();
        p.backends = vec![Backend {
            audit_session: true,
            state: Some("active".into()),
            ..idle(30, "pgplan")
        }];
        p.session_locks = vec![advisory(30, "4711")];
        let report = audit_nodes(vec![("p", p)]);
        let found = findings_of(&report, Check::AdvisoryLock);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].severity, Severity::Critical);
        assert_eq!(found[0].evidence_value("pooler"), Some(1.0));
        assert!(
            found[0]
                .message
                .starts_with("the audit's own server connection, pid 30"),
            "{}",
            found[0].message
        );
    }
}
