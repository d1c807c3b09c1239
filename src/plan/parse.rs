//! Reading EXPLAIN output into a [`Plan`]: the JSON as the server sends it, a bare object as
//! auto_explain logs it, or what a user pastes from psql, and clear errors for everything else.
//!
//! The JSON is read in one pass straight into the pre-order node arena (no intermediate
//! `serde_json::Value` tree), so reading a plan costs about what parsing its bytes costs.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::extra::{Extra, Extras, Name, known_name};
use super::model::{Actual, Buffers, IoTimes, Node, NodeId, Plan, Trigger, Wal};

/// The deepest plan pgplan reads. Each level costs stack; real plans stay far below this.
pub const MAX_PLAN_DEPTH: usize = 1000;

/// The deepest a value under a key pgplan does not model may nest (arrays and objects inside
/// each other; PostgreSQL's nest three levels at most). Such values are kept, so they are read
/// recursively and written out again by the JSON report: without a bound, a deeply nested one
/// overflowed the stack. serde_json's default limit for a whole document is the same.
const MAX_VALUE_NESTING: usize = 128;

/// Why an input is not a plan pgplan can read. Each message says what was expected.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("the input is empty; expected the output of EXPLAIN (FORMAT JSON)")]
    Empty,
    #[error(
        "this is EXPLAIN's TEXT format; pgplan reads JSON: run EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) instead"
    )]
    TextFormat,
    #[error("not JSON ({detail}); expected the output of EXPLAIN (FORMAT JSON)")]
    NotJson { detail: String },
    #[error(
        "the JSON ends early ({detail}); the plan looks truncated: copy the whole EXPLAIN output"
    )]
    Truncated { detail: String },
    #[error(
        "not a plan: {detail}; expected EXPLAIN (FORMAT JSON) output, an array holding one object with a \"Plan\" key"
    )]
    NotAPlan { detail: String },
    #[error(
        "the EXPLAIN output holds {count} plans (a statement that rules rewrote into several); pgplan reads one plan at a time"
    )]
    SeveralPlans { count: usize },
    #[error(
        "the plan is deeper than {MAX_PLAN_DEPTH} levels; pgplan does not read plans that deep"
    )]
    TooDeep,
    /// The detail names the key, its node, the value and the key's own limit.
    #[error("{detail}")]
    BadFigure { detail: String },
    #[error(
        "no plan found: the input looks like {looks_like}; pgplan needs the output of EXPLAIN in any format (TEXT as psql prints it, JSON, YAML or XML), or an auto_explain log excerpt"
    )]
    NoPlan { looks_like: String },
    #[error(
        "there is no plan {number}: the input holds {count} (choose one with --plan 1 to {count})"
    )]
    NoSuchPlan { number: usize, count: usize },
    /// A line of a TEXT, YAML or XML plan that cannot be read.
    #[error("line {line} of the {format} plan: {detail}")]
    BadLine {
        format: &'static str,
        line: usize,
        detail: String,
    },
}

/// The largest counter pgplan accepts. PostgreSQL's counters are 64-bit integers (buffers, rows
/// removed, heap fetches) or doubles that count real work (rows, loops, milliseconds), so none
/// comes near 2^63; bounding them keeps every product and sum pgplan forms (rows × loops, a
/// subtree's blocks) finite, where 1e308 × 2 would print as "inf".
pub const MAX_COUNTER: f64 = 9.223_372_036_854_776e18;

/// The largest row estimate pgplan accepts: the planner clamps its estimates far below this
/// (`MAXIMUM_ROWCOUNT`, 1e100), and the bound keeps estimated rows × loops finite.
pub const MAX_ESTIMATE: f64 = 1e200;

/// Reads plan text already freed of every decoration (a TEXT, YAML or XML reader's result, in
/// the shape of EXPLAIN's JSON: a `serde_json::Value`, or the TEXT reader's own object), with
/// the JSON reader's checks.
pub(super) fn plan_from_value<'de, D>(value: D, depth: usize) -> Result<Plan, PlanError>
where
    D: Deserializer<'de, Error = serde_json::Error> + Send,
{
    let read = move || {
        let seed = TopLevelSeed {
            nesting: Nesting { value_level: 0 },
            nodes_hint: 0,
        };
        match seed.deserialize(value) {
            Ok(TopLevel::One(plan)) => Ok(*plan),
            Ok(TopLevel::Several(count)) => Err(PlanError::SeveralPlans { count }),
            Err(e) => Err(classify_error("", e)),
        }
    };
    // A value nested this little is read on the caller's thread, whose stack may be as small
    // as a spawned thread's 2 MiB; a deeper one on a thread with PARSE_STACK_BYTES of stack.
    if depth <= 64 {
        return read();
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("pgplan-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, read)
            .map(|handle| handle.join())
    })
    .map_err(|_| PlanError::TooDeep)?
    .unwrap_or(Err(PlanError::TooDeep))
}

/// Reads JSON that psql's decorations were already taken off.
pub(super) fn parse_json_body(json: &str) -> Result<Plan, PlanError> {
    parse_json(json.trim())
}

/// Reads EXPLAIN (FORMAT JSON) output, an auto_explain JSON object, or either pasted from psql's
/// aligned or expanded output.
pub(super) fn parse_json_input(input: &str) -> Result<Plan, PlanError> {
    let json = extract_json(input)?;
    let mut plan = parse_json(&json)?;
    // auto_explain's JSON has no "Execution Time": the time is in the log line's prefix
    // ("duration: 12.345 ms  plan:"), the executor's run time, which Execution Time also
    // measures. Taken only for an analyzed plan, so an estimate-only plan stays unmeasured.
    if plan.execution_ms.is_none() && plan.is_analyzed() {
        plan.execution_ms = logged_duration_ms(input);
    }
    Ok(plan)
}

/// The `duration: 12.345 ms` of an auto_explain log line, when the input has one before its plan.
fn logged_duration_ms(input: &str) -> Option<f64> {
    // Only the text before the JSON: a query's own text may hold these words.
    let head = &input[..input.find(['{', '['])?];
    let before_plan = &head[..head.find("plan:")?];
    let after = &before_plan[before_plan.rfind("duration:")? + "duration:".len()..];
    let mut words = after.split_whitespace();
    let (number, unit) = (words.next()?, words.next()?);
    (unit == "ms")
        .then(|| number.parse::<f64>().ok())
        .flatten()
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
}

/// Finds the JSON in what the user gave us, undoing psql's table decorations.
fn extract_json(input: &str) -> Result<Cow<'_, str>, PlanError> {
    let text = input.trim_start_matches('\u{feff}').trim();
    if text.is_empty() {
        return Err(PlanError::Empty);
    }
    // A paste that starts at the JSON can still carry psql's continuation marks (the header cut
    // off, or `psql -t`): JSON itself never ends a line with one.
    if (text.starts_with('[') || text.starts_with('{')) && !has_continuation_marks(text) {
        return Ok(Cow::Borrowed(text));
    }
    let text = query_plan_block(text);
    if looks_like_psql_table(text) {
        let json = strip_psql_table(text);
        if json.trim().is_empty() {
            return Err(PlanError::Empty);
        }
        if !(json.trim_start().starts_with('[') || json.trim_start().starts_with('{')) {
            if looks_like_text_format(&json) {
                return Err(PlanError::TextFormat);
            }
            return Err(PlanError::NotJson {
                detail: "psql's output holds no JSON".into(),
            });
        }
        return Ok(Cow::Owned(json));
    }
    // auto_explain in a server log: "LOG:  duration: 1.234 ms  plan:" then the JSON, its lines
    // indented by a tab.
    if let Some(at) = text.find("plan:") {
        let rest = &text[at + "plan:".len()..];
        if let Some(start) = rest.find(['{', '[']) {
            let body: Vec<&str> = rest[start..]
                .lines()
                .map(|l| l.strip_prefix('\t').unwrap_or(l))
                .collect();
            return Ok(Cow::Owned(body.join("\n")));
        }
    }
    if looks_like_text_format(text) {
        return Err(PlanError::TextFormat);
    }
    let first = text.lines().next().unwrap_or_default();
    Err(PlanError::NotJson {
        detail: format!(
            "it starts with {:?}",
            first.chars().take(40).collect::<String>()
        ),
    })
}

