//! The name PostgreSQL gives an index created without one, so that the name advise prints is
//! the one the server would choose for the same `CREATE INDEX` run unnamed: indexcmds.c's
//! ChooseIndexName over ChooseIndexColumnNames, parse_target.c's FigureIndexColname for an
//! expression column, makeObjectName's truncation and ChooseRelationName's numbering.
//!
//! Byte lengths are those of UTF-8, the server encoding of nearly every database; a name with
//! non-ASCII characters in a single-byte encoding (LATIN1) is shorter on that server, so its
//! truncation could differ there.

use crate::sql::{TokenKind, tokenize};

use super::access::Key;
use super::expr::{Expr, ident};

/// NAMEDATALEN - 1: the longest name PostgreSQL keeps, in bytes.
pub const MAX_NAME_BYTES: usize = 63;

/// The suffix ChooseIndexName gives a plain index, unique or not (`key`, `pkey` and `excl` are
/// for the indexes of constraints, which advise never proposes).
pub const INDEX_LABEL: &str = "idx";

/// What FigureIndexColname names an expression column: a function call by its function, a
/// cast by what it casts when that has a good name and else by its type, `ARRAY[...]` as
/// `array`; `None` (the index column is then `expr`) for an operator, a null test, a boolean
/// connective or a constant.
pub fn expression_column_name(e: &Expr) -> Option<String> {
    figure(e).map(|(name, _)| name)
}

/// FigureColnameInternal over the shapes advise writes: the name with its strength (2 a good
/// name, 1 a second-best one, which an enclosing cast replaces by its type).
fn figure(e: &Expr) -> Option<(String, u8)> {
    match e {
        Expr::Column { name, .. } => Some((name.clone(), 2)),
        // The last part of the possibly qualified name, as stored. COALESCE, GREATEST, LEAST,
        // NULLIF and ROW are their own node types in the grammar, named after themselves too.
        Expr::Func { name, .. } => Some((last_name(name)?, 2)),
        Expr::Array(_) => Some(("array".into(), 2)),
        Expr::Cast { expr, type_name } => match figure(expr) {
            Some(inner @ (_, 2)) => Some(inner),
            _ => Some((type_column_name(type_name)?, 1)),
        },
        Expr::Collate { expr, .. } => figure(expr),
        _ => None,
    }
}

/// The last part of a qualified name as printed (`public."MyFunc"`), as the server stores it.
fn last_name(printed: &str) -> Option<String> {
    let tokens = tokenize(printed).ok()?;
    tokens.iter().rev().find_map(ident)
}

/// The name a cast to `type_name` (as format_type prints it) gives a column: the last part of
/// the type's name as the grammar makes it, without type modifiers or array brackets. The SQL
/// spellings are the grammar's system type names (`integer` is `int4`, `character varying`
/// is `varchar`, `timestamp with time zone` is `timestamptz`).
fn type_column_name(type_name: &str) -> Option<String> {
    let tokens = tokenize(type_name).ok()?;
    let mut words: Vec<String> = Vec::new();
    let mut quoted = false;
    let mut depth = 0usize;
    for t in &tokens {
        match (t.kind, t.text) {
            (TokenKind::Punctuation, "(") => depth += 1,
            (TokenKind::Punctuation, ")") => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            // A qualified name is a user type's: only its last part counts.
            (TokenKind::Punctuation, ".") => words.clear(),
            (TokenKind::Punctuation, "[" | "]") => {}
            (TokenKind::Word | TokenKind::QuotedIdentifier, _) => {
                quoted = t.kind == TokenKind::QuotedIdentifier;
                words.push(ident(t)?);
            }
            _ => return None,
        }
    }
    let spelled = words.join(" ");
    if quoted {
        return words.pop();
    }
    let system = match spelled.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "decimal" | "dec" => "numeric",
        "character varying" | "char varying" => "varchar",
        "character" | "char" => "bpchar",
        "bit varying" => "varbit",
        "timestamp with time zone" => "timestamptz",
        "timestamp without time zone" => "timestamp",
        "time with time zone" => "timetz",
        "time without time zone" => "time",
        other if other.starts_with("interval") => "interval",
        other => return (!other.is_empty() && !other.contains(' ')).then(|| other.to_owned()),
    };
    Some(system.to_owned())
}

/// The name of one index column: a column's own name, an expression's as
/// [`expression_column_name`] found it, else `expr`.
pub fn key_column_name(key: &Key) -> &str {
    match key {
        Key::Column(name) => name,
        Key::Expression { name, .. } => name.as_deref().unwrap_or("expr"),
    }
}

/// ChooseIndexColumnNames: each key's name then each INCLUDE column's, a name already taken by
/// an earlier column given the first free number (`lower`, `lower1`), cut so that it fits.
pub fn index_column_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for original in names {
        let mut name = original.to_owned();
        let mut n = 0u32;
        while out.contains(&name) {
            n += 1;
            let number = n.to_string();
            name = clip(original, MAX_NAME_BYTES - number.len()).to_owned() + &number;
        }
        out.push(name);
    }
    out
}

