//! Values for the `$n` of a workload query (pg_stat_statements replaces every literal with one):
//! which column each parameter is compared with, read from the query's tokens, and a common, a
//! typical and a rare value of that column from its `pg_stats` (most common values and
//! histogram), or a value from a sampled row where the column has no statistics. A parameter
//! pgplan cannot place leaves the query to its generic plan, which is estimated, never measured.

use serde::Serialize;

use crate::sql::{Token, TokenKind};

/// What a parameter stands for in its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamUse {
    /// Compared with this column (the qualifier, when written, is kept to pick the table).
    Column {
        qualifier: Option<String>,
        column: String,
    },
    Limit,
    Offset,
    /// Anything else: inside a function call, compared with an expression, an array...
    Unknown,
}

/// Operators after (or before) which a parameter takes a column's value.
const COMPARISONS: &[&str] = &["=", "<", ">", "<=", ">=", "<>", "!="];

fn ident(t: &Token<'_>) -> Option<String> {
    match t.kind {
        TokenKind::Word => Some(t.text.to_ascii_lowercase()),
        TokenKind::QuotedIdentifier => Some(t.text.trim_matches('"').replace("\"\"", "\"")),
        _ => None,
    }
}

/// `[qualifier .] column` ending at `toks[end]`.
fn column_before(toks: &[Token<'_>], end: usize) -> Option<ParamUse> {
    let column = ident(toks.get(end)?)?;
    if is_keyword(&column) && toks[end].kind == TokenKind::Word {
        return None;
    }
    let qualifier = (end >= 2 && toks[end - 1].text == ".")
        .then(|| ident(&toks[end - 2]))
        .flatten();
    Some(ParamUse::Column { qualifier, column })
}

/// `[qualifier .] column` starting at `toks[start]`.
fn column_after(toks: &[Token<'_>], start: usize) -> Option<ParamUse> {
    let first = ident(toks.get(start)?)?;
    if toks.get(start + 1).is_some_and(|t| t.text == ".") {
        let column = ident(toks.get(start + 2)?)?;
        if toks.get(start + 3).is_some_and(|t| t.text == "(") {
            return None;
        }
        return Some(ParamUse::Column {
            qualifier: Some(first),
            column,
        });
    }
    if toks.get(start + 1).is_some_and(|t| t.text == "(") || is_keyword(&first) {
        return None;
    }
    Some(ParamUse::Column {
        qualifier: None,
        column: first,
    })
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "and"
            | "or"
            | "not"
            | "select"
            | "where"
            | "in"
            | "any"
            | "all"
            | "null"
            | "true"
            | "false"
            | "case"
            | "when"
            | "then"
            | "else"
            | "end"
            | "between"
            | "like"
            | "ilike"
            | "limit"
            | "offset"
            | "set"
            | "values"
            | "on"
            | "exists"
    )
}

/// What each parameter `$1..=$max` of a statement stands for, from its tokens. A parameter used
/// several times takes the first use pgplan recognises.
pub fn parameter_uses(toks: &[Token<'_>], max: u32) -> Vec<ParamUse> {
    let mut uses = vec![ParamUse::Unknown; max as usize];
    for (i, t) in toks.iter().enumerate() {
        if t.kind != TokenKind::Parameter {
            continue;
        }
        let Some(n) = t.text[1..]
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max as usize).contains(n))
        else {
            continue;
        };
        if uses[n - 1] != ParamUse::Unknown {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| &toks[p]);
        let found = match prev {
            Some(p) if p.is_keyword("limit") => Some(ParamUse::Limit),
            Some(p) if p.is_keyword("offset") => Some(ParamUse::Offset),
            Some(p)
                if (p.kind == TokenKind::Operator && COMPARISONS.contains(&p.text))
                    || p.is_keyword("like")
                    || p.is_keyword("ilike") =>
            {
                i.checked_sub(2)
                    .and_then(|end| column_before(toks, end))
                    .or_else(|| {
                        // `col NOT LIKE $1`
                        (i >= 3 && toks[i - 2].is_keyword("not"))
                            .then(|| column_before(toks, i - 3))
                            .flatten()
                    })
            }
            Some(p) if p.is_keyword("between") => column_before(toks, i - 2),
            // `col BETWEEN $1 AND $2`: the second bound.
            Some(p) if p.is_keyword("and") && i >= 4 && toks[i - 3].is_keyword("between") => {
                column_before(toks, i - 4)
            }
            // `col IN ($1, $2, ...)`: walk back over the list to `IN (`.
            Some(p) if p.text == "(" || p.text == "," => {
                let mut j = i - 1;
                while j > 0
                    && (toks[j].text == ","
                        || toks[j].kind == TokenKind::Parameter
                        || toks[j].kind == TokenKind::Number
                        || matches!(toks[j].kind, TokenKind::String(_)))
                {
                    j -= 1;
                }
                (toks[j].text == "(" && j >= 2 && toks[j - 1].is_keyword("in"))
                    .then(|| column_before(toks, j - 2))
                    .flatten()
            }
            _ => None,
        };
        // `$1 = col`
        let found = found.or_else(|| {
            let next = toks.get(i + 1)?;
            (next.kind == TokenKind::Operator && COMPARISONS.contains(&next.text))
                .then(|| column_after(toks, i + 2))
                .flatten()
        });
        if let Some(u) = found {
            uses[n - 1] = u;
        }
    }
    uses
}

