//! Finding the plan in what a user pastes: which format it is (JSON, TEXT, YAML, XML), psql's
//! table decorations undone (every border and line style, wrapped and expanded output, CSV),
//! auto_explain log excerpts split into their plans, and, for input that holds no plan, what it
//! looks like instead.

use std::borrow::Cow;

use super::lines::{UNICODE_MARK_BYTE, lines_ending_in};
use super::model::Plan;
use super::parse::{self, PlanError};
use super::{parse_text, parse_xml, parse_yaml};

/// The EXPLAIN format a plan was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Json,
    Text,
    Yaml,
    Xml,
}

impl PlanFormat {
    pub fn name(self) -> &'static str {
        match self {
            PlanFormat::Json => "JSON",
            PlanFormat::Text => "TEXT",
            PlanFormat::Yaml => "YAML",
            PlanFormat::Xml => "XML",
        }
    }
}

/// A plan read from an input, with where it came from in it.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub plan: Plan,
    pub format: PlanFormat,
    /// Which of the input's plans this is, from 1.
    pub number: usize,
    /// How many plans the input holds (several in an auto_explain log or a psql session).
    pub count: usize,
}

/// Reads EXPLAIN (FORMAT JSON) output as the server sends it, and nothing else: no psql
/// decorations, no other format.
pub fn read_server_json(json: &str) -> Result<Plan, PlanError> {
    parse::parse_json_body(json)
}

/// Reads a plan from text: EXPLAIN output in any format (JSON, TEXT, YAML, XML), as the server
/// sends it, as psql prints it, or as auto_explain logs it; the first plan when there are several.
pub fn parse_plan(input: &str) -> Result<Plan, PlanError> {
    super::input::read_plan(input, None).map(|read| read.plan)
}

/// Reads plan `choice` (from 1; the first when `None`) of the input: EXPLAIN output in any
/// format, as the server sends it, as psql prints it, or as auto_explain logs it.
pub fn read_plan(input: &str, choice: Option<usize>) -> Result<ReadPlan, PlanError> {
    let text = input.trim_start_matches('\u{feff}');
    if text.trim().is_empty() {
        return Err(PlanError::Empty);
    }
    // The common case first: the JSON as the server sent it, read straight away. Valid JSON
    // cannot carry psql's decorations (no line of it ends in `+`, `|`, `)` or a box-drawing
    // mark: those stand inside strings, which cannot hold a line break), so when it reads, the
    // search below would have found this one plan; looking for them first cost a scan of every
    // line of a large plan. Anything that does not read is looked at as before.
    let json = text.trim();
    if choice.is_none_or(|n| n == 1)
        && json.starts_with(['[', '{'])
        && let Ok(plan) = parse::parse_json_body(json)
    {
        return Ok(ReadPlan {
            plan,
            format: PlanFormat::Json,
            number: 1,
            count: 1,
        });
    }
    let candidates = candidates(text);
    if candidates.is_empty() {
        return Err(PlanError::NoPlan {
            looks_like: looks_like(text),
        });
    }
    let count = candidates.len();
    let number = choice.unwrap_or(1);
    if number == 0 || number > count {
        return Err(PlanError::NoSuchPlan { number, count });
    }
    let candidate = &candidates[number - 1];
    let mut plan = match candidate.format {
        PlanFormat::Json => {
            // The JSON reader undoes psql's aligned output itself; the body is the fallback for
            // the decorations it does not know (double frames, CSV, other column names).
            if count == 1 && candidate.duration_ms.is_none() {
                match parse::parse_json_input(text) {
                    Ok(plan) => Ok(plan),
                    Err(_) => parse::parse_json_body(&candidate.body),
                }
            } else {
                parse::parse_json_body(&candidate.body)
            }
        }
        PlanFormat::Text => parse_text::parse_text(&candidate.body),
        PlanFormat::Yaml => parse_yaml::parse_yaml(&candidate.body),
        PlanFormat::Xml => parse_xml::parse_xml(&candidate.body),
    }?;
    // auto_explain logs the executor's run time in the line's prefix; its plans carry no
    // Execution Time of their own.
    if plan.execution_ms.is_none() && plan.is_analyzed() {
        plan.execution_ms = candidate.duration_ms;
    }
    Ok(ReadPlan {
        plan,
        format: candidate.format,
        number,
        count,
    })
}

