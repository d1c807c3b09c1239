//! A reader of the condition expressions EXPLAIN prints (`Filter`, `Index Cond`, `Hash Cond`,
//! `Sort Key`, `Output`): PostgreSQL's deparsed form, not user SQL.
//!
//! The deparser (ruleutils.c) puts every operator expression in parentheses, writes `IN` as
//! `= ANY (...)`, `LIKE` as `~~`, `BETWEEN` as two comparisons joined by AND, and casts every
//! non-integer constant (`'pending'::text`, `'50'::numeric`). This reader accepts exactly that
//! shape, built on the project's SQL lexer, and refuses anything else (`(hashed SubPlan 1)`,
//! `CASE`, a subscript): a conjunct it cannot read is kept as text and proposes nothing, so
//! no candidate is built on a guess.

use std::fmt;

use crate::sql::{StringKind, Token, TokenKind, quote_ident, quote_literal, tokenize};

/// One expression as the deparser wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `alias.column` or `column`, identifiers as PostgreSQL stores them (folded unless quoted).
    Column {
        qualifier: Option<String>,
        name: String,
    },
    /// A string constant, its value decoded (`'it''s'` is `it's`).
    Text(String),
    /// An unquoted numeric constant, as written.
    Number(String),
    Bool(bool),
    Null,
    /// `$n`.
    Param(u32),
    /// `name(args)`; the name as printed (possibly schema-qualified).
    Func {
        name: String,
        args: Vec<Expr>,
    },
    /// `(left op right)`.
    Binary {
        op: String,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `(left op ANY (right))` / `ALL`.
    ArrayOp {
        op: String,
        all: bool,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `(op operand)`.
    Prefix {
        op: String,
        operand: Box<Expr>,
    },
    /// `expr::type`.
    Cast {
        expr: Box<Expr>,
        type_name: String,
    },
    /// `expr COLLATE name`.
    Collate {
        expr: Box<Expr>,
        collation: String,
    },
    /// `ARRAY[...]`.
    Array(Vec<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    /// `(expr IS [NOT] NULL)`.
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
}

impl Expr {
    /// The column this expression is, looking through casts and COLLATE.
    pub fn as_column(&self) -> Option<(Option<&str>, &str)> {
        match self {
            Expr::Column { qualifier, name } => Some((qualifier.as_deref(), name)),
            Expr::Cast { expr, .. } | Expr::Collate { expr, .. } => expr.as_column(),
            _ => None,
        }
    }

    /// Every column the expression refers to.
    pub fn columns(&self) -> Vec<(Option<&str>, &str)> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Column { qualifier, name } = e {
                out.push((qualifier.as_deref(), name.as_str()));
            }
        });
        out
    }

    /// Whether the expression holds a `$n` parameter anywhere.
    pub fn has_param(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= matches!(e, Expr::Param(_)));
        found
    }

    /// A constant known when the query is planned: a literal, an array of literals, or a
    /// parameter, possibly cast. What an index condition may compare a column with.
    pub fn is_value(&self) -> bool {
        match self {
            Expr::Text(_) | Expr::Number(_) | Expr::Bool(_) | Expr::Null | Expr::Param(_) => true,
            Expr::Cast { expr, .. } | Expr::Collate { expr, .. } => expr.is_value(),
            Expr::Array(items) => items.iter().all(Expr::is_value),
            _ => false,
        }
    }

    /// The literal's text (`'pending'::text` is `pending`, `42` is `42`), without any cast.
    pub fn literal(&self) -> Option<&str> {
        match self {
            Expr::Text(s) | Expr::Number(s) => Some(s),
            Expr::Bool(true) => Some("true"),
            Expr::Bool(false) => Some("false"),
            Expr::Cast { expr, .. } | Expr::Collate { expr, .. } => expr.literal(),
            _ => None,
        }
    }

    fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Func { args: items, .. }
            | Expr::Array(items)
            | Expr::And(items)
            | Expr::Or(items) => items.iter().for_each(|e| e.walk(f)),
            Expr::Binary { left, right, .. } | Expr::ArrayOp { left, right, .. } => {
                left.walk(f);
                right.walk(f);
            }
            Expr::Prefix { operand: e, .. }
            | Expr::Cast { expr: e, .. }
            | Expr::Collate { expr: e, .. }
            | Expr::Not(e)
            | Expr::IsNull { expr: e, .. } => e.walk(f),
            _ => {}
        }
    }

    /// The expression as SQL for an index definition: columns unqualified (an index belongs to
    /// one table), identifiers and strings quoted the way the server reads them back.
    pub fn unqualified(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Expr::Column { name, .. } => out.push_str(&quote_ident(name)),
            Expr::Text(s) => out.push_str(&quote_literal(s)),
            Expr::Number(n) => out.push_str(n),
            Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Expr::Null => out.push_str("NULL"),
            Expr::Param(n) => {
                let _ = write!(out, "${n}");
            }
            Expr::Func { name, args } => {
                out.push_str(name);
                out.push('(');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.write(out);
                }
                out.push(')');
            }
            Expr::Binary { op, left, right } => {
                out.push('(');
                left.write(out);
                let _ = write!(out, " {op} ");
                right.write(out);
                out.push(')');
            }
            Expr::ArrayOp {
                op,
                all,
                left,
                right,
            } => {
                out.push('(');
                left.write(out);
                let _ = write!(out, " {op} {} (", if *all { "ALL" } else { "ANY" });
                right.write(out);
                out.push_str("))");
            }
            Expr::Prefix { op, operand } => {
                out.push('(');
                out.push_str(op);
                operand.write(out);
                out.push(')');
            }
            Expr::Cast { expr, type_name } => {
                expr.write(out);
                out.push_str("::");
                out.push_str(type_name);
            }
            Expr::Collate { expr, collation } => {
                expr.write(out);
                out.push_str(" COLLATE ");
                out.push_str(&quote_ident(collation));
            }
            Expr::Array(items) => {
                out.push_str("ARRAY[");
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.write(out);
                }
                out.push(']');
            }
            Expr::And(items) | Expr::Or(items) => {
                let sep = if matches!(self, Expr::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                out.push('(');
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    a.write(out);
                }
                out.push(')');
            }
            Expr::Not(e) => {
                out.push_str("(NOT ");
                e.write(out);
                out.push(')');
            }
            Expr::IsNull { expr, negated } => {
                out.push('(');
                expr.write(out);
                out.push_str(if *negated {
                    " IS NOT NULL)"
                } else {
                    " IS NULL)"
                });
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.unqualified())
    }
}

