//! `pgplan check --format sarif`: SARIF 2.1.0 for code scanning. One result per regressed
//! query, its `ruleId` the first (most severe) regression class, its location the query's file
//! and line, so the query is annotated where it is written; the message names every reason.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::check::{CheckReport, QueryStatus, RegressionClass};

/// A relative path as a URI reference (SARIF's `artifactLocation.uri`): forward slashes, no
/// leading `./`, and the characters a URI cannot hold percent-encoded; an absolute path as a
/// `file://` URI.
pub fn uri_of(path: &str) -> String {
    let path = path.replace('\\', "/");
    let trimmed = path.trim_start_matches("./");
    let mut encoded = String::new();
    for b in trimmed.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if trimmed.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

fn rules() -> Vec<Value> {
    RegressionClass::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "name": c.as_str(),
                "shortDescription": { "text": super::check::class_title(*c) },
                "fullDescription": { "text": c.description() },
                "defaultConfiguration": { "level": "error" },
            })
        })
        .collect()
}

/// The SARIF log as a JSON value.
pub fn sarif(report: &CheckReport) -> Value {
    let mut results = Vec::new();
    for q in &report.queries {
        if q.status != QueryStatus::Regressed {
            continue;
        }
        let Some(first) = q.regressions.iter().min_by_key(|r| r.class) else {
            continue;
        };
        let index = RegressionClass::ALL
            .iter()
            .position(|c| *c == first.class)
            .unwrap_or(0);
        let reasons: Vec<String> = q
            .regressions
            .iter()
            .map(|r| format!("[{}] {}", r.class.as_str(), r.message))
            .collect();
        let mut result = json!({
            "ruleId": first.class.as_str(),
            "ruleIndex": index,
            "level": "error",
            "message": {
                "text": format!("{} regressed against the baseline{}: {}", q.id,
                    if report.mode == crate::check::CheckMode::Estimated { " (ESTIMATED)" } else { "" },
                    reasons.join("; "))
            },
            "partialFingerprints": { "pgplanQuery/v1": q.id },
            "properties": {
                "classes": q.regressions.iter().map(|r| r.class.as_str()).collect::<Vec<_>>(),
                "pages_baseline": q.pages.baseline,
                "pages_now": q.pages.now,
            },
        });
        if let Some(location) = &q.location {
            result["locations"] = json!([{
                "physicalLocation": {
                    "artifactLocation": { "uri": uri_of(&location.file) },
                    "region": { "startLine": location.line.max(1) },
                }
            }]);
        }
        results.push(result);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "pgplan",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules(),
                }
            },
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation(report)],
            "results": results,
        }]
    })
}

/// The run's invocation: what the runs left on the server, as error notifications (a finding
/// about the server, not about a line of the workload).
fn invocation(report: &CheckReport) -> Value {
    let notifications: Vec<Value> = report
        .left_behind
        .iter()
        .map(|left| {
            json!({
                "level": "error",
                "descriptor": { "id": "left-behind" },
                "message": { "text": left },
            })
        })
        .collect();
    json!({
        "executionSuccessful": true,
        "toolExecutionNotifications": notifications,
    })
}

pub fn write_sarif(out: &mut dyn Write, report: &CheckReport) -> io::Result<()> {
    super::write_json(out, &sarif(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri_of("./queries/lookup.sql"), "queries/lookup.sql");
        assert_eq!(uri_of("queries/my query.sql"), "queries/my%20query.sql");
        assert_eq!(uri_of("/repo/q.sql"), "file:///repo/q.sql");
    }
}