/// One plan found in the input: its format and its text with every decoration removed.
#[derive(Debug)]
struct Candidate<'a> {
    format: PlanFormat,
    body: Cow<'a, str>,
    duration_ms: Option<f64>,
}

/// Every plan in the input, in order.
fn candidates(text: &str) -> Vec<Candidate<'_>> {
    let trimmed = text.trim_start();
    // The common cases first, without copying: the output as the server sent it.
    if let Some(format) = bare_format(trimmed)
        && !has_table_decoration(trimmed)
    {
        // A TEXT or YAML plan keeps its first line's indentation: psql's one-space margin
        // stands before every line, and the readers measure columns from the first line's.
        let body = match format {
            PlanFormat::Text | PlanFormat::Yaml => {
                let blank = &text[..text.len() - trimmed.len()];
                &text[blank.rfind('\n').map_or(0, |at| at + 1)..]
            }
            _ => trimmed,
        };
        let body = match format {
            PlanFormat::Text => end_quoted_lines(body).map_or(Cow::Borrowed(body), Cow::Owned),
            _ => Cow::Borrowed(body),
        };
        return vec![Candidate {
            format,
            body,
            duration_ms: None,
        }];
    }
    let logged = log_plans(text);
    if !logged.is_empty() {
        return logged;
    }
    // Each reading in turn, until one finds a plan: a table whose values are not a plan may
    // still stand beside one (a session's `SET` reply), CSV-looking lines may be quoted ones.
    let tables: Vec<Candidate<'_>> = psql_tables(text)
        .into_iter()
        .filter_map(|body| body_candidate(Cow::Owned(body)))
        .collect();
    if !tables.is_empty() {
        return tables;
    }
    if let Some(candidate) = csv_body(text).and_then(|body| body_candidate(Cow::Owned(body))) {
        return vec![candidate];
    }
    for body in [quoted_lines(text), end_quoted_lines(text)]
        .into_iter()
        .flatten()
    {
        if let Some(start) = plan_start(&body)
            && let Some(candidate) = body_candidate(Cow::Owned(body[start..].to_owned()))
        {
            return vec![candidate];
        }
    }
    if let Some(start) = plan_start(text) {
        let body = &text[start..];
        // psql's aligned output copied without its header and rule still carries the `+` that
        // marks a value continued on the next line.
        let body = if has_table_decoration(body) {
            let rows: Vec<&str> = body.lines().collect();
            let width = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
            Cow::Owned(table_values(&rows, false, width + 1))
        } else {
            Cow::Borrowed(body)
        };
        return body_candidate(body).into_iter().collect();
    }
    Vec::new()
}

/// The format of a body that starts at its plan.
fn bare_format(body: &str) -> Option<PlanFormat> {
    let first = body.lines().next().unwrap_or_default().trim_end();
    // `[` or `{` opening the document, not a prompt like `[14003](2038152)postgres=#` (a
    // bracket closed and straight away followed by what no JSON has there).
    let prompt = first.starts_with('[')
        && first.find(']').is_some_and(|at| {
            !first[..at].contains('"')
                && first[at + 1..]
                    .chars()
                    .next()
                    .is_some_and(|c| !(c.is_whitespace() || matches!(c, ',' | ']' | '}')))
        });
    if (first.starts_with('[') && !prompt) || first.starts_with('{') {
        Some(PlanFormat::Json)
    } else if first.starts_with("<explain") || first.starts_with("<?xml") {
        Some(PlanFormat::Xml)
    } else if first == "- Plan:" || first.starts_with("- Plan: ") || first == "Plan:" {
        Some(PlanFormat::Yaml)
    } else if parse_text::is_node_line(first)
        || first.starts_with("Query Text:")
        || first
            .strip_prefix("->  ")
            .is_some_and(parse_text::is_node_line)
    {
        Some(PlanFormat::Text)
    } else {
        None
    }
}

