//! Lexical handling of the SQL text users give pgplan, before any of it reaches a server: a
//! tokenizer that follows PostgreSQL's own scanner, statement splitting, classification of the
//! query, and validation of candidate `CREATE INDEX` statements.
//!
//! The server stays the judge of syntax. This module exists to refuse what must never be sent (a
//! second statement smuggled in behind the first, a write where writes are not allowed) and to say
//! where a problem is, as a line and column in the user's own text.
//!
//! Every rule here assumes `standard_conforming_strings = on`, the server default since
//! PostgreSQL 9.1: a backslash inside `'...'` is an ordinary character. With it off, `'a\''` would
//! end at a different quote on the server than here, so whatever sends user SQL must make sure the
//! session has it on (or use the extended protocol, which refuses a second statement by itself).

use std::collections::HashMap;
use std::fmt;

/// PostgreSQL truncates identifiers longer than NAMEDATALEN - 1 bytes (with a NOTICE), so this is
/// the longest name an index can actually be stored under.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// A place in the user's text. Both numbers start at 1; the column counts characters, not bytes,
/// so it matches what an editor shows for non-ASCII text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    const START: Position = Position { line: 1, column: 1 };
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// The flavours of string constant PostgreSQL's scanner knows. They differ in how a quote can
/// appear inside them, which is what decides where they end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringKind {
    /// `'...'`: a quote inside is written `''`; backslashes are ordinary characters.
    Standard,
    /// `E'...'`: backslash escapes, so `\'` is also a quote inside the string.
    Escape,
    /// `N'...'`: a standard string of the national character type.
    National,
    /// `U&'...'`: a standard string whose Unicode escapes are decoded later.
    Unicode,
    /// `B'...'`: a bit string; there is no way to write a quote inside it.
    Bit,
    /// `X'...'`: a hexadecimal bit string; no quote inside either.
    Hex,
    /// `$$...$$` or `$tag$...$tag$`: no escapes at all, it ends at the same delimiter.
    Dollar,
}

impl StringKind {
    fn describe(self) -> &'static str {
        match self {
            StringKind::Standard => "quoted string",
            StringKind::Escape => "escape string E'...'",
            StringKind::National => "national character string N'...'",
            StringKind::Unicode => "Unicode escape string U&'...'",
            StringKind::Bit => "bit-string constant B'...'",
            StringKind::Hex => "hexadecimal bit-string constant X'...'",
            StringKind::Dollar => "dollar-quoted string",
        }
    }
}

/// What the caller asked for when a text held the wrong number of statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expectation {
    /// One query to explain.
    Query,
    /// One candidate index.
    IndexCandidate,
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expectation::Query => "statement",
            Expectation::IndexCandidate => "CREATE [UNIQUE] INDEX statement",
        })
    }
}

/// Everything this module can refuse, without the position (see [`SqlError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlErrorKind {
    #[error("unterminated /* comment (started here)")]
    UnterminatedComment,
    #[error("unterminated {} (started here)", .0.describe())]
    UnterminatedString(StringKind),
    #[error("unterminated dollar-quoted string (started here with {delimiter})")]
    UnterminatedDollarQuote { delimiter: String },
    #[error("unterminated quoted identifier (started here)")]
    UnterminatedQuotedIdentifier,
    #[error("zero-length quoted identifier \"\"")]
    ZeroLengthIdentifier,
    #[error("invalid Unicode escape in a U&\"...\" identifier: {reason}")]
    InvalidUnicodeEscape { reason: &'static str },
    #[error("parameter {text} is out of range")]
    ParameterOutOfRange { text: String },
    #[error("there is no parameter $0")]
    ParameterZero,
    #[error("expected one {expected}, found none (the text is empty or only comments)")]
    NoStatement { expected: Expectation },
    #[error(
        "expected one {expected}, found {count} statements (the second, at line {} column {}, \
         starts with {starts_with})",
        .second.line, .second.column
    )]
    MultipleStatements {
        expected: Expectation,
        count: usize,
        second: Position,
        starts_with: String,
    },
    #[error("expected one CREATE [UNIQUE] INDEX statement, found {found}")]
    NotAnIndex { found: String },
    #[error("expected {expected}, found {found}")]
    IndexSyntax {
        expected: &'static str,
        found: String,
    },
    #[error("IF NOT EXISTS needs an index name after it")]
    IfNotExistsWithoutName,
    #[error("{word} is a reserved keyword, so it cannot be an unquoted index name")]
    ReservedIndexName { word: String },
    #[error("parameter {text} cannot appear in CREATE INDEX")]
    ParameterInIndex { text: String },
    #[error("unbalanced parentheses: {detail}")]
    UnbalancedParentheses { detail: &'static str },
    #[error("index name {name} is used by statement {first} and again by statement {second}")]
    DuplicateIndexName {
        name: String,
        first: usize,
        second: usize,
    },
    #[error("the name to give an unnamed index is empty")]
    EmptyGeneratedName,
}

const INDEX_SYNOPSIS: &str = "a candidate reads CREATE [UNIQUE] INDEX [CONCURRENTLY] \
     [[IF NOT EXISTS] name] ON [ONLY] table [USING method] (column or (expression), ...) \
     [INCLUDE (...)] [NULLS [NOT] DISTINCT] [WITH (...)] [TABLESPACE ...] [WHERE ...]";

impl SqlErrorKind {
    /// What to do about it, when there is something better to say than the message itself.
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            SqlErrorKind::UnterminatedComment => {
                "PostgreSQL block comments nest: every /* inside a comment needs its own */".into()
            }
            SqlErrorKind::UnterminatedString(StringKind::Escape) => {
                "close the string with '; inside E'...' a quote is written \\' or ''".into()
            }
            SqlErrorKind::UnterminatedString(StringKind::Bit | StringKind::Hex) => {
                "close the constant with '".into()
            }
            SqlErrorKind::UnterminatedString(_) => {
                "close the string with '; a quote inside a string is written twice ('')".into()
            }
            SqlErrorKind::UnterminatedDollarQuote { delimiter } => format!(
                "the string ends at the next {delimiter}, spelled exactly the same (tags are \
                 case-sensitive)"
            ),
            SqlErrorKind::UnterminatedQuotedIdentifier => {
                "close the identifier with \"; a double quote inside it is written twice (\"\")"
                    .into()
            }
            SqlErrorKind::ZeroLengthIdentifier => {
                "PostgreSQL has no empty names; put the name between the double quotes".into()
            }
            SqlErrorKind::InvalidUnicodeEscape { .. } => {
                "write \\XXXX (4 hex digits) or \\+XXXXXX (6 hex digits), or the escape character \
                 twice for itself"
                    .into()
            }
            SqlErrorKind::ParameterOutOfRange { .. } | SqlErrorKind::ParameterZero => {
                "parameters are numbered $1, $2, ...".into()
            }
            SqlErrorKind::NoStatement {
                expected: Expectation::Query,
            } => "give pgplan the query to explain".into(),
            SqlErrorKind::NoStatement {
                expected: Expectation::IndexCandidate,
            }
            | SqlErrorKind::NotAnIndex { .. }
            | SqlErrorKind::IndexSyntax { .. } => INDEX_SYNOPSIS.into(),
            SqlErrorKind::MultipleStatements {
                expected: Expectation::Query,
                ..
            } => "pgplan runs exactly one statement; remove the others (a ; inside a string, \
                  quoted identifier, comment or dollar quote is fine)"
                .into(),
            SqlErrorKind::MultipleStatements {
                expected: Expectation::IndexCandidate,
                ..
            } => "each candidate is a single CREATE INDEX; give several candidates separately, or \
                  as an index file"
                .into(),
            SqlErrorKind::IfNotExistsWithoutName => {
                "PostgreSQL rejects IF NOT EXISTS without a name: name the index (CREATE INDEX IF \
                 NOT EXISTS my_index ON ...) or drop IF NOT EXISTS and pgplan names it"
                    .into()
            }
            SqlErrorKind::ReservedIndexName { word } => {
                format!("quote it (\"{word}\") or choose another name")
            }
            SqlErrorKind::ParameterInIndex { .. } => {
                "an index definition cannot take parameters; write the value itself".into()
            }
            SqlErrorKind::DuplicateIndexName { .. } => {
                "index names are unique within a schema; rename one of them (unquoted names are \
                 folded to lower case)"
                    .into()
            }
            SqlErrorKind::UnbalancedParentheses { .. } | SqlErrorKind::EmptyGeneratedName => {
                return None;
            }
        };
        Some(hint)
    }
}

/// A refusal: what is wrong, where, and (in [`SqlErrorKind::hint`]) what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {kind}{}", HintLine(.kind.hint()))]
pub struct SqlError {
    pub kind: SqlErrorKind,
    pub position: Position,
}

impl SqlError {
    fn new(kind: SqlErrorKind, position: Position) -> Self {
        SqlError { kind, position }
    }

    pub fn hint(&self) -> Option<String> {
        self.kind.hint()
    }
}

struct HintLine(Option<String>);

impl fmt::Display for HintLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(hint) => write!(f, "\nhint: {hint}"),
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

/// The kinds of token PostgreSQL's scanner produces. Whitespace and comments are not tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An unquoted identifier or keyword; PostgreSQL folds it to lower case.
    Word,
    /// `"..."` or `U&"..."`: kept as written, case and all.
    QuotedIdentifier,
    /// A string constant of any flavour (with any quote continuations it absorbed).
    String(StringKind),
    Number,
    /// A positional parameter: `$1`, `$2`, ...
    Parameter,
    /// A run of operator characters, cut the way PostgreSQL cuts it.
    Operator,
    /// `(` `)` `[` `]` `,` `.` `:` `::` `:=` `..`
    Punctuation,
    Semicolon,
    /// A character the scanner hands on alone for the grammar to reject (a lone `$`, `\`, `{`).
    Other,
}

/// One token: its kind, its exact text, its byte offset and its line/column in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub offset: usize,
    pub position: Position,
}

impl Token<'_> {
    /// The byte offset just past the token.
    pub fn end(&self) -> usize {
        self.offset + self.text.len()
    }

    /// Whether this is the unquoted word `keyword` (given in lower case), in any letter case.
    pub fn is_keyword(&self, keyword: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(keyword)
    }

    fn is_punct(&self, punct: &str) -> bool {
        self.kind == TokenKind::Punctuation && self.text == punct
    }

    /// The position just past the token.
    fn end_position(&self) -> Position {
        let mut tracker = Tracker {
            offset: 0,
            position: self.position,
        };
        tracker.advance_to(self.text, self.text.len())
    }
}

/// Turns byte offsets into line/column positions. Offsets only move forward, so the whole text is
/// walked once however many tokens it holds.
#[derive(Clone, Copy)]
struct Tracker {
    offset: usize,
    position: Position,
}

impl Tracker {
    fn advance_to(&mut self, src: &str, offset: usize) -> Position {
        if let Some(passed) = src.get(self.offset..offset) {
            for c in passed.chars() {
                if c == '\n' {
                    self.position.line += 1;
                    self.position.column = 1;
                } else {
                    self.position.column += 1;
                }
            }
            self.offset = offset;
        }
        self.position
    }
}

// PostgreSQL's character classes (scan.l). Every byte of a non-ASCII character counts as a
// letter, so identifiers and dollar-quote tags may hold any non-ASCII text — including characters
// such as U+00A0 that look like spaces.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_horizontal_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0b | 0x0c)
}

