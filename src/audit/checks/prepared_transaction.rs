//! prepared_transaction: a transaction prepared for two-phase commit (`PREPARE TRANSACTION`)
//! and never finished, older than `--horizon-min-age`. It belongs to no session: it survives
//! disconnects and restarts, keeps every lock it took and holds back the xmin horizon (the
//! xmin_horizon check names it as a holder too) until someone runs COMMIT PREPARED or ROLLBACK
//! PREPARED; its transaction manager may have forgotten it.

use crate::audit::{Check, Context, Finding, Output, Severity};
use crate::sql::quote_literal;

use super::{age_words, counted};

/// A prepared transaction this old, or one anyone waits for, is critical.
pub const CRITICAL_AGE_SECONDS: f64 = 86_400.0;

pub fn run(ctx: &Context, out: &mut Output) {
    let min = ctx.options.horizon_min_age.as_secs_f64();
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        // A standby shows the primary's prepared transactions as replay left them; they are
        // finished on the primary.
        if snapshot.server.in_recovery {
            continue;
        }
        // pg_blocking_pids() names a prepared transaction's locks as pid 0.
        let blocked = snapshot
            .backends
            .iter()
            .filter(|b| b.blocking_pids.contains(&0))
            .count();
        for p in &snapshot.prepared_xacts {
            let Some(age) = p.prepared_age_seconds.filter(|a| *a >= min) else {
                continue;
            };
            let database = p.database.as_deref().unwrap_or("?");
            let gid = quote_literal(&p.gid);
            let mut message = format!(
                "prepared transaction {gid} (owner {}) has waited {} for COMMIT PREPARED or \
                 ROLLBACK PREPARED",
                p.owner.as_deref().unwrap_or("?"),
                age_words(age)
            );
            if p.locks.is_empty() {
                message.push_str("; it holds no relation lock");
            } else {
                message.push_str(&format!(
                    "; it holds {} until then: {}",
                    counted(p.locks.len() as f64, "relation lock", "relation locks"),
                    p.locks.join(", ")
                ));
            }
            message.push_str(" and holds back the xmin horizon (see xmin_horizon)");
            if blocked > 0 {
                message.push_str(&format!(
                    "; {} waiting for a prepared transaction's lock",
                    counted(blocked as f64, "session is", "sessions are")
                ));
            }
            message.push_str(
                "; nothing ends it on its own, not even a restart: finish it with COMMIT \
                 PREPARED instead if its transaction manager expects a commit",
            );
            let severity = if blocked > 0 || age >= CRITICAL_AGE_SECONDS {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut finding = Finding::new(Check::PreparedTransaction, severity, message)
                .subject(format!("prepared transaction {gid}"))
                .evidence("prepared_age_seconds", age)
                .evidence("relation_locks", p.locks.len() as f64)
                .evidence("blocked_sessions", blocked as f64)
                .fix(format!(
                    "-- in database {database}\nROLLBACK PREPARED {gid};"
                ));
            if let Some(x) = p.xid_age_xids {
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
    use crate::audit::snapshot::{Backend, PreparedXact};
    use crate::audit::{Check, Severity};

    #[test]
    fn an_old_prepared_transaction_names_its_locks() {
        let mut p = primary();
        p.prepared_xacts = vec![
            PreparedXact {
                gid: "order'7".into(),
                database: Some("app".into()),
                owner: Some("app".into()),
                xid_age_xids: Some(40),
                prepared_age_seconds: Some(900.0),
                locks: vec!["RowExclusiveLock on public.orders".into()],
            },
            PreparedXact {
                gid: "young".into(),
                prepared_age_seconds: Some(5.0),
                ..Default::default()
            },
        ];
        let report = audit_nodes(vec![("p", p.clone())]);
        let found = findings_of(&report, Check::PreparedTransaction);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = found[0];
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence_value("relation_locks"), Some(1.0));
        assert!(
            f.message.contains("RowExclusiveLock on public.orders"),
            "{}",
            f.message
        );
        assert_eq!(
            f.fix.as_deref(),
            Some("-- in database app\nROLLBACK PREPARED 'order''7';")
        );
        // Someone waiting for it makes it critical.
        p.backends = vec![Backend {
            pid: 5,
            wait_event_type: Some("Lock".into()),
            blocking_pids: vec![0],
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let f = findings_of(&report, Check::PreparedTransaction)[0];
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.evidence_value("blocked_sessions"), Some(1.0));
    }
}
