//! xmin_horizon: what keeps VACUUM from removing dead rows. VACUUM removes only row versions
//! older than the oldest snapshot or transaction id anyone may still need: a long or idle-in-
//! transaction session (its `backend_xmin`/`backend_xid`), a replication slot's `xmin` (all
//! tables) or `catalog_xmin` (system catalogs), a prepared transaction, and a standby's
//! snapshots reported through `hot_standby_feedback`. Each holder is named with its age.
//!
//! Sessions hold the horizon of their own database only (and walsenders of every database),
//! which is why sessions are read from the audited database. A lazy VACUUM, manual or
//! autovacuum, is never a holder: it runs with PROC_IN_VACUUM, which ComputeXidHorizons
//! (procarray.c) skips, so `queries/audit_sessions.sql` leaves it out; VACUUM FULL is not lazy
//! and does hold the horizon.

use crate::audit::{Check, Context, Finding, Node, Output, Severity};
use crate::sql::quote_literal;

use super::{age_words, bytes_words, count_words};

/// A standby's feedback xmin this many transactions old is worth naming.
pub const FEEDBACK_MIN_AGE_XIDS: i64 = 1_000_000;
/// A holder this much older than the minimum age is critical...
pub const CRITICAL_AGE_FACTOR: f64 = 12.0;
/// ...and so is one whose xmin is this share of `autovacuum_freeze_max_age` old.
pub const CRITICAL_FREEZE_SHARE: f64 = 0.5;

/// One thing holding the horizon back.
#[derive(Debug, Clone)]
pub struct Holder {
    pub node: String,
    /// Which holder, in a few words that stay the same while it holds: "session pid 123",
    /// "slot sub1", "prepared transaction 'gid'", "standby walreceiver".
    pub subject: String,
    /// "session pid 123 (idle in transaction, user app)".
    pub description: String,
    pub age_seconds: Option<f64>,
    pub age_xids: Option<i64>,
    pub fix: String,
    pub severity: Severity,
    /// A logical slot's `catalog_xmin` alone: it holds back only system catalogs and user
    /// catalog tables (`user_catalog_table`), which logical decoding reads with historic
    /// snapshots, never the dead rows of ordinary tables (procarray.c keeps a separate
    /// catalog horizon for it).
    pub catalogs_only: bool,
    /// Figures for the finding.
    pub evidence: Vec<(&'static str, f64)>,
}

impl Holder {
    /// "session pid 123 (...) for 12 min, 4,000 transactions".
    pub fn summary(&self) -> String {
        let mut text = self.description.clone();
        let mut ages = Vec::new();
        if let Some(s) = self.age_seconds {
            ages.push(format!("for {}", age_words(s)));
        }
        if let Some(x) = self.age_xids {
            ages.push(format!("xmin age {} transactions", count_words(x as f64)));
        }
        if !ages.is_empty() {
            text.push_str(", ");
            text.push_str(&ages.join(", "));
        }
        text
    }
}

fn severity_for(
    ctx: &Context,
    node: &Node,
    age_seconds: Option<f64>,
    age_xids: Option<i64>,
) -> Severity {
    let min = ctx.options.horizon_min_age.as_secs_f64();
    let freeze = node.snapshot.settings.autovacuum_freeze_max_age;
    if age_seconds.is_some_and(|s| s >= min * CRITICAL_AGE_FACTOR && s >= 3600.0)
        || age_xids.is_some_and(|x| x as f64 >= freeze * CRITICAL_FREEZE_SHARE)
    {
        Severity::Critical
    } else {
        Severity::Warning
    }
}

/// Every holder of the horizon worth naming, on every combined node.
pub fn holders(ctx: &Context) -> Vec<Holder> {
    collect(ctx, true)
}

/// Whatever holds the oldest xmin right now, however young: where vacuum ran and left dead
/// rows behind, this is the reason, thresholds or not. Ties (the same xmin age) are all named,
/// the longest-held first: a session whose snapshot was taken while another transaction ran
/// inherits that transaction's xmin, and the older one is where it comes from.
///
/// `catalogs`: whether the rows in question are in a catalog (system or user catalog table);
/// otherwise a slot's `catalog_xmin` is no holder of them.
pub fn oldest_holders(ctx: &Context, catalogs: bool) -> Vec<Holder> {
    let all: Vec<Holder> = collect(ctx, false)
        .into_iter()
        .filter(|h| catalogs || !h.catalogs_only)
        .collect();
    let Some(oldest) = all.iter().filter_map(|h| h.age_xids).max() else {
        return Vec::new();
    };
    let mut tied: Vec<Holder> = all
        .into_iter()
        .filter(|h| h.age_xids == Some(oldest))
        .collect();
    tied.sort_by(|a, b| {
        b.age_seconds
            .unwrap_or(f64::INFINITY)
            .total_cmp(&a.age_seconds.unwrap_or(f64::INFINITY))
    });
    tied
}

/// The holders on every combined node; with `thresholds`, only those old enough to be a
/// finding of their own (`--horizon-min-age`, and 1M transactions for slots and feedback).
fn collect(ctx: &Context, thresholds: bool) -> Vec<Holder> {
    let min = if thresholds {
        ctx.options.horizon_min_age.as_secs_f64()
    } else {
        0.0
    };
    let min_xids = if thresholds { FEEDBACK_MIN_AGE_XIDS } else { 0 };
    let mut found = Vec::new();
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        let standby = snapshot.server.in_recovery;
        // A standby's sessions hold the primary's horizon only through hot_standby_feedback;
        // without it they get cancelled by replay conflicts instead.
        let sessions_hold = !standby || snapshot.settings.hot_standby_feedback;
        if sessions_hold {
            session_holders(ctx, node, min, &mut found);
        }
        slot_holders(ctx, node, min_xids, &mut found);
        prepared_holders(ctx, node, min, &mut found);
        standby_holders(ctx, node, min_xids, &mut found);
    }
    found
}

