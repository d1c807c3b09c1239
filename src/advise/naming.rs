//! The name PostgreSQL gives an index created without one, so that the name advise prints is
//! the one the server would choose for the same `CREATE INDEX` run unnamed: indexcmds.c's
//! ChooseIndexName over ChooseIndexColumnNames, parse_target.c's FigureIndexColname for an
//! expression column, makeObjectName's truncation and ChooseRelationName's numbering.
//!
//! Byte lengths are those of UTF-8, the server encoding of nearly every database; a name with
//! non-ASCII characters in a single-byte encoding (LATIN1) is shorter on that server, so its
//! truncation could differ there.

use super::access::Key;
#[cfg(test)]
use super::colname::expression_column_name;
pub use crate::pgnames::MAX_NAME_BYTES;
use crate::pgnames::{choose_relation_name, clip};

/// The suffix ChooseIndexName gives a plain index, unique or not (`key`, `pkey` and `excl` are
/// for the indexes of constraints, which advise never proposes).
pub const INDEX_LABEL: &str = "idx";

/// The name of one index column: a column's own name, an expression's as
/// [`super::colname::expression_column_name`] found it, else `expr`.
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
    use crate::pgnames::make_object_name;

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
