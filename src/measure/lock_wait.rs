//! A lock-timeout error made actionable: who holds the locks the statement may have waited
//! for, read in a fresh read-only transaction right after the wait gave up, and the flag that
//! waits longer.

use crate::compare::lock_timeout::{explanation, is_lock_timeout};
use crate::db::connect::Connection;
use crate::db::lock_holders::lock_holders;
use crate::db::session::{Limits, SessionError};

/// For a lock-timeout error, the lines that name the holders and `--lock-timeout`; `None` for
/// any other error, or when the holders cannot be read (the error is then shown as it was).
pub async fn explain(
    conn: &mut Connection,
    limits: &Limits,
    tables: &[String],
    error: &SessionError,
) -> Option<String> {
    if !is_lock_timeout(error.sqlstate.as_deref()) || conn.is_closed() {
        return None;
    }
    let holders = conn
        .read_only(limits, async |client| lock_holders(client, tables).await)
        .await
        .ok()?;
    Some(explanation(limits.lock_timeout.as_millis(), &holders))
}
