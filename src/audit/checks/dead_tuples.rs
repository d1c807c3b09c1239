//! dead_tuples: tables whose dead rows autovacuum is losing to. Each table is measured against
//! its own autovacuum trigger (`autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor ×
//! reltuples`, storage options first), and the finding says why: autovacuum off, a vacuum long
//! ago, or something holding the xmin horizon so vacuum runs but cannot remove anything.
//!
//! Dead tuple counts exist only on the primary; a standby reads zeros.

use crate::audit::snapshot::TableKind;
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::xmin_horizon::holders;
use super::{
    age_words, autovacuum_off_reason, count_words, latest, qualified, skip_standby, vacuum_trigger,
};

/// Fewer dead rows than this are never a finding (small tables churn harmlessly).
pub const MIN_DEAD_TUPLES: i64 = 1000;
/// With autovacuum on, dead rows past this multiple of the trigger mean it is not keeping up
/// (one multiple is just "due").
pub const BEHIND_FACTOR: f64 = 2.0;
/// Past this multiple of the trigger, with at least this share of the rows dead, it is critical.
pub const CRITICAL_FACTOR: f64 = 20.0;
pub const CRITICAL_DEAD_SHARE: f64 = 0.2;

pub fn run(ctx: &Context, out: &mut Output) {
    let Some(primary) = ctx.primary else {
        skip_standby(out, Check::DeadTuples);
        return;
    };
    let settings = &primary.snapshot.settings;
    let holders = holders(ctx);
    for table in &primary.snapshot.tables {
        if table.kind == TableKind::Partitioned || !ctx.big_enough(table.table_bytes) {
            continue;
        }
        let s = &table.stats;
        let Some(dead) = s.n_dead_tup else { continue };
        if dead < MIN_DEAD_TUPLES {
            continue;
        }
        let trigger = vacuum_trigger(table, settings);
        let off = autovacuum_off_reason(table, settings);
        let factor = if off.is_some() { 1.0 } else { BEHIND_FACTOR };
        if (dead as f64) <= trigger * factor {
            continue;
        }
        let live = s.n_live_tup.unwrap_or(0).max(0);
        let share = dead as f64 / (dead + live).max(1) as f64;
        let severity = if dead as f64 > trigger * CRITICAL_FACTOR && share >= CRITICAL_DEAD_SHARE {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let name = qualified(&table.schema, &table.name);
        let mut message = format!(
            "{name} has {} dead rows ({:.0}% of its rows), {:.1}× its autovacuum trigger of {}",
            count_words(dead as f64),
            share * 100.0,
            dead as f64 / trigger.max(1.0),
            count_words(trigger.round()),
        );
        let last_vacuum = latest(s.last_vacuum, s.last_autovacuum);
        let mut fix = format!("VACUUM (VERBOSE, ANALYZE) {name};");
        if let Some(reason) = off {
            message.push_str(&format!("; {reason}"));
            if table.autovacuum_disabled_by_reloption() {
                fix.push_str(&format!("\nALTER TABLE {name} RESET (autovacuum_enabled);"));
            }
        }
        match last_vacuum {
            Some(t) => {
                message.push_str(&format!("; last vacuumed {} ago", age_words(t.age_seconds)))
            }
            None => message.push_str("; no vacuum recorded since the statistics were reset"),
        }
        if !holders.is_empty() {
            // A vacuum that ran while the horizon was held could not remove these rows.
            let names: Vec<String> = holders.iter().take(3).map(|h| h.summary()).collect();
            message.push_str(&format!(
                "; the xmin horizon is held back by {}{}, so vacuum cannot remove rows that died \
                 after that",
                names.join("; "),
                if holders.len() > 3 {
                    format!(" and {} more", holders.len() - 3)
                } else {
                    String::new()
                }
            ));
        }
        let mut finding = Finding::new(Check::DeadTuples, severity, message)
            .on_table(table)
            .evidence("dead_tuples", dead as f64)
            .evidence("live_tuples", live as f64)
            .evidence("autovacuum_trigger_tuples", trigger)
            .evidence("horizon_holders", holders.len() as f64)
            .fix(fix);
        if let Some(t) = last_vacuum {
            finding = finding.evidence("last_vacuum_age_seconds", t.age_seconds);
        }
        out.findings.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::Session;

    #[test]
    fn dead_rows_past_the_trigger_with_autovacuum_off() {
        let mut p = primary();
        let mut off = table(10, "churn");
        off.reltuples = 10_000.0;
        off.reloptions = vec!["autovacuum_enabled=false".into()];
        off.stats.n_live_tup = Some(10_000);
        off.stats.n_dead_tup = Some(15_000);
        // Autovacuum on and 1.5× the trigger: due, not behind.
        let mut due = table(11, "due");
        due.reltuples = 10_000.0;
        due.stats.n_live_tup = Some(10_000);
        due.stats.n_dead_tup = Some(3_000);
        p.tables = vec![off, due];
        p.sessions = vec![Session {
            pid: 77,
            state: Some("idle in transaction".into()),
            xact_age_seconds: Some(600.0),
            xid_age_xids: Some(20_000),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::DeadTuples)
            .collect();
        assert_eq!(found.len(), 1);
        let f = found[0];
        assert_eq!(f.table.as_deref(), Some("churn"));
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence_value("autovacuum_trigger_tuples"), Some(2050.0));
        assert!(f.message.contains("autovacuum_enabled = false"));
        assert!(f.message.contains("session pid 77"));
        assert_eq!(
            f.fix.as_deref(),
            Some(
                "VACUUM (VERBOSE, ANALYZE) public.churn;\nALTER TABLE public.churn RESET \
                 (autovacuum_enabled);"
            )
        );
    }

    #[test]
    fn standby_only_is_skipped() {
        let mut s = standby();
        let mut t = table(10, "t");
        t.stats.n_dead_tup = Some(0);
        s.tables = vec![t];
        let report = audit_nodes(vec![("s", s)]);
        assert!(report.findings.iter().all(|f| f.check != Check::DeadTuples));
        assert!(
            report
                .skipped
                .iter()
                .any(|s| s.check == Check::DeadTuples && s.reason.starts_with("standby"))
        );
    }

    #[test]
    fn per_table_scale_factor_and_18_cap() {
        let mut t = table(1, "t");
        t.reltuples = 1e9;
        let mut settings = crate::audit::snapshot::Settings::default();
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0 + 0.2e9);
        settings.autovacuum_vacuum_max_threshold = Some(100_000_000.0);
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 1e8);
        t.reloptions = vec!["autovacuum_vacuum_scale_factor=0.01".into()];
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0 + 1e7);
        t.reltuples = -1.0;
        assert_eq!(super::super::vacuum_trigger(&t, &settings), 50.0);
    }
}