fn looks_like_text_format(text: &str) -> bool {
    text.contains("(cost=")
        || text.contains("(actual time=")
        || text.contains("(actual rows=")
        || text.lines().any(|l| l.trim_start().starts_with("->  "))
}

/// psql marks a value that continues on the next line with `+` at the end of the line (the
/// ascii and old-ascii line styles) or `↵` (the unicode line style).
const CONTINUATION_MARKS: [char; 2] = ['+', '↵'];

fn has_continuation_marks(text: &str) -> bool {
    use super::lines::{UNICODE_MARK_BYTE, lines_ending_in};
    lines_ending_in(text, [b'+', b'+', UNICODE_MARK_BYTE]).any(|l| l.ends_with(CONTINUATION_MARKS))
}

/// A record header of psql's expanded output: `-[ RECORD 1 ]---` or, in the unicode line
/// style, `─[ RECORD 1 ]───`.
fn is_record_header(line: &str) -> bool {
    line.strip_prefix(['-', '─'])
        .is_some_and(|rest| rest.starts_with("[ RECORD"))
}

/// psql's rule under the header: dashes (ascii), box-drawing lines (unicode), `+` or `┼` where
/// columns meet, and with `\pset border 2` the frame's corners (`+`, `┌`, `┘`, ...).
fn is_rule(line: &str) -> bool {
    !line.is_empty()
        && line.chars().all(|c| {
            matches!(
                c,
                '-' | '+'
                    | '─'
                    | '┼'
                    | '═'
                    | '╪'
                    | '┌'
                    | '┐'
                    | '└'
                    | '┘'
                    | '├'
                    | '┤'
                    | '┬'
                    | '┴'
            )
        })
}

fn looks_like_psql_table(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    is_query_plan_header(first) || is_record_header(first.trim()) || has_continuation_marks(text)
}

/// The line inside `|` or `│` bars, when psql drew them at both ends (`\pset border 2`).
fn inside_border(line: &str) -> Option<&str> {
    let line = line.trim();
    let inner = line.strip_prefix(['|', '│'])?.strip_suffix(['|', '│'])?;
    Some(inner)
}

/// psql's column header: `QUERY PLAN`, centred, inside bars with `\pset border 2`.
fn is_query_plan_header(line: &str) -> bool {
    inside_border(line).unwrap_or(line).trim() == "QUERY PLAN"
}

/// The result block of a psql session paste: from the `QUERY PLAN` header (or the expanded
/// format's record header) to the `(1 row)` footer. What a session
/// prints around it is dropped: the prompt and the EXPLAIN statement echoed, `BEGIN` and
/// `ROLLBACK` around a rolled-back data-modifying statement, `\timing`'s `Time: 1.234 ms`.
/// Without a header (`psql -t`, or a paste that starts at the JSON) the text is left as it is.
fn query_plan_block(text: &str) -> &str {
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line))
        })
        .collect();
    let Some(header) = lines.iter().position(|(_, l)| {
        let t = l.trim();
        is_query_plan_header(l)
            || is_record_header(t)
            || t.strip_prefix("QUERY PLAN")
                .is_some_and(|rest| rest.trim_start().starts_with(['|', '│']))
    }) else {
        return text;
    };
    let end = lines[header..]
        .iter()
        .find(|(_, l)| is_row_count_footer(l.trim()))
        .map_or(text.len(), |(at, _)| *at);
    &text[lines[header].0..end]
}

/// Undoes psql's aligned output (`QUERY PLAN` header, dashed rule, one leading space, `+` at the
/// end of continued lines, `(1 row)` footer), with or without the header and footer (`psql -t`,
/// or a paste that starts at the JSON), and expanded output (`-[ RECORD 1 ]`, a `QUERY PLAN |`
/// label on the first line and `|` on the others). The unicode line style (`\pset linestyle
/// unicode`) draws `─` rules, `│` bars and `↵` continuation marks instead.
fn strip_psql_table(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bordered = text
        .lines()
        .find(|l| is_query_plan_header(l))
        .is_some_and(|l| inside_border(l).is_some());
    for line in text.lines() {
        let trimmed = line.trim();
        if is_query_plan_header(line)
            || is_record_header(trimmed)
            || is_rule(trimmed)
            || is_row_count_footer(trimmed)
            || trimmed.is_empty()
        {
            continue;
        }
        // `\pset border 2`: a bar and a space before the value, a bar after its column.
        let mut content = match inside_border(line) {
            Some(inner) if bordered => inner,
            _ => line,
        };
        if let Some(rest) = content.trim_start().strip_prefix("QUERY PLAN") {
            let rest = rest.trim_start();
            content = rest.strip_prefix(['|', '│']).unwrap_or(rest);
        } else if let Some(bar) = content.find(['|', '│'])
            && content[..bar].trim().is_empty()
        {
            // Expanded-format continuation line: spaces, a bar, the content.
            let width = content[bar..].chars().next().map_or(1, char::len_utf8);
            content = &content[bar + width..];
        }
        let content = content.strip_prefix(' ').unwrap_or(content);
        let content = content.trim_end();
        let content = content
            .strip_suffix(CONTINUATION_MARKS)
            .unwrap_or(content)
            .trim_end();
        out.push_str(content);
        out.push('\n');
    }
    out
}

fn is_row_count_footer(line: &str) -> bool {
    line.strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .and_then(|l| l.split_once(' '))
        .is_some_and(|(n, word)| {
            n.chars().all(|c| c.is_ascii_digit()) && (word == "row" || word == "rows")
        })
}

/// Stack for the reading thread: reading recurses once per plan level, and a deep plan on a
/// small thread stack (2 MiB for spawned threads) would overflow long before MAX_PLAN_DEPTH.
const PARSE_STACK_BYTES: usize = 64 << 20;

fn parse_json(json: &str) -> Result<Plan, PlanError> {
    // Read once, on a thread with stack enough for the deepest plan and value pgplan accepts
    // (MAX_PLAN_DEPTH, MAX_VALUE_NESTING), whatever the caller's stack: the stack is reserved,
    // not touched, so a shallow plan pays only for starting a thread (microseconds). Reading in
    // place first and again on such a thread when the plan turned out deep read deep plans
    // twice, and built an error for every level on the way out of the first read.
    let read = || parse_json_here(json);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("pgplan-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, read)
            .map(|handle| handle.join())
    })
    .ok()
    .and_then(Result::ok)
    .unwrap_or_else(read)
}