/// The node's sessions whose transaction or snapshot is at least `min` seconds old.
fn session_holders(ctx: &Context, node: &Node, min: f64, found: &mut Vec<Holder>) {
    let snapshot = node.snapshot;
    let standby = snapshot.server.in_recovery;
    for s in &snapshot.sessions {
        if s.xmin_age_xids.is_none() && s.xid_age_xids.is_none() {
            continue;
        }
        let Some(age) = s.xact_age_seconds else {
            continue;
        };
        if age < min {
            continue;
        }
        let age_xids = match (s.xmin_age_xids, s.xid_age_xids) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let state = s.state.as_deref().unwrap_or("state hidden");
        let mut description = format!("session pid {} ({state}", s.pid);
        if let Some(user) = &s.user {
            description.push_str(&format!(", user {user}"));
        }
        if let Some(app) = s.application_name.as_deref().filter(|a| !a.is_empty()) {
            description.push_str(&format!(", application {app}"));
        }
        if let Some(addr) = &s.client_addr {
            description.push_str(&format!(", from {addr}"));
        }
        description.push(')');
        if standby {
            description.push_str(&format!(
                " on standby {} (through hot_standby_feedback)",
                node.name
            ));
        }
        let mut evidence = vec![("transaction_age_seconds", age)];
        if let Some(x) = age_xids {
            evidence.push(("xmin_age_xids", x as f64));
        }
        if let Some(st) = s.state_age_seconds {
            evidence.push(("state_age_seconds", st));
        }
        evidence.push(("pid", s.pid as f64));
        found.push(Holder {
            node: node.name.to_owned(),
            subject: format!("session pid {}", s.pid),
            description,
            age_seconds: Some(age),
            age_xids,
            // pg_terminate_backend acts on the server it runs on: a standby's pid
            // means nothing on the primary.
            fix: if standby {
                format!(
                    "-- on standby {}\nSELECT pg_terminate_backend({});",
                    node.name, s.pid
                )
            } else {
                format!("SELECT pg_terminate_backend({});", s.pid)
            },
            severity: severity_for(ctx, node, Some(age), age_xids),
            catalogs_only: false,
            evidence,
        });
    }
}

