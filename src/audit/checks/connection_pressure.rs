//! connection_pressure: client sessions against the connection slots ordinary roles may take
//! (`max_connections` minus `superuser_reserved_connections` and, 16+, `reserved_connections`),
//! by state and application; and many idle sessions from one client that is no pooler, each
//! a backend process with its own memory that a pooler would share. When the slots run out,
//! new connections fail with "remaining connection slots are reserved".

use foldhash::HashMap;

use crate::audit::activity::{pooler_reason, usable_slots};
use crate::audit::{Check, Context, Finding, Output, Severity};
use crate::sql::quote_literal;

use super::{count_words, counted};

/// This share of the usable slots taken is a warning...
pub const WARNING_SHARE: f64 = 0.8;
/// ...and this share critical.
pub const CRITICAL_SHARE: f64 = 0.95;
/// Idle sessions from one client (address and application) worth a finding: at least this
/// many...
pub const IDLE_CLIENT_MIN_SESSIONS: usize = 10;
/// ...and at least this share of the usable slots.
pub const IDLE_CLIENT_MIN_SHARE: f64 = 0.2;

pub fn run(ctx: &Context, out: &mut Output) {
    for node in &ctx.nodes {
        let snapshot = node.snapshot;
        let slots = usable_slots(snapshot);
        let sessions = snapshot.backends.len();
        if slots <= 0.0 {
            continue;
        }
        let share = sessions as f64 / slots;
        let mut by_state: HashMap<&str, usize> = HashMap::default();
        let mut by_app: HashMap<&str, usize> = HashMap::default();
        for b in &snapshot.backends {
            *by_state
                .entry(b.state.as_deref().unwrap_or("hidden"))
                .or_default() += 1;
            *by_app
                .entry(b.application_name.as_deref().unwrap_or(""))
                .or_default() += 1;
        }
        let count_of = |state: &str| by_state.get(state).copied().unwrap_or(0) as f64;
        if share >= WARNING_SHARE {
            let mut states: Vec<(&str, usize)> = by_state.iter().map(|(k, v)| (*k, *v)).collect();
            states.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let mut apps: Vec<(&str, usize)> = by_app.iter().map(|(k, v)| (*k, *v)).collect();
            apps.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let states = states
                .iter()
                .map(|(s, n)| format!("{} {s}", count_words(*n as f64)))
                .collect::<Vec<_>>()
                .join(", ");
            let apps = apps
                .iter()
                .take(5)
                .map(|(a, n)| {
                    let name = if a.is_empty() {
                        "(no application name)"
                    } else {
                        a
                    };
                    format!("{name} {}", count_words(*n as f64))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let message = format!(
                "{} of the {} connection slots ordinary roles may take are in use ({:.0}%; \
                 max_connections {} less {} reserved): by state {states}; by application \
                 {apps}. When they run out, new connections fail",
                count_words(sessions as f64),
                count_words(slots),
                share * 100.0,
                count_words(snapshot.settings.max_connections),
                count_words(snapshot.settings.max_connections - slots),
            );
            let severity = if share >= CRITICAL_SHARE {
                Severity::Critical
            } else {
                Severity::Warning
            };
            let mut finding = Finding::new(Check::ConnectionPressure, severity, message)
                .subject("slots")
                .evidence("client_sessions", sessions as f64)
                .evidence("connection_slots", slots)
                .evidence("max_connections", snapshot.settings.max_connections)
                .evidence("sessions_active", count_of("active"))
                .evidence("sessions_idle", count_of("idle"))
                .evidence(
                    "sessions_idle_in_transaction",
                    count_of("idle in transaction") + count_of("idle in transaction (aborted)"),
                )
                .fix(
                    "-- who holds the slots:\nSELECT application_name, client_addr, state, \
                     count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                     GROUP BY 1, 2, 3 ORDER BY 4 DESC;\n-- then pool the idle ones (PgBouncer in \
                     transaction mode) or shrink the applications' pools; raising \
                     max_connections needs a restart and memory per backend",
                );
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
        // Idle sessions by client: address (or the local socket) and application.
        let mut idle: HashMap<(Option<&str>, &str), Vec<&crate::audit::snapshot::Backend>> =
            HashMap::default();
        for b in snapshot.backends.iter().filter(|b| !b.audit_session) {
            if b.state.as_deref() == Some("idle") {
                idle.entry((
                    b.client_addr.as_deref(),
                    b.application_name.as_deref().unwrap_or(""),
                ))
                .or_default()
                .push(b);
            }
        }
        let mut clients: Vec<_> = idle.into_iter().collect();
        clients.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        for ((addr, app), backends) in clients {
            let n = backends.len();
            if n < IDLE_CLIENT_MIN_SESSIONS || (n as f64) < slots * IDLE_CLIENT_MIN_SHARE {
                continue;
            }
            // A pooler's idle server connections are what a pooler is for.
            if backends
                .iter()
                .any(|b| b.application_name.is_some() && pooler_name(snapshot, b))
            {
                continue;
            }
            let client = match addr {
                Some(a) => format!("client {a}"),
                None => "the local socket".to_owned(),
            };
            let app_words = if app.is_empty() {
                "no application name".to_owned()
            } else {
                format!("application {app}")
            };
            let message = format!(
                "{} from {client} ({app_words}) hold {:.0}% of the connection slots and no \
                 pooler is in front of them: each is a backend process with its own memory; \
                 a pooler in transaction mode (PgBouncer) would serve the same clients with a \
                 few server connections",
                counted(n as f64, "idle session", "idle sessions"),
                n as f64 / slots * 100.0
            );
            let condition = match addr {
                Some(a) => format!("client_addr = {}", quote_literal(a)),
                None => "client_addr IS NULL".to_owned(),
            };
            let mut finding = Finding::new(Check::ConnectionPressure, Severity::Info, message)
                .subject(format!("idle {client} {app_words}"))
                .evidence("idle_sessions", n as f64)
                .evidence("connection_slots", slots)
                .fix(format!(
                    "-- the sessions (ending them frees their slots; the client may reconnect):\n\
                     SELECT pid, backend_start, state_change FROM pg_stat_activity \
                     WHERE state = 'idle' AND {condition} AND application_name = {};",
                    quote_literal(app)
                ));
            finding.node = Some(node.name.to_owned());
            out.findings.push(finding);
        }
    }
}

/// A pooler known by name or PgBouncer's added host (an address shared by many sessions is
/// exactly what this check counts, so that alone does not make a pooler here).
fn pooler_name(
    snapshot: &crate::audit::snapshot::NodeSnapshot,
    b: &crate::audit::snapshot::Backend,
) -> bool {
    let without_address = crate::audit::snapshot::Backend {
        client_addr: None,
        ..b.clone()
    };
    pooler_reason(snapshot, &without_address).is_some()
}

#[cfg(test)]
mod tests {
    use crate::audit::checks::fixture::*;
    use crate::audit::snapshot::Backend;
    use crate::audit::{Check, Severity};

    fn backend(pid: i32, state: &str, app: &str, addr: Option<&str>) -> Backend {
        Backend {
            pid,
            database: Some("app".into()),
            state: Some(state.into()),
            application_name: Some(app.into()),
            client_addr: addr.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn slots_near_the_limit_and_an_idle_crowd_from_one_client() {
        let mut p = primary();
        p.settings.max_connections = 20.0;
        p.settings.superuser_reserved_connections = 3.0;
        let mut backends: Vec<Backend> = (0..12)
            .map(|i| backend(100 + i, "idle", "web", Some("10.0.0.7")))
            .collect();
        backends.push(backend(200, "active", "batch", None));
        backends.push(Backend {
            audit_session: true,
            ..backend(201, "active", "pgplan", None)
        });
        p.backends = backends;
        let report = audit_nodes(vec![("p", p.clone())]);
        let found = findings_of(&report, Check::ConnectionPressure);
        assert_eq!(found.len(), 2, "{found:#?}");
        let slots = found
            .iter()
            .find(|f| f.subject.as_deref() == Some("slots"))
            .unwrap();
        // 14 of 17 is 82%.
        assert_eq!(slots.severity, Severity::Warning);
        assert_eq!(slots.evidence_value("client_sessions"), Some(14.0));
        assert_eq!(slots.evidence_value("connection_slots"), Some(17.0));
        assert_eq!(slots.evidence_value("sessions_idle"), Some(12.0));
        assert!(slots.message.contains("web 12"), "{}", slots.message);
        let crowd = found.iter().find(|f| f.severity == Severity::Info).unwrap();
        assert_eq!(crowd.evidence_value("idle_sessions"), Some(12.0));
        assert!(
            crowd.message.contains("client 10.0.0.7"),
            "{}",
            crowd.message
        );

        // The same crowd through a pooler it names: only the slots.
        for b in &mut p.backends {
            if b.pid < 200 {
                b.application_name = Some("pgbouncer".into());
            }
        }
        let report = audit_nodes(vec![("p", p.clone())]);
        assert_eq!(findings_of(&report, Check::ConnectionPressure).len(), 1);

        // Room to spare: nothing.
        p.settings.max_connections = 200.0;
        let report = audit_nodes(vec![("p", p)]);
        assert!(findings_of(&report, Check::ConnectionPressure).is_empty());
    }
}
