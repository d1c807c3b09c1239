//! Whether pgplan may run its representative write on a table. `--allow-writes` lets the
//! user's statements write; the probe (a DELETE and re-INSERT of one row, rolled back) is a
//! statement of pgplan's own, and on a table with user triggers or rules it runs their code
//! too: a trigger that logs through dblink commits elsewhere, whatever the rollback does. Such
//! a table's index entry cost is estimated instead, and the report says why.

/// Something on a table that runs or publishes more than the row pgplan writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// `trigger`, `rule` or `publication`.
    pub kind: String,
    pub name: String,
}

/// The note for a table whose write was not probed, or `None` when nothing blocks it.
pub fn skipped_note(table: &str, blockers: &[Blocker]) -> Option<String> {
    if blockers.is_empty() {
        return None;
    }
    let named: Vec<String> = blockers
        .iter()
        .map(|b| format!("{} {}", b.kind, b.name))
        .collect();
    Some(format!(
        "--allow-writes: the representative write on {table} was not run, because it would fire \
         what the table runs on a write ({}), whose effects may reach outside the rolled-back \
         transaction; its index entry cost is estimated from the index size instead",
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::{Blocker, skipped_note};

    #[test]
    fn a_table_with_triggers_is_estimated_and_says_why() {
        assert_eq!(skipped_note("public.t", &[]), None);
        let note = skipped_note(
            "public.t",
            &[Blocker {
                kind: "trigger".into(),
                name: "log_changes".into(),
            }],
        )
        .unwrap();
        assert!(note.contains("on public.t was not run"), "{note}");
        assert!(note.contains("(trigger log_changes)"), "{note}");
    }
}
