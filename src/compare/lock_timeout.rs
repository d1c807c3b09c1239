//! What to say when a statement gave up waiting for a lock (lock_timeout, SQLSTATE 55P03):
//! PostgreSQL's error ("canceling statement due to lock timeout") names neither the table nor
//! who holds it, so the holders read just after are named, with the flag that waits longer.

/// A relation lock another session (or a prepared transaction, `pid` `None`) holds.
#[derive(Debug, Clone, PartialEq)]
pub struct LockHolder {
    /// schema.table as shown to a person (quoted as needed, control characters escaped).
    pub relation: String,
    /// The table's name as the catalog holds it, to match the names a query's text uses.
    pub table_name: String,
    /// As pg_locks names it: `AccessExclusiveLock`...
    pub pid: Option<i32>,
    pub mode: String,
    pub application_name: Option<String>,
    pub xact_age_seconds: Option<f64>,
}

/// SQLSTATE 55P03 lock_not_available, what lock_timeout raises.
pub fn is_lock_timeout(sqlstate: Option<&str>) -> bool {
    sqlstate == Some("55P03")
}

/// The lines added to a lock-timeout error: who held what (read after the wait ended, so the
/// holder may have gone meanwhile), and how to wait longer.
pub fn explanation(lock_timeout_ms: u128, holders: &[LockHolder]) -> String {
    let mut text = String::new();
    if holders.is_empty() {
        text.push_str(
            "no other session holds a conflicting table lock any more (it was released after \
             the wait gave up, or the wait was for a row another transaction is changing)",
        );
    } else {
        let mut named: Vec<String> = holders.iter().take(SHOWN).map(holder_line).collect();
        if holders.len() > SHOWN {
            named.push(format!(
                "and {} more (SELECT * FROM pg_locks WHERE NOT granted OR mode LIKE '%Exclusive%')",
                holders.len() - SHOWN
            ));
        }
        text.push_str(&format!("held by: {}", named.join("; ")));
    }
    text.push_str(&format!(
        "\nhint: pgplan waited {lock_timeout_ms} ms for the lock; wait longer with --lock-timeout \
         (e.g. --lock-timeout 30s), or run when that transaction has ended (see it with SELECT * \
         FROM pg_stat_activity WHERE pid = ...)"
    ));
    text
}

/// Holders named in one error, strongest and oldest first; the rest are counted.
const SHOWN: usize = 5;

fn holder_line(h: &LockHolder) -> String {
    let who = match h.pid {
        Some(pid) => format!("pid {pid}"),
        None => "a prepared transaction (pg_prepared_xacts)".to_owned(),
    };
    let mut details = vec![h.mode.clone()];
    if let Some(app) = h.application_name.as_deref().filter(|a| !a.is_empty()) {
        details.push(format!("application_name {app}"));
    }
    if let Some(age) = h.xact_age_seconds {
        details.push(format!("transaction open {}s", age.round()));
    }
    format!("{} locked by {who} ({})", h.relation, details.join(", "))
}

#[cfg(test)]
mod tests {
    use super::{LockHolder, explanation, is_lock_timeout};

    #[test]
    fn names_the_table_the_holder_and_the_flag() {
        let holders = [LockHolder {
            relation: "public.t".into(),
            table_name: "t".into(),
            pid: Some(4242),
            mode: "AccessExclusiveLock".into(),
            application_name: Some("migrate".into()),
            xact_age_seconds: Some(12.4),
        }];
        let text = explanation(200, &holders);
        assert!(
            text.starts_with(
                "held by: public.t locked by pid 4242 (AccessExclusiveLock, application_name \
                 migrate, transaction open 12s)\nhint: pgplan waited 200 ms for the lock; wait \
                 longer with --lock-timeout"
            ),
            "{text}"
        );
        assert!(explanation(5, &[]).contains("no other session holds"));
        // A crowd of holders: the first five, strongest and oldest first, and a count.
        let crowd = vec![holders[0].clone(); 7];
        let text = explanation(200, &crowd);
        assert_eq!(text.matches("locked by pid 4242").count(), 5, "{text}");
        assert!(text.contains("; and 2 more ("), "{text}");
        assert!(is_lock_timeout(Some("55P03")) && !is_lock_timeout(Some("57014")));
    }
}