/// One conjunct of a condition: read, or kept as the server printed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Conjunct {
    Read(Expr),
    Unread(String),
}

/// Splits a condition at its top-level ANDs and reads each part on its own, so that one part
/// this reader does not know (`(x.a = (InitPlan 1).col1)`) leaves the others usable.
pub fn conjuncts(condition: &str) -> Vec<Conjunct> {
    let Ok(tokens) = tokenize(condition) else {
        return vec![Conjunct::Unread(condition.to_owned())];
    };
    let mut out = Vec::new();
    split_and(condition, &tokens, &mut out);
    out
}

fn split_and(src: &str, tokens: &[Token<'_>], out: &mut Vec<Conjunct>) {
    let inner = strip_parens(tokens);
    let mut depth = 0usize;
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, t) in inner.iter().enumerate() {
        match (t.kind, t.text) {
            (TokenKind::Punctuation, "(" | "[") => depth += 1,
            (TokenKind::Punctuation, ")" | "]") => depth = depth.saturating_sub(1),
            _ if depth == 0 && t.is_keyword("and") => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        // Not an AND at this level: read the whole.
        out.push(match read_tokens(tokens) {
            Some(e) => Conjunct::Read(e),
            None => Conjunct::Unread(text_of(src, tokens)),
        });
        return;
    }
    parts.push(&inner[start..]);
    for part in parts {
        split_and(src, part, out);
    }
}

fn text_of(src: &str, tokens: &[Token<'_>]) -> String {
    match (tokens.first(), tokens.last()) {
        (Some(a), Some(b)) => src[a.offset..b.end()].to_owned(),
        _ => String::new(),
    }
}

/// The tokens inside one pair of parentheses that encloses all of them, else all of them.
fn strip_parens<'t, 'a>(tokens: &'t [Token<'a>]) -> &'t [Token<'a>] {
    let n = tokens.len();
    if n < 2 || !is(&tokens[0], "(") || !is(&tokens[n - 1], ")") {
        return tokens;
    }
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        if is(t, "(") || is(t, "[") {
            depth += 1;
        } else if is(t, ")") || is(t, "]") {
            depth -= 1;
            if depth == 0 && i < n - 1 {
                return tokens;
            }
        }
    }
    &tokens[1..n - 1]
}

