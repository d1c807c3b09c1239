//! The unified diff of a query whose text changed since the baseline, line by line.

use similar::TextDiff;

/// `before` and `after` as a unified diff (three lines of context), headed with the query's id;
/// `None` when the texts are the same.
pub fn unified(id: &str, before: &str, after: &str) -> Option<String> {
    if before == after {
        return None;
    }
    // Both sides end with a newline so the last line is compared as a line, not flagged as
    // "no newline at end of file".
    let before = format!("{}\n", before.trim_end());
    let after = format!("{}\n", after.trim_end());
    let diff = TextDiff::from_lines(&before, &after);
    Some(
        diff.unified_diff()
            .context_radius(3)
            .header(&format!("baseline/{id}"), &format!("workload/{id}"))
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_marked() {
        let d = unified(
            "q.sql",
            "SELECT id\nFROM t\nWHERE a = 1",
            "SELECT id\nFROM t\nWHERE a = 2",
        )
        .unwrap();
        assert!(
            d.starts_with("--- baseline/q.sql\n+++ workload/q.sql\n"),
            "{d}"
        );
        assert!(d.contains("-WHERE a = 1\n+WHERE a = 2\n"), "{d}");
        assert!(d.contains(" FROM t\n"), "{d}");
        assert_eq!(unified("q.sql", "SELECT 1", "SELECT 1"), None);
    }
}