/// The node's replication slots that hold back the horizon: every inactive one, and an active
/// one at least `min_xids` behind.
fn slot_holders(ctx: &Context, node: &Node, min_xids: i64, found: &mut Vec<Holder>) {
    let snapshot = node.snapshot;
    for slot in &snapshot.replication_slots {
        let age_xids = slot.xmin_age_xids.or(slot.catalog_xmin_age_xids);
        let Some(xids) = age_xids else { continue };
        if slot.active && xids < min_xids {
            continue;
        }
        let what = if slot.xmin_age_xids.is_some() {
            "xmin: every table"
        } else {
            "catalog_xmin: system catalogs only"
        };
        let state = if slot.active { "active" } else { "inactive" };
        let mut description = format!(
            "{state} {} replication slot {} ({what})",
            slot.slot_type, slot.name
        );
        let mut evidence = vec![("xmin_age_xids", xids as f64)];
        if let Some(bytes) = slot.retained_wal_bytes {
            description.push_str(&format!(", retaining {} of WAL", bytes_words(bytes)));
            evidence.push(("retained_wal_bytes", bytes));
        }
        let inactive_for = slot.inactive_since.map(|t| t.age_seconds);
        if let Some(s) = inactive_for {
            evidence.push(("inactive_seconds", s));
        }
        let severity = if slot.active {
            severity_for(ctx, node, None, Some(xids))
        } else {
            severity_for(ctx, node, inactive_for, Some(xids))
        };
        found.push(Holder {
            node: node.name.to_owned(),
            subject: format!("slot {}", slot.name),
            description,
            age_seconds: inactive_for,
            age_xids: Some(xids),
            fix: format!(
                "SELECT pg_drop_replication_slot({});",
                quote_literal(&slot.name)
            ),
            severity,
            catalogs_only: slot.xmin_age_xids.is_none(),
            evidence,
        });
    }
}

/// The node's prepared transactions at least `min` seconds old.
fn prepared_holders(ctx: &Context, node: &Node, min: f64, found: &mut Vec<Holder>) {
    let snapshot = node.snapshot;
    for p in &snapshot.prepared_xacts {
        let Some(age) = p.prepared_age_seconds else {
            continue;
        };
        if age < min {
            continue;
        }
        let database = p.database.as_deref().unwrap_or("?");
        let mut evidence = vec![("prepared_age_seconds", age)];
        if let Some(x) = p.xid_age_xids {
            evidence.push(("xmin_age_xids", x as f64));
        }
        found.push(Holder {
            node: node.name.to_owned(),
            subject: format!("prepared transaction {}", quote_literal(&p.gid)),
            description: format!(
                "prepared transaction {} (database {database}, owner {}; finish it with \
                 COMMIT PREPARED instead if its transaction manager expects a commit)",
                quote_literal(&p.gid),
                p.owner.as_deref().unwrap_or("?")
            ),
            age_seconds: Some(age),
            age_xids: p.xid_age_xids,
            fix: format!(
                "-- in database {database}\nROLLBACK PREPARED {};",
                quote_literal(&p.gid)
            ),
            severity: severity_for(ctx, node, Some(age), p.xid_age_xids),
            catalogs_only: false,
            evidence,
        });
    }
}

/// The standbys whose hot_standby_feedback holds the node's horizon at least `min_xids` back.
fn standby_holders(ctx: &Context, node: &Node, min_xids: i64, found: &mut Vec<Holder>) {
    let snapshot = node.snapshot;
    for standby in &snapshot.standbys {
        let Some(xids) = standby.xmin_age_xids else {
            continue;
        };
        if xids < min_xids {
            continue;
        }
        let name = standby
            .application_name
            .clone()
            .unwrap_or_else(|| format!("pid {}", standby.pid));
        found.push(Holder {
            node: node.name.to_owned(),
            subject: format!("standby {name}"),
            description: format!(
                "standby {name}{} through hot_standby_feedback",
                standby
                    .client_addr
                    .as_deref()
                    .map(|a| format!(" at {a}"))
                    .unwrap_or_default()
            ),
            age_seconds: None,
            age_xids: Some(xids),
            fix: "-- on that standby: end the long query holding its snapshot \
                  (pg_stat_activity), or turn hot_standby_feedback off there"
                .into(),
            severity: severity_for(ctx, node, None, Some(xids)),
            catalogs_only: false,
            evidence: vec![("xmin_age_xids", xids as f64)],
        });
    }
}