/// ChooseIndexNameAddition: the column names joined by `_`, stopping once the text reaches
/// NAMEDATALEN bytes (makeObjectName cuts it further).
fn name_addition(columns: &[String]) -> String {
    let mut out = String::new();
    for name in columns {
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(clip(name, MAX_NAME_BYTES));
        if out.len() > MAX_NAME_BYTES {
            break;
        }
    }
    out
}

/// The longest start of `s` of at most `max` bytes that ends on a character (pg_mbcliplen).
fn clip(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// makeObjectName: `name1_name2_label` in at most 63 bytes, the longer of the two names cut
/// first (one byte at a time, name1 only while it is strictly the longer), each cut on a
/// character boundary.
pub fn make_object_name(name1: &str, name2: Option<&str>, label: &str) -> String {
    let overhead = usize::from(name2.is_some()) + label.len() + 1;
    let available = MAX_NAME_BYTES.saturating_sub(overhead);
    let mut chars1 = name1.len();
    let mut chars2 = name2.map_or(0, str::len);
    while chars1 + chars2 > available {
        if chars1 > chars2 {
            chars1 -= 1;
        } else {
            chars2 -= 1;
        }
    }
    let mut out = clip(name1, chars1).to_owned();
    if let Some(name2) = name2 {
        out.push('_');
        out.push_str(clip(name2, chars2));
    }
    out.push('_');
    out.push_str(label);
    out
}

/// ChooseRelationName: the first of `name1_name2_label`, `..._label1`, `..._label2`, ... that
/// `taken` does not hold. The number goes on the label before the parts are cut, so a long
/// name loses a byte of its table or columns for it, never of the label.
pub fn choose_relation_name(
    name1: &str,
    name2: Option<&str>,
    label: &str,
    taken: impl Fn(&str) -> bool,
) -> String {
    let mut name = make_object_name(name1, name2, label);
    let mut pass = 0u32;
    while taken(&name) {
        pass += 1;
        name = make_object_name(name1, name2, &format!("{label}{pass}"));
    }
    name
}

/// The name CREATE INDEX without a name gives an index on `table` with these key columns and
/// INCLUDE columns, where `taken` says which names the schema's relations already have.
pub fn index_name<'a>(
    table: &str,
    keys: impl IntoIterator<Item = &'a Key>,
    include: &'a [String],
    taken: impl Fn(&str) -> bool,
) -> String {
    let columns = index_column_names(
        keys.into_iter()
            .map(key_column_name)
            .chain(include.iter().map(String::as_str)),
    );
    choose_relation_name(table, Some(&name_addition(&columns)), INDEX_LABEL, taken)
}

