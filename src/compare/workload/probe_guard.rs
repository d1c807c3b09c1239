//! Whether pgplan may run its representative write on a table. `--allow-writes` lets the
//! user's statements write; the probe (a DELETE and re-INSERT of one row, rolled back) is a
//! statement of pgplan's own, and on a table with user triggers or rules it runs their code
//! too: a trigger that logs through dblink commits elsewhere, whatever the rollback does. Such
//! a table's index entry cost is estimated instead, and the report says why, unless the user
//! accepts the probe there by name ([`ACCEPT_FLAG`]).

/// The flag that accepts the representative write on a table whose triggers, rules or
/// publications it would fire.
pub const ACCEPT_FLAG: &str = "--allow-probe-triggers";

/// Something on a table that runs or publishes more than the row pgplan writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// `trigger`, `rule` or `publication`.
    pub kind: String,
    pub name: String,
}

/// A table the user accepted the representative write on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// As the user wrote it.
    pub written: String,
    /// As the catalog names it (`schema.table`).
    pub table: String,
    /// What the probe fires there.
    pub blockers: Vec<Blocker>,
}

/// How every note of this module begins, so a command can also print them on standard error.
const SKIPPED_PREFIX: &str = "--allow-writes: the representative write on ";

/// Whether `note` is one of this module's (printed on standard error besides the report).
pub fn is_probe_note(note: &str) -> bool {
    note.starts_with(SKIPPED_PREFIX) || note.starts_with(ACCEPT_FLAG)
}

fn named(blockers: &[Blocker]) -> String {
    blockers
        .iter()
        .map(|b| format!("{} {}", b.kind, b.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The note for a table whose write was not probed, or `None` when nothing blocks it.
pub fn skipped_note(table: &str, blockers: &[Blocker]) -> Option<String> {
    if blockers.is_empty() {
        return None;
    }
    Some(format!(
        "{SKIPPED_PREFIX}{table} was not run, because it would fire what the table runs on a \
         write ({}), whose effects may reach outside the rolled-back transaction; its index \
         entry cost is estimated from the index size instead (pass {ACCEPT_FLAG} {table} to \
         run it anyway)",
        named(blockers)
    ))
}

/// The note for a table whose write is probed because the user accepted it, naming what the
/// write fires.
pub fn accepted_note(accepted: &Accepted) -> Option<String> {
    if accepted.blockers.is_empty() {
        return None;
    }
    Some(format!(
        "{ACCEPT_FLAG} {}: the representative write on {} runs and fires {}; what that does \
         outside the transaction (dblink, another connection) the rollback does not undo, and \
         pgplan counts the rows it commits to the tables those triggers write",
        accepted.written,
        accepted.table,
        named(&accepted.blockers)
    ))
}

/// The warnings for accepted tables the flag does nothing for: one with nothing that blocks
/// the probe, and one no representative write runs on (`probed`: the catalog names of the
/// tables the candidates are on).
pub fn acceptance_warnings(accepted: &[Accepted], probed: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for a in accepted {
        if !probed.contains(&a.table) {
            out.push(format!(
                "{ACCEPT_FLAG} {}: no candidate index is on {}, so no representative write \
                 runs there and the flag changes nothing",
                a.written, a.table
            ));
        } else if a.blockers.is_empty() {
            out.push(format!(
                "{ACCEPT_FLAG} {}: {} has no user trigger, rule or publication, so its \
                 representative write runs without the flag; it changes nothing",
                a.written, a.table
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(name: &str) -> Blocker {
        Blocker {
            kind: "trigger".into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_table_with_triggers_is_estimated_and_says_why_and_how_to_accept() {
        assert_eq!(skipped_note("public.t", &[]), None);
        let note = skipped_note("public.t", &[trigger("log_changes")]).unwrap();
        assert!(note.contains("on public.t was not run"), "{note}");
        assert!(note.contains("(trigger log_changes)"), "{note}");
        assert!(
            note.ends_with("(pass --allow-probe-triggers public.t to run it anyway)"),
            "{note}"
        );
        assert!(is_probe_note(&note));
    }

    #[test]
    fn an_accepted_table_says_what_the_write_fires() {
        let accepted = Accepted {
            written: "t".into(),
            table: "public.t".into(),
            blockers: vec![trigger("log_changes")],
        };
        let note = accepted_note(&accepted).unwrap();
        assert!(
            note.starts_with(
                "--allow-probe-triggers t: the representative write on public.t runs and fires \
                 trigger log_changes;"
            ),
            "{note}"
        );
        assert!(is_probe_note(&note));
        assert!(!is_probe_note("left behind: a slot"));
    }

    #[test]
    fn an_acceptance_that_changes_nothing_is_warned() {
        let accepted = [
            Accepted {
                written: "plain".into(),
                table: "public.plain".into(),
                blockers: vec![],
            },
            Accepted {
                written: "elsewhere".into(),
                table: "public.elsewhere".into(),
                blockers: vec![trigger("x")],
            },
            Accepted {
                written: "t".into(),
                table: "public.t".into(),
                blockers: vec![trigger("x")],
            },
        ];
        let probed = ["public.plain".to_owned(), "public.t".to_owned()];
        let warnings = acceptance_warnings(&accepted, &probed);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0]
                .starts_with("--allow-probe-triggers plain: public.plain has no user trigger"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].starts_with(
                "--allow-probe-triggers elsewhere: no candidate index is on public.elsewhere"
            ),
            "{}",
            warnings[1]
        );
        assert!(warnings.iter().all(|w| is_probe_note(w)));
    }
}