fn is(t: &Token<'_>, punct: &str) -> bool {
    t.kind == TokenKind::Punctuation && t.text == punct
}

/// Reads one whole expression, or `None` when it is not of the deparsed shape.
pub fn read(text: &str) -> Option<Expr> {
    read_tokens(&tokenize(text).ok()?)
}

fn read_tokens(tokens: &[Token<'_>]) -> Option<Expr> {
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let e = p.level()?;
    (p.pos == tokens.len()).then_some(e)
}

/// A sort key as EXPLAIN prints it: `events.created_at DESC`, `x.a NULLS FIRST`.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    /// NULLS FIRST/LAST when written (the deparser writes it only when it is not the default
    /// for the direction: NULLS LAST for ASC, NULLS FIRST for DESC).
    pub nulls_first: Option<bool>,
    pub collation: Option<String>,
}

impl SortKey {
    /// Whether NULLs come first, written or by default.
    pub fn effective_nulls_first(&self) -> bool {
        self.nulls_first.unwrap_or(self.descending)
    }
}

/// Reads one `Sort Key` entry; `None` for `USING op` orderings and unknown shapes.
pub fn read_sort_key(text: &str) -> Option<SortKey> {
    let tokens = tokenize(text).ok()?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        depth: 0,
    };
    let mut expr = p.operand()?;
    let mut collation = None;
    if let Expr::Collate {
        expr: inner,
        collation: c,
    } = expr
    {
        collation = Some(c);
        expr = *inner;
    }
    let mut key = SortKey {
        expr,
        descending: false,
        nulls_first: None,
        collation,
    };
    while let Some(t) = p.peek() {
        if t.is_keyword("desc") {
            key.descending = true;
        } else if t.is_keyword("asc") {
        } else if t.is_keyword("nulls") {
            p.pos += 1;
            let t = p.peek()?;
            key.nulls_first = Some(if t.is_keyword("first") {
                true
            } else if t.is_keyword("last") {
                false
            } else {
                return None;
            });
        } else {
            return None;
        }
        p.pos += 1;
    }
    Some(key)
}

/// The deepest nesting of parentheses read: deparsed conditions nest a few levels; past this
/// the text is not one, and reading on would only spend stack.
const MAX_DEPTH: usize = 100;

