//! pg_stat_statements' entries as a workload: which are pgplan's own (its catalog reads and
//! `EXPLAIN` runs show in the view after any pgplan command), which can be run after a rewrite
//! (a typed literal `interval '2 days'` is stored as `interval $1`, which PREPARE refuses), and
//! which cannot be run at all, set aside with the reason and the time they account for.

use serde::Serialize;

use crate::sql::{self, Query, QueryKind, SqlErrorKind, Token, TokenKind};

/// A statement of the view left out of the workload: what it is and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedStatement {
    /// The queryid.
    pub id: String,
    /// The text as the view holds it.
    pub text: String,
    pub reason: String,
    pub calls: Option<f64>,
    /// Its execution time as the view counts it, for the share of the workload's time.
    pub total_exec_ms: Option<f64>,
}

/// What the view's statements came to: those set aside, and the time of every one read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Screening {
    pub skipped: Vec<SkippedStatement>,
    /// (queryid, total_exec_ms) of every statement read into the workload, pgplan's own aside.
    pub read: Vec<(String, f64)>,
    /// pgplan's own statements left out.
    pub own_left_out: usize,
    /// Transaction-control and session statements left out.
    pub control_left_out: usize,
}

impl Screening {
    /// The execution time of the statements read, None when none was.
    pub fn read_exec_ms(&self) -> Option<f64> {
        (!self.read.is_empty()).then(|| self.read.iter().map(|(_, ms)| ms).sum())
    }

    /// The share of the workload's time the skipped statements account for.
    pub fn skipped_share(&self) -> Option<f64> {
        skipped_share(&self.skipped, self.read_exec_ms())
    }

    /// Sets a statement of the workload aside after it was read (it failed to plan).
    pub fn skip(&mut self, source: &super::SourceQuery, reason: String) {
        let total_exec_ms = source
            .queryid
            .as_ref()
            .and_then(|id| self.read.iter().find(|(q, _)| q == id))
            .map(|(_, ms)| *ms);
        self.skipped.push(SkippedStatement {
            id: source.id.clone(),
            text: source.query.text.clone(),
            reason,
            calls: source.calls,
            total_exec_ms,
        });
    }
}

/// The share of the time of the statements read that the skipped ones account for, from 0 to
/// 1; None when nothing was counted.
pub fn skipped_share(skipped: &[SkippedStatement], statements_exec_ms: Option<f64>) -> Option<f64> {
    let total = statements_exec_ms.filter(|t| *t > 0.0)?;
    let skipped: f64 = skipped.iter().filter_map(|s| s.total_exec_ms).sum();
    Some((skipped / total).clamp(0.0, 1.0))
}

/// What one entry of the view is to the workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Screened {
    /// A statement pgplan itself sends: never part of a workload.
    Own,
    /// Transaction control or a session command (`BEGIN`, `SET`, `SHOW`...): not a query, and
    /// no time of a workload's.
    Control,
    /// Cannot be run; the reason.
    Skip(String),
    /// A query to measure, with the rewrites it took to make it one (empty when none).
    Query { query: Query, rewrites: Vec<String> },
}

/// Sorts one entry of the view.
pub fn screen(text: &str) -> Screened {
    let tokens = match sql::tokenize(text) {
        Ok(t) => t,
        Err(e) => {
            return Screened::Skip(format!(
                "pgplan cannot read its text ({}); a text cut short ends inside a string, \
                 identifier or comment like this",
                e.kind
            ));
        }
    };
    if is_own(&tokens) {
        return Screened::Own;
    }
    if tokens
        .iter()
        .find(|t| t.text != "(")
        .is_some_and(|t| CONTROL.iter().any(|k| t.is_keyword(k)))
    {
        return Screened::Control;
    }
    let (rewritten, rewrites) = rewrite_typed_literals(text, &tokens);
    match sql::parse_single_query(&rewritten) {
        Ok(query) => match &query.kind {
            QueryKind::Other(keyword) => Screened::Skip(format!(
                "{}: a utility or DDL statement, not a query to measure",
                keyword.to_uppercase()
            )),
            _ => Screened::Query { query, rewrites },
        },
        Err(e) if matches!(e.kind, SqlErrorKind::MultipleStatements { .. }) => {
            Screened::Skip(format!(
                "several statements in one text ({}): pgplan measures one query at a time",
                e.kind
            ))
        }
        Err(e) => Screened::Skip(format!("pgplan cannot read it as one query ({})", e.kind)),
    }
}

