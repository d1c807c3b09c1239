//! Reading EXPLAIN (FORMAT YAML): the same object as the JSON, one key a line, indented.
//!
//! PostgreSQL's YAML is regular (explain.c writes it): a list of query objects, maps indented
//! by two spaces, lists as `- ` items, strings always in double quotes with JSON's escapes,
//! numbers and booleans bare. A small dedicated reader is exact for it and costs no dependency.

use serde_json::{Map, Value};

use super::model::Plan;
use super::parse::{self, MAX_PLAN_DEPTH, PlanError};
use super::parse_text::number;

pub(super) fn parse_yaml(body: &str) -> Result<Plan, PlanError> {
    let lines: Vec<Line> = body
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let content = l.trim_start_matches(' ');
            Line {
                indent: l.len() - content.len(),
                content: content.trim_end(),
                number: i + 1,
            }
        })
        .collect();
    let mut reader = Reader {
        lines,
        at: 0,
        max_depth: 0,
    };
    let value = reader.block(0)?;
    if let Some(line) = reader.lines.get(reader.at) {
        return Err(bad(
            line.number,
            "a line indented less than the plan it follows",
        ));
    }
    let depth = reader.max_depth;
    parse::plan_from_value(value, depth + 2)
}

struct Line<'a> {
    indent: usize,
    content: &'a str,
    number: usize,
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    max_depth: usize,
}

fn bad(line: usize, detail: impl Into<String>) -> PlanError {
    PlanError::BadLine {
        format: "YAML",
        line,
        detail: super::parse_text::one_line(&detail.into()),
    }
}

/// Keys whose empty value is an empty list (`Triggers: ` with nothing under it).
fn is_list_key(key: &str) -> bool {
    matches!(key, "Plans" | "Workers" | "Triggers" | "Target Tables")
        || super::parse_text::LIST_KEYS.contains(&key)
}

impl Reader<'_> {
    /// The value whose first line is the next one: a list or a map.
    fn block(&mut self, depth: usize) -> Result<Value, PlanError> {
        // Two YAML levels per plan level.
        if depth > 2 * MAX_PLAN_DEPTH + 8 {
            return Err(PlanError::TooDeep);
        }
        self.max_depth = self.max_depth.max(depth);
        let Some(first) = self.lines.get(self.at) else {
            return Ok(Value::Null);
        };
        let indent = first.indent;
        if first.content == "-" || first.content.starts_with("- ") {
            self.list(indent, depth)
        } else {
            self.map(indent, depth).map(Value::Object)
        }
    }

    fn list(&mut self, indent: usize, depth: usize) -> Result<Value, PlanError> {
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent != indent || !(line.content == "-" || line.content.starts_with("- ")) {
                break;
            }
            let item = line.content.get(2..).unwrap_or_default().trim_start();
            let number = line.number;
            if item.is_empty() {
                self.at += 1;
                items.push(self.block(depth + 1)?);
            } else if item.starts_with('"') || !item.contains(':') {
                self.at += 1;
                items.push(scalar(item, number)?);
            } else {
                // `- Key: value` opens a map whose keys sit where `Key` does.
                let shift = line.content.len() - item.len();
                self.lines[self.at].indent = indent + shift;
                self.lines[self.at].content = item;
                items.push(Value::Object(self.map(indent + shift, depth + 1)?));
            }
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, indent: usize, depth: usize) -> Result<Map<String, Value>, PlanError> {
        let mut map = Map::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(bad(line.number, "unexpected indentation"));
            }
            if line.content.starts_with("- ") {
                break;
            }
            let number = line.number;
            let (key, rest) = match line.content.split_once(": ") {
                Some((k, r)) => (k, r.trim()),
                None => match line.content.strip_suffix(':') {
                    Some(k) => (k, ""),
                    None => {
                        return Err(bad(
                            number,
                            format!("expected `Key: value`, found {:?}", line.content),
                        ));
                    }
                },
            };
            let key = unquote_key(key, number)?;
            self.at += 1;
            let value = if rest.is_empty() {
                match self.lines.get(self.at) {
                    Some(next) if next.indent > indent => self.block(depth + 1)?,
                    _ if is_list_key(&key) => Value::Array(Vec::new()),
                    _ => Value::Object(Map::new()),
                }
            } else {
                scalar(rest, number)?
            };
            map.insert(key, value);
        }
        Ok(map)
    }
}

/// A key, bare or (a setting's name, say) quoted.
fn unquote_key(key: &str, line: usize) -> Result<String, PlanError> {
    if key.starts_with('"') {
        serde_json::from_str::<String>(key)
            .map_err(|e| bad(line, format!("cannot read the key {key}: {e}")))
    } else {
        Ok(key.to_owned())
    }
}

/// A scalar: a JSON-escaped string in double quotes, a number or a boolean.
fn scalar(text: &str, line: usize) -> Result<Value, PlanError> {
    if text.starts_with('"') {
        if !text.contains('\\') && text.len() >= 2 && text.ends_with('"') {
            return Ok(Value::String(text[1..text.len() - 1].to_owned()));
        }
        return serde_json::from_str::<String>(text)
            .map(Value::String)
            .map_err(|e| bad(line, format!("cannot read the string {text}: {e}")));
    }
    match text {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        "null" | "~" => return Ok(Value::Null),
        _ => {}
    }
    Ok(number(text).unwrap_or_else(|| Value::String(text.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_plan_reads() {
        let yaml = "- Plan: \n    Node Type: \"Seq Scan\"\n    Relation Name: \"t\"\n    Alias: \"t\"\n    Startup Cost: 0.00\n    Total Cost: 1.00\n    Plan Rows: 1\n    Plan Width: 4\n    Output: \n      - \"a\"\n      - \"b\"\n  Planning Time: 0.05\n  Triggers: \n";
        let plan = parse_yaml(yaml).unwrap();
        assert_eq!(plan.root().node_type, "Seq Scan");
        assert_eq!(plan.root().output, ["a", "b"]);
        assert_eq!(plan.planning_ms, Some(0.05));
    }
}
