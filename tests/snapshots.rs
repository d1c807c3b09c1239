//! Snapshot tests of `explain` and `diff` over every recorded plan in `fixtures/`, with timings
//! redacted (they differ on every run; everything else in a recorded plan is fixed).

use std::path::{Path, PathBuf};

use pgplan::plan::{Analysis, Comparison, parse_plan};
use pgplan::report::{TextOptions, markdown, text, wire};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Every recorded plan: server JSON, auto_explain's JSON and psql's pasted output.
fn plan_fixtures() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["plans", "story", "advise"] {
        for entry in std::fs::read_dir(fixtures_dir().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".json") || name.ends_with(".psql.txt") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 199,
        "fixtures missing: found {}",
        files.len()
    );
    files
}

fn snapshot_name(path: &Path) -> String {
    let dir = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    format!("{dir}__{}", path.file_name().unwrap().to_string_lossy())
}

fn analyse(path: &Path) -> Analysis {
    let text = std::fs::read_to_string(path).unwrap();
    let plan = parse_plan(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Analysis::of(plan)
}

/// Text-output filters: durations, and the time rows of a diff's totals table.
fn text_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"(?m)^( *(execution|planning) time) .*$", "$1 [redacted]"),
        (r"\d[\d,]*\.\d+ ms", "[ms]"),
    ]
}

/// Replaces every timing in a JSON document: our `*_ms` fields and the server's "... Time" keys
/// kept under `other`.
fn redact_timings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let is_time = key.ends_with("_ms") || key.ends_with("Time") || key == "Timing";
                if is_time && (v.is_number() || v.is_object()) {
                    *v = Value::String("[ms]".into());
                } else {
                    redact_timings(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_timings),
        _ => {}
    }
}

fn text_of(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn explain_text_over_every_fixture() {
    let options = TextOptions::default();
    for path in plan_fixtures() {
        let analysis = analyse(&path);
        let name = snapshot_name(&path);
        let out = text_of(|w| text::write_explain(w, &name, &analysis, &options));
        insta::with_settings!({
            snapshot_path => "snapshots/explain_text",
            prepend_module_to_snapshot => false,
            filters => text_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, out);
        });
    }
}

#[test]
fn explain_json_over_every_fixture() {
    for path in plan_fixtures() {
        let analysis = analyse(&path);
        let mut doc = serde_json::to_value(wire::ExplainDoc::new(&analysis)).unwrap();
        redact_timings(&mut doc);
        let name = snapshot_name(&path);
        insta::with_settings!({
            snapshot_path => "snapshots/explain_json",
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_json_snapshot!(name, doc);
        });
    }
}

fn versions_of(case: &str, dir: &str) -> Vec<(u32, PathBuf)> {
    (13..=18)
        .filter_map(|v| {
            let path = fixtures_dir().join(dir).join(format!("{case}.pg{v}.json"));
            path.exists().then_some((v, path))
        })
        .collect()
}

/// The story: the dashboard query before and after each candidate index, on every version.
#[test]
fn diff_of_the_story_on_every_version() {
    let options = TextOptions::default();
    for after in [
        "status_index",
        "partial_index",
        "tenant_index",
        "before_cold",
    ] {
        for ((v, before_path), (_, after_path)) in versions_of("before", "story")
            .into_iter()
            .zip(versions_of(after, "story"))
        {
            let comparison = Comparison::of(analyse(&before_path), analyse(&after_path));
            let name = format!("story__before_vs_{after}.pg{v}");
            let titles = (format!("before.pg{v}.json"), format!("{after}.pg{v}.json"));
            let titles = (titles.0.as_str(), titles.1.as_str());
            let out = text_of(|w| text::write_diff(w, titles, &comparison, &options));
            let md = text_of(|w| markdown::write_diff(w, titles, &comparison));
            let mut doc = serde_json::to_value(wire::DiffDoc::new(&comparison)).unwrap();
            redact_timings(&mut doc);
            insta::with_settings!({
                snapshot_path => "snapshots/diff",
                prepend_module_to_snapshot => false,
                filters => text_filters(),
                omit_expression => true,
            }, {
                insta::assert_snapshot!(format!("{name}.text"), out);
                insta::assert_snapshot!(format!("{name}.markdown"), md);
            });
            insta::with_settings!({
                snapshot_path => "snapshots/diff",
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                // The JSON body (ratios and changes); each side's plan is in the explain snapshots.
                insta::assert_json_snapshot!(format!("{name}.json"), serde_json::json!({
                    "schema_version": doc["schema_version"],
                    "ratios": doc["ratios"],
                    "changes": doc["changes"],
                }));
            });
        }
    }
}