fn is_newline(b: u8) -> bool {
    matches!(b, b'\n' | b'\r')
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

/// Identifiers may continue with `$` (so `a$b` is one word); dollar-quote tags may not.
fn is_ident_cont(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit() || b == b'$'
}

fn is_tag_cont(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

fn is_op_char(b: u8) -> bool {
    b"~!@#^&|`?+-*/%<>=".contains(&b)
}

/// Splits `sql` into tokens following PostgreSQL's lexical rules, or says where the first
/// unterminated string, quoted identifier or comment started.
pub fn tokenize(sql: &str) -> Result<Vec<Token<'_>>, SqlError> {
    let mut lexer = Lexer {
        src: sql,
        bytes: sql.as_bytes(),
        pos: 0,
        tracker: Tracker {
            offset: 0,
            position: Position::START,
        },
    };
    let mut tokens = Vec::new();
    while let Some(token) = lexer.next_token()? {
        tokens.push(token);
    }
    Ok(tokens)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tracker: Tracker,
}

impl<'a> Lexer<'a> {
    fn at(&self, i: usize) -> Option<u8> {
        self.bytes.get(i).copied()
    }

    fn error(&mut self, kind: SqlErrorKind, offset: usize) -> SqlError {
        SqlError::new(kind, self.tracker.advance_to(self.src, offset))
    }

    fn next_token(&mut self) -> Result<Option<Token<'a>>, SqlError> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(b) = self.at(start) else {
            return Ok(None);
        };
        let next = self.at(start + 1);
        let (kind, end) = match b {
            b'\'' => (
                TokenKind::String(StringKind::Standard),
                self.scan_string(start, start + 1, StringKind::Standard)?,
            ),
            b'"' => (
                TokenKind::QuotedIdentifier,
                self.scan_quoted_identifier(start, start + 1)?,
            ),
            b'$' => self.scan_dollar(start)?,
            b'0'..=b'9' => (TokenKind::Number, self.scan_number(start)),
            b'.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                (TokenKind::Number, self.scan_number(start))
            }
            b'.' if next == Some(b'.') => (TokenKind::Punctuation, start + 2),
            b':' if matches!(next, Some(b':' | b'=')) => (TokenKind::Punctuation, start + 2),
            b'.' | b':' | b',' | b'(' | b')' | b'[' | b']' => (TokenKind::Punctuation, start + 1),
            b';' => (TokenKind::Semicolon, start + 1),
            _ if is_op_char(b) => (TokenKind::Operator, self.scan_operator(start)),
            _ if is_ident_start(b) => self.scan_word(start)?,
            // Only ASCII reaches here: every non-ASCII byte starts a word.
            _ => (TokenKind::Other, start + 1),
        };
        self.pos = end;
        let position = self.tracker.advance_to(self.src, start);
        // Every token ends at an ASCII byte or at the end of the text, so this slice is on
        // character boundaries; `get` keeps a broken invariant from becoming a panic.
        let text = self.src.get(start..end).unwrap_or_default();
        Ok(Some(Token {
            kind,
            text,
            offset: start,
            position,
        }))
    }

    /// Skips whitespace, `--` comments and (nesting) `/* */` comments.
    fn skip_trivia(&mut self) -> Result<(), SqlError> {
        loop {
            match (self.at(self.pos), self.at(self.pos + 1)) {
                (Some(b), _) if is_space(b) => self.pos += 1,
                (Some(b'-'), Some(b'-')) => self.pos = self.line_comment_end(self.pos),
                (Some(b'/'), Some(b'*')) => self.pos = self.block_comment_end(self.pos)?,
                _ => return Ok(()),
            }
        }
    }

    /// A `--` comment runs to the next newline (`\n` or `\r`) or the end of the text.
    fn line_comment_end(&self, start: usize) -> usize {
        let mut i = start;
        while self.at(i).is_some_and(|b| !is_newline(b)) {
            i += 1;
        }
        i
    }

    /// Unlike the SQL standard's C-style comments, PostgreSQL's nest: `/* a /* b */ c */` is one
    /// comment, and it only ends when every `/*` has met its `*/`.
    fn block_comment_end(&mut self, start: usize) -> Result<usize, SqlError> {
        let mut depth = 0usize;
        let mut i = start;
        while let Some(b) = self.at(i) {
            match (b, self.at(i + 1)) {
                (b'/', Some(b'*')) => {
                    depth += 1;
                    i += 2;
                }
                (b'*', Some(b'/')) => {
                    depth = depth.saturating_sub(1);
                    i += 2;
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                _ => i += 1,
            }
        }
        Err(self.error(SqlErrorKind::UnterminatedComment, start))
    }

    /// A word, or one of the prefixed constants that start like a word: `E'`, `N'`, `B'`, `X'`,
    /// `U&'` and `U&"`. The prefix must touch the quote; `E '...'` is a word and a string.
    fn scan_word(&mut self, start: usize) -> Result<(TokenKind, usize), SqlError> {
        let first = self.at(start).map(|b| b.to_ascii_lowercase());
        let second = self.at(start + 1);
        let third = self.at(start + 2);
        let prefixed = match (first, second) {
            (Some(b'e'), Some(b'\'')) => Some(StringKind::Escape),
            (Some(b'n'), Some(b'\'')) => Some(StringKind::National),
            (Some(b'b'), Some(b'\'')) => Some(StringKind::Bit),
            (Some(b'x'), Some(b'\'')) => Some(StringKind::Hex),
            _ => None,
        };
        if let Some(kind) = prefixed {
            return Ok((
                TokenKind::String(kind),
                self.scan_string(start, start + 2, kind)?,
            ));
        }
        if first == Some(b'u') && second == Some(b'&') {
            match third {
                Some(b'\'') => {
                    let end = self.scan_string(start, start + 3, StringKind::Unicode)?;
                    return Ok((TokenKind::String(StringKind::Unicode), end));
                }
                Some(b'"') => {
                    let end = self.scan_quoted_identifier(start, start + 3)?;
                    return Ok((TokenKind::QuotedIdentifier, end));
                }
                _ => {}
            }
        }
        let mut i = start + 1;
        while self.at(i).is_some_and(is_ident_cont) {
            i += 1;
        }
        Ok((TokenKind::Word, i))
    }

    /// The body of a quoted string constant, from just after its opening quote; returns the
    /// offset just past the closing quote (and past any continuation segments).
    fn scan_string(
        &mut self,
        token_start: usize,
        body_start: usize,
        kind: StringKind,
    ) -> Result<usize, SqlError> {
        // Bit strings have no way to write a quote inside them: `B'1''0'` is two constants.
        let doubled_quote_allowed = !matches!(kind, StringKind::Bit | StringKind::Hex);
        let mut i = body_start;
        loop {
            match self.at(i) {
                None => {
                    return Err(self.error(SqlErrorKind::UnterminatedString(kind), token_start));
                }
                // In E'...' a backslash escapes whatever follows, including a quote. (A multibyte
                // character after it is fine: its later bytes are never a quote or backslash.)
                Some(b'\\') if kind == StringKind::Escape => i += 2,
                Some(b'\'') if doubled_quote_allowed && self.at(i + 1) == Some(b'\'') => i += 2,
                Some(b'\'') => match self.quote_continuation(i + 1) {
                    // The SQL standard joins 'a'<newline>'b' into one constant, and the segment
                    // after the newline is read under the same rules as the first: E'a'
                    // <newline> '\'' is one E-string. Reading that second segment as a plain
                    // string would put the quotes — and any `;` — somewhere else than the server
                    // does.
                    Some(next) => i = next,
                    None => return Ok(i + 1),
                },
                Some(_) => i += 1,
            }
        }
    }

    /// After a closing quote: if only whitespace that includes a newline (and `--` comments)
    /// separates it from another quote, the constant continues; returns the offset after that
    /// quote. Block comments do not count, matching scan.l's `quotecontinue`.
    fn quote_continuation(&self, after_quote: usize) -> Option<usize> {
        let mut i = after_quote;
        loop {
            match (self.at(i), self.at(i + 1)) {
                (Some(b), _) if is_horizontal_space(b) => i += 1,
                (Some(b'-'), Some(b'-')) => i = self.line_comment_end(i),
                _ => break,
            }
        }
        if !self.at(i).is_some_and(is_newline) {
            return None;
        }
        i += 1;
        loop {
            match (self.at(i), self.at(i + 1)) {
                (Some(b), _) if is_space(b) => i += 1,
                (Some(b'-'), Some(b'-')) => {
                    let end = self.line_comment_end(i);
                    if !self.at(end).is_some_and(is_newline) {
                        return None;
                    }
                    i = end + 1;
                }
                _ => break,
            }
        }
        (self.at(i) == Some(b'\'')).then_some(i + 1)
    }

    fn scan_quoted_identifier(
        &mut self,
        token_start: usize,
        body_start: usize,
    ) -> Result<usize, SqlError> {
        let mut i = body_start;
        loop {
            match self.at(i) {
                None => {
                    return Err(self.error(SqlErrorKind::UnterminatedQuotedIdentifier, token_start));
                }
                Some(b'"') if self.at(i + 1) == Some(b'"') => i += 2,
                Some(b'"') if i == body_start => {
                    return Err(self.error(SqlErrorKind::ZeroLengthIdentifier, token_start));
                }
                Some(b'"') => return Ok(i + 1),
                Some(_) => i += 1,
            }
        }
    }

    /// `$1` (a parameter), `$$` or `$tag$` (a dollar quote), or a lone `$`.
    fn scan_dollar(&mut self, start: usize) -> Result<(TokenKind, usize), SqlError> {
        let next = self.at(start + 1);
        if next.is_some_and(|b| b.is_ascii_digit()) {
            let mut i = start + 1;
            while self.at(i).is_some_and(|b| b.is_ascii_digit()) {
                i += 1;
            }
            return Ok((TokenKind::Parameter, i));
        }
        // A tag follows the rules of an unquoted identifier without `$`, and cannot start with a
        // digit (that would be a parameter).
        let mut tag_end = start + 1;
        if next.is_some_and(is_ident_start) {
            while self.at(tag_end).is_some_and(is_tag_cont) {
                tag_end += 1;
            }
        }
        if self.at(tag_end) != Some(b'$') {
            // scan.l hands a `$` that starts neither a parameter nor a dollar quote to the grammar
            // on its own, and rescans what follows it.
            return Ok((TokenKind::Other, start + 1));
        }
        let body_start = tag_end + 1;
        let delimiter = self.src.get(start..body_start).unwrap_or_default();
        // The body is opaque: it ends at the first identical delimiter, and nothing else ($$
        // inside $fn$, quotes, semicolons) means anything in it.
        let found = self
            .src
            .get(body_start..)
            .and_then(|body| body.find(delimiter));
        match found {
            Some(at) => Ok((
                TokenKind::String(StringKind::Dollar),
                body_start + at + delimiter.len(),
            )),
            None => {
                let delimiter = delimiter.to_string();
                Err(self.error(SqlErrorKind::UnterminatedDollarQuote { delimiter }, start))
            }
        }
    }

    /// Integers (with `_` separators and 0x/0o/0b prefixes, PostgreSQL 16+), decimals and
    /// exponents. Trailing letters are left to the next token; the server rejects the junk.
    fn scan_number(&self, start: usize) -> usize {
        let digits = |mut i: usize, ok: fn(u8) -> bool| {
            while let Some(b) = self.at(i) {
                if ok(b) || (b == b'_' && self.at(i + 1).is_some_and(ok)) {
                    i += 1;
                } else {
                    break;
                }
            }
            i
        };
        if self.at(start) == Some(b'0') {
            let radix: Option<fn(u8) -> bool> = match self.at(start + 1) {
                Some(b'x' | b'X') => Some(|b: u8| b.is_ascii_hexdigit()),
                Some(b'o' | b'O') => Some(|b: u8| (b'0'..=b'7').contains(&b)),
                Some(b'b' | b'B') => Some(|b: u8| b == b'0' || b == b'1'),
                _ => None,
            };
            if let Some(ok) = radix {
                let after_prefix = start + 2;
                let first = self.at(after_prefix);
                let first_ok = first.is_some_and(ok)
                    || (first == Some(b'_') && self.at(after_prefix + 1).is_some_and(ok));
                if first_ok {
                    return digits(after_prefix, ok);
                }
            }
        }
        let decimal = |b: u8| b.is_ascii_digit();
        let mut i = digits(start, decimal);
        // `1..2` is an integer followed by `..`, not the decimal `1.` and `.2`.
        if self.at(i) == Some(b'.') && self.at(i + 1) != Some(b'.') {
            i = digits(i + 1, decimal);
        }
        if matches!(self.at(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(self.at(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if self.at(j).is_some_and(decimal) {
                i = digits(j, decimal);
            }
        }
        i
    }

    /// A run of operator characters, cut where PostgreSQL cuts it: a comment start inside it
    /// ends the operator, and a trailing `+` or `-` is split off unless the operator holds a
    /// character that no SQL-standard operator uses (so `=-1` is `=` and `-1`, but `?-` stays).
    fn scan_operator(&self, start: usize) -> usize {
        let mut end = start;
        while self.at(end).is_some_and(is_op_char) {
            end += 1;
        }
        let op = self.bytes.get(start..end).unwrap_or_default();
        let comment_start = op
            .windows(2)
            .skip(1)
            .position(|pair| pair == b"/*" || pair == b"--");
        let mut len = comment_start.map_or(op.len(), |at| at + 1);
        while len > 1 && matches!(op.get(len - 1), Some(b'+' | b'-')) {
            let head = op.get(..len - 1).unwrap_or_default();
            if head.iter().any(|b| b"~!@#^&|`?%".contains(b)) {
                break;
            }
            len -= 1;
        }
        start + len.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------------------------

/// One statement of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// From its first token to its last: comments inside are kept, comments before and after are
    /// dropped (a trailing `--` comment would swallow anything appended to the text), and so is
    /// the `;`.
    pub text: String,
    /// Where its first token is.
    pub start: Position,
}

/// Splits a script at every `;` outside strings, quoted identifiers and comments. Empty
/// statements (`;;`) and comment-only text are dropped.
///
/// This deliberately splits more eagerly than psql, which keeps `;` inside parentheses and
/// inside a `CREATE FUNCTION ... BEGIN ATOMIC ... END` body together: seeing a statement too many
/// only makes pgplan refuse, while seeing one too few could let a statement through unseen.
pub fn split_statements(sql: &str) -> Result<Vec<Statement>, SqlError> {
    let tokens = tokenize(sql)?;
    Ok(statement_slices(&tokens)
        .into_iter()
        .map(|toks| Statement {
            text: statement_text(sql, toks).to_string(),
            start: toks.first().map_or(Position::START, |t| t.position),
        })
        .collect())
}

fn statement_slices<'t, 'a>(tokens: &'t [Token<'a>]) -> Vec<&'t [Token<'a>]> {
    tokens
        .split(|t| t.kind == TokenKind::Semicolon)
        .filter(|toks| !toks.is_empty())
        .collect()
}

fn statement_text<'a>(sql: &'a str, toks: &[Token<'_>]) -> &'a str {
    match (toks.first(), toks.last()) {
        (Some(first), Some(last)) => sql.get(first.offset..last.end()).unwrap_or_default(),
        _ => "",
    }
}

/// The tokens of the only statement in `tokens`, or the error saying there were none or several.
fn single_statement<'t, 'a>(
    tokens: &'t [Token<'a>],
    expected: Expectation,
) -> Result<&'t [Token<'a>], SqlError> {
    let statements = statement_slices(tokens);
    match statements.as_slice() {
        [] => Err(SqlError::new(
            SqlErrorKind::NoStatement { expected },
            Position::START,
        )),
        [one] => Ok(one),
        [_, second, ..] => {
            let position = second.first().map_or(Position::START, |t| t.position);
            Err(SqlError::new(
                SqlErrorKind::MultipleStatements {
                    expected,
                    count: statements.len(),
                    second: position,
                    starts_with: describe_start_word(second.first()),
                },
                position,
            ))
        }
    }
}

/// `DROP` for a statement starting with the word drop, the token itself otherwise.
fn describe_start_word(token: Option<&Token<'_>>) -> String {
    match token {
        Some(t) if t.kind == TokenKind::Word => t.text.to_ascii_uppercase(),
        other => describe_token(other),
    }
}

/// A token as it appears in messages: in backticks, shortened if long.
fn describe_token(token: Option<&Token<'_>>) -> String {
    const MAX_CHARS: usize = 40;
    match token {
        None => "the end of the statement".into(),
        Some(t) if t.text.chars().count() > MAX_CHARS => {
            let head: String = t.text.chars().take(MAX_CHARS - 3).collect();
            format!("`{head}...`")
        }
        Some(t) => format!("`{}`", t.text),
    }
}

// ---------------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------------

/// The statements that change data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Insert,
    Update,
    Delete,
    Merge,
    /// `SELECT ... INTO new_table`: creates and fills a table.
    SelectInto,
}