/// Reads the plan on this thread, its nesting bounded by MAX_PLAN_DEPTH and MAX_VALUE_NESTING.
fn parse_json_here(json: &str) -> Result<Plan, PlanError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    // Depth is bounded by our own seeds (Nesting, and MAX_PLAN_DEPTH in NodeSeed) instead of
    // serde_json's fixed 128 levels, which a plan joining sixty tables already exceeds.
    deserializer.disable_recursion_limit();
    let seed = TopLevelSeed {
        nesting: Nesting { value_level: 0 },
        nodes_hint: nodes_hint(json),
    };
    let result = seed.deserialize(&mut deserializer).and_then(|plan| {
        deserializer.end()?;
        Ok(plan)
    });
    match result {
        Ok(TopLevel::One(plan)) => Ok(*plan),
        Ok(TopLevel::Several(count)) => Err(PlanError::SeveralPlans { count }),
        Err(e) => Err(classify_error(json, e)),
    }
}

/// About how many nodes `json` holds, to reserve the node arena once: one `"Node Type"` key per
/// node. Grown by doubling instead, the arena of a 1,000-node plan was copied ten times over
/// (a node is over a kilobyte), about as many bytes as the plan's JSON. The count is a hint,
/// never trusted: a text made of nothing but that key reserves at most a node per 64 bytes.
fn nodes_hint(json: &str) -> usize {
    let keys = memchr::memmem::find_iter(json.as_bytes(), b"\"Node Type\"").count();
    keys.min(json.len() / 64)
}

/// Marker strings our own visitors put in custom errors, to map them back to [`PlanError`].
const NOT_A_PLAN: &str = "pgplan:not-a-plan:";
const TOO_DEEP: &str = "pgplan:too-deep";
const BAD_FIGURE: &str = "pgplan:bad-figure:";
/// Between a bad figure's value and the explanation of its limit.
const LIMIT_SEPARATOR: &str = "\u{1f}";

/// Checks a measured figure: finite (serde_json reads none that is not, but the check costs
/// nothing), not negative, and within [`MAX_COUNTER`] (`limit` for estimates).
fn check_figure<E: de::Error>(
    value: f64,
    key: &str,
    limit: f64,
    node: NodeLabel,
) -> Result<f64, E> {
    if value.is_finite() && (0.0..=limit).contains(&value) {
        return Ok(value);
    }
    // Each key has its own limit: a row estimate may reach MAX_ESTIMATE, a counter MAX_COUNTER.
    let what = if limit == MAX_ESTIMATE {
        "row estimates"
    } else {
        "counts, sizes and times"
    };
    Err(E::custom(format!(
        "{BAD_FIGURE}\"{}\" of {node} is {}{LIMIT_SEPARATOR}EXPLAIN reports {what} as numbers \
         from 0 to {}",
        one_line(key),
        short_number(value),
        short_number(limit)
    )))
}

/// A number as a person reads it in an error: as given when short, else in exponent form
/// (1e308, not its 309 digits).
fn short_number(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 16 {
        plain
    } else {
        format!("{value:e}")
    }
}

/// Which node a bad figure belongs to, for the error: its pre-order id and, once read, its type.
#[derive(Clone, Copy)]
struct NodeLabel<'a> {
    id: Option<NodeId>,
    node_type: &'a str,
}

impl fmt::Display for NodeLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match (self.id, self.node_type) {
            (None, _) => f.write_str("the plan"),
            (Some(id), "") => write!(f, "node {id}"),
            (Some(id), t) => write!(f, "node {id} ({})", one_line(t)),
        }
    }
}

/// How deep inside a value pgplan keeps without modelling it the reading is.
#[derive(Debug, Clone, Copy)]
struct Nesting {
    /// Levels inside a value pgplan keeps without modelling it (0 in the plan's own structure).
    value_level: usize,
}

impl Nesting {
    /// The nesting inside an array or object of an unmodelled value, opened here.
    fn enter_value<E: de::Error>(self) -> Result<Nesting, E> {
        if self.value_level >= MAX_VALUE_NESTING {
            return Err(E::custom(format!(
                "{NOT_A_PLAN}a value nested more than {MAX_VALUE_NESTING} levels deep"
            )));
        }
        Ok(Nesting {
            value_level: self.value_level + 1,
        })
    }
}

fn classify_error(json: &str, error: serde_json::Error) -> PlanError {
    let message = error.to_string();
    if message.contains(TOO_DEEP) {
        return PlanError::TooDeep;
    }
    if let Some(at) = message.find(BAD_FIGURE) {
        // "key of node is value; what EXPLAIN reports at line L column C": the position goes
        // with the value, before the explanation.
        let detail = &message[at + BAD_FIGURE.len()..];
        let detail = match (
            detail.split_once(LIMIT_SEPARATOR),
            detail.rfind(" at line "),
        ) {
            (Some((value, rest)), Some(pos)) if pos > value.len() => {
                let explanation = &rest[..pos - value.len() - LIMIT_SEPARATOR.len()];
                format!("{value}{}; {explanation}", &detail[pos..])
            }
            (Some((value, rest)), _) => format!("{value}; {rest}"),
            (None, _) => detail.to_owned(),
        };
        return PlanError::BadFigure { detail };
    }
    if let Some(at) = message.find(NOT_A_PLAN) {
        let detail = message[at + NOT_A_PLAN.len()..].to_owned();
        // serde_json appends " at line L column C" to custom errors; keep it, it helps.
        return PlanError::NotAPlan { detail };
    }
    let position = format!("line {}, column {}", error.line(), error.column());
    match error.classify() {
        serde_json::error::Category::Eof => PlanError::Truncated {
            detail: format!("input ends at {position}"),
        },
        serde_json::error::Category::Data => PlanError::NotAPlan {
            detail: strip_position(&message).to_owned() + &format!(" at {position}"),
        },
        _ => {
            let msg = strip_position(&message);
            let detail = if msg.contains("number out of range") {
                format!("a number out of range at {position}")
            } else {
                let near = snippet_at(json, error.line(), error.column());
                format!("{msg} at {position}{near}")
            };
            PlanError::NotJson { detail }
        }
    }
}

fn strip_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(at) => &message[..at],
        None => message,
    }
}

fn snippet_at(json: &str, line: usize, column: usize) -> String {
    let Some(text) = json.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let start = column.saturating_sub(20);
    let snippet: String = text.chars().skip(start).take(40).collect();
    if snippet.trim().is_empty() {
        String::new()
    } else {
        format!(", near {:?}", snippet.trim())
    }
}

enum TopLevel {
    One(Box<Plan>),
    Several(usize),
}

struct TopLevelSeed {
    nesting: Nesting,
    /// [`nodes_hint`]: nodes to reserve room for in the first plan's arena.
    nodes_hint: usize,
}

impl<'de> DeserializeSeed<'de> for TopLevelSeed {
    type Value = TopLevel;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopLevel, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopLevelSeed {
    type Value = TopLevel;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an EXPLAIN (FORMAT JSON) array or a plan object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        let nesting = self.nesting;
        let seed = PlanObjectSeed {
            nesting,
            nodes_hint: self.nodes_hint,
        };
        let Some(first) = seq.next_element_seed(seed)? else {
            return Err(de::Error::custom(format!("{NOT_A_PLAN}an empty array")));
        };
        let mut count = 1;
        // Skipping a value takes no stack in serde_json, however deep it nests.
        while seq.next_element::<IgnoredAny>()?.is_some() {
            count += 1;
        }
        if count > 1 {
            return Ok(TopLevel::Several(count));
        }
        Ok(TopLevel::One(Box::new(first)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TopLevel, A::Error> {
        let seed = PlanObjectSeed {
            nesting: self.nesting,
            nodes_hint: self.nodes_hint,
        };
        seed.visit_map(map).map(|p| TopLevel::One(Box::new(p)))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}a JSON string")))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}a JSON boolean")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}a JSON number")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}a JSON number")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}a JSON number")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<TopLevel, E> {
        Err(E::custom(format!("{NOT_A_PLAN}JSON null")))
    }
}