fn body_candidate(body: Cow<'_, str>) -> Option<Candidate<'_>> {
    let start = body.len() - body.trim_start_matches(['\n', '\r']).len();
    let format = bare_format(body[start..].trim_start_matches(' '))?;
    let body = match body {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..]),
        Cow::Owned(b) => Cow::Owned(b[start..].to_owned()),
    };
    Some(Candidate {
        format,
        body,
        duration_ms: None,
    })
}

/// Whether a body that starts like a plan still carries psql's marks: a JSON line ending in a
/// continuation mark, or a `(N rows)` footer.
fn has_table_decoration(text: &str) -> bool {
    lines_ending_in(text, [b'+', b'|', b')'])
        .any(|t| t.ends_with(" +") || t.ends_with('|') || (t.ends_with(')') && is_footer(t)))
        || lines_ending_in(text, [UNICODE_MARK_BYTE; 3]).any(|t| t.ends_with(['↵', '│', '║']))
}

/// psql's `(1 row)` / `(12 rows)` footer.
pub(super) fn is_footer(line: &str) -> bool {
    line.trim()
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .and_then(|l| l.split_once(' '))
        .is_some_and(|(n, word)| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (word == "row" || word == "rows")
        })
}

// ---------------------------------------------------------------------------------------------
// auto_explain in a server log

/// The plans of an auto_explain log excerpt: each `LOG:  duration: 1.234 ms  plan:` line (after
/// any log_line_prefix) starts one, and its lines follow, each indented by a tab.
fn log_plans(text: &str) -> Vec<Candidate<'_>> {
    let mut plans = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(at) = line.find("plan:") else {
            continue;
        };
        let head = &line[..at];
        if !head.contains("duration:") || !line[at + "plan:".len()..].trim().is_empty() {
            continue;
        }
        let duration_ms = logged_duration(head);
        let mut body = String::new();
        while let Some(next) = lines.peek() {
            let Some(rest) = next.strip_prefix('\t') else {
                break;
            };
            body.push_str(rest);
            body.push('\n');
            lines.next();
        }
        if let Some(mut candidate) = body_candidate(Cow::Owned(body)) {
            candidate.duration_ms = duration_ms;
            plans.push(candidate);
        }
    }
    plans
}

/// The `duration: 12.345 ms` of a log line.
fn logged_duration(head: &str) -> Option<f64> {
    let after = &head[head.rfind("duration:")? + "duration:".len()..];
    let mut words = after.split_whitespace();
    let (number, unit) = (words.next()?, words.next()?);
    (unit == "ms")
        .then(|| number.parse::<f64>().ok())
        .flatten()
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
}

// ---------------------------------------------------------------------------------------------
// psql's aligned and wrapped tables

/// The characters psql draws rules and frames with, in every line style.
fn is_rule_char(c: char) -> bool {
    matches!(
        c,
        '-' | '+'
            | '─'
            | '┼'
            | '┌'
            | '┐'
            | '└'
            | '┘'
            | '├'
            | '┤'
            | '┬'
            | '┴'
            | '═'
            | '╪'
            | '╔'
            | '╗'
            | '╚'
            | '╝'
            | '╠'
            | '╣'
            | '╞'
            | '╡'
            | '╤'
            | '╧'
            | '╦'
            | '╩'
            | '╬'
            | '║'
            | '│'
            | '╟'
            | '╢'
            | '╫'
    )
}

fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.chars().count() >= 3
        && t.chars().all(is_rule_char)
        && t.chars().any(|c| matches!(c, '-' | '─' | '═'))
}

const BARS: [char; 3] = ['|', '│', '║'];

/// The header above a rule: a single column's name, centred, maybe inside frame bars.
fn header_label(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = match t.strip_prefix(BARS) {
        Some(rest) => rest.strip_suffix(BARS)?,
        None => t,
    };
    let label = inner.trim();
    (!label.is_empty() && !label.contains(BARS) && !label.contains("  ")).then_some(label)
}

/// A column's name followed by nothing but a bar: `QUERY PLAN      |`.
fn right_bar_label(line: &str) -> Option<&str> {
    let t = line.trim();
    let label = t.strip_suffix(BARS)?.trim();
    (!t.starts_with(BARS) && !label.is_empty() && !label.contains(BARS) && !label.contains("  "))
        .then_some(label)
}

/// The values of every single-column table psql printed in the text (a paste may hold a
/// session: the statement echoed, `SET` and `BEGIN` answered, several results).
fn psql_tables(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut tables = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(records) = expanded_records(&lines, &mut i) {
            tables.push(records);
            continue;
        }
        if i + 1 < lines.len() && is_rule(lines[i + 1]) && right_bar_label(lines[i]).is_some() {
            // A grid with a bar only after each value (DBeaver's text view).
            let mut end = i + 2;
            while end < lines.len() && lines[end].trim_end().ends_with(BARS) {
                end += 1;
            }
            let rows: Vec<&str> = lines[i + 2..end]
                .iter()
                .map(|l| l.trim_end().strip_suffix(BARS).unwrap_or(l).trim_end())
                .collect();
            let mut body = String::new();
            for row in rows {
                body.push_str(row);
                body.push('\n');
            }
            tables.push(body);
            i = end;
            continue;
        }
        if i + 1 < lines.len() && is_rule(lines[i + 1]) && header_label(lines[i]).is_some() {
            let framed = lines[i].trim_start().starts_with(BARS);
            // A rule wider than the terminal continues on the next lines.
            let mut start = i + 2;
            while start < lines.len() && is_rule(lines[start]) && !framed {
                start += 1;
            }
            let mut end = start;
            while end < lines.len() {
                let l = lines[end];
                if is_footer(l) || l.trim().is_empty() || (framed && is_rule(l)) {
                    break;
                }
                end += 1;
            }
            let rule_width = lines[i + 1].trim_end().chars().count();
            tables.push(table_values(&lines[start..end], framed, rule_width));
            i = end;
            continue;
        }
        i += 1;
    }
    tables
}

