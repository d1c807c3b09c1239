//! What the body of a user's SQL or PL/pgSQL function calls, read from its source: a name
//! followed by `(` is a call (PL/pgSQL is SQL-ish enough for that), string constants are not
//! read, except one given to `EXECUTE` whole; and whether the body runs SQL made at run time,
//! which no reading of the source can see.

use super::{Call, calls_in_tokens};
use crate::sql::{StringKind, Token, TokenKind, tokenize};

/// How deep a constant given to `EXECUTE` is read when it holds an `EXECUTE` of its own.
const MAX_NESTING: usize = 4;

/// What a body calls, as far as its source shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BodyScan {
    /// Sorted, without repeats.
    pub calls: Vec<Call>,
    /// The body runs SQL that is only made at run time: PL/pgSQL's `EXECUTE` of an expression
    /// other than one string constant (`EXECUTE format(...)`, `EXECUTE 'SELECT ' || f`), or a
    /// SQL function's `EXECUTE` of a prepared statement.
    pub dynamic: bool,
    /// The source could not be split into tokens (an unterminated string or comment), so no
    /// call of it was read.
    pub unreadable: bool,
}

/// Reads `body` (a function's `prosrc`, or the deparsed SQL-standard body) for its calls.
pub fn scan_body(body: &str) -> BodyScan {
    let mut scan = BodyScan::default();
    read(body, 0, &mut scan);
    scan.calls.sort();
    scan.calls.dedup();
    scan
}

fn read(source: &str, nesting: usize, scan: &mut BodyScan) {
    let Ok(tokens) = tokenize(source) else {
        scan.unreadable = true;
        return;
    };
    calls_in_tokens(&tokens, &mut scan.calls);
    for (i, token) in tokens.iter().enumerate() {
        if !token.is_keyword("execute") {
            continue;
        }
        match executed(&tokens[i + 1..]) {
            Executed::Nothing => {}
            Executed::Constant(text) if nesting < MAX_NESTING => read(&text, nesting + 1, scan),
            Executed::Constant(_) | Executed::MadeAtRunTime => scan.dynamic = true,
        }
    }
}

/// What an `EXECUTE` runs, from the tokens after it.
enum Executed {
    /// Not dynamic SQL: `EXECUTE FUNCTION f()` of a trigger, `GRANT EXECUTE ON`, a lone word.
    Nothing,
    /// One string constant, up to the end of the statement or its `INTO` or `USING`: the SQL
    /// it runs is the constant's text.
    Constant(String),
    MadeAtRunTime,
}

fn executed(after: &[Token<'_>]) -> Executed {
    let Some(first) = after.first() else {
        return Executed::Nothing;
    };
    if ["function", "procedure", "on"]
        .iter()
        .any(|w| first.is_keyword(w))
    {
        return Executed::Nothing;
    }
    let ends = |t: Option<&Token<'_>>| {
        t.is_none_or(|t| {
            t.kind == TokenKind::Semicolon || t.is_keyword("into") || t.is_keyword("using")
        })
    };
    if let TokenKind::String(kind) = first.kind
        && ends(after.get(1))
        && let Some(text) = string_text(kind, first.text)
    {
        return Executed::Constant(text);
    }
    Executed::MadeAtRunTime
}

/// The text a string constant stands for, for the kinds whose text is plain to read.
fn string_text(kind: StringKind, token: &str) -> Option<String> {
    match kind {
        StringKind::Standard | StringKind::National | StringKind::Escape => {
            let start = token.find('\'')? + 1;
            let end = token.rfind('\'')?;
            let inner = token.get(start..end)?;
            let text = inner.replace("''", "'");
            Some(if kind == StringKind::Escape {
                text.replace("\\'", "'")
            } else {
                text
            })
        }
        StringKind::Dollar => {
            // `$tag$...$tag$`: the tag is the text up to and including the second `$`.
            let tag_len = token[1..].find('$')? + 2;
            token
                .get(tag_len..token.len().checked_sub(tag_len)?)
                .map(str::to_owned)
        }
        StringKind::Unicode | StringKind::Bit | StringKind::Hex => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(schema: Option<&str>, name: &str) -> Call {
        Call {
            schema: schema.map(Into::into),
            name: name.into(),
        }
    }

    fn names(scan: &BodyScan) -> Vec<String> {
        scan.calls
            .iter()
            .map(|c| match &c.schema {
                Some(s) => format!("{s}.{}", c.name),
                None => c.name.clone(),
            })
            .collect()
    }

    #[test]
    fn a_plpgsql_body_calls_what_is_followed_by_a_parenthesis_outside_strings() {
        let body = "
            DECLARE n numeric(10, 2) := 0;
            BEGIN
              -- dblink_exec(a comment) is no call
              PERFORM public.relay(x::varchar(20));
              n := audit.\"Log\"(1) + length('pg_terminate_backend(1)');
              RAISE NOTICE 'done %', n;
              RETURN n;
            END";
        let scan = scan_body(body);
        assert_eq!(
            names(&scan),
            vec!["length", "numeric", "audit.Log", "public.relay"]
        );
        assert!(!scan.dynamic && !scan.unreadable);
    }

    #[test]
    fn a_constant_given_to_execute_is_read_and_a_made_one_is_dynamic() {
        let constant = scan_body(
            "BEGIN EXECUTE 'SELECT dblink_exec(''dbname=x'', ''DELETE FROM t'')'; \
             EXECUTE $q$SELECT pg_cancel_backend(1)$q$ INTO r; END",
        );
        assert_eq!(names(&constant), vec!["dblink_exec", "pg_cancel_backend"]);
        assert!(!constant.dynamic);

        let made = scan_body("BEGIN EXECUTE format('SELECT %I()', fn) USING 1; END");
        assert_eq!(names(&made), vec!["format"]);
        assert!(made.dynamic);
        let concatenated = scan_body("BEGIN EXECUTE 'SELECT ' || 'f()'; END");
        assert!(concatenated.dynamic);
        // A SQL function's EXECUTE runs a prepared statement, whose text is not in the body.
        assert!(scan_body("EXECUTE stmt(1)").dynamic);
    }

    #[test]
    fn execute_that_runs_no_string_is_not_dynamic() {
        let scan = scan_body(
            "BEGIN CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION log_row(); \
             GRANT EXECUTE ON FUNCTION f() TO r; END",
        );
        assert!(!scan.dynamic);
        assert_eq!(names(&scan), vec!["f", "log_row"]);
    }

    #[test]
    fn a_body_that_cannot_be_split_into_tokens_says_so() {
        let scan = scan_body("BEGIN PERFORM f('unterminated); END");
        assert!(scan.unreadable);
        assert!(scan.calls.is_empty());
        assert_eq!(scan_body("SELECT 1").calls, Vec::<Call>::new());
        assert_eq!(
            scan_body("RETURN lower($1)").calls,
            vec![call(None, "lower")]
        );
    }
}