/// A map key, borrowed from the input when it holds no escapes (EXPLAIN's keys never do).
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// One element of the EXPLAIN array: `{"Plan": {...}, "Planning Time": ..., ...}`.
struct PlanObjectSeed {
    /// The nesting around the object.
    nesting: Nesting,
    /// Nodes to reserve room for; a failed reservation only means the arena grows as it goes.
    nodes_hint: usize,
}

impl<'de> DeserializeSeed<'de> for PlanObjectSeed {
    type Value = Plan;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Plan, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PlanObjectSeed {
    type Value = Plan;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a plan object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Plan, A::Error> {
        let nesting = self.nesting;
        let mut plan = Plan::default();
        let _ = plan.nodes.try_reserve_exact(self.nodes_hint);
        let mut saw_plan = false;
        let mut other_keys = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key>()? {
            match key.as_ref() {
                "Plan" => {
                    if saw_plan {
                        return Err(de::Error::custom(format!(
                            "{NOT_A_PLAN}two \"Plan\" keys in one object"
                        )));
                    }
                    saw_plan = true;
                    map.next_value_seed(NodeSeed {
                        arena: &mut plan.nodes,
                        parent: None,
                        depth: 0,
                        nesting,
                    })?;
                }
                // "Total Runtime": the execution time's name before PostgreSQL 9.4.
                "Planning Time" | "Execution Time" | "Total Runtime" => {
                    let top = NodeLabel {
                        id: None,
                        node_type: "",
                    };
                    let ms = check_figure(map.next_value()?, &key, MAX_COUNTER, top)?;
                    if key == "Planning Time" {
                        plan.planning_ms = Some(ms);
                    } else {
                        plan.execution_ms = Some(ms);
                    }
                }
                "Query Text" => plan.query_text = Some(map.next_value()?),
                "Planning" => {
                    let value: Map<String, Value> =
                        map.next_value_seed(ExtrasSeed(nesting))?.into();
                    plan.planning_buffers = buffers_from_map(&value)?;
                    for (k, v) in value {
                        if !is_buffer_key(&k) {
                            plan.extra.insert(format!("Planning {k}"), v);
                        }
                    }
                }
                "Triggers" => {
                    let value = map.next_value_seed(TriggersSeed(nesting))?;
                    plan.triggers = value.iter().map(trigger_from_map).collect();
                }
                "Settings" => {
                    let value: Map<String, Value> =
                        map.next_value_seed(ExtrasSeed(nesting))?.into();
                    plan.settings = value
                        .into_iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Value::String(s) => s,
                                other => other.to_string(),
                            };
                            (k, v)
                        })
                        .collect();
                }
                other => {
                    if other_keys.len() < 5 {
                        other_keys.push(one_line(other));
                    }
                    let value = map.next_value_seed(ExtraSeed(nesting))?;
                    plan.extra.insert(other.to_owned(), value.into());
                }
            }
        }
        if !saw_plan {
            let found = if other_keys.is_empty() {
                "an empty object".to_owned()
            } else {
                format!("an object with keys {}", other_keys.join(", "))
            };
            return Err(de::Error::custom(format!("{NOT_A_PLAN}{found}")));
        }
        Ok(plan)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Plan, A::Error> {
        Err(de::Error::custom(format!(
            "{NOT_A_PLAN}an array inside the array"
        )))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array of strings")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array of numbers")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array of numbers")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array of numbers")))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array of booleans")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Plan, E> {
        Err(E::custom(format!("{NOT_A_PLAN}an array holding null")))
    }
}

/// `text` with control characters escaped (`\n` for a line break): errors are printed as one
/// line, and a key in the input may hold any character.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn is_buffer_key(key: &str) -> bool {
    key.ends_with(" Blocks")
}

fn number(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64)
}

/// The `Planning` object's buffer counters, checked as a node's are.
fn buffers_from_map<E: de::Error>(map: &Map<String, Value>) -> Result<Option<Buffers>, E> {
    if !map.keys().any(|k| is_buffer_key(k)) {
        return Ok(None);
    }
    for (k, v) in map {
        if is_buffer_key(k)
            && let Some(n) = v.as_f64()
        {
            let planning = NodeLabel {
                id: None,
                node_type: "",
            };
            check_figure::<E>(n, &format!("Planning {k}"), MAX_COUNTER, planning)?;
        }
    }
    let get = |k: &str| number(map.get(k)).unwrap_or(0.0);
    Ok(Some(Buffers {
        shared_hit_blocks: get("Shared Hit Blocks"),
        shared_read_blocks: get("Shared Read Blocks"),
        shared_dirtied_blocks: get("Shared Dirtied Blocks"),
        shared_written_blocks: get("Shared Written Blocks"),
        local_hit_blocks: get("Local Hit Blocks"),
        local_read_blocks: get("Local Read Blocks"),
        local_dirtied_blocks: get("Local Dirtied Blocks"),
        local_written_blocks: get("Local Written Blocks"),
        temp_read_blocks: get("Temp Read Blocks"),
        temp_written_blocks: get("Temp Written Blocks"),
    }))
}

fn trigger_from_map(map: &Map<String, Value>) -> Trigger {
    Trigger {
        name: map
            .get("Trigger Name")
            .and_then(Value::as_str)
            .map(str::to_owned),
        constraint: map
            .get("Constraint Name")
            .and_then(Value::as_str)
            .map(str::to_owned),
        relation: map
            .get("Relation")
            .and_then(Value::as_str)
            .map(str::to_owned),
        time_ms: number(map.get("Time")),
        calls: number(map.get("Calls")),
    }
}

/// Reads one node object into the arena at the position pre-order gives it: a slot is reserved
/// before the node's children are read, so the node's id precedes every id in its subtree.
struct NodeSeed<'a> {
    arena: &'a mut Vec<Node>,
    parent: Option<NodeId>,
    depth: usize,
    /// The nesting around the node's object.
    nesting: Nesting,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// Reads a `Plans` array, each element a node whose parent is `parent`.
struct ChildrenSeed<'a> {
    arena: &'a mut Vec<Node>,
    parent: NodeId,
    depth: usize,
    /// The nesting around the array.
    nesting: Nesting,
}

