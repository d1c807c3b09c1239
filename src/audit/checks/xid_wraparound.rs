//! xid_wraparound: tables whose oldest unfrozen transaction id (`age(relfrozenxid)`) or
//! multixact (`mxid_age(relminmxid)`) is well past the point where autovacuum should have frozen
//! them (`autovacuum_freeze_max_age`, per table when set as a storage option). Left alone, the
//! server stops assigning transaction ids about 2^31 transactions in, to avoid wraparound.
//!
//! `pg_class` is replicated, so this check also runs on a standby.

use crate::audit::snapshot::TableKind;
use crate::audit::{Check, Context, Finding, Output, Severity};

use super::{count_words, latest, qualified};

/// An age past this multiple of the freeze limit means the anti-wraparound vacuum is not
/// finishing...
pub const WARN_FACTOR: f64 = 1.25;
/// ...and past this many transactions (about half of the 2^31 the server can use) it is urgent.
pub const CRITICAL_AGE: f64 = 1_000_000_000.0;

pub fn run(ctx: &Context, out: &mut Output) {
    let snapshot = ctx.reference.snapshot;
    let settings = &snapshot.settings;
    for table in &snapshot.tables {
        if table.kind == TableKind::Partitioned {
            continue;
        }
        // The per-table setting can only lower the server's (autovacuum ignores a larger one).
        let xid_limit = table
            .reloption_f64("autovacuum_freeze_max_age")
            .map_or(settings.autovacuum_freeze_max_age, |v| {
                v.min(settings.autovacuum_freeze_max_age)
            });
        let mxid_limit = table
            .reloption_f64("autovacuum_multixact_freeze_max_age")
            .map_or(settings.autovacuum_multixact_freeze_max_age, |v| {
                v.min(settings.autovacuum_multixact_freeze_max_age)
            });
        for (kind, age, limit) in [
            ("transaction id", table.frozen_xid_age, xid_limit),
            ("multixact", table.multixact_age, mxid_limit),
        ] {
            let Some(age) = age else { continue };
            let age = age as f64;
            if age < limit * WARN_FACTOR {
                continue;
            }
            let severity = if age >= CRITICAL_AGE {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let name = qualified(&table.schema, &table.name);
            let mut message = format!(
                "the oldest unfrozen {kind} of {name} is {} old, past its freeze limit of {}: the \
                 anti-wraparound vacuum is not finishing",
                count_words(age),
                count_words(limit)
            );
            if let Some(primary_table) = ctx.primary_row(table)
                && let Some(t) = latest(
                    primary_table.stats.last_vacuum,
                    primary_table.stats.last_autovacuum,
                )
            {
                message.push_str(&format!(
                    "; last vacuumed {} ago",
                    super::age_words(t.age_seconds)
                ));
            }
            message.push_str(
                "; check what holds the xmin horizon (a vacuum cannot freeze past it) and whether \
                 vacuums are being cancelled",
            );
            // A table can be past both limits: the subject tells the two findings apart.
            let (subject, evidence_name) = if kind == "multixact" {
                ("multixact", "multixact_age")
            } else {
                ("xid", "xid_age")
            };
            let finding = Finding::new(Check::XidWraparound, severity, message)
                .on_table(table)
                .subject(subject)
                .evidence(evidence_name, age)
                .evidence("freeze_max_age", limit)
                .fix(format!("VACUUM (FREEZE, VERBOSE) {name};"));
            out.findings.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;

    #[test]
    fn old_tables_are_found_per_their_own_limit() {
        let mut p = primary();
        let mut old = table(10, "old");
        old.frozen_xid_age = Some(1_200_000_000);
        let mut own_limit = table(11, "own_limit");
        own_limit.reloptions = vec!["autovacuum_freeze_max_age=100000".into()];
        own_limit.frozen_xid_age = Some(140_000);
        let mut young = table(12, "young");
        young.frozen_xid_age = Some(150_000_000);
        p.tables = vec![old, own_limit, young];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.check == Check::XidWraparound)
            .map(|f| (f.table.clone().unwrap(), f.severity))
            .collect();
        assert_eq!(
            found,
            vec![
                ("old".to_owned(), Severity::Critical),
                ("own_limit".to_owned(), Severity::Warning)
            ]
        );
    }
}
