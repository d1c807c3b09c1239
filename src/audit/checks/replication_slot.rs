//! replication_slot: inactive replication slots. A slot nobody consumes keeps every WAL segment
//! since its `restart_lsn` until the disk fills (unless `max_slot_wal_keep_size` invalidates it:
//! `wal_status` 'lost'). Slots that also hold an xmin are reported under xmin_horizon instead,
//! where they do more harm.

use crate::audit::{Check, Context, Finding, Output, Severity};
use crate::sql::quote_literal;

use super::{age_words, bytes_words};

pub fn run(ctx: &Context, out: &mut Output) {
    if ctx.primary.is_none() {
        // A standby's own slots (cascading replication) are still read below, but the slots
        // that matter most live on the primary, which was not audited.
        out.skip(
            Check::ReplicationSlot,
            "standby: the primary was not audited, so its replication slots (the ones its \
             standbys and subscribers use) were not seen; only the standbys' own slots were read",
        );
    }
    for node in &ctx.nodes {
        for slot in &node.snapshot.replication_slots {
            if slot.active || slot.temporary {
                continue;
            }
            if slot.xmin_age_xids.is_some() || slot.catalog_xmin_age_xids.is_some() {
                continue; // xmin_horizon names it
            }
            let mut message = format!(
                "{} replication slot {} is inactive",
                slot.slot_type, slot.name
            );
            if let Some(t) = slot.inactive_since {
                message.push_str(&format!(" (for {})", age_words(t.age_seconds)));
            }
            if let Some(bytes) = slot.retained_wal_bytes {
                message.push_str(&format!(
                    " and retains {} of WAL on {}",
                    bytes_words(bytes),
                    node.name
                ));
            }
            match slot.wal_status.as_deref() {
                Some("lost") => message.push_str(
                    "; its WAL is already gone (wal_status lost): the slot can never be used again",
                ),
                Some("unreserved") => message
                    .push_str("; it is past max_slot_wal_keep_size and about to lose its WAL"),
                _ => message.push_str("; the WAL stays on disk until it is consumed or dropped"),
            }
            let mut finding = Finding::new(Check::ReplicationSlot, Severity::Warning, message)
                .subject(slot.name.clone())
                .fix(format!(
                    "SELECT pg_drop_replication_slot({});",
                    quote_literal(&slot.name)
                ));
            if let Some(bytes) = slot.retained_wal_bytes {
                finding = finding.evidence("retained_wal_bytes", bytes);
            }
            if let Some(t) = slot.inactive_since {
                finding = finding.evidence("inactive_seconds", t.age_seconds);
            }
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::ReplicationSlot;

    #[test]
    fn inactive_slots_are_found_and_active_ones_are_not() {
        let mut p = primary();
        p.replication_slots = vec![
            ReplicationSlot {
                name: "gone_replica".into(),
                slot_type: "physical".into(),
                retained_wal_bytes: Some(64.0 * 1024.0 * 1024.0),
                wal_status: Some("reserved".into()),
                ..Default::default()
            },
            ReplicationSlot {
                name: "live_replica".into(),
                slot_type: "physical".into(),
                active: true,
                ..Default::default()
            },
        ];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::ReplicationSlot);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].fix.as_deref(),
            Some("SELECT pg_drop_replication_slot('gone_replica');")
        );
        assert!(found[0].message.contains("64.0 MB"));
        assert_eq!(found[0].node.as_deref(), Some("p"));
    }

    #[test]
    fn standby_only_says_the_primarys_slots_were_not_seen() {
        let report = audit_nodes(vec![("s", standby())]);
        assert!(
            report
                .skipped
                .iter()
                .any(|s| s.check == Check::ReplicationSlot && s.reason.starts_with("standby:")),
            "{:?}",
            report.skipped
        );
        let report = audit_nodes(vec![("p", primary())]);
        assert!(
            report
                .skipped
                .iter()
                .all(|s| s.check != Check::ReplicationSlot)
        );
    }
}
