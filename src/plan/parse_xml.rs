//! Reading EXPLAIN (FORMAT XML): the same object as the JSON, as elements.
//!
//! explain.c writes one element per key, its name the key with each character outside
//! `[A-Za-z0-9-_.:]` replaced by `-` (`Node-Type`, `I-O-Read-Time`), lists as `<Item>`s, groups
//! of plans, workers and triggers as repeated elements, and text escaped as `&amp;`, `&lt;` and
//! `&gt;`. XML carries no types, so a value's JSON type comes from its key, as the TEXT reader's
//! does. A small dedicated reader is exact for it and costs no dependency.

use serde_json::{Map, Value};

use super::model::Plan;
use super::parse::{self, MAX_PLAN_DEPTH, PlanError};
use super::parse_text::typed;

pub(super) fn parse_xml(body: &str) -> Result<Plan, PlanError> {
    let mut reader = Reader {
        text: body,
        at: 0,
        max_depth: 0,
    };
    reader.skip_prolog();
    let (name, root) = reader.element(0)?;
    if name != "explain" {
        return Err(bad(
            reader.line(),
            format!("expected <explain>, found <{name}>"),
        ));
    }
    // <explain> holds one <Query> per plan.
    let queries = match root {
        Node::Children(children) => children
            .into_iter()
            .filter(|(n, _)| n == "Query")
            .map(|(_, q)| q.into_value("Query", false))
            .collect(),
        Node::Text(_) => Vec::new(),
    };
    let depth = reader.max_depth;
    parse::plan_from_value(Value::Array(queries), depth + 2)
}

fn bad(line: usize, detail: impl Into<String>) -> PlanError {
    PlanError::BadLine {
        format: "XML",
        line,
        detail: super::parse_text::one_line(&detail.into()),
    }
}

enum Node {
    Text(String),
    Children(Vec<(String, Node)>),
}

/// Groups whose children are a list (of plans, workers, triggers, items).
fn is_list(key: &str) -> bool {
    matches!(
        key,
        "Plans"
            | "Workers"
            | "Triggers"
            | "Target Tables"
            | "Sort Methods Used"
            | "Grouping Sets"
            | "Group Keys"
            | "Hash Keys"
    ) || super::parse_text::LIST_KEYS.contains(&key)
}

/// The JSON key an element name stands for.
fn key_of(tag: &str) -> String {
    let key = tag.replace('-', " ");
    // The keys whose own spelling holds a character XML names replace.
    key.replace("I O ", "I/O ")
        .replace("One Time", "One-Time")
        .replace("Full sort", "Full-sort")
        .replace("Pre sorted", "Pre-sorted")
}