/// Undoes the cell layout: the frame's bars (border 2), the one-space margin (border 1), `+` and
/// `↵` at the end of a value that continues on the next line, and the `.`/`…` marks of a line
/// wrapped at the terminal's width (`\pset format wrapped`), which join without a line break.
fn table_values(rows: &[&str], framed: bool, rule_width: usize) -> String {
    // Border 1 leaves a margin of one space (or a wrap mark) before every value; border 0 none:
    // a plan's root line then starts in the first column.
    let margin = framed
        || rows
            .iter()
            .all(|r| r.is_empty() || r.starts_with([' ', '.', '…']));
    let mut out = String::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    let mut pending_wrap = false;
    // With a margin, the right margin's column holds the marks: a line that reaches it ends
    // in one (`content+` on the widest line, with no space before the mark).
    let mark_column = rule_width.saturating_sub(if framed { 3 } else { 1 });
    for row in rows {
        let mut cell: &str = row;
        if framed {
            let t = cell.trim_end();
            cell = t.strip_prefix(BARS).unwrap_or(t);
            cell = cell.strip_suffix(BARS).unwrap_or(cell);
        }
        let mut wrapped_from_previous = false;
        if margin {
            let mut chars = cell.chars();
            match chars.next() {
                Some(c @ ('.' | '…')) if pending_wrap || c == '…' => {
                    wrapped_from_previous = true
                }
                // A `.` in the margin marks a wrapped line only after a line that ended in
                // one: otherwise it is the value's own first character (the `...` of a
                // documentation excerpt), kept whole.
                Some('.') => chars = cell.chars(),
                _ => {}
            }
            cell = chars.as_str();
        }
        if wrapped_from_previous {
            // The previous line ended with the wrap mark in place of its margin: drop it and the
            // line break.
            if out.ends_with('\n') {
                out.pop();
            }
            if out.ends_with(['.', '…']) {
                out.pop();
            }
        }
        let at_margin = margin && cell.chars().count() == mark_column;
        let content = cell.trim_end();
        let (content, continued) = match content.strip_suffix('↵') {
            Some(rest) => (rest.trim_end(), true),
            None => match content.strip_suffix(" +") {
                Some(rest) => (rest.trim_end(), true),
                None => match content.strip_suffix('+') {
                    Some(rest) if at_margin => (rest, true),
                    _ => (content, false),
                },
            },
        };
        out.push_str(content);
        out.push('\n');
        // A line that fills the column and ends in a mark may be continued by a wrapped line.
        pending_wrap = !continued && content.ends_with(['.', '…']);
    }
    out
}

/// psql's expanded output (`\x`): `-[ RECORD 1 ]---` headers, each record one `label | value`
/// line, or several when the value spans lines.
fn expanded_records(lines: &[&str], i: &mut usize) -> Option<String> {
    if !is_record_header(lines[*i]) {
        return None;
    }
    let mut out = String::new();
    while *i < lines.len() {
        let line = lines[*i];
        if is_record_header(line) {
            *i += 1;
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        // `\pset border 2`: a bar at each end of the record's lines.
        let line = match line.trim_end().strip_prefix(BARS) {
            Some(inner) => inner.strip_suffix(BARS).unwrap_or(inner),
            None => line,
        };
        let Some(at) = find_bar(line) else {
            break;
        };
        let Some(value) = line.get(at..).and_then(|rest| rest.strip_prefix(BARS)) else {
            break;
        };
        let value = value.strip_prefix(' ').unwrap_or(value).trim_end();
        let value = value
            .strip_suffix('↵')
            .or_else(|| value.strip_suffix(" +"))
            .unwrap_or(value)
            .trim_end();
        out.push_str(value);
        out.push('\n');
        *i += 1;
    }
    Some(out)
}

fn find_bar(line: &str) -> Option<usize> {
    line.find(" | ")
        .map(|at| at + 1)
        .or_else(|| line.find(" │ ").map(|at| at + 1))
        .or_else(|| line.strip_suffix(" |").map(|l| l.len() + 1))
}

fn is_record_header(line: &str) -> bool {
    let t = line.trim_start_matches(['+', '┌', '├', '└', '╔', '╠', '╚']);
    t.strip_prefix(['-', '─', '═'])
        .is_some_and(|rest| rest.starts_with("[ RECORD"))
}

// ---------------------------------------------------------------------------------------------
// CSV (`psql --csv`), and unaligned output with a header

/// `psql --csv`: a header line, then one value per record, quoted (with doubled quotes) when it
/// holds a comma, a quote or a line break.
fn csv_body(text: &str) -> Option<String> {
    let text = text.trim_start_matches(['\r', '\n']);
    let mut lines = text.lines();
    let header = lines.next()?.trim_end();
    // A value copied without the header (a spreadsheet's cell) starts with its quote.
    let rest_start = if header.starts_with('"') {
        0
    } else {
        header.len()
    };
    if header.is_empty() || header.starts_with(' ') || header.contains(',') {
        return None;
    }
    let rest = text.get(rest_start..)?.trim_start_matches(['\r', '\n']);
    if !rest.lines().any(|l| l.starts_with('"')) {
        return None;
    }
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars().peekable();
    let mut at_record_start = true;
    while let Some(c) = chars.next() {
        if at_record_start && c == '"' {
            // A quoted value: up to the quote that is not doubled.
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        out.push('"');
                    }
                    Some('"') | None => break,
                    Some(other) => out.push(other),
                }
            }
            at_record_start = false;
            continue;
        }
        if c == '\r' {
            continue;
        }
        out.push(c);
        at_record_start = c == '\n';
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// A plan without a table around it

