//! Which columns a workload's UPDATE sets, and which columns a candidate index covers: an
//! update that sets a column an index reads (key, INCLUDE, expression or predicate) cannot be
//! HOT (heap-only), so it writes a new entry into every index of the table.

use crate::sql::{Token, TokenKind, tokenize};

fn name(t: &Token<'_>) -> Option<String> {
    match t.kind {
        TokenKind::Word => Some(t.text.to_ascii_lowercase()),
        TokenKind::QuotedIdentifier => Some(t.text.trim_matches('"').replace("\"\"", "\"")),
        _ => None,
    }
}

/// An UPDATE's target as written (`schema.table` or `table`) and the columns its SET list
/// assigns; `None` for any other statement (or an UPDATE inside a WITH, which pgplan does not
/// read).
pub fn update_target(sql: &str) -> Option<(String, Vec<String>)> {
    let toks = tokenize(sql).ok()?;
    let mut i = 0;
    if !toks.first()?.is_keyword("update") {
        return None;
    }
    i += 1;
    if toks.get(i)?.is_keyword("only") {
        i += 1;
    }
    let mut table = toks.get(i)?.text.to_owned();
    name(toks.get(i)?)?;
    i += 1;
    if toks.get(i).is_some_and(|t| t.text == ".") {
        table = format!("{table}.{}", toks.get(i + 1)?.text);
        i += 2;
    }
    // Skip the alias (and the `*` of inheritance) up to SET.
    while !toks.get(i)?.is_keyword("set") {
        i += 1;
    }
    i += 1;
    let mut columns = Vec::new();
    let mut depth = 0usize;
    let mut expect_target = true;
    while let Some(t) = toks.get(i) {
        match t.text {
            "(" => {
                depth += 1;
            }
            ")" => depth = depth.saturating_sub(1),
            "," if depth == 0 => expect_target = true,
            _ if depth == 0
                && ["where", "from", "returning"]
                    .iter()
                    .any(|k| t.is_keyword(k)) =>
            {
                break;
            }
            _ => {}
        }
        // `col = ...`, `col[1] = ...`, `col.field = ...`, or `(a, b) = ...`.
        if expect_target && t.text != "(" && t.text != "," {
            if let Some(n) = name(t) {
                columns.push(n);
            }
            if depth == 0 {
                expect_target = false;
            }
        }
        if t.text == ")" && depth == 0 {
            expect_target = false;
        }
        i += 1;
    }
    columns.sort();
    columns.dedup();
    Some((table, columns))
}

/// The columns of `table_columns` (lower-case or as stored) that an index definition
/// (`ON t (a, lower(b)) INCLUDE (c) WHERE d > 0`) mentions: what HOT checks.
pub fn covered_columns(definition: &str, table_columns: &[String]) -> Vec<String> {
    let Ok(toks) = tokenize(definition) else {
        return table_columns.to_vec();
    };
    // Past `ON table`: the table's own name must not count as a column.
    let start = toks
        .iter()
        .position(|t| t.text == "(")
        .unwrap_or(toks.len());
    let mut found: Vec<String> = toks[start..]
        .iter()
        .filter_map(name)
        .filter(|n| table_columns.contains(n))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_lists_are_read() {
        assert_eq!(
            update_target("UPDATE accounts SET balance = balance + $1, note = $2 WHERE id = $3"),
            Some(("accounts".into(), vec!["balance".into(), "note".into()]))
        );
        assert_eq!(
            update_target("UPDATE ONLY public.t AS x SET (a, \"B\") = ($1, $2) WHERE x.id = 1"),
            Some(("public.t".into(), vec!["B".into(), "a".into()]))
        );
        assert_eq!(update_target("SELECT 1"), None);
    }

    #[test]
    fn an_index_covers_keys_expressions_includes_and_predicate_columns() {
        let cols: Vec<String> = ["id", "status", "created_at", "email", "payload"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            covered_columns(
                "ON events (lower(email), created_at DESC) INCLUDE (id) WHERE status = 'pending'",
                &cols
            ),
            ["created_at", "email", "id", "status"]
        );
    }
}