impl<'de> DeserializeSeed<'de> for ChildrenSeed<'_> {
    type Value = Vec<NodeId>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<NodeId>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ChildrenSeed<'_> {
    type Value = Vec<NodeId>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of plan nodes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<NodeId>, A::Error> {
        let nesting = self.nesting;
        let mut children = Vec::new();
        loop {
            let id = self.arena.len();
            let seed = NodeSeed {
                arena: self.arena,
                parent: Some(self.parent),
                depth: self.depth,
                nesting,
            };
            if seq.next_element_seed(seed)?.is_none() {
                break;
            }
            children.push(id);
        }
        Ok(children)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a plan node object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.depth >= MAX_PLAN_DEPTH {
            return Err(de::Error::custom(TOO_DEEP));
        }
        let nesting = self.nesting;
        let id = self.arena.len();
        // Reserve the slot; filled when the node's own keys are read.
        self.arena.push(Node::default());
        let mut fields = NodeFields::new(id, self.parent, self.depth);

        while let Some(Key(key)) = map.next_key::<Key>()? {
            if key == "Plans" {
                fields.node.children = map.next_value_seed(ChildrenSeed {
                    arena: self.arena,
                    parent: id,
                    depth: self.depth + 1,
                    nesting,
                })?;
                continue;
            }
            let modelled = fields.read_description(&key, &mut map)?
                || fields.read_actual(&key, &mut map)?
                || fields.read_node_figure(&key, &mut map)?
                || fields.read_buffers(&key, &mut map)?
                || fields.read_io_and_wal(&key, &mut map)?;
            if !modelled {
                let value = map.next_value_seed(ExtraSeed(nesting))?;
                fields.extra.push((known_name(&key), value));
            }
        }
        self.arena[id] = fields.finish()?;
        Ok(())
    }
}

/// A node's fields while its object is read: the node itself, and the groups of figures
/// (actual, buffers, WAL) that a node has only when one of their keys appeared.
struct NodeFields {
    id: NodeId,
    node: Node,
    actual: Actual,
    has_actual: bool,
    buffers: Buffers,
    has_buffers: bool,
    wal: Wal,
    has_wal: bool,
    io: IoTimes,
    saw_node_type: bool,
    /// The unmodelled keys, in their order.
    extra: Vec<(Name, Extra)>,
}

/// The next value as text.
fn text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<String>, A::Error> {
    Ok(Some(map.next_value::<String>()?))
}

impl NodeFields {
    fn new(id: NodeId, parent: Option<NodeId>, depth: usize) -> Self {
        NodeFields {
            id,
            node: Node {
                parent,
                depth,
                ..Node::default()
            },
            actual: Actual::default(),
            has_actual: false,
            buffers: Buffers::default(),
            has_buffers: false,
            wal: Wal::default(),
            has_wal: false,
            io: IoTimes::default(),
            saw_node_type: false,
            extra: Vec::new(),
        }
    }

    /// A figure the server measured or counted: checked, so that every sum and product of them
    /// stays a finite number ≥ 0.
    fn counter<'de, A: MapAccess<'de>>(
        &self,
        map: &mut A,
        key: &str,
        limit: f64,
    ) -> Result<f64, A::Error> {
        check_figure(map.next_value::<f64>()?, key, limit, self.label())
    }

    /// A counter of at most [`MAX_COUNTER`], as a field the node may not have.
    fn figure<'de, A: MapAccess<'de>>(
        &self,
        map: &mut A,
        key: &str,
    ) -> Result<Option<f64>, A::Error> {
        Ok(Some(self.counter(map, key, MAX_COUNTER)?))
    }

    /// The node as an error message names it, by what has been read of it so far.
    fn label(&self) -> NodeLabel<'_> {
        NodeLabel {
            id: Some(self.id),
            node_type: &self.node.node_type,
        }
    }

    /// What the node is: its type, relation, strategy, estimates and conditions. Whether `key`
    /// was one of them.
    fn read_description<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        let node = &mut self.node;
        match key {
            "Node Type" => {
                node.node_type = map.next_value()?;
                self.saw_node_type = true;
            }
            "Parent Relationship" => node.parent_relationship = text(map)?,
            "Subplan Name" => node.subplan_name = text(map)?,
            "Parallel Aware" => node.parallel_aware = map.next_value()?,
            "Async Capable" => node.async_capable = Some(map.next_value()?),
            "Relation Name" => node.relation_name = text(map)?,
            "Schema" => node.schema = text(map)?,
            "Alias" => node.alias = text(map)?,
            "Index Name" => node.index_name = text(map)?,
            "CTE Name" => node.cte_name = text(map)?,
            "Function Name" => node.function_name = text(map)?,
            "Join Type" => node.join_type = text(map)?,
            "Strategy" => node.strategy = text(map)?,
            "Partial Mode" => node.partial_mode = text(map)?,
            "Scan Direction" => node.scan_direction = text(map)?,
            "Operation" => node.operation = text(map)?,
            // Costs are the planner's arbitrary units, never summed or multiplied: as given.
            "Startup Cost" => node.startup_cost = Some(map.next_value()?),
            "Total Cost" => node.total_cost = Some(map.next_value()?),
            "Plan Rows" => self.node.plan_rows = Some(self.counter(map, key, MAX_ESTIMATE)?),
            "Plan Width" => self.node.plan_width = self.figure(map, key)?,
            "Disabled" => node.disabled = Some(map.next_value()?),
            "Sort Method" => node.sort_method = text(map)?,
            "Sort Space Type" => node.sort_space_type = text(map)?,
            "Filter" => node.filter = text(map)?,
            "Join Filter" => node.join_filter = text(map)?,
            "Index Cond" => node.index_cond = text(map)?,
            "Recheck Cond" => node.recheck_cond = text(map)?,
            "Hash Cond" => node.hash_cond = text(map)?,
            "Merge Cond" => node.merge_cond = text(map)?,
            "Output" => node.output = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The actual times, rows and loops of an ANALYZE. Whether `key` was one of them.
    fn read_actual<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "Actual Startup Time" => {
                self.actual.startup_ms = Some(self.counter(map, key, MAX_COUNTER)?)
            }
            "Actual Total Time" => {
                self.actual.total_ms = Some(self.counter(map, key, MAX_COUNTER)?)
            }
            "Actual Rows" => {
                let ReportedNumber { value, decimal } = map.next_value()?;
                self.actual.rows = check_figure(value, key, MAX_COUNTER, self.label())?;
                self.actual.rows_decimal = decimal;
            }
            "Actual Loops" => self.actual.loops = self.counter(map, key, MAX_COUNTER)?,
            _ => return Ok(false),
        }
        self.has_actual = true;
        Ok(true)
    }

    /// The node's own counters: rows removed, heap blocks, sort and hash figures, workers.
    /// Whether `key` was one of them.
    fn read_node_figure<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "Rows Removed by Filter" => self.node.rows_removed_by_filter = self.figure(map, key)?,
            "Rows Removed by Join Filter" => {
                self.node.rows_removed_by_join_filter = self.figure(map, key)?
            }
            "Rows Removed by Index Recheck" => {
                self.node.rows_removed_by_index_recheck = self.figure(map, key)?
            }
            "Heap Fetches" => self.node.heap_fetches = self.figure(map, key)?,
            "Exact Heap Blocks" => self.node.exact_heap_blocks = self.figure(map, key)?,
            "Lossy Heap Blocks" => self.node.lossy_heap_blocks = self.figure(map, key)?,
            "Index Searches" => self.node.index_searches = self.figure(map, key)?,
            "Sort Space Used" => self.node.sort_space_used_kb = self.figure(map, key)?,
            "Hash Buckets" => self.node.hash_buckets = self.figure(map, key)?,
            "Original Hash Buckets" => self.node.original_hash_buckets = self.figure(map, key)?,
            "Hash Batches" => self.node.hash_batches = self.figure(map, key)?,
            "Original Hash Batches" => self.node.original_hash_batches = self.figure(map, key)?,
            "Peak Memory Usage" => self.node.peak_memory_usage_kb = self.figure(map, key)?,
            "HashAgg Batches" => self.node.hashagg_batches = self.figure(map, key)?,
            "Disk Usage" => self.node.disk_usage_kb = self.figure(map, key)?,
            "Workers Planned" => self.node.workers_planned = self.figure(map, key)?,
            "Workers Launched" => self.node.workers_launched = self.figure(map, key)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The buffer counts of BUFFERS. Whether `key` was one of them.
    fn read_buffers<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "Shared Hit Blocks" => {
                self.buffers.shared_hit_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Shared Read Blocks" => {
                self.buffers.shared_read_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Shared Dirtied Blocks" => {
                self.buffers.shared_dirtied_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Shared Written Blocks" => {
                self.buffers.shared_written_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Local Hit Blocks" => {
                self.buffers.local_hit_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Local Read Blocks" => {
                self.buffers.local_read_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Local Dirtied Blocks" => {
                self.buffers.local_dirtied_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Local Written Blocks" => {
                self.buffers.local_written_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Temp Read Blocks" => {
                self.buffers.temp_read_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            "Temp Written Blocks" => {
                self.buffers.temp_written_blocks = self.counter(map, key, MAX_COUNTER)?
            }
            _ => return Ok(false),
        }
        self.has_buffers = true;
        Ok(true)
    }

    /// The I/O timings of TRACK_IO_TIMING and the WAL figures of WAL. Whether `key` was one of
    /// them.
    fn read_io_and_wal<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            // PostgreSQL 17 renamed "I/O Read Time" to "Shared I/O Read Time".
            "I/O Read Time" | "Shared I/O Read Time" => {
                self.io.shared_read_ms = self.figure(map, key)?
            }
            "I/O Write Time" | "Shared I/O Write Time" => {
                self.io.shared_write_ms = self.figure(map, key)?
            }
            "Local I/O Read Time" => self.io.local_read_ms = self.figure(map, key)?,
            "Local I/O Write Time" => self.io.local_write_ms = self.figure(map, key)?,
            "Temp I/O Read Time" => self.io.temp_read_ms = self.figure(map, key)?,
            "Temp I/O Write Time" => self.io.temp_write_ms = self.figure(map, key)?,
            "WAL Records" => {
                self.wal.records = self.figure(map, key)?;
                self.has_wal = true;
            }
            "WAL FPI" => {
                self.wal.full_page_images = self.figure(map, key)?;
                self.has_wal = true;
            }
            "WAL Bytes" => {
                self.wal.bytes = self.figure(map, key)?;
                self.has_wal = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The node as read, once its object has ended: an error if it never said its type.
    fn finish<E: de::Error>(self) -> Result<Node, E> {
        if !self.saw_node_type {
            return Err(de::Error::custom(format!(
                "{NOT_A_PLAN}a node without \"Node Type\""
            )));
        }
        let mut node = self.node;
        node.actual = self.has_actual.then_some(self.actual);
        node.buffers = self.has_buffers.then_some(self.buffers);
        node.wal = self.has_wal.then_some(self.wal);
        node.io = self.io;
        if !self.extra.is_empty() {
            node.extra = Extras::from_entries(self.extra);
        }
        Ok(node)
    }
}

