//! What a command that ran user SQL left on the server: the items of its lasting state
//! (replication slots, prepared transactions, advisory locks held by pgplan's session) read
//! before and after the runs, and for each one that appeared, the command that removes it.
//!
//! None of these is undone by ROLLBACK: a replication slot is created outside any transaction
//! and reserves WAL until dropped, a prepared transaction survives even a restart, and a
//! session-level advisory lock lasts until the session ends (through a pooler, past it, on the
//! server connection the next client gets). pgplan refuses the built-in functions that make
//! them, but a user function can call them inside; this diff is what proves nothing was left.

use crate::format::printable;
use crate::sql::quote_literal;

/// How every note of [`left_behind`] begins, so a command can tell from its notes that its exit
/// status must say so ([`crate::exit::LEFT_BEHIND`]).
pub const PREFIX: &str = "left behind: ";

/// Whether any of `notes` reports something left behind.
pub fn any_left(notes: &[String]) -> bool {
    notes.iter().any(|n| n.starts_with(PREFIX))
}

/// One item of the server's lasting state.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Item {
    /// `replication slot`, `prepared transaction` or `advisory lock`.
    pub kind: String,
    pub name: String,
    pub detail: String,
}

/// The items present after the runs that were not there before, each with what to do.
pub fn left_behind(before: &[Item], after: &[Item]) -> Vec<String> {
    let backend = |items: &[Item]| {
        items
            .iter()
            .find(|i| i.kind == "backend")
            .map(|i| i.name.clone())
    };
    // Advisory locks are the reading session's: comparable only when one server connection
    // served both reads (a transaction-mode pooler may hand out another).
    let same_backend = backend(before) == backend(after);
    after
        .iter()
        .filter(|item| item.kind != "backend")
        .filter(|item| same_backend || item.kind != "advisory lock")
        .filter(|item| !before.contains(item))
        .map(|item| {
            let name = printable(&item.name);
            let detail = printable(&item.detail);
            let remedy = match item.kind.as_str() {
                "replication slot" => format!(
                    "it reserves WAL and may hold back the xmin horizon until dropped: SELECT \
                     pg_drop_replication_slot({})",
                    quote_literal(&item.name)
                ),
                "prepared transaction" => format!(
                    "it holds its locks and the xmin horizon, even across a restart, until \
                     ended: ROLLBACK PREPARED {}",
                    quote_literal(&item.name)
                ),
                "advisory lock" => "pgplan's session held it after the rollback; it ends with \
                     the session, which pgplan closes now, but through a pooler the server \
                     connection keeps it: SELECT pg_advisory_unlock_all() on that connection"
                    .to_owned(),
                _ => "the rollback does not undo it".to_owned(),
            };
            // The remedy quotes the name as the server needs it; a control character in it is
            // escaped all the same (the note reaches a terminal).
            format!(
                "{PREFIX}{} {name} ({detail}) appeared while pgplan ran (its runs or \
                 another session made it); {}",
                item.kind,
                printable(&remedy)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &str, name: &str, detail: &str) -> Item {
        Item {
            kind: kind.into(),
            name: name.into(),
            detail: detail.into(),
        }
    }

    #[test]
    fn only_what_appeared_is_reported_with_its_remedy() {
        let before = [item("replication slot", "old", "physical, inactive")];
        let after = [
            item("replication slot", "old", "physical, inactive"),
            item("replication slot", "new'one", "physical, inactive"),
            item("prepared transaction", "g1", "database d, owner o"),
            item("advisory lock", "42", "ExclusiveLock"),
        ];
        let notes = left_behind(&before, &after);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].starts_with("left behind: replication slot new'one (physical, inactive)"));
        assert!(
            notes[0].ends_with("SELECT pg_drop_replication_slot('new''one')"),
            "{}",
            notes[0]
        );
        assert!(notes[1].ends_with("ROLLBACK PREPARED 'g1'"), "{}", notes[1]);
        assert!(
            notes[2].contains("pg_advisory_unlock_all()"),
            "{}",
            notes[2]
        );
        assert!(left_behind(&after, &after).is_empty());
    }

    #[test]
    fn advisory_locks_of_another_server_connection_are_not_compared() {
        let before = [item("backend", "10", "")];
        let after = [
            item("advisory lock", "42", "ExclusiveLock"),
            item("backend", "11", ""),
        ];
        assert!(left_behind(&before, &after).is_empty());
        let after = [
            item("advisory lock", "42", "ExclusiveLock"),
            item("backend", "10", ""),
        ];
        assert_eq!(left_behind(&before, &after).len(), 1);
    }

    #[test]
    fn a_hostile_name_is_escaped() {
        let notes = left_behind(&[], &[item("replication slot", "s\u{1b}[2J", "physical")]);
        assert!(!notes[0].contains('\u{1b}'), "{}", notes[0]);
    }
}