/// Statements that control a transaction or a session rather than read or write data.
const CONTROL: &[&str] = &[
    "begin",
    "start",
    "commit",
    "end",
    "rollback",
    "abort",
    "savepoint",
    "release",
    "set",
    "reset",
    "show",
    "discard",
    "deallocate",
    "prepare",
    "listen",
    "unlisten",
];

/// Type names PostgreSQL accepts in a typed literal (`type 'string'`) whose `$n` form PREPARE
/// refuses: the grammar's `ConstTypename 'literal'` (AexprConst) wants a string constant, so
/// `interval $1` is a syntax error.
const LITERAL_TYPES: &[&str] = &[
    "interval",
    "date",
    "time",
    "timetz",
    "timestamp",
    "timestamptz",
    "numeric",
    "decimal",
    "int",
    "integer",
    "int2",
    "int4",
    "int8",
    "smallint",
    "bigint",
    "real",
    "float",
    "float4",
    "float8",
    "boolean",
    "bool",
    "text",
    "varchar",
    "char",
    "character",
    "bpchar",
    "uuid",
    "json",
    "jsonb",
    "inet",
    "cidr",
    "macaddr",
    "bytea",
    "money",
    "point",
    "tsquery",
    "tsvector",
];

/// `interval $1` → `$1::interval`, `timestamp with time zone $2` → `$2::timestamp with time
/// zone`: the same value of the same type, in a form PREPARE takes. Returns the text and one
/// line per rewrite.
pub fn rewrite_typed_literals(text: &str, tokens: &[Token<'_>]) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rewrites = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let is_type = t.kind == TokenKind::Word
            && LITERAL_TYPES.iter().any(|k| t.text.eq_ignore_ascii_case(k))
            // `t.date $1` is not a literal, and neither is `::date $1`.
            && !i
                .checked_sub(1)
                .is_some_and(|p| tokens[p].text == "." || tokens[p].text == "::");
        if !is_type {
            i += 1;
            continue;
        }
        // The type's own words: `with time zone`, `without time zone`, `varying`, `precision`.
        let mut end = i;
        let word = |j: usize, w: &str| tokens.get(j).is_some_and(|t| t.is_keyword(w));
        if (word(end + 1, "with") || word(end + 1, "without"))
            && word(end + 2, "time")
            && word(end + 3, "zone")
        {
            end += 3;
        } else if word(end + 1, "varying") || word(end + 1, "precision") {
            end += 1;
        }
        let Some(param) = tokens
            .get(end + 1)
            .filter(|p| p.kind == TokenKind::Parameter)
        else {
            i = end + 1;
            continue;
        };
        let type_text = &text[t.offset..tokens[end].end()];
        out.push_str(&text[copied..t.offset]);
        out.push_str(&format!("{}::{}", param.text, type_text));
        rewrites.push(format!(
            "{type_text} {p} became {p}::{type_text} (the view keeps a typed literal's value as a parameter PREPARE refuses there)",
            p = param.text
        ));
        copied = param.end();
        i = end + 2;
    }
    out.push_str(&text[copied..]);
    (out, rewrites)
}