impl Node {
    fn into_value(self, key: &str, in_settings: bool) -> Value {
        match self {
            Node::Text(text) => {
                if in_settings || key.is_empty() {
                    Value::String(text)
                } else {
                    typed(key, &text)
                }
            }
            Node::Children(children) => {
                if is_list(key)
                    || (!children.is_empty() && children.iter().all(|(n, _)| n == "Item"))
                {
                    let item_key = match key {
                        "Plans" => "Plan",
                        _ => "",
                    };
                    return Value::Array(
                        children
                            .into_iter()
                            .map(|(_, c)| c.into_value(item_key, false))
                            .collect(),
                    );
                }
                let settings = key == "Settings";
                let mut map = Map::new();
                let mut sort_groups = 0;
                let mut sort_spaces = children.iter().filter(|(n, _)| n == "Sort-Space").count();
                let external = children.iter().any(|(n, c)| {
                    n == "Sort-Methods-Used"
                        && matches!(c, Node::Children(items) if items.iter().any(|(_, i)| matches!(i, Node::Text(t) if t.starts_with("external"))))
                });
                for (name, child) in children {
                    // XML names an incremental sort's groups and their space by kind, not by the
                    // label JSON uses: the full-sort groups come first, then the pre-sorted ones;
                    // memory before disk, and a lone one is disk when the sort went external.
                    let k = match name.as_str() {
                        "Incremental-Sort-Groups" => {
                            sort_groups += 1;
                            if sort_groups == 1 {
                                "Full-sort Groups"
                            } else {
                                "Pre-sorted Groups"
                            }
                            .to_owned()
                        }
                        "Sort-Space" => {
                            let disk = sort_spaces == 1 && external;
                            sort_spaces = sort_spaces.saturating_sub(1);
                            if disk || (sort_spaces == 0 && map.contains_key("Sort Space Memory")) {
                                "Sort Space Disk".to_owned()
                            } else {
                                "Sort Space Memory".to_owned()
                            }
                        }
                        _ if settings => name,
                        _ => key_of(&name),
                    };
                    let v = match child.into_value(&k, settings) {
                        // JIT's Options are flags, and their names are also JIT Timing's
                        // (`<Inlining>` is a boolean in one, milliseconds in the other).
                        Value::String(flag)
                            if key == "Options" && matches!(flag.as_str(), "true" | "false") =>
                        {
                            Value::Bool(flag == "true")
                        }
                        v => v,
                    };
                    map.insert(k, v);
                }
                Value::Object(map)
            }
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
    max_depth: usize,
}

impl Reader<'_> {
    fn line(&self) -> usize {
        self.text[..self.at.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn skip_prolog(&mut self) {
        self.skip_ws();
        if self.text[self.at..].starts_with("<?")
            && let Some(end) = self.text[self.at..].find("?>")
        {
            self.at += end + 2;
        }
        self.skip_ws();
    }

    /// One element and everything inside it; the reader stands at its `<`.
    fn element(&mut self, depth: usize) -> Result<(String, Node), PlanError> {
        if depth > 2 * MAX_PLAN_DEPTH + 8 {
            return Err(PlanError::TooDeep);
        }
        self.max_depth = self.max_depth.max(depth);
        let rest = &self.text[self.at..];
        if !rest.starts_with('<') {
            return Err(bad(self.line(), "expected an element"));
        }
        let close = rest
            .find('>')
            .ok_or_else(|| bad(self.line(), "an element that does not end"))?;
        let tag = &rest[1..close];
        let self_closing = tag.ends_with('/');
        let name = tag
            .trim_end_matches('/')
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        self.at += close + 1;
        if self_closing {
            return Ok((name, Node::Children(Vec::new())));
        }
        let mut children = Vec::new();
        let content_start = self.at;
        loop {
            let rest = &self.text[self.at..];
            let Some(lt) = rest.find('<') else {
                return Err(bad(self.line(), format!("<{name}> is not closed")));
            };
            if rest[lt..].starts_with("</") {
                let end = rest[lt..]
                    .find('>')
                    .ok_or_else(|| bad(self.line(), "a closing tag that does not end"))?;
                let closing = &rest[lt + 2..lt + end];
                if closing.trim() != name {
                    return Err(bad(self.line(), format!("</{closing}> closes <{name}>")));
                }
                let text = &self.text[content_start..self.at + lt];
                self.at += lt + end + 1;
                if children.is_empty() && !text.trim().is_empty() {
                    return Ok((name, Node::Text(unescape(text))));
                }
                return Ok((name, Node::Children(children)));
            }
            self.at += lt;
            children.push(self.element(depth + 1)?);
        }
    }
}

fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(end) = after.find(';') else {
            out.push_str(after);
            return out;
        };
        let entity = &after[1..end];
        let c = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xml_plan_reads() {
        let xml = "<explain xmlns=\"http://www.postgresql.org/2009/explain\">\n  <Query>\n    <Plan>\n      <Node-Type>Seq Scan</Node-Type>\n      <Relation-Name>t</Relation-Name>\n      <Plan-Rows>1</Plan-Rows>\n      <Filter>(a &lt; 1)</Filter>\n      <Output>\n        <Item>a</Item>\n      </Output>\n    </Plan>\n    <Triggers>\n    </Triggers>\n  </Query>\n</explain>\n";
        let plan = parse_xml(xml).unwrap();
        assert_eq!(plan.root().node_type, "Seq Scan");
        assert_eq!(plan.root().filter.as_deref(), Some("(a < 1)"));
        assert_eq!(plan.root().plan_rows, Some(1.0));
        assert_eq!(plan.root().output, ["a"]);
    }

    #[test]
    fn jit_options_are_flags_and_jit_timings_are_numbers() {
        let xml = "<explain>\n  <Query>\n    <Plan>\n      <Node-Type>Result</Node-Type>\n    </Plan>\n    <JIT>\n      <Functions>2</Functions>\n      <Options>\n        <Inlining>false</Inlining>\n        <Deforming>true</Deforming>\n      </Options>\n      <Timing>\n        <Inlining>0.000</Inlining>\n        <Total>1.500</Total>\n      </Timing>\n    </JIT>\n  </Query>\n</explain>\n";
        let plan = parse_xml(xml).unwrap();
        let jit = &plan.extra["JIT"];
        assert_eq!(jit["Functions"], 2);
        assert_eq!(jit["Options"]["Inlining"], false);
        assert_eq!(jit["Options"]["Deforming"], true);
        assert_eq!(jit["Timing"]["Inlining"], 0.0);
        assert_eq!(jit["Timing"]["Total"], 1.5);
    }
}
