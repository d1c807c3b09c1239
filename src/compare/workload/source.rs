//! Workload files: a file of several statements, a directory of `.sql` files (one query each) or
//! query files given on the command line. A query's header comments say how often it runs and,
//! optionally, the values of its parameters:
//!
//! ```sql
//! -- calls: 12000          (calls per day; default 1)
//! -- params: ["pending", 42]
//! SELECT ... WHERE status = $1 AND tenant_id = $2
//! ```

use crate::sql::{self, Query, QueryKind, SqlError};

/// One query of a workload as the user wrote it, not yet run.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceQuery {
    /// The file name, with `#n` for the n-th statement of a file holding several; or the
    /// `queryid` of a pg_stat_statements entry.
    pub id: String,
    /// The queryid from pg_stat_statements, when it came from there.
    pub queryid: Option<String>,
    pub query: Query,
    /// Calls counted by pg_stat_statements (None for files).
    pub calls: Option<f64>,
    pub calls_per_day: f64,
    /// Values for `$1`, `$2`, ... given by the user (`-- params:`), as text literals.
    pub params: Option<Vec<String>>,
}

/// Why a workload file cannot be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SourceError {
    #[error("{file}: {error}")]
    Sql { file: String, error: SqlError },
    #[error("{file}, line {line}: {message}")]
    Header {
        file: String,
        line: usize,
        message: String,
    },
    #[error(
        "{file}: expected a query (SELECT, WITH, VALUES, TABLE, INSERT, UPDATE, DELETE, MERGE), found {keyword}"
    )]
    NotAQuery { file: String, keyword: String },
    #[error("{file} holds no query")]
    Empty { file: String },
}

/// The header comment lines directly above line `line` (1-based), nearest last.
fn header_lines(lines: &[&str], line: usize) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut n = line.saturating_sub(1);
    while n >= 1 {
        let text = lines[n - 1].trim();
        if let Some(comment) = text.strip_prefix("--") {
            found.push((n, comment.trim().to_owned()));
        } else if !text.is_empty() {
            break;
        }
        n -= 1;
    }
    found.reverse();
    found
}

/// Reads the queries of one file. `several` says the file may hold several statements (a
/// `--workload FILE`); a query file given alone holds one.
pub fn parse_file(file: &str, text: &str) -> Result<Vec<SourceQuery>, SourceError> {
    let statements = sql::split_statements(text).map_err(|error| SourceError::Sql {
        file: file.to_owned(),
        error,
    })?;
    if statements.is_empty() {
        return Err(SourceError::Empty {
            file: file.to_owned(),
        });
    }
    let lines: Vec<&str> = text.lines().collect();
    let count = statements.len();
    let mut queries = Vec::new();
    for (i, statement) in statements.iter().enumerate() {
        let id = if count == 1 {
            file.to_owned()
        } else {
            format!("{file}#{}", i + 1)
        };
        let query = sql::parse_single_query(&statement.text).map_err(|error| SourceError::Sql {
            file: id.clone(),
            error,
        })?;
        if let QueryKind::Other(keyword) = &query.kind {
            return Err(SourceError::NotAQuery {
                file: id,
                keyword: keyword.to_uppercase(),
            });
        }
        let mut calls_per_day = 1.0;
        let mut params = None;
        for (line, comment) in header_lines(&lines, statement.start.line) {
            let header = |message: String| SourceError::Header {
                file: file.to_owned(),
                line,
                message,
            };
            if let Some(value) = comment.strip_prefix("calls:") {
                calls_per_day = value
                    .trim()
                    .replace(['_', ','], "")
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        header(format!(
                            "`-- calls:` wants a number of calls per day (got {:?})",
                            value.trim()
                        ))
                    })?;
            } else if let Some(value) = comment.strip_prefix("params:") {
                params = Some(parse_params(value.trim()).map_err(header)?);
            }
        }
        queries.push(SourceQuery {
            id,
            queryid: None,
            query,
            calls: None,
            calls_per_day,
            params,
        });
    }
    Ok(queries)
}

/// `["pending", 42, null]` → the text of each value (a JSON string as itself, a number or a
/// boolean as written). `null` is refused: a parameter compared with NULL matches nothing.
fn parse_params(text: &str) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("`-- params:` wants a JSON array of values ({e})"))?;
    let serde_json::Value::Array(items) = value else {
        return Err("`-- params:` wants a JSON array of values, like [\"pending\", 42]".into());
    };
    items
        .into_iter()
        .map(|item| match item {
            serde_json::Value::String(s) => Ok(s),
            serde_json::Value::Number(n) => Ok(n.to_string()),
            serde_json::Value::Bool(b) => Ok(b.to_string()),
            other => Err(format!(
                "`-- params:` values are strings, numbers or booleans (got {other})"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_give_calls_and_params_per_statement() {
        let text = "-- the dashboard\n-- calls: 12,000\nSELECT 1 FROM t WHERE a = $1;\n\n\
                    -- params: [\"x\", 2]\nSELECT 2 FROM t WHERE a = $1 AND b = $2;\nSELECT 3;\n";
        let q = parse_file("w.sql", text).unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(q[0].id, "w.sql#1");
        assert_eq!(q[0].calls_per_day, 12_000.0);
        assert_eq!(q[0].params, None);
        assert_eq!(q[1].calls_per_day, 1.0);
        assert_eq!(q[1].params, Some(vec!["x".to_owned(), "2".to_owned()]));
        assert_eq!(q[2].query.text, "SELECT 3");
        assert_eq!(q[2].params, None);
    }

    #[test]
    fn one_statement_is_named_by_its_file() {
        let q = parse_file("q.sql", "-- calls: 5\nUPDATE t SET a = 1").unwrap();
        assert_eq!(q[0].id, "q.sql");
        assert!(matches!(q[0].query.kind, QueryKind::Write(_)));
    }

    #[test]
    fn bad_input_says_where() {
        let err = parse_file("w.sql", "-- calls: lots\nSELECT 1").unwrap_err();
        assert!(err.to_string().contains("w.sql, line 1"), "{err}");
        let err = parse_file("w.sql", "-- params: [null]\nSELECT $1").unwrap_err();
        assert!(err.to_string().contains("strings, numbers"), "{err}");
        let err = parse_file("w.sql", "VACUUM t").unwrap_err();
        assert!(err.to_string().contains("VACUUM"), "{err}");
        assert!(matches!(
            parse_file("w.sql", "-- nothing"),
            Err(SourceError::Empty { .. })
        ));
    }
}
