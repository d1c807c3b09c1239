//! The workload's queries that could not be measured, and why: a run that failed in the
//! baseline or with a candidate built, named with the error, and for a lock wait the session
//! holding the lock, so no query drops out of a report without a word.

use serde::Serialize;

use super::{WorkloadMeasurements, WorkloadQuery};
use crate::compare::lock_timeout::LockHolder;
use crate::sql::{QueryKind, TokenKind, tokenize};

/// `AccessExclusiveLock` → `ACCESS EXCLUSIVE`, as LOCK TABLE and the documentation name it.
fn mode_name(mode: &str) -> String {
    let bare = mode.strip_suffix("Lock").unwrap_or(mode);
    let mut out = String::new();
    for (i, c) in bare.char_indices() {
        if i > 0 && c.is_ascii_uppercase() {
            out.push(' ');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The locks among `locks` a query of `kind` reading `text` waits for, in words: a read's
/// ACCESS SHARE waits only for ACCESS EXCLUSIVE; a write's ROW EXCLUSIVE for SHARE and above.
/// Relations are matched by the names the query's text uses. None when no lock matches (the
/// holder let go since).
pub fn lock_holders_message(text: &str, kind: &QueryKind, locks: &[LockHolder]) -> Option<String> {
    let names: Vec<String> = tokenize(text)
        .ok()?
        .iter()
        .filter_map(|t| match t.kind {
            TokenKind::Word => Some(t.text.to_ascii_lowercase()),
            TokenKind::QuotedIdentifier => Some(t.text.trim_matches('"').replace("\"\"", "\"")),
            _ => None,
        })
        .collect();
    let write = matches!(kind, QueryKind::Write(_));
    let held: Vec<String> = locks
        .iter()
        .filter(|l| write || l.mode == "AccessExclusiveLock")
        .filter(|l| names.contains(&l.table_name))
        .map(|l| {
            let who = match l.pid {
                Some(pid) => format!("pid {pid}"),
                None => "a prepared transaction (see pg_prepared_xacts)".to_owned(),
            };
            format!(
                "{} is held in {} mode by {who}",
                l.relation,
                mode_name(&l.mode)
            )
        })
        .collect();
    (!held.is_empty()).then(|| held.join("; "))
}

/// A query that could not be measured in one transaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmeasured {
    /// The query's id (a file name or a queryid).
    pub query: String,
    /// "baseline", or the candidate's name.
    pub during: String,
    /// The first error of its runs there.
    pub error: String,
}

/// Every query of the workload that failed in the baseline or with a measured candidate,
/// once per transaction; a query that failed the same way in the baseline is not named again
/// for each candidate.
pub fn unmeasured(
    queries: &[WorkloadQuery],
    measurements: &WorkloadMeasurements,
    names: &[String],
) -> Vec<Unmeasured> {
    let mut found: Vec<Unmeasured> = Vec::new();
    for (q, query) in queries.iter().enumerate() {
        let first_error =
            |runs: &super::QueryRuns| runs.iter().find_map(|r| r.as_ref().err().cloned());
        let mut baseline_errors = Vec::new();
        for baseline in &measurements.baselines {
            if let Some(error) = baseline.queries.get(q).and_then(first_error)
                && !baseline_errors.contains(&error)
            {
                found.push(Unmeasured {
                    query: query.source.id.clone(),
                    during: "baseline".into(),
                    error: error.clone(),
                });
                baseline_errors.push(error);
            }
        }
        for (i, run) in measurements.candidates.iter().enumerate() {
            let Ok(run) = run else { continue };
            if let Some(error) = run.queries.get(q).and_then(first_error)
                && !baseline_errors.contains(&error)
            {
                found.push(Unmeasured {
                    query: query.source.id.clone(),
                    during: names.get(i).cloned().unwrap_or_else(|| run.name.clone()),
                    error,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::WriteKind;

    fn lock(relname: &str, mode: &str, pid: Option<i32>) -> LockHolder {
        LockHolder {
            relation: format!("public.{relname}"),
            table_name: relname.into(),
            mode: mode.into(),
            pid,
            application_name: None,
            xact_age_seconds: None,
        }
    }

    #[test]
    fn the_holder_of_a_lock_the_query_waits_for_is_named() {
        let locks = [
            lock("orders", "AccessExclusiveLock", Some(4242)),
            lock("customers", "ShareLock", Some(17)),
            lock("unrelated", "AccessExclusiveLock", Some(9)),
        ];
        let read = lock_holders_message(
            "SELECT * FROM orders JOIN customers USING (id)",
            &QueryKind::Read,
            &locks,
        )
        .unwrap();
        assert_eq!(
            read,
            "public.orders is held in ACCESS EXCLUSIVE mode by pid 4242"
        );
        let write = lock_holders_message(
            "UPDATE customers SET a = 1",
            &QueryKind::Write(WriteKind::Update),
            &locks,
        )
        .unwrap();
        assert_eq!(write, "public.customers is held in SHARE mode by pid 17");
        assert_eq!(
            lock_holders_message("SELECT 1 FROM \"Other\"", &QueryKind::Read, &locks),
            None
        );
        let prepared = [lock("orders", "AccessExclusiveLock", None)];
        assert!(
            lock_holders_message("TABLE orders", &QueryKind::Read, &prepared)
                .unwrap()
                .contains("a prepared transaction")
        );
        assert_eq!(mode_name("ShareRowExclusiveLock"), "SHARE ROW EXCLUSIVE");
    }
}