impl WriteKind {
    pub fn keyword(self) -> &'static str {
        match self {
            WriteKind::Insert => "INSERT",
            WriteKind::Update => "UPDATE",
            WriteKind::Delete => "DELETE",
            WriteKind::Merge => "MERGE",
            WriteKind::SelectInto => "SELECT INTO",
        }
    }

    /// The keyword with its indefinite article, as a sentence says it: "an UPDATE", "a DELETE".
    pub fn with_article(self) -> &'static str {
        match self {
            WriteKind::Insert => "an INSERT",
            WriteKind::Update => "an UPDATE",
            WriteKind::Delete => "a DELETE",
            WriteKind::Merge => "a MERGE",
            WriteKind::SelectInto => "a SELECT INTO",
        }
    }
}

/// What a statement does, as far as its own text shows.
///
/// `Read` means no part of the statement's syntax writes. Functions it calls still may (a
/// `SELECT` of a volatile function can do anything), `SELECT ... FOR UPDATE` takes row locks,
/// and none of that is visible lexically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryKind {
    /// `SELECT`, `VALUES`, `TABLE`, or `WITH` without a data-modifying statement, possibly in
    /// parentheses.
    Read,
    /// `INSERT`, `UPDATE`, `DELETE`, `MERGE`, `SELECT ... INTO`, or a `WITH` holding one of them.
    Write(WriteKind),
    /// Anything else (`EXPLAIN`, `CREATE`, `DROP`, `CALL`, `DO`...): the first word, lower-cased.
    Other(String),
}

/// The one statement pgplan will explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The statement as written, without surrounding comments or the final `;`.
    pub text: String,
    pub kind: QueryKind,
    /// The highest `$n` the statement uses, ignoring strings and comments.
    pub max_parameter: Option<u32>,
}

/// Classifies a single statement (a final `;` is allowed; a second statement is an error, so a
/// caller cannot be told `Read` about `SELECT 1; DELETE FROM t`).
pub fn classify(statement: &str) -> Result<QueryKind, SqlError> {
    let tokens = tokenize(statement)?;
    let toks = single_statement(&tokens, Expectation::Query)?;
    Ok(classify_tokens(toks))
}

/// Checks that `sql` is exactly one statement, and says what kind and which parameters it has.
pub fn parse_single_query(sql: &str) -> Result<Query, SqlError> {
    let tokens = tokenize(sql)?;
    let toks = single_statement(&tokens, Expectation::Query)?;
    Ok(Query {
        text: statement_text(sql, toks).to_string(),
        kind: classify_tokens(toks),
        max_parameter: max_parameter(toks)?,
    })
}