/// Every other case, diffed across consecutive server versions: how the plan of the same query
/// changed from one major version to the next.
#[test]
fn diff_across_versions_for_every_case() {
    let options = TextOptions::default();
    let mut cases: Vec<String> = std::fs::read_dir(fixtures_dir().join("plans"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".sql").map(str::to_owned)
        })
        .filter(|c| c != "setup" && c != "text_format")
        .collect();
    cases.sort();
    for case in cases {
        let versions = versions_of(&case, "plans");
        for pair in versions.windows(2) {
            let ((v1, p1), (v2, p2)) = (&pair[0], &pair[1]);
            let comparison = Comparison::of(analyse(p1), analyse(p2));
            let titles = (format!("{case}.pg{v1}.json"), format!("{case}.pg{v2}.json"));
            let out =
                text_of(|w| text::write_diff(w, (&titles.0, &titles.1), &comparison, &options));
            insta::with_settings!({
                snapshot_path => "snapshots/diff_versions",
                prepend_module_to_snapshot => false,
                filters => text_filters(),
                omit_expression => true,
            }, {
                insta::assert_snapshot!(format!("{case}.pg{v1}_vs_pg{v2}"), out);
            });
        }
    }
}

#[test]
fn markdown_explain_of_the_story() {
    for (v, path) in versions_of("before", "story") {
        let analysis = analyse(&path);
        let out = text_of(|w| markdown::write_explain(w, &format!("before.pg{v}.json"), &analysis));
        insta::with_settings!({
            snapshot_path => "snapshots/explain_markdown",
            prepend_module_to_snapshot => false,
            filters => text_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("story_before.pg{v}"), out);
        });
    }
}

/// The TEXT plans recorded beside their JSON (`fixtures/formats/`): the report of each, read
/// from the text.
#[test]
fn explain_text_over_every_text_plan() {
    let options = TextOptions::default();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir().join("formats"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".txt") && !name.contains(".psql-")
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 250, "text plans missing: {}", paths.len());
    for path in paths {
        let analysis = analyse(&path);
        let name = snapshot_name(&path);
        let out = text_of(|w| text::write_explain(w, &name, &analysis, &options));
        insta::with_settings!({
            snapshot_path => "snapshots/explain_text_formats",
            prepend_module_to_snapshot => false,
            filters => text_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, out);
        });
    }
}

/// `pgplan diff` of a TEXT plan before and a JSON plan after.
#[test]
fn diff_of_a_text_plan_and_a_json_plan() {
    let options = TextOptions::default();
    let formats = fixtures_dir().join("formats");
    for v in 13..=18 {
        let before = analyse(&formats.join(format!("before.pg{v}.txt")));
        let after = analyse(&formats.join(format!("partial_index.pg{v}.json")));
        let comparison = Comparison::of(before, after);
        let titles = (
            format!("before.pg{v}.txt"),
            format!("partial_index.pg{v}.json"),
        );
        let out = text_of(|w| text::write_diff(w, (&titles.0, &titles.1), &comparison, &options));
        insta::with_settings!({
            snapshot_path => "snapshots/diff",
            prepend_module_to_snapshot => false,
            filters => text_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("story__text_before_vs_json_partial_index.pg{v}"), out);
        });
    }
}