/// Where the plan starts in text that is not a psql table: `psql -At` output, a plan copied out
/// of a session, or with the statement and its replies (`BEGIN`, `SET`) around it.
fn plan_start(text: &str) -> Option<usize> {
    let mut at = 0;
    let mut seen = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        let content = t.trim_start();
        // A child's line starts a plan (a subtree) only as the input's first line: below other
        // lines it may be the rest of a plan whose first lines were not recognised, and reading
        // from it would drop them.
        let subtree = content.starts_with("->");
        if bare_format(content).is_some() && !(subtree && seen) {
            // The root may be indented: a psql table copied without its header keeps the
            // one-space margin; the TEXT reader measures indentation from the root.
            let indent = line.len() - line.trim_start().len();
            let start = if content.starts_with(['[', '{', '<', '-']) {
                at + indent
            } else {
                at
            };
            return Some(start);
        }
        seen = seen || !content.is_empty();
        at += line.len();
    }
    None
}

/// A plan copied out of a GUI client or a spreadsheet, each line in double (or single) quotes:
/// the quotes removed, doubled quotes undone.
fn quoted_lines(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let quote = lines
        .first()?
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\''))?;
    let all_quoted = lines
        .iter()
        .all(|l| l.len() >= 2 && l.starts_with(quote) && l.ends_with(quote));
    if !all_quoted {
        return None;
    }
    let doubled: String = [quote, quote].iter().collect();
    let single = quote.to_string();
    let mut out = String::with_capacity(text.len());
    for line in lines {
        out.push_str(&line[1..line.len() - 1].replace(&doubled, &single));
        out.push('\n');
    }
    Some(out)
}