/// A number and whether it was written with a fraction or an exponent ("1.00", "1e3") rather
/// than as an integer ("1").
struct ReportedNumber {
    value: f64,
    decimal: bool,
}

impl<'de> de::Deserialize<'de> for ReportedNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NumberVisitor;
        impl Visitor<'_> for NumberVisitor {
            type Value = ReportedNumber;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ReportedNumber, E> {
                Ok(ReportedNumber {
                    value: v as f64,
                    decimal: false,
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ReportedNumber, E> {
                Ok(ReportedNumber {
                    value: v as f64,
                    decimal: false,
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ReportedNumber, E> {
                Ok(ReportedNumber {
                    value: v,
                    decimal: true,
                })
            }
        }
        d.deserialize_any(NumberVisitor)
    }
}

/// Reads any JSON value exactly as `serde_json::Value`'s own `Deserialize` does (the same
/// visits, the same errors), but counting its nesting, into an [`Extra`]: the values of keys
/// pgplan does not model are kept, and may nest arbitrarily.
struct ExtraSeed(Nesting);

impl<'de> DeserializeSeed<'de> for ExtraSeed {
    type Value = Extra;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Extra, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExtraSeed {
    type Value = Extra;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Extra, E> {
        Ok(Extra::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Extra, E> {
        Ok(Extra::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Extra, E> {
        Ok(Extra::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Extra, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Extra::Null, Extra::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Extra, E> {
        Ok(Extra::String(v.into()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Extra, E> {
        Ok(Extra::String(v.into_boxed_str()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Extra, E> {
        Ok(Extra::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Extra, E> {
        Ok(Extra::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Extra, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Extra, A::Error> {
        let nesting = self.0.enter_value()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(ExtraSeed(nesting))? {
            items.push(item);
        }
        Ok(Extra::Array(items.into_boxed_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Extra, A::Error> {
        ExtrasSeed(self.0).visit_map(map).map(Extra::Object)
    }
}

/// Reads a JSON object as `serde_json::Map`'s own `Deserialize` does (same errors for anything
/// else), counting nesting, into [`Extras`].
struct ExtrasSeed(Nesting);

impl<'de> DeserializeSeed<'de> for ExtrasSeed {
    type Value = Extras;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Extras, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ExtrasSeed {
    type Value = Extras;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Extras, E> {
        Ok(Extras::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Extras, A::Error> {
        let nesting = self.0.enter_value()?;
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(24));
        while let Some(Key(key)) = map.next_key::<Key>()? {
            let value = map.next_value_seed(ExtraSeed(nesting))?;
            entries.push((known_name(&key), value));
        }
        Ok(Extras::from_entries(entries))
    }
}

/// Reads `Triggers`, an array of objects, as `Vec<Map<String, Value>>` would, counting nesting.
struct TriggersSeed(Nesting);

impl<'de> DeserializeSeed<'de> for TriggersSeed {
    type Value = Vec<Map<String, Value>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TriggersSeed {
    type Value = Vec<Map<String, Value>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let nesting = self.0.enter_value()?;
        let mut triggers = Vec::new();
        while let Some(trigger) = seq.next_element_seed(ExtrasSeed(nesting))? {
            triggers.push(trigger.into());
        }
        Ok(triggers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_plan;
    use serde::Deserialize;

    const MINIMAL: &str = r#"[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t",
        "Plan Rows": 10, "Actual Rows": 6.50, "Actual Loops": 2, "Actual Startup Time": 0.1,
        "Actual Total Time": 0.2, "Shared Hit Blocks": 3, "Future Key": {"x": 1}},
        "Planning Time": 0.5, "Execution Time": 1.5, "JIT": {"Functions": 3}}]"#;

    #[test]
    fn reads_server_output() {
        let plan = parse_plan(MINIMAL).unwrap();
        assert_eq!(plan.nodes.len(), 1);
        let root = plan.root();
        assert_eq!(root.node_type, "Seq Scan");
        assert_eq!(root.actual.unwrap().rows, 6.5);
        assert_eq!(root.actual.unwrap().loops, 2.0);
        assert_eq!(root.buffers.unwrap().shared_hit_blocks, 3.0);
        assert_eq!(plan.planning_ms, Some(0.5));
        assert_eq!(plan.execution_ms, Some(1.5));
        // Unknown keys are kept, at node and top level.
        assert!(root.extra.contains_key("Future Key"));
        assert!(plan.extra.contains_key("JIT"));
    }

    #[test]
    fn reads_a_bare_object() {
        let bare = MINIMAL.trim().trim_start_matches('[').trim_end_matches(']');
        let plan = parse_plan(bare).unwrap();
        assert_eq!(plan.root().node_type, "Seq Scan");
    }

    #[test]
    fn pre_order_ids_with_parents() {
        let json = r#"{"Plan": {"Node Type": "A", "Plans": [
            {"Node Type": "B", "Plans": [{"Node Type": "C"}]},
            {"Node Type": "D"}]}}"#;
        let plan = parse_plan(json).unwrap();
        let types: Vec<&str> = plan.nodes.iter().map(|n| n.node_type.as_str()).collect();
        assert_eq!(types, ["A", "B", "C", "D"]);
        assert_eq!(plan.nodes[1].parent, Some(0));
        assert_eq!(plan.nodes[2].parent, Some(1));
        assert_eq!(plan.nodes[3].parent, Some(0));
        assert_eq!(plan.nodes[0].children, [1, 3]);
        assert_eq!(plan.nodes[2].depth, 2);
    }

    #[test]
    fn plan_rows_beyond_u64() {
        let json = r#"{"Plan": {"Node Type": "Nested Loop", "Plan Rows": 1000000000000000019884624838656}}"#;
        let plan = parse_plan(json).unwrap();
        assert_eq!(plan.root().plan_rows, Some(1e30));
    }

    #[test]
    fn psql_aligned_paste() {
        let pasted = "                 QUERY PLAN\n\
                      ---------------------------------\n \
                      [                              +\n   \
                        {                            +\n     \
                          \"Plan\": {                  +\n       \
                            \"Node Type\": \"Result\"    +\n     \
                          }                          +\n   \
                        }                            +\n \
                      ]\n\
                      (1 row)\n";
        let plan = parse_plan(pasted).unwrap();
        assert_eq!(plan.root().node_type, "Result");
    }

    /// psql's aligned output of a one-node plan, with `\pset border` 1 or 2.
    fn aligned(border2: bool, unicode: bool) -> String {
        let json = [
            "[",
            "  {",
            "    \"Plan\": {",
            "      \"Node Type\": \"Result\"",
            "    }",
            "  }",
            "]",
        ];
        let (bar, mark, rule) = if unicode {
            ('│', '↵', "─".repeat(30))
        } else {
            ('|', '+', "-".repeat(30))
        };
        let mut lines = Vec::new();
        let frame = |left: &str, right: &str| format!("{left}{rule}{right}");
        if border2 {
            lines.push(if unicode {
                frame("┌", "┐")
            } else {
                frame("+", "+")
            });
            lines.push(format!("{bar}{:^30}{bar}", "QUERY PLAN"));
            lines.push(if unicode {
                frame("├", "┤")
            } else {
                frame("+", "+")
            });
        } else {
            lines.push(format!("{:^30}", "QUERY PLAN"));
            lines.push(rule.clone());
        }
        for (i, line) in json.iter().enumerate() {
            let last = i == json.len() - 1;
            let end = if last { ' ' } else { mark };
            lines.push(if border2 {
                format!("{bar} {line:<27}{end}{bar}")
            } else {
                format!(" {line:<27}{end}")
            });
        }
        if border2 {
            lines.push(if unicode {
                frame("└", "┘")
            } else {
                frame("+", "+")
            });
        }
        lines.push("(1 row)".into());
        lines.join("\n") + "\n"
    }

    #[test]
    fn psql_border_2_paste() {
        for unicode in [false, true] {
            let plan = parse_plan(&aligned(true, unicode)).unwrap();
            assert_eq!(plan.root().node_type, "Result", "unicode {unicode}");
        }
    }

    /// A session paste: the prompt and statement before the result, `BEGIN` and `ROLLBACK`
    /// around it, `\timing`'s line after it.
    #[test]
    fn psql_session_lines_around_the_result_are_ignored() {
        let table = aligned(false, false);
        for paste in [
            format!("{table}\nTime: 1.234 ms\n"),
            format!("BEGIN\n{table}\nROLLBACK\n"),
            format!("app=# EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1;\n{table}\napp=# \n"),
            format!("app=# BEGIN;\nBEGIN\n{table}\nTime: 0.5 ms\napp=*# ROLLBACK;\nROLLBACK\n"),
        ] {
            let plan = parse_plan(&paste).unwrap_or_else(|e| panic!("{e}\n{paste}"));
            assert_eq!(plan.root().node_type, "Result");
        }
    }

    #[test]
    fn psql_expanded_paste() {
        let pasted = "-[ RECORD 1 ]------------------\n\
                      QUERY PLAN | [                 +\n           \
                                 |   {               +\n           \
                                 |     \"Plan\": {     +\n           \
                                 |       \"Node Type\": \"Result\"+\n           \
                                 |     }             +\n           \
                                 |   }               +\n           \
                                 | ]\n";
        let plan = parse_plan(pasted).unwrap();
        assert_eq!(plan.root().node_type, "Result");
    }

    #[test]
    fn impossible_figures_name_their_key_and_node() {
        let err = parse_plan(
            r#"{"Plan": {"Node Type": "Limit", "Plans": [{"Node Type": "Seq Scan",
                "Actual Loops": -1}]}}"#,
        )
        .unwrap_err();
        assert!(matches!(err, PlanError::BadFigure { .. }));
        assert!(
            err.to_string()
                .starts_with("\"Actual Loops\" of node 1 (Seq Scan) is -1"),
            "{err}"
        );
        // Past a 64-bit counter: 1e308 would overflow the sums into "inf".
        let err = parse_plan(r#"{"Plan": {"Node Type": "Result", "Shared Hit Blocks": 1e308}}"#)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("\"Shared Hit Blocks\" of node 0 (Result)"),
            "{err}"
        );
        let err =
            parse_plan(r#"{"Plan": {"Node Type": "Result"}, "Execution Time": -2}"#).unwrap_err();
        assert!(
            err.to_string().contains("\"Execution Time\" of the plan"),
            "{err}"
        );
        // A row estimate past its own limit: the number and the limit in short form.
        let err =
            parse_plan(r#"{"Plan": {"Node Type": "Seq Scan", "Plan Rows": 1e308}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"Plan Rows\" of node 0 (Seq Scan) is 1e308 at line 1 column 54; EXPLAIN reports \
             row estimates as numbers from 0 to 1e200"
        );
        let err =
            parse_plan(r#"{"Plan": {"Node Type": "Result", "Actual Loops": 1e19}}"#).unwrap_err();
        assert!(
            err.to_string().ends_with(" is 1e19 at line 1 column 54; EXPLAIN reports counts, sizes and times as numbers from 0 to 9.223372036854776e18"),
            "{err}"
        );
        // Costs are the planner's, never summed: as given.
        assert!(parse_plan(r#"{"Plan": {"Node Type": "Result", "Total Cost": 1e300}}"#).is_ok());
    }

    #[test]
    fn auto_explain_log_line() {
        let log = "2026-01-01 00:00:00 UTC [1] LOG:  duration: 0.045 ms  plan:\n\t{\n\t  \"Query Text\": \"select 1\",\n\t  \"Plan\": {\"Node Type\": \"Result\"}\n\t}\n";
        let plan = parse_plan(log).unwrap();
        assert_eq!(plan.query_text.as_deref(), Some("select 1"));
        // Not analyzed: the logged duration does not make it a measured plan.
        assert_eq!(plan.execution_ms, None);
        // Analyzed (log_analyze): the log line's duration is its execution time.
        let analyzed = "LOG:  duration: 12.500 ms  plan:\n\t{\n\t  \"Query Text\": \"select 'duration: 9 ms plan:'\",\n\t  \"Plan\": {\"Node Type\": \"Result\", \"Actual Startup Time\": 0.001, \"Actual Total Time\": 0.002, \"Actual Rows\": 1, \"Actual Loops\": 1}\n\t}\n";
        assert_eq!(parse_plan(analyzed).unwrap().execution_ms, Some(12.5));
        // The same plan without the log line has no execution time to give.
        let bare = &analyzed[analyzed.find('{').unwrap()..];
        let bare: String = bare
            .lines()
            .map(|l| l.trim_start_matches('\t'))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(parse_plan(&bare).unwrap().execution_ms, None);
    }

    #[test]
    fn bad_inputs_have_clear_errors() {
        assert_eq!(parse_plan(""), Err(PlanError::Empty));
        assert_eq!(parse_plan("  \n\t "), Err(PlanError::Empty));
        // TEXT plans are read (parse_text.rs); text that is no plan says what it looks like.
        assert_eq!(
            parse_plan("Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)")
                .unwrap()
                .root()
                .node_type,
            "Seq Scan"
        );
        assert!(matches!(parse_plan("hello"), Err(PlanError::NoPlan { .. })));
        assert!(matches!(
            parse_plan(r#"[{"Plan": {"Node Type": "Seq"#),
            Err(PlanError::Truncated { .. })
        ));
        assert!(matches!(
            parse_plan(r#"{"a": 1}"#),
            Err(PlanError::NotAPlan { .. })
        ));
        assert!(matches!(parse_plan("[]"), Err(PlanError::NotAPlan { .. })));
        assert!(matches!(
            parse_plan("[1, 2]"),
            Err(PlanError::NotAPlan { .. })
        ));
        assert!(matches!(
            parse_plan(r#"{"Plan": {"Plan Rows": 1}}"#),
            Err(PlanError::NotAPlan { .. })
        ));
        assert!(matches!(
            parse_plan(r#"{"Plan": {"Node Type": "Result", "Plan Rows": "many"}}"#),
            Err(PlanError::NotAPlan { .. })
        ));
        let out_of_range = parse_plan(r#"{"Plan": {"Node Type": "Result", "Plan Rows": 1e400}}"#);
        match out_of_range {
            Err(PlanError::NotJson { detail }) => assert!(detail.contains("out of range")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_plan(r#"[{"Plan": {"Node Type": "A"}}, {"Plan": {"Node Type": "B"}}]"#),
            Err(PlanError::SeveralPlans { count: 2 })
        );
    }

    #[test]
    fn errors_quoting_the_input_stay_on_one_line() {
        let err = parse_plan(r#"{"Planx\ny": 1, "tab\there": 2}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a plan: an object with keys Planx\\ny, tab\\there at line 1 column 31; expected \
             EXPLAIN (FORMAT JSON) output, an array holding one object with a \"Plan\" key"
        );
    }

    #[test]
    fn deeply_nested_values_are_an_error_not_a_stack_overflow() {
        // Values under keys pgplan does not model are kept, so they are read, not skipped: in a
        // node, at the top level and in the Planning, Settings and Triggers objects.
        let deep = |open: &str, close: &str| {
            let n = 1_000_000;
            format!("{}{}", open.repeat(n), close.repeat(n))
        };
        for value in [deep("[", "]"), deep(r#"{"a": "#, "}")] {
            for json in [
                format!(r#"{{"Plan": {{"Node Type": "Result", "Deep": {value}}}}}"#),
                format!(r#"[{{"Plan": {{"Node Type": "Result"}}, "Deep": {value}}}]"#),
                format!(r#"{{"Plan": {{"Node Type": "Result"}}, "Planning": {{"x": {value}}}}}"#),
                format!(r#"{{"Plan": {{"Node Type": "Result"}}, "Settings": {{"x": {value}}}}}"#),
                format!(r#"{{"Plan": {{"Node Type": "Result"}}, "Triggers": [{{"x": {value}}}]}}"#),
            ] {
                match parse_plan(&json) {
                    Err(PlanError::NotAPlan { detail }) => assert!(
                        detail.starts_with("a value nested more than 128 levels deep at line 1"),
                        "{detail}"
                    ),
                    other => panic!("{other:?}"),
                }
            }
        }
        // serde_json's own limit for a whole document, 128 levels, is allowed; one more is not.
        let nested = |n: usize| {
            let value = format!("{}{}", "[".repeat(n), "]".repeat(n));
            parse_plan(&format!(
                r#"{{"Plan": {{"Node Type": "Result", "V": {value}}}}}"#
            ))
        };
        assert!(nested(128).is_ok());
        assert!(matches!(nested(129), Err(PlanError::NotAPlan { .. })));
    }

    #[test]
    fn nested_values_read_as_serde_json_reads_them() {
        // Within the limit, unmodelled values are what serde_json's own Value would hold, in a
        // shallow plan (read in place) and below a deep one (read on the big-stack thread).
        let values = [
            r#"null"#,
            r#"[true, false, -0, 0, -1, 1.5, 1e30, 18446744073709551615, 18446744073709551616]"#,
            r#"[-9223372036854775808, -9223372036854775809, 0.1, 1e-400, "\u00e9\n\u0000\"", []]"#,
            r#"{"b": 1, "a": {"a": 2, "a": 3}, "b": [4], "c": {}}"#,
            &format!("{}1{}", "[".repeat(120), "]".repeat(120)),
        ];
        for value in values {
            let mut reader = serde_json::Deserializer::from_str(value);
            reader.disable_recursion_limit();
            let expected = Value::deserialize(&mut reader).unwrap();
            for depth in [0, 100] {
                let mut json = String::from(r#"{"Plan": "#);
                json.push_str(&r#"{"Node Type": "Limit", "Plans": ["#.repeat(depth));
                json.push_str(&format!(r#"{{"Node Type": "Result", "Odd": {value}}}"#));
                json.push_str(&"]}".repeat(depth));
                json.push_str(&format!(r#", "Odd": {value}}}"#));
                let plan = parse_plan(&json).unwrap();
                assert_eq!(plan.nodes[depth].extra["Odd"], expected, "{value}");
                assert_eq!(plan.extra["Odd"], expected, "{value}");
            }
        }
    }

    #[test]
    fn depth_is_bounded_not_a_stack_overflow() {
        let mut json = String::new();
        for _ in 0..(MAX_PLAN_DEPTH + 5) {
            json.push_str(r#"{"Node Type": "Result", "Plans": ["#);
        }
        json.push_str(r#"{"Node Type": "Result"}"#);
        for _ in 0..(MAX_PLAN_DEPTH + 5) {
            json.push_str("]}");
        }
        let wrapped = format!(r#"{{"Plan": {json}}}"#);
        assert_eq!(parse_plan(&wrapped), Err(PlanError::TooDeep));
    }
}
