//! recovery_conflict: queries a standby cancelled because WAL replay needed what they held
//! (`pg_stat_database_conflicts`: a snapshot that still sees rows VACUUM removed on the primary,
//! a lock replay must take, a pinned buffer, a tablespace being dropped, a replay deadlock),
//! counted since the statistics were reset. The standby waits `max_standby_streaming_delay`
//! (30 s by default) before it cancels. `hot_standby_feedback = on` removes the snapshot
//! conflicts by holding back the primary's vacuum instead, which the xmin_horizon check
//! watches on the primary (the standby's feedback xmin) and on the standby (its sessions).

use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{count_words, counted};

pub fn run(ctx: &Context, out: &mut Output) {
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        if !snapshot.server.in_recovery {
            continue;
        }
        let Some(c) = &snapshot.recovery_conflicts else {
            continue;
        };
        let total = c.total();
        if total <= 0 {
            continue;
        }
        let mut causes: Vec<(&'static str, &str, i64)> = vec![
            ("snapshot_conflicts", "snapshot", c.snapshot),
            ("lock_conflicts", "lock", c.lock),
            ("bufferpin_conflicts", "buffer pin", c.bufferpin),
            ("deadlock_conflicts", "deadlock", c.deadlock),
            ("tablespace_conflicts", "tablespace", c.tablespace),
        ];
        if let Some(n) = c.active_logicalslot {
            causes.push(("logicalslot_conflicts", "logical slot", n));
        }
        let words = causes
            .iter()
            .filter(|(_, _, n)| *n > 0)
            .map(|(_, word, n)| format!("{word} {}", count_words(*n as f64)))
            .collect::<Vec<_>>()
            .join(", ");
        let mut message = format!(
            "standby {} cancelled {} in database {} because replay needed what they held \
             ({words}), since its statistics were reset",
            node.name,
            counted(total as f64, "query", "queries"),
            snapshot.server.database
        );
        let fix = if c.snapshot > 0 && !snapshot.settings.hot_standby_feedback {
            message.push_str(
                "; hot_standby_feedback is off, so the primary's VACUUM removes rows the \
                 standby's queries still see",
            );
            format!(
                "-- on standby {}: let its queries hold back the primary's vacuum instead (bloat \
                 there, watched by xmin_horizon)\nALTER SYSTEM SET hot_standby_feedback = on;\n\
                 SELECT pg_reload_conf();\n-- or let replay wait longer for them (the standby \
                 falls behind meanwhile)\nALTER SYSTEM SET max_standby_streaming_delay = '5min';",
                node.name
            )
        } else {
            format!(
                "-- on standby {}: let replay wait longer for queries (the standby falls behind \
                 meanwhile)\nALTER SYSTEM SET max_standby_streaming_delay = '5min';\n\
                 SELECT pg_reload_conf();",
                node.name
            )
        };
        let mut finding = Finding::new(Check::RecoveryConflict, Severity::Warning, message)
            .subject("conflicts")
            .evidence("cancelled_queries", total as f64)
            .fix(fix);
        for (name, _, n) in causes {
            finding = finding.evidence(name, n as f64);
        }
        finding.node = Some(node.name.to_owned());
        out.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::RecoveryConflicts;
    use crate::audit::{Check, Severity};

    #[test]
    fn a_standby_that_cancelled_queries() {
        let mut s = standby();
        s.recovery_conflicts = Some(RecoveryConflicts {
            snapshot: 3,
            lock: 1,
            ..Default::default()
        });
        let report = audit_nodes(vec![("s", s.clone())]);
        let found = findings_of(&report, Check::RecoveryConflict);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Warning);
        assert_eq!(found[0].evidence_value("cancelled_queries"), Some(4.0));
        assert!(
            found[0].message.contains("snapshot 3, lock 1"),
            "{}",
            found[0].message
        );
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .contains("hot_standby_feedback = on")
        );

        // A primary's zeros, and a standby with nothing cancelled: nothing.
        let mut p = primary();
        p.recovery_conflicts = Some(RecoveryConflicts::default());
        s.recovery_conflicts = Some(RecoveryConflicts::default());
        let report = audit_nodes(vec![("p", p), ("s", s)]);
        assert!(findings_of(&report, Check::RecoveryConflict).is_empty());
    }
}