/// `$n` → `$n::type` at every use: for a parameter whose type the server cannot determine
/// (`SELECT $1`, where the original literal was untyped), cast as the literal would have been
/// read (`text`, PostgreSQL's resolution of an unknown literal with no other context).
pub fn cast_parameter(text: &str, n: u32, type_name: &str) -> String {
    let Ok(tokens) = sql::tokenize(text) else {
        return text.to_owned();
    };
    let wanted = format!("${n}");
    let mut out = String::with_capacity(text.len() + 8);
    let mut copied = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind == TokenKind::Parameter
            && t.text == wanted
            && tokens.get(i + 1).is_none_or(|n| n.text != "::")
        {
            out.push_str(&text[copied..t.end()]);
            out.push_str("::");
            out.push_str(type_name);
            copied = t.end();
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The parameter the server could not type, from its message ("could not determine data type
/// of parameter $2", SQLSTATE 42P18).
pub fn undetermined_parameter(message: &str) -> Option<u32> {
    let at = message.find("of parameter $")? + "of parameter $".len();
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The parameters compared with a column through `= ANY($n)` (how the view stores a constant
/// array, `= ANY('{1,2}')`, and how drivers send a list): the column each is compared with, to
/// sample a value of it as a one-element array.
pub fn any_array_uses(tokens: &[Token<'_>], max: u32) -> Vec<Option<super::params::ParamUse>> {
    let mut uses = vec![None; max as usize];
    let ident = |t: &Token<'_>| match t.kind {
        TokenKind::Word => Some(t.text.to_ascii_lowercase()),
        TokenKind::QuotedIdentifier => Some(t.text.trim_matches('"').replace("\"\"", "\"")),
        _ => None,
    };
    for (i, t) in tokens.iter().enumerate() {
        // col = ANY ( $n )
        if t.kind != TokenKind::Parameter
            || i < 4
            || tokens.get(i + 1).is_none_or(|c| c.text != ")")
            || tokens[i - 1].text != "("
            || !tokens[i - 2].is_keyword("any")
            || tokens[i - 3].text != "="
        {
            continue;
        }
        let Some(n) = t.text[1..]
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max as usize).contains(n))
        else {
            continue;
        };
        let Some(column) = ident(&tokens[i - 4]) else {
            continue;
        };
        let qualifier = (i >= 6 && tokens[i - 5].text == ".")
            .then(|| ident(&tokens[i - 6]))
            .flatten();
        uses[n - 1] = Some(super::params::ParamUse::Column { qualifier, column });
    }
    uses
}

/// A value as a one-element array literal: `pending` → `{"pending"}`.
pub fn one_element_array(value: &str) -> String {
    format!(
        "{{\"{}\"}}",
        value.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// Every statement in `queries/`, as pgplan sends it.
const OWN_QUERIES: &[&str] = &[
    include_str!("../../../queries/advise_columns.sql"),
    include_str!("../../../queries/advise_indexes.sql"),
    include_str!("../../../queries/advise_tables.sql"),
    include_str!("../../../queries/advise_taken_names.sql"),
    include_str!("../../../queries/analyze_counters.sql"),
    include_str!("../../../queries/audit_activity.sql"),
    include_str!("../../../queries/audit_columns.sql"),
    include_str!("../../../queries/audit_columns_statistic.sql"),
    include_str!("../../../queries/audit_database.sql"),
    include_str!("../../../queries/audit_database_conflicts.sql"),
    include_str!("../../../queries/audit_foreign_keys.sql"),
    include_str!("../../../queries/audit_index_builds.sql"),
    include_str!("../../../queries/audit_index_definitions.sql"),
    include_str!("../../../queries/audit_indexes.sql"),
    include_str!("../../../queries/audit_locks.sql"),
    include_str!("../../../queries/audit_prepared_xacts.sql"),
    include_str!("../../../queries/audit_replication_slots.sql"),
    include_str!("../../../queries/audit_session_locks.sql"),
    include_str!("../../../queries/audit_sessions.sql"),
    include_str!("../../../queries/audit_settings.sql"),
    include_str!("../../../queries/audit_standbys.sql"),
    include_str!("../../../queries/audit_tables.sql"),
    include_str!("../../../queries/buffercache_evict_buffers.sql"),
    include_str!("../../../queries/buffercache_evict_relations.sql"),
    include_str!("../../../queries/build_table_size.sql"),
    include_str!("../../../queries/check_planner_settings.sql"),
    include_str!("../../../queries/drop_index_target.sql"),
    include_str!("../../../queries/function_bodies.sql"),
    include_str!("../../../queries/hypopg_create_index.sql"),
    include_str!("../../../queries/hypopg_drop_index.sql"),
    include_str!("../../../queries/hypopg_hide_index.sql"),
    include_str!("../../../queries/hypopg_index_size.sql"),
    include_str!("../../../queries/hypopg_unhide_index.sql"),
    include_str!("../../../queries/index_by_name.sql"),
    include_str!("../../../queries/index_facts.sql"),
    include_str!("../../../queries/index_names.sql"),
    include_str!("../../../queries/lasting_state.sql"),
    include_str!("../../../queries/live_extended_stats.sql"),
    include_str!("../../../queries/live_session_settings.sql"),
    include_str!("../../../queries/live_table_stats.sql"),
    include_str!("../../../queries/lock_holders.sql"),
    include_str!("../../../queries/sequence_values.sql"),
    include_str!("../../../queries/server_facts.sql"),
    include_str!("../../../queries/stats_columns.sql"),
    include_str!("../../../queries/stats_force_next_flush.sql"),
    include_str!("../../../queries/stats_report_pending.sql"),
    include_str!("../../../queries/stats_restore_attribute.sql"),
    include_str!("../../../queries/stats_restore_relation.sql"),
    include_str!("../../../queries/stats_schema_tables.sql"),
    include_str!("../../../queries/stats_table.sql"),
    include_str!("../../../queries/table_estimates.sql"),
    include_str!("../../../queries/table_ownership.sql"),
    include_str!("../../../queries/table_row_changes.sql"),
    include_str!("../../../queries/trigger_sources.sql"),
    include_str!("../../../queries/trigger_functions.sql"),
    include_str!("../../../queries/workload_column_stats.sql"),
    include_str!("../../../queries/workload_extension.sql"),
    include_str!("../../../queries/workload_index_entries.sql"),
    include_str!("../../../queries/workload_relation_name.sql"),
    include_str!("../../../queries/workload_relation_pages.sql"),
    include_str!("../../../queries/workload_sample_value.sql"),
    include_str!("../../../queries/workload_statements.sql"),
    include_str!("../../../queries/workload_statements_window.sql"),
    include_str!("../../../queries/workload_table_activity.sql"),
    include_str!("../../../queries/write_probe_blockers.sql"),
    include_str!("../../../queries/writer_waits.sql"),
];

/// The `EXPLAIN` option lists pgplan runs with (`db::explain::explain_sql` and the write probe).
const OWN_EXPLAINS: &[&str] = &[
    "explain ( analyze , buffers , verbose , settings , format json )",
    "explain ( verbose , settings , format json )",
    "explain ( analyze , buffers , wal , format json )",
];

/// Statements pgplan writes inline rather than in `queries/`.
const OWN_INLINE: &[&str] = &["SELECT pg_export_snapshot()"];

/// A statement's tokens with every constant and parameter as `?` (the view replaces
/// constants with `$n`), a list of them as one (PostgreSQL 18 squashes `IN (1, 2, 3)` to
/// `IN ($1 /*, ... */)`), words in lower case, and `{{placeholder}}` as `*`.
fn fingerprint(tokens: &[Token<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.text == "{" && tokens.get(i + 1).is_some_and(|n| n.text == "{") {
            // A placeholder db/ fills in: matches anything.
            let mut j = i + 2;
            while j < tokens.len() && tokens[j].text != "}" {
                j += 1;
            }
            out.push("*".into());
            i = j + 2;
            continue;
        }
        let token = match t.kind {
            TokenKind::Number | TokenKind::String(_) | TokenKind::Parameter => "?".to_owned(),
            // The view replaces these constants too.
            TokenKind::Word
                if ["true", "false", "null"]
                    .iter()
                    .any(|k| t.text.eq_ignore_ascii_case(k)) =>
            {
                "?".to_owned()
            }
            TokenKind::Word => t.text.to_ascii_lowercase(),
            TokenKind::Semicolon => {
                i += 1;
                continue;
            }
            _ => t.text.to_owned(),
        };
        // A negative constant is one constant to the view: `-1` is `$1`.
        if token == "?" && out.last().is_some_and(|l| l == "-") {
            out.pop();
        }
        // `? , ?` → `?`.
        if token == "?" && out.len() >= 2 && out[out.len() - 1] == "," && out[out.len() - 2] == "?"
        {
            out.pop();
        } else {
            out.push(token);
        }
        i += 1;
    }
    out
}

/// Whether `text` matches `pattern`, where `*` in the pattern stands for any run of tokens.
fn matches(pattern: &[String], text: &[String]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((p, rest)) if p == "*" => (0..=text.len()).any(|k| matches(rest, &text[k..])),
        Some((p, rest)) => text.first() == Some(p) && matches(rest, &text[1..]),
    }
}

fn own_patterns() -> &'static [Vec<String>] {
    static PATTERNS: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        OWN_QUERIES
            .iter()
            .chain(OWN_INLINE)
            .filter_map(|q| sql::tokenize(q).ok().map(|t| fingerprint(&t)))
            .collect()
    })
}

/// Whether a statement of the view is one pgplan sends: one of its catalog reads, an `EXPLAIN`
/// with its option lists, or anything naming its savepoints, prepared statements and CTEs
/// (`pgplan_...`).
pub fn is_own(tokens: &[Token<'_>]) -> bool {
    if tokens.iter().any(|t| {
        matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdentifier)
            && t.text
                .trim_matches('"')
                .to_ascii_lowercase()
                .starts_with("pgplan_")
    }) {
        return true;
    }
    let print = fingerprint(tokens);
    let joined = print.join(" ");
    if OWN_EXPLAINS.iter().any(|e| joined.starts_with(e)) {
        return true;
    }
    own_patterns().iter().any(|p| matches(p, &print))
}

/// Whether a statement's text is one pgplan sends (see [`is_own`]).
pub fn is_own_text(text: &str) -> bool {
    sql::tokenize(text).is_ok_and(|t| is_own(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query_text(s: Screened) -> String {
        match s {
            Screened::Query { query, .. } => query.text,
            other => panic!("not a query: {other:?}"),
        }
    }

    #[test]
    fn typed_literals_become_typed_parameters() {
        let s = screen("SELECT count(*) FROM t WHERE ts > now() - interval $1 AND d = date $2");
        let Screened::Query { query, rewrites } = s else {
            panic!()
        };
        assert_eq!(
            query.text,
            "SELECT count(*) FROM t WHERE ts > now() - $1::interval AND d = $2::date"
        );
        assert_eq!(rewrites.len(), 2);
        assert_eq!(query.max_parameter, Some(2));
        assert_eq!(
            query_text(screen("SELECT 1 WHERE $3 < timestamp with time zone $1")),
            "SELECT 1 WHERE $3 < $1::timestamp with time zone"
        );
        // Not literals: a column named date, a cast, a parameter already typed.
        assert_eq!(
            query_text(screen(
                "SELECT t.date FROM t WHERE x::date = $1 AND $2::interval > y"
            )),
            "SELECT t.date FROM t WHERE x::date = $1 AND $2::interval > y"
        );
    }

    #[test]
    fn any_of_a_parameter_samples_its_column_as_an_array() {
        use crate::compare::workload::params::ParamUse;
        let text = "SELECT 1 FROM t WHERE t.id = ANY ($1) AND s = $2 AND x = ANY(ARRAY[$3])";
        let tokens = sql::tokenize(text).unwrap();
        let uses = any_array_uses(&tokens, 3);
        assert_eq!(
            uses[0],
            Some(ParamUse::Column {
                qualifier: Some("t".into()),
                column: "id".into()
            })
        );
        assert_eq!(uses[1], None);
        assert_eq!(uses[2], None);
        assert_eq!(one_element_array("a\"b"), r#"{"a\"b"}"#);
        assert_eq!(one_element_array("42"), r#"{"42"}"#);
    }

    #[test]
    fn what_cannot_run_is_skipped_with_the_reason() {
        assert_eq!(screen("BEGIN READ ONLY"), Screened::Control);
        assert_eq!(screen("SET LOCAL work_mem = $1"), Screened::Control);
        let Screened::Skip(why) = screen("VACUUM t") else {
            panic!()
        };
        assert!(why.starts_with("VACUUM: a utility"), "{why}");
        let Screened::Skip(why) = screen("SELECT $1; SELECT $2") else {
            panic!()
        };
        assert!(why.contains("several statements"), "{why}");
        let Screened::Skip(why) = screen("SELECT * FROM t WHERE note = 'it''s cut") else {
            panic!()
        };
        assert!(why.contains("cut short"), "{why}");
        // Squashed lists (PostgreSQL 18), LIMIT and ANY stay as they are: PREPARE takes them.
        assert_eq!(
            query_text(screen(
                "SELECT * FROM t WHERE id IN ($1 /*, ... */) LIMIT $2"
            )),
            "SELECT * FROM t WHERE id IN ($1 /*, ... */) LIMIT $2"
        );
    }

    #[test]
    fn parameters_the_server_cannot_type_are_cast() {
        assert_eq!(
            undetermined_parameter("ERROR: could not determine data type of parameter $2"),
            Some(2)
        );
        assert_eq!(undetermined_parameter("syntax error"), None);
        assert_eq!(
            cast_parameter("SELECT $1, $2, $1::int, '$1'", 1, "text"),
            "SELECT $1::text, $2, $1::int, '$1'"
        );
    }

    #[test]
    fn pgplans_own_statements_are_recognised() {
        // A catalog read as the view shows it: header comments gone, constants as $n.
        let own = include_str!("../../../queries/workload_relation_name.sql");
        let body: String = own
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(is_own_text(&body), "{body}");
        assert!(is_own_text(
            "EXPLAIN (ANALYZE, BUFFERS, VERBOSE, SETTINGS, FORMAT JSON) EXECUTE pgplan_w12(1)"
        ));
        assert!(is_own_text(
            "EXPLAIN (VERBOSE, SETTINGS, FORMAT JSON) SELECT * FROM t WHERE a = $1"
        ));
        assert!(is_own_text("SAVEPOINT pgplan_query"));
        assert!(is_own_text("SELECT pg_export_snapshot()"));
        // A placeholder filled with the version's column matches.
        assert!(is_own_text(
            "SELECT s.queryid::text AS queryid, s.query, sum(s.calls)::float8 AS calls, \
             sum(s.total_exec_time)::float8 AS total_exec_ms, sum(sum(s.total_exec_time)) OVER ()::float8 AS all_exec_ms \
             FROM pg_stat_statements AS s WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND s.toplevel GROUP BY s.queryid, s.query HAVING sum(s.calls) >= $1 ORDER BY sum(s.total_exec_time) DESC LIMIT $2"
        ));
        let extension = include_str!("../../../queries/workload_extension.sql");
        assert!(is_own_text(
            &extension
                .replace("'pg_stat_statements'", "$1")
                .replace("false", "$2")
        ));
        assert!(!is_own_text("SELECT * FROM accounts WHERE id = $1"));
        assert!(!is_own_text("EXPLAIN SELECT 1"));
    }

    #[test]
    fn every_query_file_is_known_as_pgplans_own() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            files += 1;
            assert!(
                OWN_QUERIES.contains(&text.as_str()),
                "not in OWN_QUERIES:\n{text}"
            );
        }
        assert_eq!(files, OWN_QUERIES.len());
    }

    #[test]
    fn the_skipped_share_is_of_the_time_read() {
        let s = |ms| SkippedStatement {
            id: "1".into(),
            text: "VACUUM".into(),
            reason: String::new(),
            calls: None,
            total_exec_ms: Some(ms),
        };
        assert_eq!(skipped_share(&[s(25.0), s(25.0)], Some(200.0)), Some(0.25));
        assert_eq!(skipped_share(&[s(1.0)], Some(0.0)), None);
        assert_eq!(skipped_share(&[], None), None);
    }
}