struct Parser<'t, 'a> {
    tokens: &'t [Token<'a>],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<&Token<'a>> {
        let t = self.tokens.get(self.pos);
        self.pos += 1;
        t
    }

    fn eat(&mut self, punct: &str) -> bool {
        if self.peek().is_some_and(|t| is(t, punct)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_keyword(kw)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// What may stand inside one pair of parentheses: a chain of one boolean connective, NOT,
    /// one operator application, a null test, or a single operand.
    fn level(&mut self) -> Option<Expr> {
        self.depth += 1;
        let e = if self.depth > MAX_DEPTH {
            None
        } else {
            self.level_inner()
        };
        self.depth -= 1;
        e
    }

    fn level_inner(&mut self) -> Option<Expr> {
        if self.eat_keyword("not") {
            return Some(Expr::Not(Box::new(self.level()?)));
        }
        if let Some(t) = self.peek()
            && t.kind == TokenKind::Operator
        {
            let op = t.text.to_owned();
            self.pos += 1;
            return Some(Expr::Prefix {
                op,
                operand: Box::new(self.operand()?),
            });
        }
        let first = self.operand()?;
        let Some(t) = self.peek() else {
            return Some(first);
        };
        if t.is_keyword("and") || t.is_keyword("or") {
            let and = t.is_keyword("and");
            let mut items = vec![first];
            while self.eat_keyword(if and { "and" } else { "or" }) {
                items.push(self.operand()?);
            }
            return Some(if and {
                Expr::And(items)
            } else {
                Expr::Or(items)
            });
        }
        if t.is_keyword("is") {
            self.pos += 1;
            let negated = self.eat_keyword("not");
            if !self.eat_keyword("null") {
                return None;
            }
            return Some(Expr::IsNull {
                expr: Box::new(first),
                negated,
            });
        }
        if t.kind == TokenKind::Operator {
            let op = t.text.to_owned();
            self.pos += 1;
            let any = self.eat_keyword("any");
            let all = !any && self.eat_keyword("all");
            if any || all {
                if !self.eat("(") {
                    return None;
                }
                let right = self.level()?;
                if !self.eat(")") {
                    return None;
                }
                return Some(Expr::ArrayOp {
                    op,
                    all,
                    left: Box::new(first),
                    right: Box::new(right),
                });
            }
            let right = self.operand()?;
            return Some(Expr::Binary {
                op,
                left: Box::new(first),
                right: Box::new(right),
            });
        }
        Some(first)
    }

    /// A primary with any casts and COLLATE after it.
    fn operand(&mut self) -> Option<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.eat("::") {
                e = Expr::Cast {
                    expr: Box::new(e),
                    type_name: self.type_name()?,
                };
            } else if self.eat_keyword("collate") {
                let t = self.next()?;
                let mut collation = ident(t)?;
                // A schema-qualified collation: pg_catalog."default".
                if self.eat(".") {
                    collation = ident(self.next()?)?;
                }
                e = Expr::Collate {
                    expr: Box::new(e),
                    collation,
                };
            } else {
                return Some(e);
            }
        }
    }

    fn primary(&mut self) -> Option<Expr> {
        let t = *self.next()?;
        match t.kind {
            TokenKind::Punctuation if t.text == "(" => {
                let e = self.level()?;
                self.eat(")").then_some(e)
            }
            TokenKind::String(StringKind::Standard) => {
                let body = &t.text[1..t.text.len() - 1];
                Some(Expr::Text(body.replace("''", "'")))
            }
            TokenKind::Number => Some(Expr::Number(t.text.to_owned())),
            TokenKind::Parameter => t.text[1..].parse().ok().map(Expr::Param),
            TokenKind::Word if t.is_keyword("true") => Some(Expr::Bool(true)),
            TokenKind::Word if t.is_keyword("false") => Some(Expr::Bool(false)),
            TokenKind::Word if t.is_keyword("null") => Some(Expr::Null),
            TokenKind::Word if t.is_keyword("array") => {
                if !self.eat("[") {
                    return None;
                }
                let mut items = Vec::new();
                if !self.eat("]") {
                    loop {
                        items.push(self.level()?);
                        if self.eat("]") {
                            break;
                        }
                        if !self.eat(",") {
                            return None;
                        }
                    }
                }
                Some(Expr::Array(items))
            }
            // Keywords that start constructs this reader does not model.
            TokenKind::Word
                if [
                    "case", "and", "or", "not", "is", "any", "all", "distinct", "select",
                ]
                .iter()
                .any(|k| t.is_keyword(k)) =>
            {
                None
            }
            TokenKind::Word | TokenKind::QuotedIdentifier => {
                let first = ident(&t)?;
                let mut name_parts = vec![(first, t.text.to_owned())];
                while self.eat(".") {
                    let t = *self.next()?;
                    name_parts.push((ident(&t)?, t.text.to_owned()));
                }
                if self.eat("(") {
                    let name = name_parts
                        .iter()
                        .map(|(_, raw)| raw.as_str())
                        .collect::<Vec<_>>()
                        .join(".");
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.level()?);
                            if self.eat(")") {
                                break;
                            }
                            if !self.eat(",") {
                                return None;
                            }
                        }
                    }
                    return Some(Expr::Func { name, args });
                }
                let mut names: Vec<String> = name_parts.into_iter().map(|(n, _)| n).collect();
                match names.len() {
                    1 => Some(Expr::Column {
                        qualifier: None,
                        name: names.pop()?,
                    }),
                    2 => {
                        let name = names.pop()?;
                        Some(Expr::Column {
                            qualifier: names.pop(),
                            name,
                        })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A type name as format_type() prints it: `text`, `text[]`, `character varying(20)`,
    /// `timestamp with time zone`, `public.mood`, `"char"`.
    fn type_name(&mut self) -> Option<String> {
        let t = *self.next()?;
        if !matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdentifier) {
            return None;
        }
        let mut name = t.text.to_owned();
        while let Some(t) = self.peek().copied() {
            if is(&t, ".") {
                self.pos += 1;
                name.push('.');
                name.push_str(self.next()?.text);
            } else if is(&t, "(") {
                self.pos += 1;
                name.push('(');
                loop {
                    let t = self.next()?;
                    if is(t, ")") {
                        break;
                    }
                    name.push_str(t.text);
                }
                name.push(')');
            } else if is(&t, "[") {
                self.pos += 1;
                if !self.eat("]") {
                    return None;
                }
                name.push_str("[]");
            } else if ["with", "without", "time", "zone", "varying", "precision"]
                .iter()
                .any(|k| t.is_keyword(k))
            {
                self.pos += 1;
                name.push(' ');
                name.push_str(t.text);
            } else {
                break;
            }
        }
        Some(name)
    }
}

