//! What PostgreSQL names an expression column of an index (parse_target.c's FigureIndexColname
//! over FigureColnameInternal): a function call by its function, a cast by its type. Used by
//! the scan reader when it makes an expression key and by the naming rule that joins the keys.

use crate::sql::{TokenKind, tokenize};

use super::expr::{Expr, ident};

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