pub fn run(ctx: &Context, out: &mut Output) {
    if ctx.primary.is_none() {
        // What a standby shows (its sessions, through hot_standby_feedback) is still reported,
        // but most holders live on the primary.
        out.skip(
            Check::XminHorizon,
            "standby: the primary was not audited, so its sessions, replication slots, prepared \
             transactions and the feedback of its other standbys were not seen; only what the \
             audited standbys hold back through hot_standby_feedback was read",
        );
    }
    for holder in holders(ctx) {
        let message = if holder.catalogs_only {
            format!(
                "{} holds back the catalog xmin horizon: VACUUM cannot remove rows of system \
                 catalogs (and user catalog tables) that died after it started; other tables \
                 are not held back",
                holder.summary()
            )
        } else {
            format!(
                "{} holds back the xmin horizon: VACUUM cannot remove rows that died after it \
                 started",
                holder.summary()
            )
        };
        let mut finding = Finding::new(Check::XminHorizon, holder.severity, message)
            .fix(holder.fix.clone())
            .subject(holder.subject.clone());
        finding.evidence = holder.evidence.clone();
        finding.node = Some(holder.node.clone());
        out.findings.push(finding);
    }
    for node in &ctx.nodes {
        if !node.snapshot.server.pg_read_all_stats && !node.snapshot.server.superuser {
            out.skip(
                Check::XminHorizon,
                format!(
                    "{}: other roles' sessions are hidden (no pg_read_all_stats): their xmin and \
                     state cannot be seen",
                    node.name
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::{PreparedXact, ReplicationSlot, Session};

    #[test]
    fn old_sessions_slots_and_prepared_transactions_are_named() {
        let mut p = primary();
        p.sessions = vec![
            Session {
                pid: 4711,
                state: Some("idle in transaction".into()),
                user: Some("app".into()),
                xact_age_seconds: Some(900.0),
                xid_age_xids: Some(5000),
                ..Default::default()
            },
            // Young: not a finding.
            Session {
                pid: 4712,
                state: Some("active".into()),
                xact_age_seconds: Some(2.0),
                xmin_age_xids: Some(3),
                ..Default::default()
            },
        ];
        p.replication_slots = vec![
            ReplicationSlot {
                name: "old_subscriber".into(),
                slot_type: "logical".into(),
                active: false,
                catalog_xmin_age_xids: Some(10),
                retained_wal_bytes: Some(1e9),
                ..Default::default()
            },
            ReplicationSlot {
                name: "healthy".into(),
                slot_type: "physical".into(),
                active: true,
                xmin_age_xids: Some(10),
                ..Default::default()
            },
        ];
        p.prepared_xacts = vec![PreparedXact {
            gid: "tx'1".into(),
            database: Some("app".into()),
            prepared_age_seconds: Some(7200.0),
            xid_age_xids: Some(100),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("p", p)]);
        let found: Vec<_> = findings_of(&report, Check::XminHorizon);
        assert_eq!(found.len(), 3, "{found:#?}");
        let fixes: Vec<_> = found.iter().filter_map(|f| f.fix.as_deref()).collect();
        assert!(fixes.contains(&"SELECT pg_terminate_backend(4711);"));
        assert!(fixes.contains(&"SELECT pg_drop_replication_slot('old_subscriber');"));
        assert!(fixes.contains(&"-- in database app\nROLLBACK PREPARED 'tx''1';"));
        let slot = found
            .iter()
            .find(|f| f.message.contains("old_subscriber"))
            .unwrap();
        assert!(
            slot.message.contains("catalog xmin horizon") && slot.message.contains("catalogs"),
            "{}",
            slot.message
        );
        let session = found.iter().find(|f| f.message.contains("4711")).unwrap();
        assert_eq!(session.severity, Severity::Warning);
        assert_eq!(session.evidence_value("xmin_age_xids"), Some(5000.0));
    }

    #[test]
    fn standby_sessions_count_only_with_feedback() {
        let mut s = standby();
        s.sessions = vec![Session {
            pid: 9,
            state: Some("active".into()),
            xact_age_seconds: Some(4000.0),
            xmin_age_xids: Some(50),
            ..Default::default()
        }];
        let report = audit_nodes(vec![("s", s.clone())]);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.check != Check::XminHorizon)
        );
        s.settings.hot_standby_feedback = true;
        let report = audit_nodes(vec![("s", s)]);
        let f = report
            .findings
            .iter()
            .find(|f| f.check == Check::XminHorizon)
            .unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert!(f.message.contains("through hot_standby_feedback"));
        assert_eq!(
            f.fix.as_deref(),
            Some("-- on standby s\nSELECT pg_terminate_backend(9);")
        );
    }

    #[test]
    fn standby_only_is_skipped_for_the_primarys_holders() {
        let report = audit_nodes(vec![("s", standby())]);
        assert!(
            report
                .skipped
                .iter()
                .any(|s| s.check == Check::XminHorizon && s.reason.starts_with("standby:")),
            "{:?}",
            report.skipped
        );
    }
}