/// How much of a table's name every index name [`index_name`] can give it starts with, for the
/// catalog read of the names already taken: makeObjectName cuts the table's part only while it
/// is longer than the columns' part, so at least half of what a label leaves (label `idx`
/// followed by any u32 leaves 48 bytes) stays: 24 bytes, 21 once cut on a character.
pub fn lookup_prefix(table: &str) -> &str {
    clip(table, 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::expr::read;

    fn col(name: &str) -> Key {
        Key::Column(name.into())
    }

    /// The key an index definition's expression makes, as access.rs builds it from a plan.
    fn expr_key(deparsed: &str) -> Key {
        let e = read(deparsed).unwrap_or_else(|| panic!("{deparsed} not read"));
        Key::Expression {
            sql: e.unqualified(),
            columns: e.columns().iter().map(|(_, c)| (*c).to_owned()).collect(),
            name: expression_column_name(&e),
        }
    }

    fn named(table: &str, keys: &[Key], include: &[&str], taken: &[&str]) -> String {
        let include: Vec<String> = include.iter().map(|s| (*s).to_owned()).collect();
        index_name(table, keys, &include, |n| taken.contains(&n))
    }

    // Every expected name below is what PostgreSQL 15 chose for `CREATE INDEX ON users (...)`
    // with the same keys.
    #[test]
    fn expression_columns_are_named_as_figure_index_colname_names_them() {
        let cases = [
            ("lower((email)::text)", "users_lower_idx"),
            ("(data ->> 'n'::text)", "users_expr_idx"),
            ("((data ->> 'n'::text))::integer", "users_int4_idx"),
            (
                "((data ->> 'n'::text))::character varying(10)",
                "users_varchar_idx",
            ),
            (
                "((data ->> 'n'::text))::double precision",
                "users_float8_idx",
            ),
            ("((data ->> 'n'::text))::boolean", "users_bool_idx"),
            ("((data ->> 'n'::text))::numeric(10,2)", "users_numeric_idx"),
            ("((data ->> 'n'::text))::\"char\"", "users_char_idx"),
            ("((data ->> 'n'::text))::character(3)", "users_bpchar_idx"),
            ("((data ->> 'n'::text))::bigint", "users_int8_idx"),
            ("((data ->> 'n'::text))::real", "users_float4_idx"),
            ("((data ->> 'n'::text))::bit varying(3)", "users_varbit_idx"),
            (
                "((data ->> 'n'::text))::timestamp with time zone",
                "users_timestamptz_idx",
            ),
            (
                "((data ->> 'n'::text))::timestamp(3) without time zone",
                "users_timestamp_idx",
            ),
            ("((data ->> 'n'::text))::text[]", "users_text_idx"),
            ("((data ->> 'n'::text))::public.mood", "users_mood_idx"),
            ("(email IS NULL)", "users_expr_idx"),
            ("(- id)", "users_expr_idx"),
            ("lower((email)::text) COLLATE \"C\"", "users_lower_idx"),
            ("(((id + 1))::text) COLLATE \"C\"", "users_text_idx"),
            ("pg_catalog.lower((email)::text)", "users_lower_idx"),
            ("ARRAY[id, id]", "users_array_idx"),
            ("COALESCE(name, (email)::text)", "users_coalesce_idx"),
            ("\"left\"(name, 3)", "users_left_idx"),
            ("timezone('UTC'::text, ts)", "users_timezone_idx"),
            ("(lower(name))::text", "users_lower_idx"),
        ];
        for (deparsed, expected) in cases {
            assert_eq!(
                named("users", &[expr_key(deparsed)], &[], &[]),
                expected,
                "{deparsed}"
            );
        }
    }

    #[test]
    fn columns_join_with_include_columns_and_repeated_names_get_numbers() {
        assert_eq!(
            named(
                "users",
                &[expr_key("lower((email)::text)"), expr_key("lower(name)")],
                &[],
                &[]
            ),
            "users_lower_lower1_idx"
        );
        assert_eq!(
            named("users", &[expr_key("(id + 1)")], &["name", "email"], &[]),
            "users_expr_name_email_idx"
        );
        assert_eq!(
            named("users", &[col("Mixed Col")], &[], &[]),
            "users_Mixed Col_idx"
        );
        assert_eq!(
            index_column_names(["a", "a", "a1", "a"]),
            ["a", "a1", "a11", "a2"]
        );
    }

    #[test]
    fn a_taken_name_gets_the_first_free_number_on_its_label() {
        let keys = [expr_key("lower((email)::text)")];
        assert_eq!(
            named("users", &keys, &[], &["users_lower_idx"]),
            "users_lower_idx1"
        );
        assert_eq!(
            named(
                "users",
                &keys,
                &[],
                &["users_lower_idx", "users_lower_idx1", "users_lower_idx3"]
            ),
            "users_lower_idx2"
        );
        // Only the name itself counts: `users_lower_idx1` alone leaves `users_lower_idx` free.
        assert_eq!(
            named("users", &keys, &[], &["users_lower_idx1"]),
            "users_lower_idx"
        );
    }

    // What PostgreSQL 15 chose for `CREATE INDEX ON` tables and columns of these names (twice
    // for the numbered ones).
    #[test]
    fn long_names_are_cut_as_make_object_name_cuts_them() {
        let table = "t".repeat(40);
        let column = "c".repeat(40);
        // 58 bytes for both parts: the longer (here the column's, on a tie) loses first.
        let name = named(&table, &[col(&column)], &[], &[]);
        assert_eq!(name, format!("{}_{}_idx", "t".repeat(29), "c".repeat(29)));
        assert_eq!(name.len(), 63);
        let again = named(&table, &[col(&column)], &[], &[&name]);
        assert_eq!(again, format!("{}_{}_idx1", "t".repeat(29), "c".repeat(28)));
        // A long table and a short column: the table's part is cut.
        let name = named(&"t".repeat(63), &[col("a")], &[], &[]);
        assert_eq!(name, format!("{}_a_idx", "t".repeat(57)));
        let long_table = "t".repeat(63);
        assert_eq!(
            named(&long_table, &[col("a")], &[], &[&name]),
            format!("{}_a_idx1", "t".repeat(56))
        );
        // Several long columns: the joined part stops growing once it passes 63 bytes.
        let keys: Vec<Key> = (0..4)
            .map(|i| col(&format!("{i}{}", "x".repeat(30))))
            .collect();
        let name = named("t", &keys, &[], &[]);
        assert_eq!(
            name,
            format!("t_0{}_1{}_idx", "x".repeat(30), "x".repeat(24))
        );
    }

    #[test]
    fn multibyte_names_are_cut_on_a_character() {
        // 'é' is two bytes: 29 bytes would split the 15th of them.
        let table = "é".repeat(30);
        let column = "c".repeat(40);
        let name = named(&table, &[col(&column)], &[], &[]);
        assert_eq!(name, format!("{}_{}_idx", "é".repeat(14), "c".repeat(29)));
        assert!(name.len() <= 63);
    }

    #[test]
    fn the_lookup_prefix_starts_every_name_a_long_label_leaves() {
        let table = "t".repeat(63);
        let column = "c".repeat(63);
        let name = make_object_name(&table, Some(&column), "idx4294967295");
        assert!(name.starts_with(lookup_prefix(&table)), "{name}");
        assert_eq!(lookup_prefix("users"), "users");
        assert_eq!(lookup_prefix(&"é".repeat(20)), "é".repeat(8));
    }
}