/// A plan whose every line ends with a quote, the opening quotes lost with the indentation
/// when it was copied out of a quoted export: the closing quotes removed (and an opening one
/// where it stayed), doubled quotes undone, the indentation kept.
fn end_quoted_lines(text: &str) -> Option<String> {
    // Most plans end their first line with a parenthesis: one look decides.
    let mut nonblank = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    if !nonblank.all(|l| l.ends_with('"')) {
        return None;
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.len() < 2
        || !lines
            .iter()
            .all(|l| l.ends_with('"') && l.trim().len() >= 2)
    {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for line in lines {
        let line = &line[..line.len() - 1];
        let indent = line.len() - line.trim_start().len();
        out.push_str(&line[..indent]);
        let value = &line[indent..];
        out.push_str(
            &value
                .strip_prefix('"')
                .unwrap_or(value)
                .replace("\"\"", "\""),
        );
        out.push('\n');
    }
    Some(out)
}

/// What input that holds no plan looks like, for the error.
fn looks_like(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let first = lines.first().copied().unwrap_or_default();
    let upper = first.to_ascii_uppercase();
    if let Some(error) = lines
        .iter()
        .find(|l| l.starts_with("ERROR:") || l.contains(" ERROR:  ") || l.starts_with("psql:"))
    {
        return format!(
            "a psql error ({:?}), not a plan",
            error.chars().take(100).collect::<String>()
        );
    }
    if lines.iter().any(|l| is_record_header(l)) {
        return "psql's expanded output (\\x) without a QUERY PLAN column".into();
    }
    for keyword in [
        "SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE", "EXPLAIN", "VALUES", "TABLE",
    ] {
        if upper.starts_with(keyword) && upper[keyword.len()..].starts_with([' ', '\n', '(', ';'])
            || upper == keyword
        {
            return if keyword == "EXPLAIN" {
                "an EXPLAIN statement, not its output".into()
            } else {
                "a SQL query, not its plan".into()
            };
        }
    }
    if lines
        .iter()
        .any(|l| l.contains("duration:") && l.contains("statement:"))
    {
        return "a server log without auto_explain plans (a `duration: … statement:` line only)"
            .into();
    }
    // A line with a node's figures whose name is no node PostgreSQL prints.
    if let Some(line) = lines
        .iter()
        .find(|l| !l.starts_with("->") && l.contains(" (cost="))
    {
        let name = line[..line.find(" (cost=").unwrap_or(line.len())].trim_end();
        return format!(
            "a TEXT plan whose node {:?} is not one PostgreSQL prints (a node's name as EXPLAIN \
             writes it, like \"Seq Scan on t\", comes before its figures)",
            name.chars().take(60).collect::<String>()
        );
    }
    if lines
        .iter()
        .any(|l| l.contains("(cost=") || l.contains("(actual ") || l.contains("->  "))
    {
        return "part of a TEXT plan without its first line (the root node)".into();
    }
    format!(
        "text starting with {:?}",
        first.chars().take(40).collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_ending_in_are_the_trimmed_lines_that_end_so() {
        for text in [
            "",
            "+",
            "a",
            "a +\n",
            " a  \r\n\tb +\n\n(1 row) ",
            "[\n  {\n    \"Plan\": {\"Filter\": \"(a > 1)\"}\n  }\n]\n",
            "x ↵\ny │ \r\n|\n(a) b\n ║",
            "a+b|c)\u{a0}\n→ ↵x",
            "(a) OR (b) OR (c)\n(d) x) )  \n) ) \r\n",
            "↵ ↵ ↵\n│x│\n║ ║\u{a0}",
        ] {
            for marks in [[b'+', b'|', b')'], [UNICODE_MARK_BYTE; 3]] {
                let expected: Vec<&str> = text
                    .lines()
                    .map(str::trim_end)
                    .filter(|l| {
                        l.chars()
                            .last()
                            .is_some_and(|c| marks.contains(&c.to_string().as_bytes()[0]))
                    })
                    .collect();
                let got: Vec<&str> = lines_ending_in(text, marks).collect();
                assert_eq!(got, expected, "{text:?}");
            }
        }
    }

    #[test]
    fn footers_and_rules() {
        assert!(is_footer("(1 row)"));
        assert!(is_footer("(12 rows)"));
        assert!(!is_footer("(rows)"));
        assert!(is_rule("-----"));
        assert!(is_rule("╠═══╣"));
        assert!(!is_rule("+"));
    }

    #[test]
    fn wrapped_lines_join_without_a_break() {
        let rows = [
            " Sort  (cost=1.00..2.00 rows=1 width=4)",
            "   Output: o.id, o.creat.",
            ".ed_at",
        ];
        assert_eq!(
            table_values(&rows, false, 40),
            "Sort  (cost=1.00..2.00 rows=1 width=4)\n  Output: o.id, o.created_at\n"
        );
    }

    #[test]
    fn a_line_of_dots_is_no_wrap_mark() {
        // `...` at the first column of a table whose other lines have psql's margin: an
        // excerpt's elision, its first dot no margin.
        let rows = [
            " Hash Join  (cost=0.00..1.00 rows=1 width=4)",
            "...",
            "   ->  Hash  (cost=0.00..1.00 rows=1 width=4)",
        ];
        assert_eq!(
            table_values(&rows, false, 48),
            "Hash Join  (cost=0.00..1.00 rows=1 width=4)\n...\n  ->  Hash  (cost=0.00..1.00 rows=1 width=4)\n"
        );
    }

    #[test]
    fn csv_values_are_unquoted() {
        let csv = "QUERY PLAN\n\"[\n  {\"\"Plan\"\": 1}\n]\"\n";
        assert_eq!(csv_body(csv).unwrap(), "[\n  {\"Plan\": 1}\n]\n");
    }

    const COST: &str = "(cost=0.00..1.00 rows=1 width=4)";

    #[test]
    fn a_prompt_in_brackets_is_not_json() {
        let session = format!(
            "[14003](2038152)postgres@db=# EXPLAIN SELECT 1;\n{COST}\n Result  {COST}\n(1 row)\n"
        );
        let read = read_plan(&session, None).unwrap();
        assert_eq!(read.format, PlanFormat::Text);
        assert_eq!(read.plan.root().node_type, "Result");
    }

    #[test]
    fn quoted_exports() {
        // CSV-quoted JSON without a header, as a spreadsheet's cell holds it.
        let json = "\n\"[\n  {\n    \"\"Plan\"\": {\"\"Node Type\"\": \"\"Result\"\"}\n  }\n]\"\n";
        let read = read_plan(json, None).unwrap();
        assert_eq!(read.format, PlanFormat::Json);
        // Every line ends with a quote, the opening ones lost.
        let text = format!(
            "Limit  {COST}\"\n  ->  Seq Scan on t  {COST}\"\n        Filter: (a = 'x'::text)\"\n"
        );
        let read = read_plan(&text, None).unwrap();
        assert_eq!(read.plan.nodes.len(), 2);
        assert_eq!(
            read.plan.nodes[1].filter.as_deref(),
            Some("(a = 'x'::text)")
        );
    }

    #[test]
    fn a_grid_with_bars_after_the_values() {
        let grid = format!(
            "QUERY PLAN                                   |\n---------------------------------------------+\nLimit  {COST}  |\n  ->  Seq Scan on t  {COST}|\n"
        );
        let read = read_plan(&grid, None).unwrap();
        assert_eq!(read.plan.nodes.len(), 2);
    }

    #[test]
    fn a_rule_wider_than_the_terminal_and_marks_without_a_header() {
        let table = format!(
            "           QUERY PLAN\n--------------------\n----------\n Result  {COST}\n Planning Time: 0.1 ms\n(2 rows)\n"
        );
        assert_eq!(read_plan(&table, None).unwrap().plan.planning_ms, Some(0.1));
        // psql's aligned XML copied without header and rule: the `+` marks still there.
        let xml = " <explain>               +\n   <Query>               +\n     <Plan>              +\n       <Node-Type>Result</Node-Type>+\n     </Plan>             +\n   </Query>              +\n </explain>\n(1 row)\n";
        let read = read_plan(xml, None).unwrap();
        assert_eq!(read.format, PlanFormat::Xml);
        assert_eq!(read.plan.root().node_type, "Result");
        // YAML with psql's margin.
        let yaml = " - Plan: \n     Node Type: \"Result\"\n     Plan Rows: 1\n   Triggers: \n   Planning Time: 0.1\n";
        assert_eq!(read_plan(yaml, None).unwrap().plan.planning_ms, Some(0.1));
    }

    #[test]
    fn what_it_looks_like() {
        assert!(
            looks_like(&format!("Some Node Type  {COST}\n  ->  Sort  {COST}")).starts_with(
                "a TEXT plan whose node \"Some Node Type\" is not one PostgreSQL prints"
            )
        );
        // One space before the figures names the node the same way.
        assert!(
            looks_like(&format!("Some Node Type {COST}\n -> Sort {COST}")).starts_with(
                "a TEXT plan whose node \"Some Node Type\" is not one PostgreSQL prints"
            )
        );
        assert_eq!(looks_like("SELECT 1"), "a SQL query, not its plan");
        assert!(looks_like("ERROR:  relation \"x\" does not exist").starts_with("a psql error"));
        assert!(
            looks_like("  ->  Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)")
                .starts_with("part of a TEXT plan")
        );
    }
}
