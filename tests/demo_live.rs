//! `pgplan demo` as a user runs it: a throwaway server, the story's verdicts, and nothing left
//! behind; and a clear message when there are no server binaries.

mod common;

use std::process::Command;

use common::pgplan_bin;

#[test]
fn the_demo_runs_the_story_and_removes_its_server() {
    // The newest version the tests run against.
    let Some(major) = common::versions().into_iter().max() else {
        return;
    };
    let binaries = common::binaries(major);
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", &binaries.bin_dir)
        .args(["demo", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let demo: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(demo["schema_version"], 1);
    let doc = &demo["compare"];
    assert_eq!(doc["best"], "events_pending_created_at_idx");
    assert_eq!(doc["candidates"].as_array().unwrap().len(), 3);
    for c in doc["candidates"].as_array().unwrap() {
        let expected = if c["index_name"] == "events_pending_created_at_idx" {
            "pays"
        } else {
            "unused"
        };
        assert_eq!(c["verdict"], expected, "{c:#}");
    }
    // The baseline touches every page of the 500,000-row table: about 9,000.
    let pages = doc["baseline"]["warm"]["pages_touched"].as_f64().unwrap();
    assert!((8_500.0..10_000.0).contains(&pages), "{pages}");
    assert!(stderr.contains("removed the throwaway server"), "{stderr}");
    // The demo ends with an audit of its own server: the Friday index is unused.
    let unused = demo["audit"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "unused_index" && f["index"] == "events_status_idx")
        .unwrap_or_else(|| panic!("{:#}", demo["audit"]));
    assert!(
        unused["fix"]
            .as_str()
            .unwrap()
            .contains("DROP INDEX CONCURRENTLY")
    );

    // Text output explains what the user is looking at.
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", &binaries.bin_dir)
        .env("NO_COLOR", "1")
        .arg("demo")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("What you are looking at"), "{text}");
    assert!(
        text.contains("Best: events_pending_created_at_idx"),
        "{text}"
    );
    assert!(text.contains("Why"), "{text}");
    assert!(text.contains("Then the audit"), "{text}");
    assert!(text.contains("events_status_idx"), "{text}");
}

#[test]
fn without_server_binaries_the_demo_says_how_to_get_them() {
    let out = Command::new(pgplan_bin())
        .env("PGPLAN_PG_BIN", "/nonexistent/bin")
        .arg("demo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/bin"), "{stderr}");
    assert!(stderr.contains("initdb"), "{stderr}");
}