fn classify_tokens(toks: &[Token<'_>]) -> QueryKind {
    // `(SELECT 1) UNION (SELECT 2)` and `((VALUES (1)))` start with parentheses.
    let Some(first) = toks.iter().find(|t| !t.is_punct("(")) else {
        return QueryKind::Other("(".into());
    };
    if first.kind != TokenKind::Word {
        return QueryKind::Other(describe_token(Some(first)));
    }
    let word = first.text.to_ascii_lowercase();
    match word.as_str() {
        "insert" => QueryKind::Write(WriteKind::Insert),
        "update" => QueryKind::Write(WriteKind::Update),
        "delete" => QueryKind::Write(WriteKind::Delete),
        "merge" => QueryKind::Write(WriteKind::Merge),
        "select" | "values" | "table" | "with" => {
            if let Some(kind) = find_data_modification(toks) {
                QueryKind::Write(kind)
            } else if toks.iter().any(|t| t.is_keyword("into")) {
                // INTO is a reserved word; outside INSERT/MERGE (found above) it can only be
                // SELECT ... INTO, which creates a table.
                QueryKind::Write(WriteKind::SelectInto)
            } else {
                QueryKind::Read
            }
        }
        _ => QueryKind::Other(word),
    }
}

/// A data-modifying statement anywhere in the token list: `WITH d AS (DELETE FROM t RETURNING *)
/// SELECT ...`, or a `WITH` whose main statement is one.
///
/// INSERT, UPDATE, DELETE and MERGE are unreserved keywords, so they can also be column names or
/// aliases, and UPDATE ends the locking clauses `FOR [NO KEY] UPDATE`. Only those uses are set
/// aside; everything else that reads like a statement counts, because calling a read a write
/// costs a refusal while calling a write a read could change data.
fn find_data_modification(toks: &[Token<'_>]) -> Option<WriteKind> {
    toks.iter().enumerate().find_map(|(i, t)| {
        if t.kind != TokenKind::Word {
            return None;
        }
        let prev = i.checked_sub(1).and_then(|p| toks.get(p));
        let next = toks.get(i + 1);
        let next_is = |keyword: &str| next.is_some_and(|n| n.is_keyword(keyword));
        // `t.delete`, `a, update`, `x::insert`, `AS delete`, `SELECT update`: a name, not a
        // statement.
        let used_as_name = prev.is_some_and(|p| {
            p.is_punct(".")
                || p.is_punct(",")
                || p.is_punct("::")
                || p.is_keyword("as")
                || p.is_keyword("select")
        });
        if used_as_name {
            return None;
        }
        let word = t.text.to_ascii_lowercase();
        // Each statement's grammar fixes the word after its keyword (DELETE FROM, INSERT INTO,
        // MERGE INTO, UPDATE relation), which tells them apart from other uses.
        match word.as_str() {
            "insert" if next_is("into") => Some(WriteKind::Insert),
            "delete" if next_is("from") => Some(WriteKind::Delete),
            "merge" if next_is("into") => Some(WriteKind::Merge),
            "update"
                if !prev.is_some_and(|p| p.is_keyword("for") || p.is_keyword("key"))
                    && next.is_some_and(starts_relation_name) =>
            {
                Some(WriteKind::Update)
            }
            _ => None,
        }
    })
}

/// Whether a token can begin `[ONLY] relation_name`.
fn starts_relation_name(t: &Token<'_>) -> bool {
    match t.kind {
        TokenKind::QuotedIdentifier => true,
        TokenKind::Word => t.is_keyword("only") || !is_excluded_from_col_id(t.text),
        _ => false,
    }
}

fn max_parameter(toks: &[Token<'_>]) -> Result<Option<u32>, SqlError> {
    let mut max = None;
    for t in toks.iter().filter(|t| t.kind == TokenKind::Parameter) {
        let digits = t.text.get(1..).unwrap_or_default();
        let n: u32 = digits.parse().map_err(|_| {
            SqlError::new(
                SqlErrorKind::ParameterOutOfRange {
                    text: t.text.to_string(),
                },
                t.position,
            )
        })?;
        if n == 0 {
            return Err(SqlError::new(SqlErrorKind::ParameterZero, t.position));
        }
        max = max.max(Some(n));
    }
    Ok(max)
}

// ---------------------------------------------------------------------------------------------
// Candidate indexes
// ---------------------------------------------------------------------------------------------

/// A validated candidate `CREATE INDEX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCandidate {
    /// The statement as the user wrote it, without surrounding comments or the final `;`.
    pub original: String,
    /// What pgplan executes: `original` byte for byte, except that CONCURRENTLY is removed (it
    /// cannot run inside a transaction block, and pgplan builds candidates inside one) and a name
    /// is inserted before ON when the user gave none. IF NOT EXISTS is removed too, so that a
    /// clash with an existing index fails instead of measuring that index.
    pub sql: String,
    /// The index name as PostgreSQL stores it: folded to lower case unless quoted, escapes
    /// decoded, cut to 63 bytes.
    pub name: String,
    pub name_generated: bool,
    /// How messages name it: `name` as the user gave it, or for an unnamed candidate its
    /// definition ("unnamed index ON events (status)"), never the internal placeholder.
    pub description: String,
    /// The user wrote CONCURRENTLY.
    pub concurrently: bool,
    pub unique: bool,
    /// The table after `ON [ONLY]`, as written (schema-qualified and quoted parts kept; whitespace
    /// and comments between the parts dropped).
    pub table: String,
    /// The USING method, folded to lower case unless quoted.
    pub method: Option<String>,
    /// Everything from ON to the end, as written: `ON events (created_at) WHERE ...`.
    pub definition: String,
}

/// Validates one candidate `CREATE INDEX` (a final `;` is allowed), naming it `generated_name`
/// if the user did not.
impl IndexCandidate {
    /// The name as the user gave it, or for an unnamed candidate its definition.
    pub fn describe(&self) -> &str {
        &self.description
    }
}

pub fn parse_index_candidate(sql: &str, generated_name: &str) -> Result<IndexCandidate, SqlError> {
    let tokens = tokenize(sql)?;
    let toks = single_statement(&tokens, Expectation::IndexCandidate)?;
    Ok(candidate_from_tokens(sql, toks, generated_name)?.0)
}

/// Validates a file of candidates, one per statement. Unnamed ones are called `{prefix}_{n}`,
/// where n is the statement's number in the file (from 1), so a name points back at its
/// statement. Two candidates may not share a name: the second CREATE INDEX would fail, or with IF
/// NOT EXISTS silently do nothing. A file with no statements gives an empty list.
pub fn parse_index_file(sql: &str, name_prefix: &str) -> Result<Vec<IndexCandidate>, SqlError> {
    let tokens = tokenize(sql)?;
    let mut candidates = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, toks) in statement_slices(&tokens).into_iter().enumerate() {
        let number = i + 1;
        let generated = format!("{name_prefix}_{number}");
        let (candidate, name_position) = candidate_from_tokens(sql, toks, &generated)?;
        if let Some(&first) = seen.get(&candidate.name) {
            return Err(SqlError::new(
                SqlErrorKind::DuplicateIndexName {
                    name: quote_ident(&candidate.name),
                    first,
                    second: number,
                },
                name_position,
            ));
        }
        seen.insert(candidate.name.clone(), number);
        candidates.push(candidate);
    }
    Ok(candidates)
}

/// Reads `CREATE [UNIQUE] INDEX [CONCURRENTLY] [[IF NOT EXISTS] name] ON [ONLY] table [USING
/// method] ( ...` and checks the rest only for balanced parentheses and the absence of
/// parameters; the server checks the column list, INCLUDE, WITH, TABLESPACE and WHERE.
/// Also returns where the name is (or the statement, for a generated name).
fn candidate_from_tokens(
    sql: &str,
    toks: &[Token<'_>],
    generated_name: &str,
) -> Result<(IndexCandidate, Position), SqlError> {
    let (Some(first), Some(last)) = (toks.first(), toks.last()) else {
        return Err(SqlError::new(
            SqlErrorKind::NoStatement {
                expected: Expectation::IndexCandidate,
            },
            Position::START,
        ));
    };
    let mut c = Cursor {
        src: sql,
        toks,
        i: 0,
        end: last.end_position(),
    };
    let header = c.index_header(first)?;
    let (table, method) = c.index_target()?;
    check_parentheses(toks.get(c.i..).unwrap_or_default())?;
    if let Some(t) = toks.iter().find(|t| t.kind == TokenKind::Parameter) {
        return Err(SqlError::new(
            SqlErrorKind::ParameterInIndex {
                text: t.text.to_string(),
            },
            t.position,
        ));
    }

    let (name, name_position, name_generated) = match &header.user_name {
        Some(ident) => (truncate_identifier(&ident.value), ident.position, false),
        None if generated_name.is_empty() => {
            return Err(SqlError::new(
                SqlErrorKind::EmptyGeneratedName,
                first.position,
            ));
        }
        None => (truncate_identifier(generated_name), first.position, true),
    };

    let base = first.offset;
    let original = statement_text(sql, toks);
    let rebuilt = rebuild_statement(
        original,
        base,
        &header,
        name_generated.then_some(name.as_str()),
    );
    let definition = original
        .get(header.on.offset.saturating_sub(base)..)
        .unwrap_or_default()
        .to_owned();

    let description = if name_generated {
        format!("unnamed index {}", shorten(&definition))
    } else {
        name.clone()
    };
    let candidate = IndexCandidate {
        original: original.to_string(),
        sql: rebuilt,
        name,
        name_generated,
        description,
        concurrently: header.concurrently.is_some(),
        unique: header.unique,
        table,
        method,
        definition,
    };
    Ok((candidate, name_position))
}

/// What a CREATE INDEX says before its table, with the tokens its text is rebuilt around.
struct IndexHeader<'t, 'a> {
    unique: bool,
    /// The CONCURRENTLY token, which the rebuilt text leaves out.
    concurrently: Option<&'t Token<'a>>,
    /// The byte range of IF NOT EXISTS in the source, which the rebuilt text leaves out.
    if_not_exists: Option<(usize, usize)>,
    user_name: Option<Ident<'a>>,
    /// The ON token: a generated name goes before it, and the definition starts at it.
    on: &'t Token<'a>,
}

impl<'t, 'a> Cursor<'t, 'a> {
    /// `CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS] [name] ON`, the statement starting
    /// at `first`.
    fn index_header(&mut self, first: &Token<'_>) -> Result<IndexHeader<'t, 'a>, SqlError> {
        let is_create = self.eat_keyword("create").is_some();
        let unique = is_create && self.eat_keyword("unique").is_some();
        if !is_create || self.eat_keyword("index").is_none() {
            return Err(SqlError::new(
                SqlErrorKind::NotAnIndex {
                    found: describe_statement_kind(self.toks),
                },
                first.position,
            ));
        }
        let concurrently = self.eat_keyword("concurrently");

        // CREATE INDEX if ON t (a) names the index "if": IF is an unreserved keyword, and only IF
        // NOT starts the IF NOT EXISTS clause.
        let mut user_name = None;
        let mut if_not_exists = None;
        if self.peek().is_some_and(|t| t.is_keyword("if"))
            && self.peek_at(1).is_some_and(|t| t.is_keyword("not"))
        {
            let if_token = self.peek().copied();
            self.i += 2;
            let exists = self.expect_keyword("exists", "EXISTS after IF NOT")?;
            if_not_exists = if_token.map(|t| (t.offset, exists.end()));
            if self.peek().is_none_or(|t| t.is_keyword("on")) {
                return Err(SqlError::new(
                    SqlErrorKind::IfNotExistsWithoutName,
                    if_token.map_or(self.here(), |t| t.position),
                ));
            }
            user_name = Some(self.index_name("an index name after IF NOT EXISTS")?);
        } else if !self.peek().is_some_and(|t| t.is_keyword("on")) {
            user_name = Some(self.index_name("an index name or ON after CREATE INDEX")?);
        }
        let on = self.expect_keyword(
            "on",
            if user_name.is_some() {
                "ON after the index name"
            } else {
                "ON after CREATE INDEX"
            },
        )?;
        Ok(IndexHeader {
            unique,
            concurrently,
            if_not_exists,
            user_name,
            on,
        })
    }

    /// `[ONLY] table [*] [USING method]` up to the `(` of the indexed columns: the table and
    /// the index method.
    fn index_target(&mut self) -> Result<(String, Option<String>), SqlError> {
        // ON ONLY parent, ON ONLY (parent) and ON t * are all relation_expr in the grammar.
        let only = self.eat_keyword("only").is_some();
        let parenthesized = only && self.eat_punct("(");
        let table = self.table_name()?;
        if parenthesized && !self.eat_punct(")") {
            return Err(self.syntax_error("`)` after ONLY (table"));
        }
        if self
            .peek()
            .is_some_and(|t| t.kind == TokenKind::Operator && t.text == "*")
        {
            self.i += 1;
        }
        let method = if self.eat_keyword("using").is_some() {
            match self.identifier()? {
                Some(ident) => Some(ident.value),
                None => return Err(self.syntax_error("an index method after USING")),
            }
        } else {
            None
        };
        if !self.peek().is_some_and(|t| t.is_punct("(")) {
            return Err(self.syntax_error(if method.is_some() {
                "`(` and the indexed columns after the index method"
            } else {
                "`(` and the indexed columns after the table name"
            }));
        }
        Ok((table, method))
    }
}

/// The statement's text as the candidate runs it, rebuilt from `original` (which starts at byte
/// `base` of the source): without CONCURRENTLY and IF NOT EXISTS, and with `generated_name`
/// before ON when the user gave none.
fn rebuild_statement(
    original: &str,
    base: usize,
    header: &IndexHeader<'_, '_>,
    generated_name: Option<&str>,
) -> String {
    // Only the CONCURRENTLY token, IF NOT EXISTS and the gap before ON are touched; every other
    // byte (comments, spacing, the column list) is kept as written.
    let piece = |from: usize, to: usize| original.get(from..to).unwrap_or_default();
    let extra = generated_name.map_or(0, str::len);
    let mut rebuilt = String::with_capacity(original.len() + extra + 3);
    let mut copied = 0;
    let mut cut = |start: usize, end: usize, rebuilt: &mut String| {
        let (from, to, replacement) = removal(
            original,
            start.saturating_sub(base),
            end.saturating_sub(base),
        );
        rebuilt.push_str(piece(copied, from));
        rebuilt.push_str(replacement);
        copied = to;
    };
    if let Some(token) = header.concurrently {
        cut(token.offset, token.end(), &mut rebuilt);
    }
    // IF NOT EXISTS would turn a clash with an existing index into a silent no-op, and pgplan
    // would then measure the existing index as if it were the candidate: without it, the clash
    // is PostgreSQL's error (42P07) and the candidate fails, saying so.
    if let Some((start, end)) = header.if_not_exists {
        cut(start, end, &mut rebuilt);
    }
    if let Some(name) = generated_name {
        let at = header.on.offset.saturating_sub(base);
        rebuilt.push_str(piece(copied, at));
        rebuilt.push_str(&quote_ident(name));
        rebuilt.push(' ');
        copied = at;
    }
    rebuilt.push_str(piece(copied, original.len()));
    rebuilt
}

/// The bytes to cut to remove the token at `from..to` from `text`, and what to put in their
/// place: the token and the whitespace after it, else the whitespace before it and the token,
/// else (wedged between two comments) the token replaced by a space so nothing runs together.
fn removal(text: &str, from: usize, to: usize) -> (usize, usize, &'static str) {
    let bytes = text.as_bytes();
    let mut after = to;
    while bytes.get(after).is_some_and(|&b| is_space(b)) {
        after += 1;
    }
    if after > to {
        return (from, after, "");
    }
    let mut before = from;
    while before > 0 && bytes.get(before - 1).is_some_and(|&b| is_space(b)) {
        before -= 1;
    }
    if before < from {
        return (before, to, "");
    }
    (from, to, " ")
}

/// For "expected one CREATE [UNIQUE] INDEX statement, found ...": the statement's leading
/// keywords, enough to say what it is (`CREATE TABLE`, `CREATE OR REPLACE FUNCTION`, `DROP
/// INDEX`, `DO`, `SELECT`).
fn describe_statement_kind(toks: &[Token<'_>]) -> String {
    const CREATE_MODIFIERS: &[&str] = &[
        "constraint",
        "default",
        "global",
        "local",
        "materialized",
        "or",
        "procedural",
        "recursive",
        "replace",
        "temp",
        "temporary",
        "trusted",
        "unique",
        "unlogged",
    ];
    let words: Vec<&Token<'_>> = toks
        .iter()
        .take_while(|t| t.kind == TokenKind::Word)
        .collect();
    let Some(first) = words.first() else {
        return describe_token(toks.first());
    };
    let take = if first.is_keyword("create") {
        let modifiers = words
            .iter()
            .skip(1)
            .take_while(|t| CREATE_MODIFIERS.iter().any(|m| t.is_keyword(m)))
            .count();
        modifiers + 2
    } else if first.is_keyword("drop") || first.is_keyword("alter") {
        2
    } else {
        1
    };
    words
        .iter()
        .take(take)
        .map(|t| t.text.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_parentheses(toks: &[Token<'_>]) -> Result<(), SqlError> {
    let mut open: Vec<Position> = Vec::new();
    for t in toks {
        if t.is_punct("(") {
            open.push(t.position);
        } else if t.is_punct(")") && open.pop().is_none() {
            return Err(SqlError::new(
                SqlErrorKind::UnbalancedParentheses {
                    detail: "this `)` has no matching `(`",
                },
                t.position,
            ));
        }
    }
    match open.pop() {
        Some(position) => Err(SqlError::new(
            SqlErrorKind::UnbalancedParentheses {
                detail: "this `(` is never closed",
            },
            position,
        )),
        None => Ok(()),
    }
}

/// An identifier read from the tokens: its value as PostgreSQL sees it, its source text and
/// where it starts.
struct Ident<'a> {
    value: String,
    text: &'a str,
    position: Position,
}

struct Cursor<'t, 'a> {
    src: &'a str,
    toks: &'t [Token<'a>],
    i: usize,
    /// The position just past the statement, for "found the end of the statement".
    end: Position,
}

impl<'t, 'a> Cursor<'t, 'a> {
    fn peek(&self) -> Option<&'t Token<'a>> {
        self.toks.get(self.i)
    }

    fn peek_at(&self, ahead: usize) -> Option<&'t Token<'a>> {
        self.toks.get(self.i + ahead)
    }

    fn here(&self) -> Position {
        self.peek().map_or(self.end, |t| t.position)
    }

    fn eat_keyword(&mut self, keyword: &str) -> Option<&'t Token<'a>> {
        let token = self.peek().filter(|t| t.is_keyword(keyword))?;
        self.i += 1;
        Some(token)
    }

    fn eat_punct(&mut self, punct: &str) -> bool {
        let found = self.peek().is_some_and(|t| t.is_punct(punct));
        if found {
            self.i += 1;
        }
        found
    }

    fn syntax_error(&self, expected: &'static str) -> SqlError {
        SqlError::new(
            SqlErrorKind::IndexSyntax {
                expected,
                found: describe_token(self.peek()),
            },
            self.here(),
        )
    }

    fn expect_keyword(
        &mut self,
        keyword: &str,
        expected: &'static str,
    ) -> Result<&'t Token<'a>, SqlError> {
        self.eat_keyword(keyword)
            .ok_or_else(|| self.syntax_error(expected))
    }

    /// The index name: PostgreSQL's grammar takes a ColId here, so an unquoted reserved keyword
    /// (or one of the type/function-name keywords such as `concurrently`) is refused.
    fn index_name(&mut self, expected: &'static str) -> Result<Ident<'a>, SqlError> {
        let reserved = self
            .peek()
            .filter(|t| t.kind == TokenKind::Word && is_excluded_from_col_id(t.text));
        if let Some(t) = reserved {
            return Err(SqlError::new(
                SqlErrorKind::ReservedIndexName {
                    word: t.text.to_ascii_lowercase(),
                },
                t.position,
            ));
        }
        self.identifier()?
            .ok_or_else(|| self.syntax_error(expected))
    }

    /// `[schema.]table`, as written, part by part.
    fn table_name(&mut self) -> Result<String, SqlError> {
        let first_is_col_id = self
            .peek()
            .is_some_and(|t| t.kind != TokenKind::Word || !is_excluded_from_col_id(t.text));
        let first = if first_is_col_id {
            self.identifier()?
        } else {
            None
        };
        let Some(first) = first else {
            return Err(self.syntax_error("a table name after ON"));
        };
        let mut parts = vec![first.text.to_string()];
        while self.peek().is_some_and(|t| t.is_punct(".")) {
            self.i += 1;
            match self.identifier()? {
                Some(part) => parts.push(part.text.to_string()),
                None => return Err(self.syntax_error("a name after `.` in the table name")),
            }
        }
        Ok(parts.join("."))
    }

    /// An unquoted word, `"quoted"` or `U&"quoted"` identifier (with its UESCAPE clause), or
    /// `None` if the next token is none of these.
    fn identifier(&mut self) -> Result<Option<Ident<'a>>, SqlError> {
        let Some(&t) = self.peek() else {
            return Ok(None);
        };
        match t.kind {
            TokenKind::Word => {
                self.i += 1;
                Ok(Some(Ident {
                    value: t.text.to_ascii_lowercase(),
                    text: t.text,
                    position: t.position,
                }))
            }
            TokenKind::QuotedIdentifier if t.text.starts_with('"') => {
                self.i += 1;
                let body = unquote_body(t.text, 1);
                Ok(Some(Ident {
                    value: body.replace("\"\"", "\""),
                    text: t.text,
                    position: t.position,
                }))
            }
            TokenKind::QuotedIdentifier => {
                self.i += 1;
                let mut text = t.text;
                let mut escape = '\\';
                // U&"..." UESCAPE '!' names another escape character.
                let uescape = self.peek().is_some_and(|k| k.is_keyword("uescape"));
                if let (true, Some(&value)) = (uescape, self.peek_at(1)) {
                    escape = uescape_character(&value).ok_or_else(|| {
                        SqlError::new(
                            SqlErrorKind::InvalidUnicodeEscape {
                                reason: "UESCAPE needs one character that is not a hex digit, \
                                         +, a quote or whitespace",
                            },
                            value.position,
                        )
                    })?;
                    self.i += 2;
                    // Keep the whole clause in the text: the escapes mean nothing without it.
                    text = self.src.get(t.offset..value.end()).unwrap_or(t.text);
                }
                let body = unquote_body(t.text, 3);
                let value = decode_unicode_escapes(&body.replace("\"\"", "\""), escape).map_err(
                    |reason| {
                        SqlError::new(SqlErrorKind::InvalidUnicodeEscape { reason }, t.position)
                    },
                )?;
                Ok(Some(Ident {
                    value,
                    text,
                    position: t.position,
                }))
            }
            _ => Ok(None),
        }
    }
}

/// The text between a quoted token's opening (`prefix` bytes: `"`, `'`, `U&"`) and its final
/// closing quote.
fn unquote_body(text: &str, prefix: usize) -> &str {
    text.get(prefix..text.len().saturating_sub(1).max(prefix))
        .unwrap_or_default()
}

/// The escape character of a `UESCAPE 'c'` clause, if the string is one valid character.
fn uescape_character(token: &Token<'_>) -> Option<char> {
    if token.kind != TokenKind::String(StringKind::Standard) {
        return None;
    }
    let body = unquote_body(token.text, 1).replace("''", "'");
    let mut chars = body.chars();
    let c = chars.next()?;
    let valid = chars.next().is_none()
        && !c.is_ascii_hexdigit()
        && !matches!(c, '+' | '\'' | '"')
        && !c.is_whitespace();
    valid.then_some(c)
}

/// Decodes the escapes of a U&"..." body: `\XXXX`, `\+XXXXXX`, surrogate pairs, and the escape
/// character written twice for itself.
fn decode_unicode_escapes(body: &str, escape: char) -> Result<String, &'static str> {
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::with_capacity(body.len());
    let mut high_surrogate: Option<u32> = None;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c != escape || chars.get(i + 1) == Some(&escape) {
            if high_surrogate.is_some() {
                return Err("a high surrogate must be followed by a low surrogate");
            }
            out.push(c);
            i += if c == escape { 2 } else { 1 };
            continue;
        }
        let (digits_at, count) = if chars.get(i + 1) == Some(&'+') {
            (i + 2, 6)
        } else {
            (i + 1, 4)
        };
        let digits: String = chars
            .get(digits_at..digits_at + count)
            .ok_or("an escape needs 4 hex digits (or + and 6)")?
            .iter()
            .collect();
        let mut code = u32::from_str_radix(&digits, 16)
            .map_err(|_| "an escape needs 4 hex digits (or + and 6)")?;
        i = digits_at + count;
        if (0xD800..=0xDBFF).contains(&code) {
            if high_surrogate.replace(code).is_some() {
                return Err("a high surrogate must be followed by a low surrogate");
            }
            continue;
        }
        if (0xDC00..=0xDFFF).contains(&code) {
            let high = high_surrogate
                .take()
                .ok_or("a low surrogate must follow a high surrogate")?;
            code = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
        } else if high_surrogate.is_some() {
            return Err("a high surrogate must be followed by a low surrogate");
        }
        match char::from_u32(code) {
            Some(ch) if ch != '\0' => out.push(ch),
            _ => return Err("the escape is not a valid character"),
        }
    }
    if high_surrogate.is_some() {
        return Err("a high surrogate must be followed by a low surrogate");
    }
    Ok(out)
}

/// Cuts a name to the 63 bytes PostgreSQL keeps, on a character boundary.
fn truncate_identifier(name: &str) -> String {
    if name.len() <= MAX_IDENTIFIER_BYTES {
        return name.to_string();
    }
    let mut end = MAX_IDENTIFIER_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.get(..end).unwrap_or_default().to_string()
}

// ---------------------------------------------------------------------------------------------
// Quoting
// ---------------------------------------------------------------------------------------------

/// Quotes an identifier only when PostgreSQL needs it to: when it is not all lower-case letters,
/// digits and underscores, starts with a digit, or is a keyword that cannot be a plain name.
/// Same rule as PostgreSQL's own quote_ident(), so output round-trips through the server.
pub fn quote_ident(name: &str) -> String {
    let plain = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !is_quoted_keyword(name);
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// SQL as messages quote it: whitespace runs folded to one space, and cut after
/// [`SHORTEN_CHARS`] characters with how long it was, so an error about a 3 MB candidate is a
/// line, not 3 MB.
pub fn shorten(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let total = folded.chars().count();
    if total <= SHORTEN_CHARS {
        return folded;
    }
    let head: String = folded.chars().take(SHORTEN_CHARS).collect();
    format!("{head}… ({} characters in all)", count_text(total))
}

/// How much of a statement messages quote.
pub const SHORTEN_CHARS: usize = 120;

fn count_text(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`quote_ident`] for SQL shown to a person (an audit's fix): a control character (ESC, BEL, a
/// newline) in a name would act on the terminal that shows it and cannot be typed back, so such
/// a name is written in PostgreSQL's Unicode escape form (`U&"bad\001Bname"`), which names the
/// same object in plain characters. ESC, BEL and the other C0 controls are ASCII, so their
/// escapes work in every server encoding. (Not for regclass input, which has no `U&` form.)
pub fn quote_ident_to_show(name: &str) -> String {
    if !name.chars().any(char::is_control) {
        return quote_ident(name);
    }
    let mut out = String::from("U&\"");
    for c in name.chars() {
        match c {
            '"' => out.push_str("\"\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A string constant for a session with standard_conforming_strings on (see the module
/// comment): quotes are doubled and backslashes stay as they are.
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

// PostgreSQL's keywords that are not UNRESERVED_KEYWORD (src/include/parser/kwlist.h, up to the
// development branch after 18). Sorted for binary search; a unit test checks the order. A word
// missing from an older server's list is only quoted needlessly, which is harmless.

/// RESERVED_KEYWORD: never a plain name.
#[rustfmt::skip]
const RESERVED_KEYWORDS: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case",
    "cast", "check", "collate", "column", "constraint", "create", "current_catalog", "current_date",
    "current_role", "current_time", "current_timestamp", "current_user", "default", "deferrable",
    "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "from",
    "grant", "group", "having", "in", "initially", "intersect", "into", "lateral", "leading",
    "limit", "localtime", "localtimestamp", "not", "null", "offset", "on", "only", "or", "order",
    "placing", "primary", "references", "returning", "select", "session_user", "some", "symmetric",
    "system_user", "table", "then", "to", "trailing", "true", "union", "unique", "user", "using",
    "variadic", "when", "where", "window", "with",
];

/// TYPE_FUNC_NAME_KEYWORD: may name a function or type, but not a table, column or index.
#[rustfmt::skip]
const TYPE_FUNC_NAME_KEYWORDS: &[&str] = &[
    "authorization", "binary", "collation", "concurrently", "cross", "current_schema", "freeze",
    "full", "ilike", "inner", "is", "isnull", "join", "left", "like", "natural", "notnull", "outer",
    "overlaps", "right", "similar", "tablesample", "verbose",
];

/// COL_NAME_KEYWORD: may name a table, column or index, but not a function or type, so
/// quote_ident() quotes them too.
#[rustfmt::skip]
const COL_NAME_KEYWORDS: &[&str] = &[
    "between", "bigint", "bit", "boolean", "char", "character", "coalesce", "dec", "decimal",
    "exists", "extract", "float", "graph_table", "greatest", "grouping", "inout", "int", "integer",
    "interval", "json", "json_array", "json_arrayagg", "json_exists", "json_object",
    "json_objectagg", "json_query", "json_scalar", "json_serialize", "json_table", "json_value",
    "least", "merge_action", "national", "nchar", "none", "normalize", "nullif", "numeric", "out",
    "overlay", "position", "precision", "real", "row", "setof", "smallint", "substring", "time",
    "timestamp", "treat", "trim", "values", "varchar", "xmlattributes", "xmlconcat", "xmlelement",
    "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize",
    "xmltable",
];

fn in_list(list: &[&str], word: &str) -> bool {
    // Names from the catalog are nearly always lower case already: quote_ident runs once per
    // object named in an audit, so it allocates only when it must fold.
    if word.bytes().any(|b| b.is_ascii_uppercase()) {
        list.binary_search(&word.to_ascii_lowercase().as_str())
            .is_ok()
    } else {
        list.binary_search(&word).is_ok()
    }
}

/// Words PostgreSQL's ColId rule refuses unquoted: table, column and index names.
fn is_excluded_from_col_id(word: &str) -> bool {
    in_list(RESERVED_KEYWORDS, word) || in_list(TYPE_FUNC_NAME_KEYWORDS, word)
}

/// The longest keyword in the lists above ("current_timestamp").
const LONGEST_KEYWORD: usize = 17;

/// Words quote_ident() quotes: every keyword category but the unreserved one.
fn is_quoted_keyword(word: &str) -> bool {
    // Every keyword is letters and underscores, at most LONGEST_KEYWORD of them: a name with a
    // digit or a longer one is told apart without searching (an audit names 50,000 indexes).
    if word.len() > LONGEST_KEYWORD || !word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
        return false;
    }
    is_excluded_from_col_id(word) || in_list(COL_NAME_KEYWORDS, word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<&str> {
        match tokenize(sql) {
            Ok(tokens) => tokens.iter().map(|t| t.text).collect(),
            Err(e) => panic!("tokenize({sql:?}) failed: {e}"),
        }
    }

    fn kinds(sql: &str) -> Vec<TokenKind> {
        match tokenize(sql) {
            Ok(tokens) => tokens.iter().map(|t| t.kind).collect(),
            Err(e) => panic!("tokenize({sql:?}) failed: {e}"),
        }
    }

    fn statements(sql: &str) -> Vec<String> {
        match split_statements(sql) {
            Ok(statements) => statements.into_iter().map(|s| s.text).collect(),
            Err(e) => panic!("split_statements({sql:?}) failed: {e}"),
        }
    }

    fn error(result: Result<impl fmt::Debug, SqlError>) -> SqlError {
        match result {
            Ok(value) => panic!("expected an error, got {value:?}"),
            Err(e) => e,
        }
    }

    fn candidate(sql: &str) -> IndexCandidate {
        match parse_index_candidate(sql, "pgplan_candidate_1") {
            Ok(c) => c,
            Err(e) => panic!("parse_index_candidate({sql:?}) failed: {e}"),
        }
    }

    fn kind(sql: &str) -> QueryKind {
        match classify(sql) {
            Ok(k) => k,
            Err(e) => panic!("classify({sql:?}) failed: {e}"),
        }
    }

    fn pos(line: usize, column: usize) -> Position {
        Position { line, column }
    }

    // --- tokenizer ------------------------------------------------------------------------

    #[test]
    fn words_numbers_operators_and_punctuation() {
        assert_eq!(
            texts("SELECT a.b, x::int, 1.5e-3, .5, 42 FROM t WHERE c <> 'x';"),
            [
                "SELECT", "a", ".", "b", ",", "x", "::", "int", ",", "1.5e-3", ",", ".5", ",",
                "42", "FROM", "t", "WHERE", "c", "<>", "'x'", ";"
            ]
        );
        // `1..2` is an integer and `..`; 0x, 0o, 0b and `_` separators are PostgreSQL 16 numbers.
        assert_eq!(texts("1..2"), ["1", "..", "2"]);
        assert_eq!(
            texts("0x1F 0o17 0b101 1_000_000"),
            ["0x1F", "0o17", "0b101", "1_000_000"]
        );
        // `$` continues an identifier.
        assert_eq!(texts("a$b $1"), ["a$b", "$1"]);
        assert_eq!(kinds("a$b $1"), [TokenKind::Word, TokenKind::Parameter]);
        // Non-ASCII characters are letters to PostgreSQL.
        assert_eq!(texts("SELECT café"), ["SELECT", "café"]);
    }

    #[test]
    fn operators_stop_at_comments_and_shed_trailing_plus_minus() {
        assert_eq!(texts("a +-- comment\n b"), ["a", "+", "b"]);
        assert_eq!(texts("a*/* comment */b"), ["a", "*", "b"]);
        assert_eq!(texts("a=-1"), ["a", "=", "-", "1"]);
        assert_eq!(texts("a ?- b"), ["a", "?-", "b"]);
        assert_eq!(texts("j @> '{}'"), ["j", "@>", "'{}'"]);
    }

    #[test]
    fn block_comments_nest() {
        assert_eq!(
            texts("SELECT /* a /* b */ still a comment; */ 1"),
            ["SELECT", "1"]
        );
        assert_eq!(texts("/**/1/***/2"), ["1", "2"]);
        let e = error(tokenize("SELECT 1 /* a /* b */ c"));
        assert_eq!(e.kind, SqlErrorKind::UnterminatedComment);
        assert_eq!(e.position, pos(1, 10));
        assert_eq!(
            e.to_string(),
            "line 1, column 10: unterminated /* comment (started here)\n\
             hint: PostgreSQL block comments nest: every /* inside a comment needs its own */"
        );
    }

    #[test]
    fn line_comments_end_at_newline_or_end_of_text() {
        assert_eq!(
            texts("SELECT 1 -- ; DROP TABLE t\n, 2 -- end"),
            ["SELECT", "1", ",", "2"]
        );
        assert_eq!(texts("SELECT 1 --\r, 2"), ["SELECT", "1", ",", "2"]);
    }

    #[test]
    fn standard_strings_double_their_quotes_and_keep_backslashes() {
        assert_eq!(
            texts("SELECT 'it''s; fine', 'x'"),
            ["SELECT", "'it''s; fine'", ",", "'x'"]
        );
        // standard_conforming_strings: the backslash is an ordinary character, the string ends.
        assert_eq!(texts(r"SELECT 'C:\', 1"), ["SELECT", r"'C:\'", ",", "1"]);
        assert_eq!(texts("''"), ["''"]);
    }

    #[test]
    fn escape_strings_honour_backslash_quotes() {
        assert_eq!(texts(r"SELECT E'\'', 1"), ["SELECT", r"E'\''", ",", "1"]);
        assert_eq!(
            texts(r"SELECT e'it\'s; '' \\', 2"),
            ["SELECT", r"e'it\'s; '' \\'", ",", "2"]
        );
        assert_eq!(kinds(r"E'\''"), [TokenKind::String(StringKind::Escape)]);
        let e = error(tokenize(r"SELECT E'ends in backslash\'"));
        assert_eq!(e.kind, SqlErrorKind::UnterminatedString(StringKind::Escape));
        assert_eq!(e.position, pos(1, 8));
    }

    #[test]
    fn prefixed_constants() {
        assert_eq!(
            kinds("N'n' B'101' X'1F' U&'d\\0061t' U&\"d\\0061t\" b 'x'"),
            [
                TokenKind::String(StringKind::National),
                TokenKind::String(StringKind::Bit),
                TokenKind::String(StringKind::Hex),
                TokenKind::String(StringKind::Unicode),
                TokenKind::QuotedIdentifier,
                TokenKind::Word,
                TokenKind::String(StringKind::Standard),
            ]
        );
        // A bit string has no doubled quote: this is two constants.
        assert_eq!(texts("B'1''0'"), ["B'1'", "'0'"]);
    }

    #[test]
    fn quote_continuation_keeps_the_escape_rules_of_the_first_segment() {
        // 'a' <newline> 'b' is one constant to PostgreSQL.
        assert_eq!(texts("SELECT 'a'\n  'b' x"), ["SELECT", "'a'\n  'b'", "x"]);
        assert_eq!(texts("SELECT 'a' -- c\n'b'"), ["SELECT", "'a' -- c\n'b'"]);
        // Without a newline, or across a block comment, they are two constants.
        assert_eq!(texts("SELECT 'a' 'b'"), ["SELECT", "'a'", "'b'"]);
        assert_eq!(texts("SELECT 'a' /* c */\n'b'"), ["SELECT", "'a'", "'b'"]);
        // The continued segment is still an E-string: \' is a quote, so the string ends before
        // the `;` and DROP TABLE is a second statement. Reading the segment as a plain string
        // would hide it inside the constant.
        let sql = "SELECT E'a'\n'\\''; DROP TABLE t; --'";
        assert_eq!(statements(sql), ["SELECT E'a'\n'\\''", "DROP TABLE t"]);
    }

    #[test]
    fn quoted_identifiers() {
        assert_eq!(
            texts(r#"SELECT "a""b;c" FROM "T""#),
            ["SELECT", r#""a""b;c""#, "FROM", r#""T""#]
        );
        let e = error(tokenize("SELECT \"\" FROM t"));
        assert_eq!(e.kind, SqlErrorKind::ZeroLengthIdentifier);
        assert_eq!(e.position, pos(1, 8));
        let e = error(tokenize("SELECT 1,\n  \"open"));
        assert_eq!(e.kind, SqlErrorKind::UnterminatedQuotedIdentifier);
        assert_eq!(e.position, pos(2, 3));
    }

    #[test]
    fn dollar_quotes() {
        assert_eq!(
            texts("SELECT $$a; 'b' \"c\" $$"),
            ["SELECT", "$$a; 'b' \"c\" $$"]
        );
        // Other dollar strings inside a tagged one are just text.
        let body = "$fn$ BEGIN; PERFORM $$x;$$; RETURN $a$;$a$; END $fn$";
        assert_eq!(
            texts(&format!("SELECT {body}, 1")),
            ["SELECT", body, ",", "1"]
        );
        assert_eq!(kinds(body), [TokenKind::String(StringKind::Dollar)]);
        // The closing delimiter may touch other text; tags are case-sensitive.
        assert_eq!(texts("$a$ $A$ x$a$y"), ["$a$ $A$ x$a$", "y"]);
        assert_eq!(texts("$_1$x$_1$"), ["$_1$x$_1$"]);
        assert_eq!(texts("$été$x$été$"), ["$été$x$été$"]);
        let e = error(tokenize("SELECT $tag$ never closed $TAG$"));
        assert_eq!(
            e.kind,
            SqlErrorKind::UnterminatedDollarQuote {
                delimiter: "$tag$".into()
            }
        );
        assert_eq!(e.position, pos(1, 8));
        assert!(e.to_string().contains("started here with $tag$"), "{e}");
    }

    #[test]
    fn lone_dollars_and_parameters() {
        assert_eq!(texts("$1$"), ["$1", "$"]);
        assert_eq!(kinds("$1$"), [TokenKind::Parameter, TokenKind::Other]);
        assert_eq!(texts("$ x"), ["$", "x"]);
        // `$a` without a closing `$` is not a dollar quote: PostgreSQL passes on the `$`.
        assert_eq!(texts("$a + 1"), ["$", "a", "+", "1"]);
    }

    #[test]
    fn positions_count_lines_and_characters() {
        let tokens = match tokenize("SELECT 'é',\n\t\"ü\" FROM t") {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        let found: Vec<(&str, usize, Position)> = tokens
            .iter()
            .map(|t| (t.text, t.offset, t.position))
            .collect();
        assert_eq!(
            found,
            [
                ("SELECT", 0, pos(1, 1)),
                ("'é'", 7, pos(1, 8)),
                (",", 11, pos(1, 11)),
                ("\"ü\"", 14, pos(2, 2)),
                ("FROM", 19, pos(2, 6)),
                ("t", 24, pos(2, 11)),
            ]
        );
        let e = error(tokenize("SELECT 1,\n  'é' ||\n 'open"));
        assert_eq!(e.position, pos(3, 2));
        assert_eq!(
            e.to_string(),
            "line 3, column 2: unterminated quoted string (started here)\n\
             hint: close the string with '; a quote inside a string is written twice ('')"
        );
    }

    // --- splitting -------------------------------------------------------------------------

    #[test]
    fn split_ignores_semicolons_inside_strings_identifiers_comments_and_dollar_quotes() {
        let sql = "SELECT 'a;b', \"c;d\", E'\\';', $$;$$, $x$;$x$ /* ; */ -- ;\n FROM t; SELECT 2";
        assert_eq!(
            statements(sql),
            [
                "SELECT 'a;b', \"c;d\", E'\\';', $$;$$, $x$;$x$ /* ; */ -- ;\n FROM t",
                "SELECT 2"
            ]
        );
    }

    #[test]
    fn split_drops_empty_and_comment_only_statements_and_trims() {
        let sql = "  -- leading\n SELECT 1 /* inner */ + 1 -- trailing\n;; ;\n/* only a comment */;\n\
                   select 2";
        let found = match split_statements(sql) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            found,
            [
                Statement {
                    text: "SELECT 1 /* inner */ + 1".into(),
                    start: pos(2, 2)
                },
                Statement {
                    text: "select 2".into(),
                    start: pos(5, 1)
                },
            ]
        );
        assert_eq!(statements(""), Vec::<String>::new());
        assert_eq!(statements(" ;\n-- nothing"), Vec::<String>::new());
    }

    #[test]
    fn split_refuses_unterminated_constructs_with_their_start() {
        let e = error(split_statements("SELECT 1;\nSELECT 'oops;\nSELECT 3;"));
        assert_eq!(
            e.kind,
            SqlErrorKind::UnterminatedString(StringKind::Standard)
        );
        assert_eq!(e.position, pos(2, 8));
    }

    // --- classification --------------------------------------------------------------------

    #[test]
    fn reads() {
        for sql in [
            "SELECT * FROM t",
            "select 1",
            "  -- why\n/* how */ SELECT 1;",
            "(SELECT 1)",
            "((SELECT 1) UNION (SELECT 2))",
            "VALUES (1), (2)",
            "TABLE t",
            "WITH x AS (SELECT 'delete') SELECT * FROM x",
            "WITH x AS (SELECT 1) SELECT 'insert into t', \"update\" FROM x",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t FOR NO KEY UPDATE OF t SKIP LOCKED",
            "WITH x AS (SELECT * FROM t FOR UPDATE) SELECT * FROM x",
            "SELECT t.delete, t.update, a AS insert FROM t",
            "SELECT update, merge FROM t",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r",
        ] {
            assert_eq!(kind(sql), QueryKind::Read, "{sql}");
        }
    }

    #[test]
    fn writes() {
        for (sql, expected) in [
            ("INSERT INTO t VALUES (1)", WriteKind::Insert),
            ("update t set a = 1", WriteKind::Update),
            ("DELETE FROM t", WriteKind::Delete),
            (
                "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
                WriteKind::Merge,
            ),
            (
                "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
                WriteKind::Delete,
            ),
            (
                "WITH x AS MATERIALIZED (INSERT INTO t DEFAULT VALUES RETURNING id) SELECT 1",
                WriteKind::Insert,
            ),
            ("WITH x AS (SELECT 1) UPDATE t SET a = 2", WriteKind::Update),
            (
                "WITH x AS (SELECT 1) UPDATE ONLY t SET a = 2",
                WriteKind::Update,
            ),
            (
                "WITH a AS (SELECT 1), b AS (UPDATE \"T\" SET x = 1 RETURNING x) TABLE b",
                WriteKind::Update,
            ),
            (
                "with x as (merge into t using s on true when matched then delete) select 1",
                WriteKind::Merge,
            ),
            ("SELECT * INTO new_t FROM t", WriteKind::SelectInto),
            ("(SELECT 1 INTO t2)", WriteKind::SelectInto),
        ] {
            assert_eq!(kind(sql), QueryKind::Write(expected), "{sql}");
        }
    }

    #[test]
    fn others_name_their_first_word() {
        for (sql, word) in [
            ("EXPLAIN SELECT 1", "explain"),
            ("EXPLAIN ANALYZE DELETE FROM t", "explain"),
            ("CREATE TABLE t (a int)", "create"),
            ("drop table t", "drop"),
            ("DO $$ BEGIN END $$", "do"),
            ("CALL p()", "call"),
            ("COPY (DELETE FROM t RETURNING *) TO STDOUT", "copy"),
            ("SET search_path = x", "set"),
        ] {
            assert_eq!(kind(sql), QueryKind::Other(word.into()), "{sql}");
        }
        assert_eq!(kind("'text'"), QueryKind::Other("`'text'`".into()));
    }

    #[test]
    fn classify_refuses_a_second_statement() {
        let e = error(classify("SELECT 1; DELETE FROM t"));
        assert_eq!(e.position, pos(1, 11));
        assert_eq!(
            e.to_string(),
            "line 1, column 11: expected one statement, found 2 statements (the second, at line 1 \
             column 11, starts with DELETE)\nhint: pgplan runs exactly one statement; remove the \
             others (a ; inside a string, quoted identifier, comment or dollar quote is fine)"
        );
        assert_eq!(kind("SELECT 1;"), QueryKind::Read);
    }

    #[test]
    fn single_query() {
        let q = match parse_single_query(
            "-- report\nSELECT * FROM t WHERE a = $2 AND b = $10 AND c = $9;\n",
        ) {
            Ok(q) => q,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            q,
            Query {
                text: "SELECT * FROM t WHERE a = $2 AND b = $10 AND c = $9".into(),
                kind: QueryKind::Read,
                max_parameter: Some(10),
            }
        );
        let q = match parse_single_query("SELECT '$1', $$ $3 $$, \"$4\", x$5 /* $6 */ -- $7") {
            Ok(q) => q,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(q.max_parameter, None);

        let e = error(parse_single_query("SELECT $0"));
        assert_eq!(e.kind, SqlErrorKind::ParameterZero);
        assert_eq!(e.position, pos(1, 8));
        let e = error(parse_single_query("SELECT $99999999999"));
        assert_eq!(
            e.kind,
            SqlErrorKind::ParameterOutOfRange {
                text: "$99999999999".into()
            }
        );
        let e = error(parse_single_query(" -- nothing\n"));
        assert_eq!(
            e.to_string(),
            "line 1, column 1: expected one statement, found none (the text is empty or only \
             comments)\nhint: give pgplan the query to explain"
        );
        let e = error(parse_single_query(
            "SELECT 1;\n\n  /* x */ SELECT 2; SELECT 3",
        ));
        assert_eq!(
            e.kind,
            SqlErrorKind::MultipleStatements {
                expected: Expectation::Query,
                count: 3,
                second: pos(3, 11),
                starts_with: "SELECT".into(),
            }
        );
    }

    // --- candidate indexes -----------------------------------------------------------------

    #[test]
    fn plain_named_index_is_kept_as_written() {
        let c = candidate("CREATE INDEX idx_t_a ON t (a);");
        assert_eq!(
            c,
            IndexCandidate {
                original: "CREATE INDEX idx_t_a ON t (a)".into(),
                sql: "CREATE INDEX idx_t_a ON t (a)".into(),
                name: "idx_t_a".into(),
                name_generated: false,
                description: "idx_t_a".into(),
                concurrently: false,
                unique: false,
                table: "t".into(),
                method: None,
                definition: "ON t (a)".into(),
            }
        );
    }

    #[test]
    fn unnamed_index_gets_the_generated_name() {
        let c = candidate("create index on t (a)");
        assert_eq!(c.sql, "create index pgplan_candidate_1 on t (a)");
        assert_eq!(c.definition, "on t (a)");
        assert_eq!(c.name, "pgplan_candidate_1");
        // Messages never show the placeholder.
        assert_eq!(c.describe(), "unnamed index on t (a)");
        assert!(c.name_generated);
        // Generated names are quoted when they need it.
        let c = match parse_index_candidate("CREATE INDEX ON t (a)", "Cand 1") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(c.sql, "CREATE INDEX \"Cand 1\" ON t (a)");
        assert_eq!(c.name, "Cand 1");
    }

    #[test]
    fn concurrently_is_removed_cleanly() {
        let c = candidate("CREATE INDEX CONCURRENTLY ON t (a)");
        assert_eq!(c.sql, "CREATE INDEX pgplan_candidate_1 ON t (a)");
        assert!(c.concurrently);
        let c = candidate("CREATE UNIQUE INDEX concurrently IF NOT EXISTS idx ON t (a)");
        assert_eq!(c.sql, "CREATE UNIQUE INDEX idx ON t (a)");
        assert!(c.unique && c.concurrently);
        assert_eq!(c.name, "idx");
        let c = candidate("CREATE INDEX\n    CONCURRENTLY\n    idx\n    ON t (a)");
        assert_eq!(c.sql, "CREATE INDEX\n    idx\n    ON t (a)");
        let c = candidate("CREATE INDEX CONCURRENTLY\"Idx\" ON t (a)");
        assert_eq!(c.sql, "CREATE INDEX\"Idx\" ON t (a)");
        assert_eq!(c.name, "Idx");
        let c = candidate("CREATE INDEX/*a*/CONCURRENTLY/*b*/ON t (a)");
        assert_eq!(c.sql, "CREATE INDEX/*a*/ /*b*/pgplan_candidate_1 ON t (a)");
    }

    #[test]
    fn every_valid_form_is_preserved() {
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            (
                "CREATE INDEX \"Weird Name\" ON s.\"T\" USING gin (doc jsonb_path_ops)",
                "Weird Name",
                "s.\"T\"",
                Some("gin"),
            ),
            ("CREATE INDEX idx ON ONLY parent (a)", "idx", "parent", None),
            (
                "CREATE INDEX idx ON ONLY (parent) (a)",
                "idx",
                "parent",
                None,
            ),
            ("CREATE INDEX idx ON t * (a)", "idx", "t", None),
            (
                "CREATE INDEX Idx_Partial ON public.orders (created_at) WHERE status = 'open;'",
                "idx_partial",
                "public.orders",
                None,
            ),
            (
                "CREATE UNIQUE INDEX u ON t (a) INCLUDE (b, c) NULLS NOT DISTINCT",
                "u",
                "t",
                None,
            ),
            (
                "CREATE INDEX e ON t ((lower(email)) text_pattern_ops, (a + b) DESC NULLS LAST)",
                "e",
                "t",
                None,
            ),
            (
                "CREATE INDEX c ON t (name COLLATE \"C\" varchar_pattern_ops ASC)",
                "c",
                "t",
                None,
            ),
            (
                "CREATE INDEX w ON t USING BTREE (a) WITH (fillfactor = 70, deduplicate_items = off) \
                 TABLESPACE fast",
                "w",
                "t",
                Some("btree"),
            ),
            (
                "CREATE INDEX o ON t USING gist (g gist_trgm_ops(siglen = 32))",
                "o",
                "t",
                Some("gist"),
            ),
            ("CREATE INDEX if ON t (a)", "if", "t", None),
            (
                "CREATE INDEX IF NOT EXISTS exists ON t (a)",
                "exists",
                "t",
                None,
            ),
            (
                "CREATE /* why */ INDEX -- because\n idx ON db.s.t (a)",
                "idx",
                "db.s.t",
                None,
            ),
            ("CREATE INDEX idx ON s . t (a)", "idx", "s.t", None),
            (
                "CREATE INDEX U&\"d\\0061t\\+000061\" ON t (a)",
                "data",
                "t",
                None,
            ),
            (
                "CREATE INDEX U&\"d!0061t\" UESCAPE '!' ON t (a)",
                "dat",
                "t",
                None,
            ),
            (
                "CREATE INDEX idx ON U&\"t!0061\" UESCAPE '!' (a)",
                "idx",
                "U&\"t!0061\" UESCAPE '!'",
                None,
            ),
            (
                "CREATE INDEX idx ON t USING \"hash\" (a)",
                "idx",
                "t",
                Some("hash"),
            ),
        ];
        for &(sql, name, table, method) in cases {
            let c = candidate(sql);
            assert_eq!(c.original, sql);
            // IF NOT EXISTS is the one clause pgplan removes (a clash must fail, not be skipped).
            let expected = sql.replacen("IF NOT EXISTS ", "", 1);
            assert_eq!(c.sql, expected, "nothing else to change in {sql}");
            assert_eq!(c.name, name, "{sql}");
            assert_eq!(c.table, table, "{sql}");
            assert_eq!(c.method.as_deref(), method, "{sql}");
            assert!(!c.name_generated && !c.concurrently);
        }
    }

    #[test]
    fn rewritten_sql_differs_from_the_original_only_where_intended() {
        for sql in [
            "CREATE INDEX CONCURRENTLY ON t (a)",
            "CREATE UNIQUE INDEX CONCURRENTLY idx ON ONLY p USING gin (a) WHERE b > 'x''y'",
            "create index concurrently if not exists \"I\" on s.t (a) include (b)",
            "CREATE INDEX /* c */ ON t ((a || ';'))",
            "CREATE INDEX/**/CONCURRENTLY/**/ON t (a)",
            "CREATE\tINDEX\tCONCURRENTLY\tON\tt(a)",
        ] {
            let c = candidate(sql);
            let mut expected: Vec<String> = texts(sql)
                .into_iter()
                .filter(|t| !t.eq_ignore_ascii_case("concurrently"))
                .map(String::from)
                .collect();
            // IF NOT EXISTS goes too (none of these statements uses those words otherwise).
            expected.retain(|t| !["if", "not", "exists"].contains(&t.to_lowercase().as_str()));
            if c.name_generated {
                let on = expected.iter().position(|t| t.eq_ignore_ascii_case("on"));
                let Some(on) = on else {
                    panic!("no ON in {sql}")
                };
                expected.insert(on, quote_ident(&c.name));
            }
            let got: Vec<String> = texts(&c.sql).into_iter().map(String::from).collect();
            assert_eq!(got, expected, "{sql} became {}", c.sql);
            assert!(!c.sql.contains("  "), "double space in {:?}", c.sql);
        }
    }

    #[test]
    fn long_names_are_cut_like_postgresql_cuts_them() {
        let long = "a".repeat(70);
        let c = candidate(&format!("CREATE INDEX {long} ON t (a)"));
        assert_eq!(c.name, "a".repeat(63));
        // A multibyte character straddling byte 63 is dropped whole.
        let name = format!("{}é", "a".repeat(62));
        let c = candidate(&format!("CREATE INDEX \"{name}x\" ON t (a)"));
        assert_eq!(c.name, "a".repeat(62));
    }

    #[test]
    fn candidate_refusals_name_what_was_found() {
        let cases: &[(&str, &str)] = &[
            (
                "CREATE TABLE t (a int)",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found CREATE TABLE",
            ),
            (
                "create or replace function f() returns int as $$select 1$$ language sql",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found CREATE OR \
                 REPLACE FUNCTION",
            ),
            (
                "DROP INDEX idx",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found DROP INDEX",
            ),
            (
                "DO $$ BEGIN PERFORM 1; END $$",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found DO",
            ),
            (
                "SELECT create_index('t')",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found SELECT",
            ),
            (
                "CREATE UNIQUE TABLE t",
                "line 1, column 1: expected one CREATE [UNIQUE] INDEX statement, found CREATE \
                 UNIQUE TABLE",
            ),
            (
                "CREATE INDEX ON t (a); DROP TABLE x",
                "line 1, column 24: expected one CREATE [UNIQUE] INDEX statement, found 2 \
                 statements (the second, at line 1 column 24, starts with DROP)",
            ),
            (
                "CREATE INDEX IF NOT EXISTS ON t (a)",
                "line 1, column 14: IF NOT EXISTS needs an index name after it",
            ),
            (
                "CREATE INDEX select ON t (a)",
                "line 1, column 14: select is a reserved keyword, so it cannot be an unquoted index \
                 name",
            ),
            (
                "CREATE INDEX idx t (a)",
                "line 1, column 18: expected ON after the index name, found `t`",
            ),
            (
                "CREATE INDEX s.idx ON t (a)",
                "line 1, column 15: expected ON after the index name, found `.`",
            ),
            (
                "CREATE INDEX ON (a)",
                "line 1, column 17: expected a table name after ON, found `(`",
            ),
            (
                "CREATE INDEX idx ON t",
                "line 1, column 22: expected `(` and the indexed columns after the table name, \
                 found the end of the statement",
            ),
            (
                "CREATE INDEX idx ON t USING (a)",
                "line 1, column 29: expected an index method after USING, found `(`",
            ),
            (
                "CREATE INDEX idx ON t (lower(a)",
                "line 1, column 23: unbalanced parentheses: this `(` is never closed",
            ),
            (
                "CREATE INDEX idx ON t (a))",
                "line 1, column 26: unbalanced parentheses: this `)` has no matching `(`",
            ),
            (
                "CREATE INDEX idx ON t (a) WHERE b = $1",
                "line 1, column 37: parameter $1 cannot appear in CREATE INDEX",
            ),
            (
                "CREATE INDEX IF NOT idx ON t (a)",
                "line 1, column 21: expected EXISTS after IF NOT, found `idx`",
            ),
        ];
        for &(sql, message) in cases {
            let e = error(parse_index_candidate(sql, "gen"));
            let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
            assert_eq!(first_line, message, "{sql}");
        }
    }

    #[test]
    fn candidate_hints() {
        let e = error(parse_index_candidate(
            "CREATE INDEX IF NOT EXISTS ON t (a)",
            "gen",
        ));
        assert_eq!(
            e.hint().as_deref(),
            Some(
                "PostgreSQL rejects IF NOT EXISTS without a name: name the index (CREATE INDEX IF \
                 NOT EXISTS my_index ON ...) or drop IF NOT EXISTS and pgplan names it"
            )
        );
        let e = error(parse_index_candidate("CREATE TABLE t ()", "gen"));
        assert!(
            e.to_string()
                .ends_with(&format!("\nhint: {INDEX_SYNOPSIS}")),
            "{e}"
        );
        let e = error(parse_index_candidate("  -- nothing here\n", "gen"));
        assert_eq!(
            e.kind,
            SqlErrorKind::NoStatement {
                expected: Expectation::IndexCandidate
            }
        );
        let e = error(parse_index_candidate("CREATE INDEX ON t (a)", ""));
        assert_eq!(e.kind, SqlErrorKind::EmptyGeneratedName);
    }

    #[test]
    fn index_files() {
        let file = "-- candidates for the orders report\n\
                    CREATE INDEX ON orders (customer_id);\n\
                    CREATE INDEX CONCURRENTLY orders_open ON orders (created_at) WHERE open;\n\
                    \n\
                    create unique index on orders using btree (lower(code));\n";
        let candidates = match parse_index_file(file, "pgplan_idx") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let summary: Vec<(&str, &str, bool)> = candidates
            .iter()
            .map(|c| (c.name.as_str(), c.sql.as_str(), c.name_generated))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "pgplan_idx_1",
                    "CREATE INDEX pgplan_idx_1 ON orders (customer_id)",
                    true
                ),
                (
                    "orders_open",
                    "CREATE INDEX orders_open ON orders (created_at) WHERE open",
                    false
                ),
                (
                    "pgplan_idx_3",
                    "create unique index pgplan_idx_3 on orders using btree (lower(code))",
                    true
                ),
            ]
        );
        assert_eq!(parse_index_file("-- none yet\n", "p"), Ok(Vec::new()));
    }

    #[test]
    fn index_file_errors_point_into_the_file() {
        let file = "CREATE INDEX ON t (a);\n\nCREATE INDEX a_idx ON t (b);\n  DROP TABLE t;\n";
        let e = error(parse_index_file(file, "p"));
        assert_eq!(
            e.to_string().lines().next(),
            Some(
                "line 4, column 3: expected one CREATE [UNIQUE] INDEX statement, found DROP TABLE"
            )
        );
        let file = "CREATE INDEX Dup ON t (a);\nCREATE INDEX dup ON t (b);";
        let e = error(parse_index_file(file, "p"));
        assert_eq!(
            e.to_string().lines().next(),
            Some(
                "line 2, column 14: index name dup is used by statement 1 and again by statement 2"
            )
        );
        // A generated name can collide with one the user chose.
        let file = "CREATE INDEX p_2 ON t (a);\nCREATE INDEX ON t (b);";
        let e = error(parse_index_file(file, "p"));
        assert_eq!(
            e.kind,
            SqlErrorKind::DuplicateIndexName {
                name: "p_2".into(),
                first: 1,
                second: 2
            }
        );
        assert_eq!(e.position, pos(2, 1));
        let e = error(parse_index_file(
            "CREATE INDEX ON t (a);\nCREATE INDEX ON t ($$a)",
            "p",
        ));
        assert_eq!(e.position, pos(2, 20));
    }

    // --- quoting ---------------------------------------------------------------------------

    #[test]
    fn long_statements_are_shortened_in_messages() {
        assert_eq!(shorten("ON t\n   (a)"), "ON t (a)");
        let long = format!("ON t (({}))", "a + ".repeat(1000));
        let short = shorten(&long);
        assert!(short.ends_with("… (4,009 characters in all)"), "{short}");
        assert_eq!(
            short.chars().count(),
            SHORTEN_CHARS + "… (4,009 characters in all)".chars().count()
        );
    }

    #[test]
    fn quote_ident_spells_control_characters_as_unicode_escapes() {
        assert_eq!(
            quote_ident_to_show("bad\u{1b}[31mname"),
            "U&\"bad\\001B[31mname\""
        );
        assert_eq!(
            quote_ident_to_show("a\u{7}\"b\\c"),
            "U&\"a\\0007\"\"b\\\\c\""
        );
        assert_eq!(quote_ident_to_show("Orders"), "\"Orders\"");
    }

    #[test]
    fn quote_ident_quotes_only_when_needed() {
        for (name, quoted) in [
            ("orders", "orders"),
            ("_x1", "_x1"),
            ("idx$1", "\"idx$1\""),
            ("Orders", "\"Orders\""),
            ("1st", "\"1st\""),
            ("with space", "\"with space\""),
            ("a\"b", "\"a\"\"b\""),
            ("", "\"\""),
            ("café", "\"café\""),
            ("select", "\"select\""),
            ("user", "\"user\""),
            ("concurrently", "\"concurrently\""),
            ("left", "\"left\""),
            ("between", "\"between\""),
            ("values", "\"values\""),
            ("index", "index"),
            ("delete", "delete"),
            ("name", "name"),
        ] {
            assert_eq!(quote_ident(name), quoted, "{name}");
        }
    }

    #[test]
    fn quote_literal_doubles_quotes_only() {
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal(r"C:\dir\"), r"'C:\dir\'");
        assert_eq!(quote_literal(""), "''");
        assert_eq!(quote_literal("''"), "''''''");
    }

    #[test]
    fn quoted_output_reads_back_as_the_same_token() {
        for name in ["Weird Name", "a\"b", "select", "x;y", "1st", "plain"] {
            let quoted = quote_ident(name);
            let c = candidate(&format!("CREATE INDEX {quoted} ON t (a)"));
            assert_eq!(c.name, name);
        }
        for value in ["it's", r"back\slash", "semi;colon", "--"] {
            let literal = quote_literal(value);
            assert_eq!(
                texts(&format!("SELECT {literal}")),
                ["SELECT", literal.as_str()]
            );
        }
    }

    #[test]
    fn keyword_lists_are_sorted_for_binary_search() {
        for list in [
            RESERVED_KEYWORDS,
            TYPE_FUNC_NAME_KEYWORDS,
            COL_NAME_KEYWORDS,
        ] {
            for pair in list.windows(2) {
                assert!(pair[0] < pair[1], "{} sorts before {}", pair[1], pair[0]);
            }
            // What is_quoted_keyword's shortcut assumes of every keyword.
            for word in list {
                assert!(word.len() <= LONGEST_KEYWORD, "{word}");
                assert!(
                    word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{word}"
                );
            }
        }
        assert!(quote_ident("User").starts_with('"'));
        assert_eq!(quote_ident("t1_select"), "t1_select");
        assert_eq!(quote_ident("current_timestamp"), "\"current_timestamp\"");
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(
            decode_unicode_escapes("d\\0061t\\+000061", '\\'),
            Ok("data".into())
        );
        assert_eq!(decode_unicode_escapes("\\\\x", '\\'), Ok("\\x".into()));
        assert_eq!(
            decode_unicode_escapes("\\D83D\\DE00", '\\'),
            Ok("😀".into())
        );
        assert!(decode_unicode_escapes("\\D83D", '\\').is_err());
        assert!(decode_unicode_escapes("\\DE00", '\\').is_err());
        assert!(decode_unicode_escapes("\\12", '\\').is_err());
        assert!(decode_unicode_escapes("\\0000", '\\').is_err());
        let e = error(parse_index_candidate(
            "CREATE INDEX U&\"\\zzzz\" ON t (a)",
            "g",
        ));
        assert!(
            matches!(e.kind, SqlErrorKind::InvalidUnicodeEscape { .. }),
            "{e}"
        );
        let e = error(parse_index_candidate(
            "CREATE INDEX U&\"a\" UESCAPE 'a' ON t (a)",
            "g",
        ));
        assert!(
            matches!(e.kind, SqlErrorKind::InvalidUnicodeEscape { .. }),
            "{e}"
        );
    }

    // --- robustness --------------------------------------------------------------------------

    fn exercise(sql: &str) {
        let _ = tokenize(sql);
        let _ = split_statements(sql);
        let _ = classify(sql);
        let _ = parse_single_query(sql);
        let _ = parse_index_candidate(sql, "g");
        let _ = parse_index_file(sql, "g");
        let _ = quote_ident(sql);
        let _ = quote_literal(sql);
        if let Err(e) = tokenize(sql) {
            let _ = e.to_string();
        }
    }

    #[test]
    fn odd_input_never_panics() {
        let odd = [
            "",
            " ",
            ";",
            ";;;",
            "'",
            "\"",
            "$",
            "$$",
            "$1$",
            "$a",
            "$a$",
            "$0",
            "$$$",
            "E'",
            "E'\\",
            "U&",
            "U&'",
            "U&\"",
            "U&\"\"",
            "B'",
            "X'",
            "N'",
            "/*",
            "/* /* */",
            "*/",
            "--",
            "-",
            "/",
            "'a'\n",
            "'a'\n'",
            "'a' --\n'",
            "\"\"",
            "\"\"\"",
            "é",
            "😀'",
            "\u{0}",
            "\\",
            "{",
            "::",
            ":=",
            "..",
            ".",
            "0x",
            "0b2",
            "1e",
            "1e+",
            "1_",
            "1__2",
            "CREATE",
            "CREATE INDEX",
            "CREATE INDEX IF",
            "CREATE INDEX IF NOT",
            "CREATE INDEX IF NOT EXISTS",
            "CREATE INDEX ON",
            "CREATE INDEX ON ONLY",
            "CREATE INDEX ON ONLY (",
            "CREATE INDEX ON t.",
            "CREATE INDEX ON t USING",
            "CREATE INDEX U&\"x\" UESCAPE",
            "CREATE INDEX U&\"x\" UESCAPE '",
            "CREATE INDEX CONCURRENTLY",
            "WITH",
            "(",
            "((",
            ")",
            "( SELECT",
            "SELECT $4294967296",
            "SELECT $4294967295",
            "UPDATE",
            "WITH x AS (UPDATE",
            "e'\\'",
            "$é$ $é",
            "a$$b$$",
        ];
        for sql in odd {
            exercise(sql);
        }
        // A small deterministic fuzz over the characters that matter to the scanner.
        let alphabet: Vec<char> = "'\"$;/*-\\\n\r\t ()eEuU&xXbBnN01_.:+éCREATINDXONWHLSUPq"
            .chars()
            .collect();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..3000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 24) as usize;
            let mut s = String::new();
            let mut x = state;
            for _ in 0..len {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                s.push(alphabet[(x >> 33) as usize % alphabet.len()]);
            }
            exercise(&s);
            exercise(&format!("CREATE INDEX {s}"));
            exercise(&format!("CREATE INDEX ON t ({s})"));
        }
    }
}