/// A column's statistics as `pg_stats` holds them (values in their text form).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnStats {
    /// schema.table.column, for labels.
    pub column: String,
    pub most_common_vals: Vec<String>,
    pub most_common_freqs: Vec<f64>,
    pub histogram_bounds: Vec<String>,
}

/// Where the value of one parameter comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamSource {
    Stats(ColumnStats),
    /// A value of the column read from a sampled row (the column has no statistics).
    Sampled {
        column: String,
        value: String,
    },
    Limit,
    Offset,
    /// Nothing found; the message says why.
    None(String),
}

/// One set of parameter values a query is measured with, or its generic plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// "common", "typical", "rare", "sampled row", "given", or "generic".
    pub label: String,
    /// The values, `$1` first; empty for a generic plan.
    pub params: Vec<String>,
    /// No values: the generic plan, estimated.
    pub generic: bool,
    /// Where each value came from ("$1 = pending: the most common value of events.status, 70% of
    /// rows"), or why there are none.
    pub why: Vec<String>,
}

/// The value (and why) for one parameter for one kind of sample.
fn pick(source: &ParamSource, kind: &str) -> Option<(String, String)> {
    match source {
        ParamSource::Stats(s) => {
            let mcv = &s.most_common_vals;
            let hist = &s.histogram_bounds;
            let from_mcv = |i: usize| {
                let freq = s.most_common_freqs.get(i).copied().unwrap_or(0.0);
                (
                    mcv[i].clone(),
                    format!(
                        "the {}most common value of {}, {} of rows",
                        match ordinal(i + 1) {
                            o if o.is_empty() => o,
                            o => format!("{o} "),
                        },
                        s.column,
                        percent(freq)
                    ),
                )
            };
            let from_hist = |i: usize, what: &str| {
                (
                    hist[i].clone(),
                    format!("the histogram {what} of {}", s.column),
                )
            };
            match kind {
                "common" if !mcv.is_empty() => Some(from_mcv(0)),
                "typical" if !hist.is_empty() => Some(from_hist(hist.len() / 2, "median")),
                "typical" if !mcv.is_empty() => Some(from_mcv(mcv.len() / 2)),
                // A value outside the most common list is rarer than any in it.
                "rare" if !hist.is_empty() => Some(from_hist(
                    (hist.len() - 1) * 9 / 10,
                    "bound at the 90th percentile (not a common value)",
                )),
                "rare" if !mcv.is_empty() => Some(from_mcv(mcv.len() - 1)),
                _ => None,
            }
        }
        ParamSource::Sampled { column, value } => {
            Some((value.clone(), format!("{column} of a sampled row")))
        }
        ParamSource::Limit => Some(("20".into(), "a LIMIT of 20 (no column to sample)".into())),
        ParamSource::Offset => Some(("0".into(), "an OFFSET of 0 (no column to sample)".into())),
        ParamSource::None(_) => None,
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => String::new(),
        n => format!("no. {n}"),
    }
}