/// An identifier as PostgreSQL stores it: an unquoted word folded to lower case, a quoted one
/// as written with doubled quotes undone.
/// An identifier token as PostgreSQL stores it: folded to lower case unless quoted.
pub fn ident(t: &Token<'_>) -> Option<String> {
    match t.kind {
        TokenKind::Word => Some(t.text.to_lowercase()),
        TokenKind::QuotedIdentifier if t.text.starts_with('"') && t.text.len() >= 2 => {
            Some(t.text[1..t.text.len() - 1].replace("\"\"", "\""))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(q: &str, n: &str) -> Expr {
        Expr::Column {
            qualifier: Some(q.into()),
            name: n.into(),
        }
    }

    fn cast(e: Expr, t: &str) -> Expr {
        Expr::Cast {
            expr: Box::new(e),
            type_name: t.into(),
        }
    }

    #[test]
    fn reads_a_comparison_with_a_cast_constant() {
        assert_eq!(
            read("(events.status = 'pending'::text)"),
            Some(Expr::Binary {
                op: "=".into(),
                left: Box::new(col("events", "status")),
                right: Box::new(cast(Expr::Text("pending".into()), "text")),
            })
        );
    }

    #[test]
    fn splits_conjuncts_and_keeps_what_it_cannot_read() {
        let parts = conjuncts(
            "((c.country = (InitPlan 2).col1) AND (c.id <= 20) AND (c.name ~~ 'it''s%'::text))",
        );
        assert_eq!(parts.len(), 3);
        assert_eq!(
            parts[0],
            Conjunct::Unread("(c.country = (InitPlan 2).col1)".into())
        );
        assert!(matches!(&parts[1], Conjunct::Read(Expr::Binary { op, .. }) if op == "<="));
        let Conjunct::Read(Expr::Binary { right, .. }) = &parts[2] else {
            panic!("{:?}", parts[2])
        };
        assert_eq!(right.literal(), Some("it's%"));
    }

    #[test]
    fn reads_multi_word_type_names() {
        let e = read("(orders.created_at < '2026-01-03 12:00:00+00'::timestamp with time zone)")
            .unwrap();
        let Expr::Binary { right, .. } = e else {
            panic!()
        };
        assert_eq!(
            *right,
            cast(
                Expr::Text("2026-01-03 12:00:00+00".into()),
                "timestamp with time zone"
            )
        );
        assert!(read("(x.a = '1'::character varying(20)[])").is_some());
        assert!(read("(x.a = '1'::public.\"Mood\")").is_some());
    }

    #[test]
    fn reads_any_arrays_functions_and_null_tests() {
        let e = read("(orders.customer_id = ANY ('{3,5,7}'::integer[]))").unwrap();
        assert!(matches!(e, Expr::ArrayOp { all: false, ref op, .. } if op == "="));
        let e = read("(lower(users.email) = 'a@b.c'::text)").unwrap();
        let Expr::Binary { left, .. } = &e else {
            panic!()
        };
        assert_eq!(left.unqualified(), "lower(email)");
        assert_eq!(
            read("(t.deleted_at IS NULL)"),
            Some(Expr::IsNull {
                expr: Box::new(col("t", "deleted_at")),
                negated: false
            })
        );
        assert_eq!(
            read("(NOT t.active)"),
            Some(Expr::Not(Box::new(col("t", "active"))))
        );
        assert!(read("(docs.tags && ARRAY['t7'::text])").is_some());
        assert!(read("((docs.attrs ->> 'kind'::text) = 'memo'::text)").is_some());
    }

    #[test]
    fn refuses_what_it_does_not_model() {
        assert_eq!(read("(hashed SubPlan 1)"), None);
        assert_eq!(read("CASE WHEN (a.x > 1) THEN 1 ELSE 2 END"), None);
        assert_eq!(read("(a.x[1] = 2)"), None);
        assert_eq!(read("(a.x = 1"), None);
        assert_eq!(read("(a.x IS DISTINCT FROM 1)"), None);
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}a.x{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(read(&deep), None);
        let fine = format!("{}a.x = 1{}", "(".repeat(50), ")".repeat(50));
        assert!(read(&fine).is_some());
    }

    #[test]
    fn parameters_and_quoted_identifiers() {
        let e = read("(\"Orders\".\"Total\" > $1)").unwrap();
        let Expr::Binary { left, right, .. } = &e else {
            panic!()
        };
        assert_eq!(left.as_column(), Some((Some("Orders"), "Total")));
        assert_eq!(left.unqualified(), "\"Total\"");
        assert!(right.is_value() && e.has_param());
    }

    #[test]
    fn reads_sort_keys() {
        let k = read_sort_key("events.created_at DESC").unwrap();
        assert!(k.descending && k.nulls_first.is_none() && k.effective_nulls_first());
        let k = read_sort_key("orders.amount NULLS FIRST").unwrap();
        assert!(!k.descending && k.effective_nulls_first());
        let k = read_sort_key("x.name COLLATE \"C\" DESC NULLS LAST").unwrap();
        assert_eq!(k.collation.as_deref(), Some("C"));
        assert!(!k.effective_nulls_first());
        assert_eq!(read_sort_key("x.a USING <"), None);
    }

    #[test]
    fn unqualified_round_trips_through_the_reader() {
        for text in [
            "(lower(u.email) = 'x''y'::text)",
            "(a.x = ANY ('{1,2}'::integer[]))",
            "((a.payload ->> 'kind'::text) = 'memo'::text)",
        ] {
            let e = read(text).unwrap();
            assert_eq!(
                read(&e.unqualified()).unwrap().unqualified(),
                e.unqualified()
            );
        }
    }
}