fn percent(freq: f64) -> String {
    let p = freq * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// The samples a query is measured with: values given by the user; else a common, a typical
/// and a rare one (duplicates dropped) from each parameter's source; else, when some parameter
/// has no value, the generic plan. A query without parameters gets one sample with none.
pub fn choose_samples(given: Option<&[String]>, sources: &[ParamSource]) -> Vec<Sample> {
    if let Some(values) = given {
        return vec![Sample {
            label: "given".into(),
            params: values.to_vec(),
            generic: false,
            why: vec!["values given with `-- params:`".into()],
        }];
    }
    if sources.is_empty() {
        return vec![Sample {
            label: "no parameters".into(),
            params: Vec::new(),
            generic: false,
            why: Vec::new(),
        }];
    }
    let missing: Vec<String> = sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            ParamSource::None(why) => Some(format!("${}: {why}", i + 1)),
            _ => None,
        })
        .collect();
    if !missing.is_empty() {
        return vec![Sample {
            label: "generic".into(),
            params: Vec::new(),
            generic: true,
            why: missing,
        }];
    }
    let only_sampled = sources.iter().all(|s| !matches!(s, ParamSource::Stats(_)));
    let kinds: &[&str] = if only_sampled {
        &["common"]
    } else {
        &["common", "typical", "rare"]
    };
    let mut samples: Vec<Sample> = Vec::new();
    for kind in kinds {
        let mut params = Vec::new();
        let mut why = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            // A kind this column cannot give falls back to its common value.
            let Some((value, reason)) = pick(source, kind)
                .or_else(|| pick(source, "typical"))
                .or_else(|| pick(source, "common"))
            else {
                break;
            };
            why.push(format!("${} = {value}: {reason}", i + 1));
            params.push(value);
        }
        if params.len() != sources.len() || samples.iter().any(|s| s.params == params) {
            continue;
        }
        let label = if only_sampled {
            "sampled row".to_owned()
        } else {
            (*kind).to_owned()
        };
        samples.push(Sample {
            label,
            params,
            generic: false,
            why,
        });
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::tokenize;

    fn uses(sql: &str, max: u32) -> Vec<ParamUse> {
        parameter_uses(&tokenize(sql).unwrap(), max)
    }

    fn col(q: Option<&str>, c: &str) -> ParamUse {
        ParamUse::Column {
            qualifier: q.map(str::to_owned),
            column: c.into(),
        }
    }

    #[test]
    fn parameters_are_placed_by_what_they_are_compared_with() {
        assert_eq!(
            uses(
                "SELECT * FROM events e WHERE e.status = $1 AND $2 < created_at ORDER BY id LIMIT $3 OFFSET $4",
                4
            ),
            [
                col(Some("e"), "status"),
                col(None, "created_at"),
                ParamUse::Limit,
                ParamUse::Offset
            ]
        );
        assert_eq!(
            uses(
                "SELECT 1 FROM t WHERE \"Kind\" IN ($1, $2) AND v BETWEEN $3 AND $4",
                4
            ),
            [
                col(None, "Kind"),
                col(None, "Kind"),
                col(None, "v"),
                col(None, "v")
            ]
        );
        assert_eq!(
            uses(
                "SELECT 1 FROM t WHERE lower(a) = $1 AND b = any($2) AND f($3)",
                3
            ),
            [ParamUse::Unknown, ParamUse::Unknown, ParamUse::Unknown]
        );
        assert_eq!(
            uses("UPDATE t SET a = $1 WHERE id = $2", 2),
            [col(None, "a"), col(None, "id")]
        );
    }

    fn stats() -> ColumnStats {
        ColumnStats {
            column: "public.events.status".into(),
            most_common_vals: vec!["pending".into(), "done".into(), "failed".into()],
            most_common_freqs: vec![0.7, 0.2, 0.07],
            histogram_bounds: Vec::new(),
        }
    }

    #[test]
    fn common_typical_and_rare_values_come_from_the_statistics() {
        let samples = choose_samples(None, &[ParamSource::Stats(stats())]);
        let got: Vec<(&str, &str)> = samples
            .iter()
            .map(|s| (s.label.as_str(), s.params[0].as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("common", "pending"),
                ("typical", "done"),
                ("rare", "failed")
            ]
        );
        assert!(
            samples[0].why[0].contains("70% of rows"),
            "{:?}",
            samples[0].why
        );
        let mut h = stats();
        h.histogram_bounds = (0..11).map(|i| (i * 10).to_string()).collect();
        let samples = choose_samples(None, &[ParamSource::Stats(h), ParamSource::Limit]);
        assert_eq!(samples[1].params, ["50", "20"]);
        assert_eq!(samples[2].params, ["90", "20"]);
    }

    #[test]
    fn no_value_means_the_generic_plan_and_given_values_win() {
        let samples = choose_samples(
            None,
            &[
                ParamSource::Stats(stats()),
                ParamSource::None("compared with an expression".into()),
            ],
        );
        assert_eq!(samples.len(), 1);
        assert!(samples[0].generic);
        assert!(samples[0].why[0].starts_with("$2: "));
        let given = ["x".to_owned()];
        let samples = choose_samples(Some(&given), &[ParamSource::None("?".into())]);
        assert_eq!(samples[0].label, "given");
        assert_eq!(samples[0].params, ["x"]);
        let sampled = choose_samples(
            None,
            &[ParamSource::Sampled {
                column: "t.a".into(),
                value: "7".into(),
            }],
        );
        assert_eq!(sampled.len(), 1);
        assert_eq!(sampled[0].label, "sampled row");
        assert_eq!(choose_samples(None, &[])[0].label, "no parameters");
    }
}
